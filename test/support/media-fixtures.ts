// Local pages and media files for the media tests and the benchmark: the real yt-dlp is pointed at them on
// 127.0.0.1, so what it finds (and what the service streams back) is known to the byte. The media are made
// with ffmpeg once per test process (tiny: 2 s of 160x120 at 10 fps plus a sine tone) and served from
// memory; Range is done here, by hand, so the tests know exactly what an upstream with ranges answers.
//
// Fixtures (`url(name)`), and what yt-dlp 2025.04.30 makes of each (test/media-fixtures.test.ts checks it):
//   video-page          <video src> (relative) with a poster; title from <title>      → generic, 1 http format
//   og-video-page       only og:video (+ og:title, og:image), no <video>              → generic, 1 http format
//   mp4                 the clip itself, video/mp4 (h264 + aac)                       → generic direct link
//   big-mp4             the clip followed by a 16 MiB mp4 `free` box: still playable, big enough to time
//   m4a / mp3           2 s of sine, audio/mp4 and audio/mpeg                         → generic direct link
//   jpg                 the photo itself, image/jpeg
//   photo-page          og:image with a relative URL and `&amp;` in it, og:title with an entity → no media
//   twitter-photo-page  only twitter:image (root-relative, `&amp;` in it)            → no media
//   empty-page          a title and a sentence                                        → no media
//   missing             a 404 page
//   hls-page / hls      a page whose <video><source> is the .m3u8 / the .m3u8 itself (4 .ts segments)
//   dash-page / dash    a page whose <video><source> is the .mpd / the .mpd itself: separate video-only
//                       and audio-only representations (4 .m4s segments each, plus init)
//   slow                the video page, answered after 30 s (the extraction timeout test)
//   redirect            /go?to=/pages/video.html: a 302 to the video page
//   subtitles-page      <video> with <track>s en and fr (media-fixtures-subs.ts)     → generic, subtitles en, fr
//   playlist-page       three <video>s, three copies of the clip                       → generic, a playlist of 3
// Every route also takes `?delay=<ms>` (at most 120 s) before answering, and /go takes any `to`.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SUBS_PAGES, subsFiles } from './media-fixtures-subs'

export type FixtureName =
  | 'video-page'
  | 'og-video-page'
  | 'mp4'
  | 'big-mp4'
  | 'm4a'
  | 'mp3'
  | 'jpg'
  | 'photo-page'
  | 'twitter-photo-page'
  | 'empty-page'
  | 'missing'
  | 'hls-page'
  | 'hls'
  | 'dash-page'
  | 'dash'
  | 'slow'
  | 'redirect'
  | 'subtitles-page'
  | 'playlist-page'

export interface FixtureRequest {
  method: string
  /** Path and query as the client sent them. */
  path: string
  range: string | null
  /** Lower-case names. */
  headers: Record<string, string>
}

export interface MediaFixtures {
  /** http://127.0.0.1:<port> */
  origin: string
  /** The page or file URL of a fixture. */
  url(name: FixtureName): string
  /** The exact bytes served at /media/<file>: 'clip.mp4', 'hls/seg0.ts', 'dash/init-stream0.m4s', … */
  bytes(file: string): Uint8Array<ArrayBuffer>
  /** The last MAX_LOGGED requests, oldest first. */
  requests: FixtureRequest[]
  stop(): Promise<void>
}

/** Durations and sizes the tests may assert on. */
export const CLIP = { width: 160, height: 120, fps: 10, seconds: 2, hlsSegments: 4, dashSegments: 4 } as const
export const BIG_MP4_PADDING = 16 * 1024 * 1024
export const SLOW_MS = 30_000
const MAX_DELAY_MS = 120_000
/** The request log is for assertions, not an archive: a benchmark's many requests must not grow it. */
const MAX_LOGGED = 2000

