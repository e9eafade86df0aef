// The bytes of a ticket, at GET/HEAD /dl/<id>: streamed from upstream with Range passed on, or, for segmented
// and merged formats, fetched whole by yt-dlp into a bounded cache in data_dir first and served from there.
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../kernel/config'
import { AppError } from '../kernel/errors'
import { guardedFetch } from '../kernel/net/guard'
import { contentDisposition } from '../web/disposition'
import { NO_COOKIES, type CookieJar } from './cookies'
import { classifyFailure, errorLine, upstreamFailed } from './extract'
import { fileFetchFailure, type MediaGuard } from './page'
import { convertAudio, isAudioTicket, type AudioDeps } from './audio'
import {
  clientLeft,
  createPreparations,
  type Preparation,
  type RunControl,
  untilAborted,
  YTDLP_PROGRESS,
  ytdlpProgress,
} from './prepare'
import { createLimiter, runYtdlp } from './runner'
import type { TicketRow } from './storage/contract'
import type { YtdlpChoice } from './ytdlp'

/** The per-connection read timeout yt-dlp is given (its --socket-timeout), within the run's own limit. */
export const SOCKET_TIMEOUT_S = 15
/** Waiting for an upstream answer's headers (the body then streams as long as it takes). */
const UPSTREAM_HEADERS_MS = 30_000

const sha = (s: string) => createHash('sha256').update(s).digest('hex')

export interface DeliveryDeps {
  config: Config
  guard: MediaGuard
  /** The yt-dlp to run (a 503 when there is none that may run). */
  runnable: () => Promise<YtdlpChoice>
  /** The guard proxy's URL, which yt-dlp is told to use. */
  proxy: () => Promise<string | null>
  /** Bytes sent, for /metrics. */
  stats: { bytesServed: number }
  /** The admin's cookies per site: for the page yt-dlp fetches, and the URL we stream. */
  cookies?: CookieJar
  /** Sets a request's idle timeout (0: none): a client waiting for a preparation has nothing sent to it yet. */
  holdOpen?: (request: Request, seconds: number) => void
}

/** The server's idle timeout (web/server.ts), given back once a held request has its file. */
const IDLE_SECONDS = 10

/** The headers of every file a ticket gives. */
export const fileHeaders = (t: TicketRow): Record<string, string> => ({
  'content-disposition': contentDisposition(t.filename),
  // Whatever the bytes are (an HTML page posing as a video), they are never run or shown as this origin's.
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  'cache-control': 'private, max-age=3600',
  'referrer-policy': 'no-referrer',
})

