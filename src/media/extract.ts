// What yt-dlp's JSON (-J) means for download.json, as pure functions: the formats a caller may fetch, how each is
// fetched, and what failures mean (a `code` and a message each), testable without a subprocess.
import { AppError } from '../kernel/errors'

export type FormatKind = 'video+audio' | 'video' | 'audio' | 'photo'

export interface MediaFormat {
  id: string
  ext: string
  kind: FormatKind
  width: number | null
  height: number | null
  fps: number | null
  vcodec: string | null
  acodec: string | null
  filesize: number | null
  note: string
  /** 'direct': streamed from upstreamUrl; 'ytdlp': segmented or merged, fetched by yt-dlp into the cache. */
  method: 'direct' | 'ytdlp'
  upstreamUrl: string
  headers: Record<string, string>
  contentType: string
  /** Extracted audio only (audio.ts): what its ticket stores instead of the headers. */
  recipe?: string
}

export interface Extraction {
  source: string
  title: string
  kind: 'video' | 'audio' | 'photo'
  extractor: string
  duration: number | null
  thumbnail: string | null
  /** Who made it, where the site says (audio tags). */
  artist?: string | null
  formats: MediaFormat[]
}

/** A page rarely has more; YouTube lists ~25. Each format is a ticket row. */
export const MAX_FORMATS = 60
const MAX_TITLE = 300

const AUDIO_EXTS = new Set(['mp3', 'm4a', 'aac', 'ogg', 'oga', 'opus', 'flac', 'wav', 'weba', 'mka'])
const PHOTO_EXTS = new Set(['jpg', 'jpeg', 'png', 'webp', 'gif', 'avif'])
const CONTENT_TYPES: Record<string, string> = {
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  webm: 'video/webm',
  mkv: 'video/x-matroska',
  mov: 'video/quicktime',
  ts: 'video/mp2t',
  flv: 'video/x-flv',
  '3gp': 'video/3gpp',
  ogv: 'video/ogg',
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  aac: 'audio/aac',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/ogg',
  flac: 'audio/flac',
  wav: 'audio/wav',
  weba: 'audio/webm',
  mka: 'audio/x-matroska',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  avif: 'image/avif',
}
export const contentTypeOf = (ext: string) => CONTENT_TYPES[ext] ?? 'application/octet-stream'

// Streamed by us: plain HTTP(S). Fetched by yt-dlp's own (native) downloaders, through the guard proxy:
// HLS and DASH. Anything else (rtmp, rtsp, mms, f4m, ism…) would be fetched by a program that does not go
// through the proxy, so the guard could not see where it connects: those formats are left out.
const DIRECT = new Set(['http', 'https'])
const SEGMENTED = new Set(['m3u8', 'm3u8_native', 'http_dash_segments', 'http_dash_segments_generator'])

// The request headers yt-dlp may tell us to send with a format (its extractors set them for sites that
// check them); nothing else is repeated.
const FORWARDED_HEADERS = ['user-agent', 'accept', 'accept-language', 'referer', 'origin', 'cookie', 'sec-fetch-mode']

/** One line of text: control and line-separator characters and runs of space become one space. */
export const oneLine = (s: string) =>
  s
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s)
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null)
const int = (v: unknown): number | null => {
  const n = num(v)
  return n === null ? null : Math.round(n)
}
const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null)
const isHttpUrl = (v: unknown): v is string => typeof v === 'string' && /^https?:\/\//i.test(v) && v.length <= 16_384
const codec = (v: unknown): string | null => {
  const s = str(v)
  return s && s !== 'none' ? clip(oneLine(s), 64) : null
}

/** The headers to send upstream: the safe ones yt-dlp named, values on one line. */
export function forwardedHeaders(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (!raw || typeof raw !== 'object') return out
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    const key = name.toLowerCase()
    if (!FORWARDED_HEADERS.includes(key) || typeof value !== 'string') continue
    if (/[\r\n\0]/.test(value) || value.length > 4096) continue
    out[key] = value
  }
  return out
}

