// Media download (SPEC §6): download.json asks yt-dlp what a page offers and answers with signed links; the
// links (/dl/<id>) stream the bytes through us, or, for segmented and merged formats, have yt-dlp fetch them
// whole into a bounded cache first. Every request to the outside goes through the SSRF guard: ours through
// guardedFetch (which connects to the address it checked), yt-dlp's through the guard proxy.
//
// On the async storages (issue 22, SPEC §11): the tickets are TicketStorage's (tickets.ts, SQLite's or
// PostgreSQL's), so a link made by one node's download.json is redeemed through any node. Async: storing an
// answer's tickets, looking one up for /dl, the sweep and the count. Per node and in memory, as SPEC §11
// says: the 10-minute cache of answers (with the ticket ids each account was given), yt-dlp and the file
// cache in data_dir; the signed links use the shared signer, so any node checks them before any lookup.
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import type { Caller } from '../kernel/caller'
import type { Config } from '../kernel/config'
import { AppError, badRequest, notFound } from '../kernel/errors'
import { contentDisposition } from '../web/disposition'
import type { FaultLog } from '../web/fault-log'
import { checkUrl, GuardError, guardedFetch } from '../kernel/net/guard'
import { privateAddress } from '../kernel/net/private-address'
import type { LinkSigner } from '../kernel/signing'
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
import { findPhoto, PAGE_LIMIT, photoExtraction } from './photo'
import { createLimiter, runYtdlp } from './runner'
import type { TicketRow, TicketStorage } from './tickets'
import { unsafeYtdlpReason, type Ytdlp, type YtdlpChoice } from './ytdlp'

/** Results are kept per URL this long (SPEC §6): a second ask is answered without yt-dlp. */
export const CACHE_MS = 10 * 60 * 1000
const CACHE_ENTRIES = 500
/** Accounts whose tickets one cached result keeps; past that, each answer makes its own. */
const ACCOUNTS_PER_ENTRY = 64
const MAX_JSON_BYTES = 32 * 1024 * 1024
/** The per-connection read timeout yt-dlp is given (its --socket-timeout), within the run's own limit. */
const SOCKET_TIMEOUT_S = 15
/** Waiting for an upstream answer's headers (the body then streams as long as it takes). */
const UPSTREAM_HEADERS_MS = 30_000
/**
 * What only an attempt on the guard puts into yt-dlp's answer: a smuggled-data fragment (yt-dlp's way of
 * passing options between its extractors, which a page could forge) or a header that tells yt-dlp which proxy
 * to use. A safe yt-dlp never applies them; whatever version runs, an answer carrying them is not used.
 */
const GUARD_BYPASS = /__youtubedl_smuggle|ytdl-[a-z-]*proxy/i

export interface MediaDeps {
  /** The download tickets (tickets.ts: the engine's). */
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
}

interface CacheEntry {
  at: number
  extraction: Extraction
  /** Per account: its tickets' ids, once stored. */
  tickets: Map<number, Promise<number[]>>
}

export type ExtractionOutcome = 'ok' | 'photo' | 'cached' | 'unsupported' | 'private' | 'upstream' | 'timeout' | 'busy' | 'invalid'

const sha = (s: string) => createHash('sha256').update(s).digest('hex')