export function createDelivery({ config, guard, runnable, proxy, stats, cookies, holdOpen }: DeliveryDeps) {
  const fetchLimiter = createLimiter(config.media.max_concurrent, 16, 30_000)
  const mediaDir = join(config.data_dir, 'media')
  const cacheDir = join(mediaDir, 'cache')
  const tmpDir = join(mediaDir, 'tmp')
  // At most what the limiter admits (its slots and its queue) is prepared at once.
  const preparations = createPreparations(config.media.max_concurrent + 16)
  const audioDeps: AudioDeps = {
    config,
    guard,
    tmpDir,
    slot: (work) => fetchLimiter.run(work),
    cookieHeader: async (url) => (cookies ? cookies.header(url) : null),
    sourceFile: async (source, control) => {
      const p = prepare(source, control.signal)
      if (!p) return pathOf(source).path
      const stop = p.watch(control.report)
      try {
        return await untilAborted(p.done, control.signal)
      } finally {
        stop()
      }
    },
  }

  // A crash mid-fetch leaves a temporary folder behind; nothing else writes there.
  rmSync(tmpDir, { recursive: true, force: true })

  function pathOf(t: TicketRow) {
    const ext = t.filename.slice(t.filename.lastIndexOf('.') + 1)
    const key = sha(`${t.page_url}\n${t.format_id}`).slice(0, 40)
    return { key, ext, path: join(cacheDir, `${key}.${ext}`) }
  }

  /**
   * The preparation of a segmented, merged or extracted format (once, however many ask at the same time),
   * joined as a waiter until `signal` aborts; null when its file is in the cache already.
   */
  function prepare(t: TicketRow, signal: AbortSignal): Preparation | null {
    const { key, ext, path } = pathOf(t)
    try {
      statSync(path)
      const now = new Date()
      utimesSync(path, now, now) // most recently used: evicted last
      return null
    } catch {}
    return preparations.join(
      key,
      async (control) => {
        mkdirSync(tmpDir, { recursive: true, mode: 0o700 })
        mkdirSync(cacheDir, { recursive: true, mode: 0o700 })
        const done = isAudioTicket(t)
          ? await convertAudio(audioDeps, t, path, control)
          : await fetchLimiter.run(() => fetchWhole(t, path, ext, control))
        evict(done)
        return done
      },
      signal,
    )
  }

  /** The cache file of a prepared format, waiting (as long as the client does) for it to be made. */
  async function cached(t: TicketRow, signal: AbortSignal): Promise<string> {
    const p = prepare(t, signal)
    return p ? untilAborted(p.done, signal) : pathOf(t).path
  }

  async function fetchWhole(t: TicketRow, path: string, ext: string, control: RunControl): Promise<string> {
    if (control.signal.aborted) throw clientLeft()
    const choice = await runnable()
    const work = mkdtempSync(join(tmpDir, 'fetch-'))
    try {
      const merged = t.format_id.includes('+')
      const proxyUrl = await proxy()
      // The page's site's cookies, if an admin gave any: a private file, removed when the run ends.
      const withCookies = cookies ? await cookies.forRun(t.page_url) : NO_COOKIES
      const result = await runYtdlp({
        command: choice.argv,
        args: [
          '--ignore-config',
          '--no-cache-dir',
          '--no-playlist',
          '--no-warnings',
          ...YTDLP_PROGRESS,
          '--no-part',
          '--no-mtime',
          '--socket-timeout',
          String(SOCKET_TIMEOUT_S),
          // yt-dlp's own downloaders, which go through the proxy; ffmpeg only joins local files.
          '--hls-prefer-native',
          '--max-filesize',
          String(config.media.cache_max_bytes),
          '-f',
          t.format_id,
          ...(merged ? ['--merge-output-format', ext] : []),
          '-o',
          join(work, 'media.%(ext)s'),
          ...withCookies.args,
          '--',
          t.page_url,
        ],
        proxy: proxyUrl,
        // Fetching a whole film takes longer than reading a page.
        timeoutMs: Math.min(3600, config.media.extract_timeout * 20) * 1000,
        maxStdoutBytes: 0,
        cwd: work,
        signal: control.signal,
        onLine: (line) => {
          const p = ytdlpProgress(line)
          if (p) control.report(p)
        },
      }).finally(withCookies.remove)
      if (control.signal.aborted) throw clientLeft()
      const files = readdirSync(work).filter((f) => f.startsWith('media.'))
      if (result.code !== 0 || files.length !== 1) {
        if (result.timedOut) throw new AppError(504, 'timeout', 'The file could not be fetched in time.')
        const kind = classifyFailure(result.stderr)
        if (kind === 'private')
          throw new AppError(502, 'upstream_failed', 'The file leads to a private or local network address.')
        throw upstreamFailed(errorLine(result.stderr) || 'yt-dlp could not fetch it')
      }
      renameSync(join(work, files[0]!), path)
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

  /** Serves a file of the cache, with Range (one range; several are answered whole, as RFC 9110 allows). */
  function serveFile(t: TicketRow, path: string, request: Request): Response {
    const file = Bun.file(path)
    const size = file.size
    const headers: Record<string, string> = {
      ...fileHeaders(t),
      'content-type': t.content_type,
      'accept-ranges': 'bytes',
    }
    const range = parseRange(request.headers.get('range'), size)
    if (range === 'unsatisfiable')
      return new Response(null, { status: 416, headers: { ...headers, 'content-range': `bytes */${size}` } })
    const head = request.method === 'HEAD'
    if (range) {
      const length = range.end - range.start + 1
      if (!head) stats.bytesServed += length
      return new Response(head ? null : file.slice(range.start, range.end + 1), {
        status: 206,
        headers: {
          ...headers,
          'content-range': `bytes ${range.start}-${range.end}/${size}`,
          'content-length': String(length),
        },
      })
    }
    if (!head) stats.bytesServed += size
    return new Response(head ? null : file, { headers: { ...headers, 'content-length': String(size) } })
  }

  // Upstream headers worth repeating to the client (everything else, cookies above all, stays with us).
  const PASSED = ['content-length', 'content-range', 'accept-ranges', 'last-modified', 'etag']

  /** GET/HEAD /dl/<id>: the bytes, streamed from upstream with Range passed on, or from the cache. */
  async function serve(t: TicketRow, request: Request): Promise<Response> {
    if (t.method === 'ytdlp' || isAudioTicket(t)) {
      // Bun closes a connection idle for 10 s, and the client's leaving would end the run it waits for.
      holdOpen?.(request, 0)
      try {
        return serveFile(t, await cached(t, request.signal), request)
      } finally {
        holdOpen?.(request, IDLE_SECONDS)
      }
    }
    const head = request.method === 'HEAD'
    // identity: a compressed answer would be decompressed by fetch, and its Content-Length and byte ranges
    // would no longer describe what we send.
    const headers: Record<string, string> = { ...JSON.parse(t.headers), 'accept-encoding': 'identity' }
    // The site's cookies that match this URL (host, path, secure), if an admin gave any; guardedFetch drops them
    // when a redirect leaves the origin.
    const cookie = cookies ? await cookies.header(t.upstream_url) : null
    if (cookie) headers.cookie = cookie
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
      throw fileFetchFailure(err)
    }
    const { response } = answer
    if (response.status !== 200 && response.status !== 206 && response.status !== 416) {
      void response.body?.cancel().catch(() => {})
      throw upstreamFailed(`its server answered HTTP ${response.status}; ask download.json again`)
    }
    const out: Record<string, string> = {
      ...fileHeaders(t),
      'content-type': mediaType(response.headers.get('content-type'), t.content_type),
    }
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

  return { serve, prepare, limiter: fetchLimiter, preparations }
}

/** A media type worth repeating: upstream's when it says what the bytes are, else the format's. */
function mediaType(upstream: string | null, fallback: string): string {
  const t = (upstream ?? '').split(';')[0]!.trim().toLowerCase()
  return /^(video|audio|image)\/[a-z0-9.+-]{1,64}$/.test(t) ? t : fallback
}

/** `bytes=a-b`, `a-` or `-n` over a file of `size` bytes: the range, null (serve whole) or unsatisfiable. */
export function parseRange(
  header: string | null,
  size: number,
): { start: number; end: number } | null | 'unsatisfiable' {
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