/** A file name to offer: the title without folders or control characters, bounded, and the format's extension. */
export function mediaFilename(title: string, ext: string): string {
  const base =
    clip(
      oneLine(title)
        .replace(/[\\/:*?"<>|]+/g, '_')
        .replace(/^[.\s]+/, ''),
      120,
    ) || 'download'
  return `${base}.${ext}`
}

function kindOf(vcodecRaw: unknown, acodecRaw: unknown, ext: string): FormatKind | null {
  const v = str(vcodecRaw)
  const a = str(acodecRaw)
  if (v === 'none' && a === 'none') return null // storyboards and the like
  if (PHOTO_EXTS.has(ext) && !v && !a) return 'photo'
  if (v === 'none') return 'audio'
  if (a === 'none') return 'video'
  if (!v && !a && AUDIO_EXTS.has(ext)) return 'audio'
  return 'video+audio'
}

const cleanExt = (v: unknown) => {
  const s = (str(v) ?? '').toLowerCase()
  return /^[a-z0-9]{1,8}$/.test(s) ? s : 'bin'
}

function formatOf(f: Record<string, any>, fallbackHeaders: unknown): MediaFormat | null {
  const protocol = (str(f.protocol) ?? (isHttpUrl(f.url) ? f.url.split(':')[0]!.toLowerCase() : '')).toLowerCase()
  const method = DIRECT.has(protocol) ? 'direct' : SEGMENTED.has(protocol) ? 'ytdlp' : null
  if (!method || !isHttpUrl(f.url)) return null
  const id = str(f.format_id)
  if (!id || id.length > 128 || /[\u0000-\u001f]/.test(id)) return null
  const ext = cleanExt(f.ext)
  if (ext === 'mhtml') return null
  const kind = kindOf(f.vcodec, f.acodec, ext)
  if (!kind) return null
  const width = int(f.width)
  const height = int(f.height)
  const note = clip(oneLine(str(f.format_note) ?? (height ? `${height}p` : kind)), 100)
  return {
    id,
    ext,
    kind,
    width,
    height,
    fps: num(f.fps),
    vcodec: codec(f.vcodec),
    acodec: codec(f.acodec),
    filesize: int(f.filesize) ?? int(f.filesize_approx),
    note,
    method,
    upstreamUrl: f.url,
    headers: forwardedHeaders(f.http_headers ?? fallbackHeaders),
    contentType: contentTypeOf(ext),
  }
}

/** The video of yt-dlp's JSON: itself, or a playlist's first entry that has formats. */
export function mainEntry(info: unknown): Record<string, any> | null {
  if (!info || typeof info !== 'object') return null
  const top = info as Record<string, any>
  if (top._type !== 'playlist' || !Array.isArray(top.entries)) return top
  return (
    top.entries.find((e: any) => e && typeof e === 'object' && (Array.isArray(e.formats) || isHttpUrl(e.url))) ?? null
  )
}

/**
 * The answer's fields from yt-dlp's JSON, or null when it lists nothing we can fetch (the caller then tries
 * the page's photo). A playlist (a page with several videos) gives its first entry that has formats.
 */
export function parseInfo(info: unknown, canMerge: boolean): Extraction | null {
  const top = mainEntry(info)
  if (!top) return null
  const raw: any[] = Array.isArray(top.formats) ? top.formats : isHttpUrl(top.url) ? [top] : []
  const formats: MediaFormat[] = []
  const seen = new Set<string>()
  for (const f of raw) {
    if (!f || typeof f !== 'object') continue
    const format = formatOf(f, top.http_headers)
    if (!format || seen.has(format.id)) continue
    seen.add(format.id)
    formats.push(format)
  }
  // Best last, as yt-dlp orders them; keep the best when there are too many.
  formats.splice(0, Math.max(0, formats.length - MAX_FORMATS))
  // Where the best video and the best audio come apart (yt-dlp's own choice is a merge), offer the merge
  // too: yt-dlp fetches both and ffmpeg joins them. Only where ffmpeg is there to do it.
  const requested = Array.isArray(top.requested_formats) ? top.requested_formats : []
  if (canMerge && requested.length === 2) {
    const [v, a] = requested.map((f: any) => formats.find((x) => x.id === f?.format_id))
    if (v && a && v.kind === 'video' && a.kind === 'audio') {
      const ext = cleanExt(top.ext) === 'bin' ? 'mkv' : cleanExt(top.ext)
      formats.push({
        ...v,
        id: `${v.id}+${a.id}`,
        ext,
        kind: 'video+audio',
        acodec: a.acodec,
        filesize: v.filesize !== null && a.filesize !== null ? v.filesize + a.filesize : null,
        note: clip(`${v.note} + ${a.note} (merged)`, 100),
        method: 'ytdlp',
        contentType: contentTypeOf(ext),
      })
    }
  }
  if (formats.length === 0) return null
  const kind = formats.some((f) => f.kind === 'video' || f.kind === 'video+audio')
    ? 'video'
    : formats.some((f) => f.kind === 'audio')
      ? 'audio'
      : 'photo'
  return {
    source: isHttpUrl(top.webpage_url) ? top.webpage_url : isHttpUrl(top.original_url) ? top.original_url : '',
    title: clip(oneLine(str(top.title) ?? str(top.id) ?? ''), MAX_TITLE),
    kind,
    extractor: clip(oneLine(str(top.extractor_key) ?? str(top.extractor) ?? 'generic'), 64),
    duration: num(top.duration),
    thumbnail: thumbnailOf(top.thumbnail, top.webpage_url),
    ...artistOf(top),
    formats,
  }
}

const artistOf = (top: Record<string, any>) => {
  const a = str(top.artist) ?? str(top.creator) ?? str(top.uploader)
  return a ? { artist: clip(oneLine(a), MAX_TITLE) } : {}
}

/** yt-dlp leaves an og:image thumbnail as the page wrote it (relative, too): resolved against the page. */
function thumbnailOf(value: unknown, page: unknown): string | null {
  if (typeof value !== 'string' || !value || value.length > 16_384) return null
  try {
    const url = new URL(value, isHttpUrl(page) ? page : undefined)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null
  } catch {
    return null
  }
}

export type FailureKind = 'unsupported' | 'private' | 'upstream' | 'timeout' | 'invalid'

/** yt-dlp's last ERROR line, on one line, bounded, with any credentials in URLs taken out. */
export function errorLine(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
  const last = [...lines].reverse().find((l) => l.startsWith('ERROR:')) ?? lines.at(-1) ?? ''
  const text = last
    .replace(/^ERROR:\s*/, '')
    .replace(/\/\/[^/@\s]*@/g, '//')
    // yt-dlp's advice to its own users (report a bug, update) and Python's exception repr are not ours to pass on.
    .replace(/;?\s*please report this issue[\s\S]*$/i, '')
    .replace(/\s*\(caused by [\s\S]*?\)\s*$/i, '')
    .replace(/^\[[a-z0-9_:]+\]\s*(None:\s*)?/i, '')
  return clip(oneLine(text), 300)
}

/** What a failed run means. The guard proxy marks its refusals (see net/proxy.ts) so they are told apart. */
export function classifyFailure(stderr: string): FailureKind {
  if (/by linkbox-guard \((private|scheme)\)/.test(stderr)) return 'private'
  if (/by linkbox-guard \(timeout\)/.test(stderr)) return 'timeout'
  if (/Unsupported URL|no video formats found|No media found|does not look like a Netscape/i.test(stderr))
    return 'unsupported'
  if (/is not a valid URL|unknown url type/i.test(stderr)) return 'invalid'
  if (/timed out/i.test(stderr)) return 'timeout'
  return 'upstream'
}

export const unsupportedUrl = () =>
  new AppError(
    400,
    'unsupported_url',
    'The parameter "url" names a page with no video, audio or photo that could be found.',
  )
export const upstreamFailed = (detail: string) =>
  new AppError(502, 'upstream_failed', `The page could not be read${detail ? `: ${detail}` : ''}.`)
export const extractionTimeout = (seconds: number) =>
  new AppError(504, 'timeout', `The page could not be read within ${seconds} s.`)