const ROUTES: Record<FixtureName, string> = {
  'video-page': '/pages/video.html',
  'og-video-page': '/pages/og-video.html',
  mp4: '/media/clip.mp4',
  'big-mp4': '/media/big.mp4',
  m4a: '/media/tone.m4a',
  mp3: '/media/tone.mp3',
  jpg: '/media/photo.jpg',
  'photo-page': '/pages/photo.html',
  'twitter-photo-page': '/pages/twitter-photo.html',
  'empty-page': '/pages/empty.html',
  missing: '/pages/missing.html',
  'hls-page': '/pages/hls.html',
  hls: '/media/hls/index.m3u8',
  'dash-page': '/pages/dash.html',
  dash: '/media/dash/manifest.mpd',
  slow: `/pages/video.html?delay=${SLOW_MS}`,
  redirect: `/go?to=${encodeURIComponent('/pages/video.html')}`,
  'subtitles-page': '/pages/subtitles.html',
  'playlist-page': '/pages/three-videos.html',
}

const page = (head: string, body: string) =>
  `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n${head}\n</head>\n<body>\n${body}\n</body>\n</html>\n`

const PAGES: Record<string, string> = {
  'video.html': page(
    '<title>Fixture video page</title>',
    '<h1>A clip</h1>\n<video src="../media/clip.mp4" poster="../media/photo.jpg" controls></video>',
  ),
  'og-video.html': page(
    [
      '<title>Fixture og:video page</title>',
      '<meta property="og:title" content="Open Graph clip">',
      '<meta property="og:video" content="/media/clip.mp4">',
      '<meta property="og:video:type" content="video/mp4">',
      '<meta property="og:image" content="/media/photo.jpg">',
    ].join('\n'),
    '<p>The video is only named in the head.</p>',
  ),
  'photo.html': page(
    [
      '<title>Fixture photo page</title>',
      '<meta property="og:title" content="A photo &amp; a caption">',
      '<meta property="og:image" content="../media/photo.jpg?w=160&amp;h=120">',
    ].join('\n'),
    '<p>A photo, named only in the head.</p>',
  ),
  'twitter-photo.html': page(
    [
      '<title>Fixture twitter photo page</title>',
      '<meta name="twitter:image" content="/media/photo.jpg?from=twitter&amp;size=small">',
    ].join('\n'),
    '<p>A photo, named only by a Twitter card.</p>',
  ),
  'empty.html': page('<title>Fixture empty page</title>', '<p>Nothing to download here.</p>'),
  'hls.html': page(
    '<title>Fixture HLS page</title>',
    '<video controls>\n<source src="/media/hls/index.m3u8" type="application/x-mpegURL">\n</video>',
  ),
  'dash.html': page(
    '<title>Fixture DASH page</title>',
    '<video controls>\n<source src="/media/dash/manifest.mpd" type="application/dash+xml">\n</video>',
  ),
  ...SUBS_PAGES,
}
const NOT_FOUND_PAGE = page('<title>Not found</title>', '<p>No such page.</p>')

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  mp4: 'video/mp4',
  m4a: 'audio/mp4',
  mp3: 'audio/mpeg',
  jpg: 'image/jpeg',
  m3u8: 'application/vnd.apple.mpegurl',
  ts: 'video/mp2t',
  mpd: 'application/dash+xml',
  m4s: 'video/iso.segment',
  vtt: 'text/vtt; charset=utf-8',
}
const typeOf = (name: string) => TYPES[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream'

// --- the media, made once per process ---------------------------------------------------------------

let made: Promise<Map<string, Uint8Array<ArrayBuffer>>> | undefined

async function ffmpeg(dir: string, args: string[]): Promise<void> {
  const proc = Bun.spawn(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args], {
    cwd: dir,
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
  if (code !== 0) throw new Error(`ffmpeg ${args.join(' ')} exited ${code}: ${err.slice(0, 2000)}`)
}

/** An mp4 `free` box: players skip it, so the file stays playable while it grows. */
function freeBox(size: number): Uint8Array<ArrayBuffer> {
  const box = new Uint8Array(size)
  new DataView(box.buffer).setUint32(0, size)
  box.set(new TextEncoder().encode('free'), 4)
  // Not zeros: a compressing hop on the way would otherwise make the throughput figures meaningless.
  let x = 0x9e3779b9
  for (let i = 8; i < size; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    box[i] = x & 0xff
  }
  return box
}

async function makeMedia(): Promise<Map<string, Uint8Array<ArrayBuffer>>> {
  // Everything is read into memory and the folder removed at once: no exit hook to rely on.
  const dir = mkdtempSync(join(tmpdir(), 'linkbox-media-'))
  try {
    return await makeMediaIn(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function makeMediaIn(dir: string): Promise<Map<string, Uint8Array<ArrayBuffer>>> {
  const { width, height, fps, seconds } = CLIP
  // A keyframe every 0.6 s, so HLS and DASH cut 4 segments out of 2 s (0.6+0.6+0.6+0.2); not 0.5 s, which
  // ffmpeg rounds (lrint) to an #EXT-X-TARGETDURATION of 0.
  const GOP = 6
  const video = ['-f', 'lavfi', '-i', `testsrc=size=${width}x${height}:rate=${fps}:duration=${seconds}`]
  const tone = ['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=44100:duration=${seconds}`]
  const h264 = [
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-pix_fmt',
    'yuv420p',
    '-g',
    String(GOP),
    '-sc_threshold',
    '0',
  ]
  const aac = ['-c:a', 'aac', '-b:a', '32k']
  await ffmpeg(dir, [...video, ...tone, ...h264, ...aac, '-shortest', '-movflags', '+faststart', 'clip.mp4'])
  await Promise.all([
    ffmpeg(dir, [...tone, ...aac, 'tone.m4a']),
    ffmpeg(dir, [...tone, '-c:a', 'libmp3lame', '-b:a', '32k', 'tone.mp3']),
    ffmpeg(dir, ['-f', 'lavfi', '-i', `testsrc=size=${width}x${height}:rate=1`, '-frames:v', '1', 'photo.jpg']),
    (async () => {
      await Bun.write(join(dir, 'hls/.keep'), '')
      await ffmpeg(dir, [
        '-i',
        'clip.mp4',
        '-c',
        'copy',
        '-f',
        'hls',
        '-hls_time',
        '0.5',
        '-hls_list_size',
        '0',
        '-hls_segment_filename',
        'hls/seg%d.ts',
        'hls/index.m3u8',
      ])
    })(),
    (async () => {
      await Bun.write(join(dir, 'dash/.keep'), '')
      await ffmpeg(dir, [
        '-i',
        'clip.mp4',
        '-map',
        '0:v',
        '-map',
        '0:a',
        '-c',
        'copy',
        '-f',
        'dash',
        '-seg_duration',
        '0.5',
        '-use_template',
        '1',
        '-use_timeline',
        '1',
        'dash/manifest.mpd',
      ])
    })(),
  ])
  const files = new Map<string, Uint8Array<ArrayBuffer>>()
  for (const sub of ['', 'hls/', 'dash/'])
    for (const name of readdirSync(join(dir, sub), { withFileTypes: true }))
      if (name.isFile() && !name.name.startsWith('.'))
        files.set(sub + name.name, new Uint8Array(readFileSync(join(dir, sub, name.name))))
  const clip = files.get('clip.mp4')!
  const big = new Uint8Array(clip.length + BIG_MP4_PADDING)
  big.set(clip)
  big.set(freeBox(BIG_MP4_PADDING), clip.length)
  files.set('big.mp4', big)
  for (const [name, body] of Object.entries(subsFiles(clip))) files.set(name, body)
  return files
}

// --- serving -----------------------------------------------------------------------------------------

type Range = { start: number; end: number } | 'unsatisfiable' | null

/**
 * One `bytes=` range (RFC 9110 §14.1.2). Several ranges or a malformed header are ignored, which the RFC
 * allows (the whole body, 200); a well-formed range that starts past the end is unsatisfiable (416).
 */
export function parseRange(header: string | null, size: number): Range {
  const m = header === null ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!m || (m[1] === '' && m[2] === '')) return null
  if (m[1] === '') {
    const suffix = Number(m[2])
    if (suffix === 0 || size === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === '' ? Infinity : Number(m[2])
  if (end < start) return null
  if (start >= size) return 'unsatisfiable'
  return { start, end: Math.min(end, size - 1) }
}

function serveBody(req: Request, body: Uint8Array<ArrayBuffer>, type: string, status = 200): Response {
  const headers: Record<string, string> = { 'Content-Type': type, 'Accept-Ranges': 'bytes' }
  const range = status === 200 ? parseRange(req.headers.get('range'), body.length) : null
  if (range === 'unsatisfiable') {
    return new Response(null, { status: 416, headers: { ...headers, 'Content-Range': `bytes */${body.length}` } })
  }
  let part = body
  if (range) {
    part = body.subarray(range.start, range.end + 1)
    headers['Content-Range'] = `bytes ${range.start}-${range.end}/${body.length}`
    status = 206
  }
  headers['Content-Length'] = String(part.length)
  return new Response(req.method === 'HEAD' ? null : part, { status, headers })
}

/** Waits, unless the client goes away first (a killed yt-dlp must not keep the server's timers alive). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}

export async function startMediaFixtures(opts: { delayMs?: number } = {}): Promise<MediaFixtures> {
  made ??= makeMedia()
  const files = await made
  const requests: FixtureRequest[] = []
  const stopping = new AbortController()

  const answer = (req: Request, url: URL): Response => {
    const path = url.pathname
    if (path === '/go') {
      const to = url.searchParams.get('to') ?? ''
      // Printable ASCII only: anything else (CR, LF, spaces) must not reach a header.
      if (!/^[\x21-\x7e]{1,2000}$/.test(to)) return new Response('bad to\n', { status: 400 })
      return new Response(null, { status: 302, headers: { Location: to } })
    }
    if (path.startsWith('/media/')) {
      const name = path.slice('/media/'.length)
      const body = files.get(name)
      if (body) return serveBody(req, body, typeOf(name))
    }
    if (path.startsWith('/pages/')) {
      const html = PAGES[path.slice('/pages/'.length)]
      if (html !== undefined) return serveBody(req, new TextEncoder().encode(html), TYPES.html!)
    }
    return serveBody(req, new TextEncoder().encode(NOT_FOUND_PAGE), TYPES.html!, 404)
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url)
      const headers: Record<string, string> = {}
      req.headers.forEach((v, k) => (headers[k] = v))
      requests.push({ method: req.method, path: url.pathname + url.search, range: req.headers.get('range'), headers })
      if (requests.length > MAX_LOGGED) requests.splice(0, requests.length - MAX_LOGGED)
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return new Response('GET or HEAD\n', { status: 405, headers: { Allow: 'GET, HEAD' } })
      const asked = Number(url.searchParams.get('delay') ?? 0)
      const delay = Math.min(MAX_DELAY_MS, (opts.delayMs ?? 0) + (Number.isFinite(asked) && asked > 0 ? asked : 0))
      if (delay > 0) await sleep(delay, AbortSignal.any([req.signal, stopping.signal]))
      return answer(req, url)
    },
  })
  const origin = `http://127.0.0.1:${server.port}`

  return {
    origin,
    url: (name) => origin + ROUTES[name],
    bytes(file) {
      const body = files.get(file.replace(/^\/?media\//, ''))
      if (!body) throw new Error(`no media fixture file ${file}; there are: ${[...files.keys()].join(', ')}`)
      return body
    },
    requests,
    async stop() {
      stopping.abort()
      await server.stop(true)
    },
  }
}
