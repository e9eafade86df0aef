// Media download (SPEC §6): download.json asks yt-dlp what a page offers and answers with signed links to
// tickets; the bytes are delivery.ts's. Every request to the outside goes through the SSRF guard (ARCHITECTURE).
import type { Caller } from '../kernel/caller'
import type { Config } from '../kernel/config'
import { AppError, badRequest, notFound } from '../kernel/errors'
import { privateAddress } from '../kernel/net/private-address'
import type { LinkSigner } from '../kernel/signing'
import type { FaultLog } from '../web/fault-log'
import { extractedAudio, isAudioTicket } from './audio'
import { createDelivery, SOCKET_TIMEOUT_S } from './delivery'
import {
  classifyFailure,
  errorLine,
  extractionTimeout,
  mediaFilename,
  parseInfo,
  unsupportedUrl,
  upstreamFailed,
  type Extraction,
  type MediaFormat,
} from './extract'
import { GUARD_BYPASS, guardCheck, normalize, photoOf, screen } from './page'
import { createLimiter, runYtdlp } from './runner'
import type { TicketRow, TicketStorage } from './storage/contract'
import { unsafeYtdlpReason, type Ytdlp, type YtdlpChoice } from './ytdlp'

/** Results are kept per URL this long (SPEC §6): a second ask is answered without yt-dlp. */
export const CACHE_MS = 10 * 60 * 1000
const CACHE_ENTRIES = 500
/** Accounts whose tickets one cached result keeps; past that, each answer makes its own. */
const ACCOUNTS_PER_ENTRY = 64
const MAX_JSON_BYTES = 32 * 1024 * 1024

export interface MediaDeps {
  /** The download tickets (storage/: the engine's). */
  tickets: TicketStorage
  config: Config
  signer: LinkSigner
  clock: () => number
  ytdlp: Ytdlp
  /** The guard proxy's URL (started on first use), which yt-dlp is told to use for every request. */
  proxy: () => Promise<string | null>
  /** Whether ffmpeg is there to merge separate video and audio (checked once at start). */
  canMerge: boolean
  /** Name resolution for the guard (tests inject one). */
  resolve?: (host: string) => Promise<string[]>
  /** Tests only: the addresses the guard lets through instead of the public ones. */
  isAllowed?: (address: string) => boolean
  /** Told the outcome of every download.json (for /metrics). */
  onOutcome?: (outcome: ExtractionOutcome) => void
  /** Where a failed sweep is logged. */
  faults: FaultLog
  /** Sets a request's idle timeout (0: none), for requests that wait for a preparation. */
  holdOpen?: (request: Request, seconds: number) => void
}

interface CacheEntry {
  at: number
  extraction: Extraction
  /** Per account: its tickets' ids, once stored. */
  tickets: Map<number, Promise<number[]>>
}

export type ExtractionOutcome =
  | 'ok'
  | 'photo'
  | 'cached'
  | 'unsupported'
  | 'private'
  | 'upstream'
  | 'timeout'
  | 'busy'
  | 'invalid'