export function createMediaService({ tickets, config, signer, clock, ytdlp, proxy, canMerge, resolve, isAllowed, onOutcome, faults }: MediaDeps) {
  const base = config.server.base_url
  const allowPrivate = config.media.allow_private_networks
  const guard = { allowPrivate, resolve, isAllowed }
  const limiter = createLimiter(config.media.max_concurrent, Math.max(4, config.media.max_concurrent * 4))
  const fetchLimiter = createLimiter(config.media.max_concurrent, 16, 30_000)
  const cache = new Map<string, CacheEntry>()
  const inflight = new Map<string, Promise<Extraction>>()
  const mediaDir = join(config.data_dir, 'media')
  const cacheDir = join(mediaDir, 'cache')
  const tmpDir = join(mediaDir, 'tmp')
  const fetching = new Map<string, Promise<string>>()
  const stats = { bytesServed: 0 }
  const count = (o: ExtractionOutcome) => onOutcome?.(o)

  // A crash mid-fetch leaves a temporary folder behind; nothing else writes there.
  rmSync(tmpDir, { recursive: true, force: true })

  /** The URL as yt-dlp gets it: parsed and re-serialised, so what follows `--` is one well-formed URL. */
  function normalize(input: string): string {
    if (/[\s\u0000-\u001f\u007f]/.test(input))
      throw badRequest('invalid_url', 'The parameter "url" must not contain spaces or control characters (percent-encode them).')
    let url: URL
    try {
      url = new URL(input)
    } catch {
      throw badRequest('invalid_url', 'The parameter "url" must be an absolute URL with the scheme http or https.')
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw badRequest('invalid_url', 'The parameter "url" must be an absolute URL with the scheme http or https.')
    if (url.username || url.password)
      throw badRequest('invalid_url', 'The parameter "url" must not contain a user name or password.')
    if (GUARD_BYPASS.test(input)) throw privateAddress()
    url.hash = ''
    return url.href
  }

  async function guardCheck(url: string) {
    try {
      await checkUrl(url, { ...guard, timeoutMs: 10_000 })
    } catch (err) {
      if (err instanceof GuardError) {
        if (err.reason === 'private') throw privateAddress()
        if (err.reason === 'timeout') throw extractionTimeout(10)
        throw upstreamFailed(err.message)
      }
      throw err
    }
  }

  /** The page's picture when yt-dlp finds no media: fetched under the guard, its first MiB read. */
  async function photoOf(url: string): Promise<Extraction | null> {
    let answer
    try {
      answer = await guardedFetch(url, { ...guard, method: 'GET', timeoutMs: 15_000, headers: { accept: 'text/html,image/*;q=0.9,*/*;q=0.5' } })
    } catch (err) {
      if (err instanceof GuardError && err.reason === 'private') throw privateAddress()
      return null
    }
    const { response } = answer
    const type = (response.headers.get('content-type') ?? '').toLowerCase()
    if (!response.ok) {
      void response.body?.cancel().catch(() => {})
      return null
    }
    if (type.startsWith('image/')) {
      void response.body?.cancel().catch(() => {})
      return photoExtraction({ url: answer.url, title: '', width: null, height: null }, url, type)
    }
    if (!type.includes('html') || !response.body) {
      void response.body?.cancel().catch(() => {})
      return null
    }
    const chunks: Uint8Array[] = []
    let size = 0
    const reader = response.body.getReader()
    try {
      while (size < PAGE_LIMIT) {
        const { done, value } = await reader.read()
        if (done) break
        chunks.push(value)
        size += value.byteLength
      }
    } finally {
      void reader.cancel().catch(() => {})
    }
    const photo = findPhoto(Buffer.concat(chunks).toString('utf8'), answer.url)
    return photo ? photoExtraction(photo, url) : null
  }

  /** The yt-dlp to run: none, or one too old to be kept behind the guard (SPEC §6), is a 503 and never runs. */
  async function runnable(): Promise<YtdlpChoice> {
    const choice = await ytdlp.current()
    if (!choice) throw new AppError(503, 'unavailable', 'Media download is not available: no yt-dlp was found (see `linkbox doctor`).')
    const unsafe = unsafeYtdlpReason(choice.version)
    if (unsafe) throw new AppError(503, 'unavailable', `Media download is not available: the yt-dlp found is not run, as ${unsafe} (see \`linkbox doctor\`).`)
    return choice
  }

  /**
   * Every address yt-dlp reported, checked by the guard before any of it is handed out or fetched: a format on a
   * private host is dropped (all of them: the page is refused), a thumbnail on one is left out. The download
   * itself is checked again (guardedFetch, or the proxy for yt-dlp's own fetches).
   */
  async function screen(extraction: Extraction): Promise<Extraction> {
    const verdicts = new Map<string, Promise<boolean>>()
    const allowed = (raw: string) => {
      let host: string
      try {
        host = new URL(raw).host
      } catch {
        return Promise.resolve(false)
      }
      let verdict = verdicts.get(host)
      if (!verdict) {
        verdict = checkUrl(raw, { ...guard, timeoutMs: 10_000 }).then(
          () => true,
          // Only a refusal drops it: a name that does not resolve now is tried again, under the guard, at download.
          (err) => !(err instanceof GuardError && (err.reason === 'private' || err.reason === 'scheme')),
        )
        verdicts.set(host, verdict)
      }
      return verdict
    }
    const kept = await Promise.all(extraction.formats.map((f) => (GUARD_BYPASS.test(f.upstreamUrl) ? false : allowed(f.upstreamUrl))))
    const formats = extraction.formats.filter((_, i) => kept[i])
    if (formats.length === 0) throw privateAddress()
    const thumbnail = extraction.thumbnail && !GUARD_BYPASS.test(extraction.thumbnail) && (await allowed(extraction.thumbnail)) ? extraction.thumbnail : null
    return { ...extraction, formats, thumbnail }
  }

  async function runExtraction(url: string): Promise<Extraction> {
    const choice = await runnable()
    const timeout = config.media.extract_timeout
    const result = await runYtdlp({
      command: choice.argv,
      args: [
        '--ignore-config', '--no-cache-dir', '--no-playlist', '--no-warnings',
        '--socket-timeout', String(Math.min(SOCKET_TIMEOUT_S, timeout)),
        '--dump-single-json', '--', url,
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
      const photo = await photoOf(url)
      if (photo) return photo
      throw unsupportedUrl()
    }
    throw upstreamFailed(errorLine(result.stderr))
  }

  const outcomeOf = (err: unknown): ExtractionOutcome => {
    if (!(err instanceof AppError)) return 'upstream'
    return (
      ({ private_address: 'private', unsupported_url: 'unsupported', timeout: 'timeout', busy: 'busy', invalid_url: 'invalid' } as const)[
        err.code as 'busy'
      ] ?? 'upstream'
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
        await guardCheck(url)
        return screen(await runExtraction(url))
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
      entry.extraction.formats.map((f: MediaFormat) => ({
        account_id: caller.accountId,
        page_url: url,
        format_id: f.id,
        method: f.method,
        upstream_url: f.upstreamUrl,
        headers: JSON.stringify(f.headers),
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

  /** download.json */
  async function download(caller: Caller, input: string) {
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
      formats: extraction.formats.map((f, i) => ({
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
      })),
    }
  }

  /**
   * The ticket behind a signed link, or an AppError (403 tampered, 410 expired, 404 unknown). The signature
   * is checked before anything is looked up, so a guessed id learns nothing.
   */
  async function ticket(idText: string, exp: string | null, sig: string | null): Promise<TicketRow> {
    if (!/^[1-9][0-9]{0,15}$/.test(idText)) throw notFound('There is no such download.')
    const check = signer.check(`dl-${idText}`, exp, sig, clock())
    if (check === 'tampered') throw new AppError(403, 'invalid_signature', 'This link is not valid: its signature does not match.')
    if (check === 'expired') throw new AppError(410, 'expired', 'This link has expired: ask download.json for a new one.')
    const row = await tickets.ticket(Number(idText))
    if (!row) throw notFound('There is no such download.')
    return row
  }

  /** Fetches a segmented or merged format whole into the cache (once, however many ask at the same time). */
  function cached(t: TicketRow): Promise<string> {
    const ext = t.filename.slice(t.filename.lastIndexOf('.') + 1)
    const key = sha(`${t.page_url}\n${t.format_id}`).slice(0, 40)
    const path = join(cacheDir, `${key}.${ext}`)
    try {
      statSync(path)
      const now = new Date()
      utimesSync(path, now, now) // most recently used: evicted last
      return Promise.resolve(path)
    } catch {}
    let running = fetching.get(key)
    if (!running) {
      running = fetchLimiter.run(() => fetchWhole(t, path, ext))
      fetching.set(key, running)
      void running.finally(() => fetching.delete(key)).catch(() => {})
    }
    return running
  }

  async function fetchWhole(t: TicketRow, path: string, ext: string): Promise<string> {
    const choice = await runnable()
    mkdirSync(tmpDir, { recursive: true, mode: 0o700 })
    mkdirSync(cacheDir, { recursive: true, mode: 0o700 })
    const work = mkdtempSync(join(tmpDir, 'fetch-'))
    try {
      const merged = t.format_id.includes('+')
      const result = await runYtdlp({
        command: choice.argv,
        args: [
          '--ignore-config', '--no-cache-dir', '--no-playlist', '--no-warnings', '--no-progress', '--no-part', '--no-mtime',
          '--socket-timeout', String(SOCKET_TIMEOUT_S),
          // yt-dlp's own downloaders, which go through the proxy; ffmpeg only joins local files.
          '--hls-prefer-native',
          '--max-filesize', String(config.media.cache_max_bytes),
          '-f', t.format_id,
          ...(merged ? ['--merge-output-format', ext] : []),
          '-o', join(work, 'media.%(ext)s'),
          '--', t.page_url,
        ],
        proxy: await proxy(),
        // Fetching a whole film takes longer than reading a page.
        timeoutMs: Math.min(3600, config.media.extract_timeout * 20) * 1000,
        maxStdoutBytes: 1024 * 1024,
        cwd: work,
      })
      const files = readdirSync(work).filter((f) => f.startsWith('media.'))
      if (result.code !== 0 || files.length !== 1) {
        if (result.timedOut) throw new AppError(504, 'timeout', 'The file could not be fetched in time.')
        const kind = classifyFailure(result.stderr)
        if (kind === 'private') throw new AppError(502, 'upstream_failed', 'The file leads to a private or local network address.')
        throw upstreamFailed(errorLine(result.stderr) || 'yt-dlp could not fetch it')
      }
      renameSync(join(work, files[0]!), path)
      evict(path)
      return path
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  }

  /** Keeps the cache under media.cache_max_bytes, least recently used first out (never `keep`). */
  function evict(keep: string) {
    const files = readdirSync(cacheDir).flatMap((name) => {
      try {
        const s = statSync(join(cacheDir, name))
        return [{ path: join(cacheDir, name), size: s.size, used: s.mtimeMs }]
      } catch {
        return []
      }
    })
    let total = files.reduce((n, f) => n + f.size, 0)
    for (const f of files.sort((a, b) => a.used - b.used)) {
      if (total <= config.media.cache_max_bytes) break
      if (f.path === keep) continue
      rmSync(f.path, { force: true }) // a download reading it keeps its open file
      total -= f.size
    }
  }

  const counted = (body: ReadableStream<Uint8Array>) =>
    body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, out) {
          stats.bytesServed += chunk.byteLength
          out.enqueue(chunk)
        },
      }),
    )

  const fileHeaders = (t: TicketRow): Record<string, string> => ({
    'content-disposition': contentDisposition(t.filename),
    // Whatever the bytes are (an HTML page posing as a video), they are never run or shown as this origin's.
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'cache-control': 'private, max-age=3600',
    'referrer-policy': 'no-referrer',
  })

  /** Serves a file of the cache, with Range (one range; several are answered whole, as RFC 9110 allows). */
  function serveFile(t: TicketRow, path: string, request: Request): Response {
    const file = Bun.file(path)
    const size = file.size
    const headers: Record<string, string> = { ...fileHeaders(t), 'content-type': t.content_type, 'accept-ranges': 'bytes' }
    const range = parseRange(request.headers.get('range'), size)
    if (range === 'unsatisfiable')
      return new Response(null, { status: 416, headers: { ...headers, 'content-range': `bytes */${size}` } })
    const head = request.method === 'HEAD'
    if (range) {
      const length = range.end - range.start + 1
      if (!head) stats.bytesServed += length
      return new Response(head ? null : file.slice(range.start, range.end + 1), {
        status: 206,
        headers: { ...headers, 'content-range': `bytes ${range.start}-${range.end}/${size}`, 'content-length': String(length) },
      })
    }
    if (!head) stats.bytesServed += size
    return new Response(head ? null : file, { headers: { ...headers, 'content-length': String(size) } })
  }

  // Upstream headers worth repeating to the client (everything else, cookies above all, stays with us).
  const PASSED = ['content-length', 'content-range', 'accept-ranges', 'last-modified', 'etag']

  /** GET/HEAD /dl/<id>: the bytes, streamed from upstream with Range passed on, or from the cache. */
  async function serve(t: TicketRow, request: Request): Promise<Response> {
    if (t.method === 'ytdlp') return serveFile(t, await cached(t), request)
    const head = request.method === 'HEAD'
    // identity: a compressed answer would be decompressed by fetch, and its Content-Length and byte ranges
    // would no longer describe what we send.
    const headers: Record<string, string> = { ...JSON.parse(t.headers), 'accept-encoding': 'identity' }
    const range = request.headers.get('range')
    if (range && range.length <= 200 && /^bytes=[0-9]*-[0-9]*$/.test(range.trim())) headers.range = range.trim()
    const ifRange = request.headers.get('if-range')
    if (headers.range && ifRange && ifRange.length <= 200 && !/[\r\n]/.test(ifRange)) headers['if-range'] = ifRange
    let answer
    try {
      answer = await guardedFetch(t.upstream_url, {
        ...guard,
        method: head ? 'HEAD' : 'GET',
        headers,
        signal: request.signal,
        timeoutMs: UPSTREAM_HEADERS_MS,
      })
    } catch (err) {
      if (err instanceof GuardError) {
        if (err.reason === 'private') throw new AppError(502, 'upstream_failed', 'The file leads to a private or local network address.')
        if (err.reason === 'timeout') throw new AppError(504, 'timeout', 'The file\'s server did not answer in time.')
        throw upstreamFailed(err.message)
      }
      throw err
    }
    const { response } = answer
    if (response.status !== 200 && response.status !== 206 && response.status !== 416) {
      void response.body?.cancel().catch(() => {})
      throw upstreamFailed(`its server answered HTTP ${response.status}; ask download.json again`)
    }
    const out: Record<string, string> = { ...fileHeaders(t), 'content-type': mediaType(response.headers.get('content-type'), t.content_type) }
    for (const name of PASSED) {
      const value = response.headers.get(name)
      if (value && value.length <= 200 && !/[\r\n]/.test(value)) out[name] = value
    }
    if (head || !response.body) {
      void response.body?.cancel().catch(() => {})
      return new Response(null, { status: response.status, headers: out })
    }
    // With a length, the body goes out as fetch gave it, counted up front as serveFile counts a file: Bun
    // pipes its own stream natively, where a JS stage per chunk cost a third of the throughput (bun run
    // bench media). Without one, each chunk is counted on its way.
    const length = /^[0-9]{1,15}$/.test(out['content-length'] ?? '') ? Number(out['content-length']) : null
    if (length === null) return new Response(counted(response.body), { status: response.status, headers: out })
    stats.bytesServed += length
    return new Response(response.body, { status: response.status, headers: out })
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
    download,
    ticket,
    serve,
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

/** A media type worth repeating: upstream's when it says what the bytes are, else the format's. */
function mediaType(upstream: string | null, fallback: string): string {
  const t = (upstream ?? '').split(';')[0]!.trim().toLowerCase()
  return /^(video|audio|image)\/[a-z0-9.+-]{1,64}$/.test(t) ? t : fallback
}

/** `bytes=a-b`, `a-` or `-n` over a file of `size` bytes: the range, null (serve whole) or unsatisfiable. */
export function parseRange(header: string | null, size: number): { start: number; end: number } | null | 'unsatisfiable' {
  if (!header) return null
  const m = /^\s*bytes\s*=\s*([0-9]*)\s*-\s*([0-9]*)\s*$/i.exec(header)
  if (!m || (m[1] === '' && m[2] === '')) return null
  if (m[1] === '') {
    const n = Number(m[2])
    if (n === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - n), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  if (start >= size || start > end) return 'unsatisfiable'
  return { start, end }
}
