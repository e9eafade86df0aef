// Media download (SPEC §6): download.json asks yt-dlp what a page offers and answers with signed links to
// tickets; the bytes are delivery.ts's. Every request to the outside goes through the SSRF guard (ARCHITECTURE).
import type { Caller } from '../kernel/caller'
import type { Config } from '../kernel/config'
import { AppError, badRequest, notFound } from '../kernel/errors'
import { privateAddress } from '../kernel/net/private-address'
import type { LinkSigner } from '../kernel/signing'
import type { FaultLog } from '../web/fault-log'
import { isAudioTicket } from './audio'
import { createDelivery, SOCKET_TIMEOUT_S } from './delivery'
import {
  classifyFailure,
  errorLine,
  extractionTimeout,
  mainEntry,
  parseInfo,
  unsupportedUrl,
  upstreamFailed,
  type Extraction,
} from './extract'
import { GUARD_BYPASS, guardCheck, guardVerdicts, normalize, photoOf, screen } from './page'
import { NO_COOKIES, type CookieJar } from './cookies'
import { createHistory } from './history'
import { audioOnly, createOffers } from './offers'
import { fromExtraction, playlistArgs, playlistOfLines, screenPlaylist, type Playlist } from './playlist'
import { createLimiter, runYtdlp } from './runner'
import type { TicketRow, TicketStorage } from './storage/contract'
import { isSubtitleTicket, screenSubtitles, serveSubtitle, subtitlesOf, type Subtitle } from './subtitles'
import {
  formatAnswer,
  formatTickets,
  playlistAnswer,
  playlistTickets,
  subtitleAnswers,
  subtitleTickets,
} from './answers'
import { unsafeYtdlpReason, type Ytdlp, type YtdlpChoice } from './ytdlp'

/** Results are kept per URL this long (SPEC §6): a second ask is answered without yt-dlp. */
export const CACHE_MS = 10 * 60 * 1000
const CACHE_ENTRIES = 500
/** Of those, playlists (each up to media.playlist_max entries' formats: many times a video's size). */
const CACHE_PLAYLISTS = 50
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
  /** The admin's cookies per site (cookies.ts): yt-dlp gets a site's for that site's URLs only. */
  cookies?: CookieJar
  /** Sets a request's idle timeout (0: none), for requests that wait for a preparation. */
  holdOpen?: (request: Request, seconds: number) => void
}

/** One video with its subtitles (subtitles.ts), or, for playlist=1, a playlist (playlist.ts). */
type Found = (Extraction & { subtitles?: Subtitle[] }) | Playlist
const isPlaylist = (f: Found): f is Playlist => 'entries' in f

/** The site's cookies stay sealed: never in a ticket's headers (delivery.ts adds them again per request). */
const unsealed = (formats: { headers: Record<string, string> }[]) => {
  for (const f of formats) delete f.headers.cookie
}

