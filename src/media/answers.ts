// What download.json stores and answers for what was found: one ticket row per link (formats, each subtitle as
// VTT and as SRT, each playlist entry's formats), in the order the answer hands the links out.
import { mediaFilename, type MediaFormat } from './extract'
import type { Playlist } from './playlist'
import type { TicketInput } from './storage/contract'
import { SUBTITLE_TYPES, subtitleFormatId, type Subtitle, type SubtitleExt } from './subtitles'

/** The fields every ticket of one answer shares. */
export type TicketStamp = Pick<TicketInput, 'account_id' | 'created' | 'expires'>
const SUBTITLE_EXTS: SubtitleExt[] = ['vtt', 'srt']

export const formatTickets = (formats: MediaFormat[], page: string, title: string, stamp: TicketStamp) =>
  formats.map(
    (f): TicketInput => ({
      ...stamp,
      page_url: page,
      format_id: f.id,
      method: f.method,
      upstream_url: f.upstreamUrl,
      // An extracted audio format's ticket carries its recipe (audio.ts): the source's headers and its tags.
      headers: f.recipe ?? JSON.stringify(f.headers),
      filename: mediaFilename(title, f.ext),
      content_type: f.contentType,
    }),
  )

/** A format as download.json shows it: its link instead of where it comes from. */
export const formatAnswer = (f: MediaFormat, url: string) => ({
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
  url,
})

/** Two tickets a language, VTT then SRT; the file is named `<title>.<lang>.<ext>`. */
export const subtitleTickets = (subtitles: Subtitle[], page: string, title: string, stamp: TicketStamp) =>
  subtitles.flatMap((s) =>
    SUBTITLE_EXTS.map(
      (ext): TicketInput => ({
        ...stamp,
        page_url: page,
        format_id: subtitleFormatId(s, ext),
        method: 'direct',
        upstream_url: s.upstreamUrl,
        headers: JSON.stringify(s.headers),
        filename: mediaFilename(`${title}.${s.lang}`, ext),
        content_type: SUBTITLE_TYPES[ext],
      }),
    ),
  )

/** `ids`: the tickets of subtitleTickets, in its order. */
export const subtitleAnswers = (subtitles: Subtitle[], ids: number[], link: (id: number) => string) =>
  subtitles.flatMap((s, i) =>
    SUBTITLE_EXTS.map((ext, j) => ({
      lang: s.lang,
      name: s.name,
      ext,
      auto: s.auto,
      url: link(ids[i * SUBTITLE_EXTS.length + j]!),
    })),
  )

export const playlistTickets = (p: Playlist, stamp: TicketStamp) =>
  p.entries.flatMap((e) => formatTickets(e.formats, e.page, e.title || p.title || 'download', stamp))

/** The playlist=1 answer; `ids`: the tickets of playlistTickets, in its order. */
export function playlistAnswer(p: Playlist, ids: number[], link: (id: number) => string, expires: string) {
  let next = 0
  return {
    source: p.source,
    title: p.title,
    extractor: p.extractor,
    expires,
    count: p.count,
    truncated: p.truncated,
    entries: p.entries.map((e) => ({
      index: e.index,
      title: e.title,
      duration: e.duration,
      thumbnail: e.thumbnail,
      formats: e.formats.map((f) => formatAnswer(f, link(ids[next++]!))),
    })),
  }
}
