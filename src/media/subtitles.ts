// Subtitles (SPEC §6): the languages yt-dlp found (`subtitles`, and `automatic_captions` as auto), each offered
// as VTT and as SRT with a signed link of its own. The VTT is fetched under the guard, at most 2 MiB, when the
// link is used; SRT is made from it here (webvtt.ts). A subtitle ticket is an ordinary ticket row (no migration):
// its format id is `subtitles/<lang>/<manual|auto>.<vtt|srt>` and its content type one of SUBTITLE_TYPES.
import { guardedFetch } from '../kernel/net/guard'
import { fileHeaders } from './delivery'
import { forwardedHeaders, oneLine, upstreamFailed } from './extract'
import { fileFetchFailure, type MediaGuard } from './page'
import type { TicketRow } from './storage/contract'
import { vttToSrt } from './webvtt'

export type SubtitleExt = 'vtt' | 'srt'

/** One language of subtitles as found: the links' two formats are made from it. */
export interface Subtitle {
  lang: string
  name: string
  auto: boolean
  /** The WebVTT file at the site. */
  upstreamUrl: string
  headers: Record<string, string>
}

/** Languages listed at most (YouTube offers ~150 machine translations): those written by people first. */
export const MAX_SUBTITLE_LANGS = 50
/** A subtitle file larger than this is refused (a film's subtitles are ~100 KiB). */
export const SUBTITLE_MAX_BYTES = 2 * 1024 * 1024
const FETCH_MS = 30_000

export const SUBTITLE_TYPES: Record<SubtitleExt, string> = {
  vtt: 'text/vtt; charset=utf-8',
  srt: 'application/x-subrip; charset=utf-8',
}

const LANG = /^[A-Za-z0-9][A-Za-z0-9_-]{0,34}$/
const isHttpUrl = (v: unknown): v is string => typeof v === 'string' && /^https?:\/\//i.test(v) && v.length <= 16_384
let names: Intl.DisplayNames | null | undefined

/** A language's English name where the code is one Intl knows ("fr" → "French"), else the code. */
function languageName(lang: string): string {
  try {
    names ??= new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' })
    return names.of(lang.replace(/_/g, '-')) ?? lang
  } catch {
    return lang
  }
}

/** The languages of yt-dlp's `subtitles` and `automatic_captions` that have a WebVTT file at an http(s) URL. */
export function subtitlesOf(top: Record<string, any>): Subtitle[] {
  const out: Subtitle[] = []
  for (const [field, auto] of [
    ['subtitles', false],
    ['automatic_captions', true],
  ] as const) {
    const table = top[field]
    if (!table || typeof table !== 'object' || Array.isArray(table)) continue
    for (const [lang, tracks] of Object.entries(table as Record<string, unknown>)) {
      if (out.length >= MAX_SUBTITLE_LANGS) return out
      if (!LANG.test(lang) || !Array.isArray(tracks)) continue
      const vtt = tracks.find(
        (t: any) =>
          t &&
          typeof t === 'object' &&
          String(t.ext).toLowerCase() === 'vtt' &&
          isHttpUrl(t.url) &&
          (t.protocol === undefined || t.protocol === 'http' || t.protocol === 'https'),
      )
      if (!vtt) continue
      const given = typeof vtt.name === 'string' ? oneLine(vtt.name).slice(0, 100) : ''
      out.push({
        lang,
        name: given || languageName(lang),
        auto,
        upstreamUrl: vtt.url,
        headers: forwardedHeaders(vtt.http_headers ?? top.http_headers),
      })
    }
  }
  return out
}

/** The ticket format id of a subtitle link. */
export const subtitleFormatId = (s: Subtitle, ext: SubtitleExt) =>
  `subtitles/${s.lang}/${s.auto ? 'auto' : 'manual'}.${ext}`

/** Whether a ticket is a subtitle's (its content type only subtitle tickets have). */
export const isSubtitleTicket = (t: TicketRow) =>
  t.format_id.startsWith('subtitles/') && Object.values(SUBTITLE_TYPES).includes(t.content_type)

/** GET/HEAD /dl/<id> of a subtitle: its VTT fetched under the guard, as is or as SRT. Whole: no Range. */
export async function serveSubtitle(
  t: TicketRow,
  request: Request,
  guard: MediaGuard,
  stats: { bytesServed: number },
): Promise<Response> {
  const vtt = await fetchVtt(t, guard, request.signal)
  const body: Uint8Array<ArrayBuffer> =
    t.content_type === SUBTITLE_TYPES.srt ? new TextEncoder().encode(vttToSrt(vtt.text)) : vtt.bytes
  const head = request.method === 'HEAD'
  if (!head) stats.bytesServed += body.byteLength
  return new Response(head ? null : body, {
    headers: { ...fileHeaders(t), 'content-type': t.content_type, 'content-length': String(body.byteLength) },
  })
}

async function fetchVtt(
  t: TicketRow,
  guard: MediaGuard,
  signal: AbortSignal,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; text: string }> {
  let answer
  try {
    answer = await guardedFetch(t.upstream_url, {
      ...guard,
      method: 'GET',
      headers: { ...JSON.parse(t.headers), 'accept-encoding': 'identity' },
      signal,
      timeoutMs: FETCH_MS,
    })
  } catch (err) {
    throw fileFetchFailure(err)
  }
  const { response } = answer
  if (response.status !== 200 || !response.body) {
    void response.body?.cancel().catch(() => {})
    throw upstreamFailed(`its server answered HTTP ${response.status}; ask download.json again`)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = response.body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > SUBTITLE_MAX_BYTES)
        throw upstreamFailed(`the subtitles are larger than ${SUBTITLE_MAX_BYTES / 1024 / 1024} MiB`)
      chunks.push(value)
    }
  } finally {
    void reader.cancel().catch(() => {})
  }
  const bytes = new Uint8Array(Buffer.concat(chunks))
  const text = new TextDecoder().decode(bytes)
  if (!/^\uFEFF?WEBVTT/.test(text)) throw upstreamFailed('the subtitles are not a WebVTT file')
  return { bytes, text }
}

/** The subtitles whose file the guard lets through (as formats are screened: page.ts). */
export async function screenSubtitles(
  subtitles: Subtitle[],
  allowed: (url: string) => Promise<boolean>,
): Promise<Subtitle[]> {
  const kept = await Promise.all(subtitles.map((s) => allowed(s.upstreamUrl)))
  return subtitles.filter((_, i) => kept[i])
}