interface CacheEntry {
  at: number
  extraction: Found
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
  cookies,
  holdOpen,
}: MediaDeps) {
  const base = config.server.base_url
  const allowPrivate = config.media.allow_private_networks
  const guard = { allowPrivate, resolve, isAllowed }
  const limiter = createLimiter(config.media.max_concurrent, Math.max(4, config.media.max_concurrent * 4))
  const cache = new Map<string, CacheEntry>()
  const inflight = new Map<string, Promise<Found>>()
  const stats = { bytesServed: 0 }
  const count = (o: ExtractionOutcome) => onOutcome?.(o)
  const delivery = createDelivery({ config, guard, runnable, proxy, stats, cookies, holdOpen })
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

  async function runExtraction(url: string, playlist: boolean): Promise<Found> {
    const choice = await runnable()
    const timeout = config.media.extract_timeout
    const proxyUrl = await proxy()
    // The site's cookies, if an admin gave any: a private file, removed when the run ends.
    const withCookies = cookies ? await cookies.forRun(url) : NO_COOKIES
    const result = await runYtdlp({
      command: choice.argv,
      args: [
        '--ignore-config',
        '--no-cache-dir',
        ...(playlist ? playlistArgs(config.media.playlist_max) : ['--no-playlist']),
        '--no-warnings',
        '--socket-timeout',
        String(Math.min(SOCKET_TIMEOUT_S, timeout)),
        // A playlist's entries one JSON line each, as each is read: what the time limit cuts off is only the rest.
        playlist ? '--dump-json' : '--dump-single-json',
        ...withCookies.args,
        '--',
        url,
      ],
      proxy: proxyUrl,
      timeoutMs: timeout * 1000,
      maxStdoutBytes: MAX_JSON_BYTES,
    }).finally(withCookies.remove)
    const cut = playlist && result.timedOut && result.stdout.includes('\n')
    if (result.timedOut && !cut) throw extractionTimeout(timeout)
    if (result.tooLarge) throw upstreamFailed('its description is too large')
    if (result.code === 0 || cut) {
      if (GUARD_BYPASS.test(result.stdout)) throw privateAddress()
      if (playlist) {
        const list = playlistOfLines(result.stdout, canMerge, config.media.playlist_max, url, cut)
        if (list && withCookies.args.length) for (const e of list.entries) unsealed(e.formats)
        if (list) return list
        if (cut) throw extractionTimeout(timeout)
      } else {
        let info: unknown
        try {
          info = JSON.parse(result.stdout)
        } catch {
          throw upstreamFailed('yt-dlp gave an answer that is not JSON')
        }
        const extraction = parseInfo(info, canMerge)
        if (extraction && withCookies.args.length) unsealed(extraction.formats)
        if (extraction)
          return { ...extraction, source: extraction.source || url, subtitles: subtitlesOf(mainEntry(info)!) }
      }
    }
    const kind = result.code === 0 ? 'unsupported' : classifyFailure(result.stderr)
    if (kind === 'private') throw privateAddress()
    if (kind === 'timeout') throw extractionTimeout(timeout)
    if (kind === 'invalid') throw badRequest('invalid_url', 'The parameter "url" is not a URL yt-dlp can read.')
    if (kind === 'unsupported') {
      const photo = await photoOf(url, guard)
      if (photo) return playlist ? fromExtraction(photo, url) : photo
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
  async function extract(url: string, playlist = false): Promise<{ entry: CacheEntry; cached: boolean }> {
    const now = clock()
    // A playlist's answer is another than its page's first video: kept under a key of its own.
    const key = playlist ? `${url}\nplaylist` : url
    const hit = cache.get(key)
    if (hit && now - hit.at < CACHE_MS) {
      count('cached')
      return { entry: hit, cached: true }
    }
    let running = inflight.get(key)
    if (!running) {
      // The guard's name lookup runs inside a slot too: outside it, distinct URLs sent at once would each hold
      // an in-flight entry and a DNS lookup with no bound but the rate limit.
      running = limiter.run(async () => {
        await guardCheck(url, guard)
        return screenFound(await runExtraction(url, playlist))
      })
      inflight.set(key, running)
      running.then(
        (extraction) => count(extraction.extractor === 'og:image' ? 'photo' : 'ok'),
        (err) => count(outcomeOf(err)),
      )
      void running.finally(() => inflight.delete(key)).catch(() => {})
    }
    const extraction = await running
    let entry = cache.get(key)
    if (!entry || entry.extraction !== extraction) {
      entry = { at: clock(), extraction, tickets: new Map() }
      cache.delete(key)
      cache.set(key, entry)
      while (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!)
      if (playlist) {
        const lists = [...cache.keys()].filter((k) => k.endsWith('\nplaylist'))
        for (const k of lists.slice(0, Math.max(0, lists.length - CACHE_PLAYLISTS))) cache.delete(k)
      }
    }
    return { entry, cached: false }
  }

  /** Every address of the answer through the guard (page.ts): formats, thumbnails, subtitles, entries. */
  async function screenFound(found: Found): Promise<Found> {
    const allowed = guardVerdicts(guard)
    if (isPlaylist(found)) return screenPlaylist(found, (e) => screen(e, guard, allowed))
    const kept = await screen(found, guard, allowed)
    return { ...kept, subtitles: await screenSubtitles(found.subtitles ?? [], allowed) }
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
    const found = entry.extraction
    const made = { account_id: caller.accountId, created: clock(), expires }
    const title = found.title || 'download'
    const ids = tickets.insertAll(
      isPlaylist(found)
        ? playlistTickets(withAudio(found), made)
        : [
            ...formatTickets(offered(found), url, title, made),
            ...subtitleTickets(found.subtitles ?? [], url, title, made),
          ],
    )
    if (entry.tickets.size < ACCOUNTS_PER_ENTRY) {
      entry.tickets.set(caller.accountId, ids)
      // Not stored (the database refused): the next answer tries again.
      ids.catch(() => entry.tickets.get(caller.accountId) === ids && entry.tickets.delete(caller.accountId))
    }
    return ids
  }

  const { offered, withAudio } = createOffers(canMerge)

  /** The answer's tickets, how to link to one, and when the links expire (as their exp says). */
  async function answering(caller: Caller, input: string, playlist: boolean) {
    const url = normalize(input)
    const { entry } = await extract(url, playlist)
    const ids = await ticketsFor(entry, caller, url)
    const expires = clock() + config.media.link_ttl * 1000
    const link = (id: number) => `${base}/dl/${id}?${signer.sign(`dl-${id}`, expires).query}`
    return { found: entry.extraction, ids, link, expiresAt: new Date(Math.ceil(expires / 1000) * 1000).toISOString() }
  }

  /** download.json?playlist=1; `audio`: each entry's audio formats only. */
  async function playlist(caller: Caller, input: string, opts: { audio?: boolean } = {}) {
    const { found, ids, link, expiresAt } = await answering(caller, input, true)
    if (!isPlaylist(found)) throw new Error('a playlist was asked for')
    const answer = playlistAnswer(withAudio(found), ids, link, expiresAt)
    if (opts.audio) for (const e of answer.entries) e.formats = audioOnly(e.formats, true)
    return answer
  }

  /** download.json; `audio`: only the audio formats (extracted and the page's own). */
  async function download(caller: Caller, input: string, opts: { audio?: boolean } = {}) {
    const { found: extraction, ids, link, expiresAt } = await answering(caller, input, false)
    if (isPlaylist(extraction)) throw new Error('a single video was asked for')
    const formats = offered(extraction)
    return {
      source: extraction.source,
      title: extraction.title,
      kind: extraction.kind,
      extractor: extraction.extractor,
      duration: extraction.duration,
      thumbnail: extraction.thumbnail,
      expires: expiresAt,
      formats: audioOnly(
        formats.map((f, i) => formatAnswer(f, link(ids[i]!))),
        opts.audio,
      ),
      subtitles: subtitleAnswers(extraction.subtitles ?? [], ids.slice(formats.length), link),
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
    playlist,
    ticket,
    /** GET/HEAD /dl/<id>: the bytes (delivery.ts). */
    serve: (t: TicketRow, request: Request) =>
      isSubtitleTicket(t) ? serveSubtitle(t, request, guard, stats) : delivery.serve(t, request),
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
    /** The downloads each account started from the dashboard (history.ts). */
    history: createHistory({ tickets, signer, clock, ticket }),
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