export function createMediaService({
  tickets,
  config,
  signer,
  clock,
  ytdlp,
  proxy,
  canMerge,
  resolve,
  isAllowed,
  onOutcome,
  faults,
  holdOpen,
}: MediaDeps) {
  const base = config.server.base_url
  const allowPrivate = config.media.allow_private_networks
  const guard = { allowPrivate, resolve, isAllowed }
  const limiter = createLimiter(config.media.max_concurrent, Math.max(4, config.media.max_concurrent * 4))
  const cache = new Map<string, CacheEntry>()
  const inflight = new Map<string, Promise<Extraction>>()
  const stats = { bytesServed: 0 }
  const count = (o: ExtractionOutcome) => onOutcome?.(o)
  const delivery = createDelivery({ config, guard, runnable, proxy, stats, holdOpen })
  const fetchLimiter = delivery.limiter

  /** The yt-dlp to run: none, or one too old to be kept behind the guard (SPEC §6), is a 503 and never runs. */
  async function runnable(): Promise<YtdlpChoice> {
    const choice = await ytdlp.current()
    if (!choice)
      throw new AppError(
        503,
        'unavailable',
        'Media download is not available: no yt-dlp was found (see `linkbox doctor`).',
      )
    const unsafe = unsafeYtdlpReason(choice.version)
    if (unsafe)
      throw new AppError(
        503,
        'unavailable',
        `Media download is not available: the yt-dlp found is not run, as ${unsafe} (see \`linkbox doctor\`).`,
      )
    return choice
  }

  async function runExtraction(url: string): Promise<Extraction> {
    const choice = await runnable()
    const timeout = config.media.extract_timeout
    const result = await runYtdlp({
      command: choice.argv,
      args: [
        '--ignore-config',
        '--no-cache-dir',
        '--no-playlist',
        '--no-warnings',
        '--socket-timeout',
        String(Math.min(SOCKET_TIMEOUT_S, timeout)),
        '--dump-single-json',
        '--',
        url,
      ],
      proxy: await proxy(),
      timeoutMs: timeout * 1000,
      maxStdoutBytes: MAX_JSON_BYTES,
    })
    if (result.timedOut) throw extractionTimeout(timeout)
    if (result.tooLarge) throw upstreamFailed('its description is too large')
    if (result.code === 0) {
      if (GUARD_BYPASS.test(result.stdout)) throw privateAddress()
      let info: unknown
      try {
        info = JSON.parse(result.stdout)
      } catch {
        throw upstreamFailed('yt-dlp gave an answer that is not JSON')
      }
      const extraction = parseInfo(info, canMerge)
      if (extraction) return { ...extraction, source: extraction.source || url }
    }
    const kind = result.code === 0 ? 'unsupported' : classifyFailure(result.stderr)
    if (kind === 'private') throw privateAddress()
    if (kind === 'timeout') throw extractionTimeout(timeout)
    if (kind === 'invalid') throw badRequest('invalid_url', 'The parameter "url" is not a URL yt-dlp can read.')
    if (kind === 'unsupported') {
      const photo = await photoOf(url, guard)
      if (photo) return photo
      throw unsupportedUrl()
    }
    throw upstreamFailed(errorLine(result.stderr))
  }

  const outcomeOf = (err: unknown): ExtractionOutcome => {
    if (!(err instanceof AppError)) return 'upstream'
    return (
      (
        {
          private_address: 'private',
          unsupported_url: 'unsupported',
          timeout: 'timeout',
          busy: 'busy',
          invalid_url: 'invalid',
        } as const
      )[err.code as 'busy'] ?? 'upstream'
    )
  }

  /** One extraction per URL at a time; a result is kept CACHE_MS. */
  async function extract(url: string): Promise<{ entry: CacheEntry; cached: boolean }> {
    const now = clock()
    const hit = cache.get(url)
    if (hit && now - hit.at < CACHE_MS) {
      count('cached')
      return { entry: hit, cached: true }
    }
    let running = inflight.get(url)
    if (!running) {
      // The guard's name lookup runs inside a slot too: outside it, distinct URLs sent at once would each hold
      // an in-flight entry and a DNS lookup with no bound but the rate limit.
      running = limiter.run(async () => {
        await guardCheck(url, guard)
        return screen(await runExtraction(url), guard)
      })
      inflight.set(url, running)
      running.then(
        (extraction) => count(extraction.extractor === 'og:image' ? 'photo' : 'ok'),
        (err) => count(outcomeOf(err)),
      )
      void running.finally(() => inflight.delete(url)).catch(() => {})
    }
    const extraction = await running
    let entry = cache.get(url)
    if (!entry || entry.extraction !== extraction) {
      entry = { at: clock(), extraction, tickets: new Map() }
      cache.delete(url)
      cache.set(url, entry)
      while (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!)
    }
    return { entry, cached: false }
  }

  /**
   * The tickets of this answer for the caller's account: the ones stored for it earlier from the same
   * entry (or being stored: two answers at once store them once), else new ones.
   */
  function ticketsFor(entry: CacheEntry, caller: Caller, url: string): Promise<number[]> {
    const kept = entry.tickets.get(caller.accountId)
    if (kept) return kept
    // A ticket outlives every link an answer from this entry can carry: the last such answer comes at
    // entry.at + CACHE_MS, and its links live link_ttl.
    const expires = entry.at + CACHE_MS + config.media.link_ttl * 1000
    const title = entry.extraction.title || 'download'
    const ids = tickets.insertAll(
      offered(entry.extraction).map((f: MediaFormat) => ({
        account_id: caller.accountId,
        page_url: url,
        format_id: f.id,
        method: f.method,
        upstream_url: f.upstreamUrl,
        headers: f.recipe ?? JSON.stringify(f.headers),
        filename: mediaFilename(title, f.ext),
        content_type: f.contentType,
        created: clock(),
        expires,
      })),
    )
    if (entry.tickets.size < ACCOUNTS_PER_ENTRY) {
      entry.tickets.set(caller.accountId, ids)
      // Not stored (the database refused): the next answer tries again.
      ids.catch(() => entry.tickets.get(caller.accountId) === ids && entry.tickets.delete(caller.accountId))
    }
    return ids
  }

  /** What an answer lists: the page's formats, then the audio extracted from its best sound. */
  const offers = new WeakMap<Extraction, MediaFormat[]>()
  const offered = (extraction: Extraction) => {
    let list = offers.get(extraction)
    if (!list) offers.set(extraction, (list = [...extraction.formats, ...extractedAudio(extraction, canMerge)]))
    return list
  }

  /** download.json; `audio`: only the audio formats (extracted and the page's own). */
  async function download(caller: Caller, input: string, opts: { audio?: boolean } = {}) {
    const url = normalize(input)
    const { entry } = await extract(url)
    const ids = await ticketsFor(entry, caller, url)
    const now = clock()
    const expires = now + config.media.link_ttl * 1000
    const { extraction } = entry
    return {
      source: extraction.source,
      title: extraction.title,
      kind: extraction.kind,
      extractor: extraction.extractor,
      duration: extraction.duration,
      thumbnail: extraction.thumbnail,
      expires: new Date(Math.ceil(expires / 1000) * 1000).toISOString(), // as the links' exp says
      formats: offered(extraction).flatMap((f, i) =>
        opts.audio && f.kind !== 'audio'
          ? []
          : {
              id: f.id,
              ext: f.ext,
              kind: f.kind,
              width: f.width,
              height: f.height,
              fps: f.fps,
              vcodec: f.vcodec,
              acodec: f.acodec,
              filesize: f.filesize,
              note: f.note,
              url: `${base}/dl/${ids[i]}?${signer.sign(`dl-${ids[i]}`, expires).query}`,
            },
      ),
    }
  }

  /**
   * The ticket behind a signed link, or an AppError (403 tampered, 410 expired, 404 unknown). The signature
   * is checked before anything is looked up, so a guessed id learns nothing.
   */
  async function ticket(idText: string, exp: string | null, sig: string | null): Promise<TicketRow> {
    if (!/^[1-9][0-9]{0,15}$/.test(idText)) throw notFound('There is no such download.')
    const check = signer.check(`dl-${idText}`, exp, sig, clock())
    if (check === 'tampered')
      throw new AppError(403, 'invalid_signature', 'This link is not valid: its signature does not match.')
    if (check === 'expired')
      throw new AppError(410, 'expired', 'This link has expired: ask download.json for a new one.')
    const row = await tickets.ticket(Number(idText))
    if (!row) throw notFound('There is no such download.')
    return row
  }

  async function sweep(): Promise<number> {
    const now = clock()
    for (const [url, entry] of cache) if (now - entry.at >= CACHE_MS) cache.delete(url)
    try {
      return await tickets.sweep(now)
    } catch (err) {
      faults.fault('media sweep', err)
      return 0
    }
  }

  return {
    /** server.base_url: the signed links' origin. */
    base,
    download,
    ticket,
    /** GET/HEAD /dl/<id>: the bytes (delivery.ts). */
    serve: delivery.serve,
    /**
     * GET /dl/<id>/progress: the preparation of the ticket's file, joined as a waiter until `signal` aborts;
     * null when there is nothing to wait for (a format streamed from upstream, or a file in the cache).
     */
    prepare: (t: TicketRow, signal: AbortSignal) =>
      t.method === 'direct' && !isAudioTicket(t) ? null : delivery.prepare(t, signal),
    holdOpen: (request: Request, seconds: number) => holdOpen?.(request, seconds),
    /** Preparations under way on this node (tests). */
    preparations: delivery.preparations,
    sweep,
    /** For /metrics. */
    stats,
    get queued() {
      return limiter.waiting + fetchLimiter.waiting
    },
    get running() {
      return limiter.running + fetchLimiter.running
    },
    tickets: () => tickets.count(),
  }
}
export type MediaService = ReturnType<typeof createMediaService>
