// Playlists (SPEC §6, download.json?playlist=1): a playlist, or a page with several media, as entries with
// formats of their own. yt-dlp reads at most media.playlist_max + 1 entries in one run (--yes-playlist
// --playlist-items 1:<max+1>): the one past the bound only says that the list was cut. It prints each entry as
// a JSON line as soon as it is read (-j), so a run the time limit cuts short still gives the entries read by then.
import { AppError } from '../kernel/errors'
import { privateAddress } from '../kernel/net/private-address'
import { oneLine, parseInfo, type Extraction, type MediaFormat } from './extract'

/** Formats kept per entry (the best ones): each is a ticket row, and a playlist has up to playlist_max entries. */
export const ENTRY_FORMATS = 20

export interface PlaylistEntry {
  index: number
  /** The entry's own page (where yt-dlp fetches a segmented or merged format), else the playlist's. */
  page: string
  title: string
  duration: number | null
  thumbnail: string | null
  formats: MediaFormat[]
}

export interface Playlist {
  source: string
  title: string
  extractor: string
  /** Entries the playlist has as yt-dlp counts them, else as many as were read. */
  count: number
  /** More entries than media.playlist_max were there. */
  truncated: boolean
  entries: PlaylistEntry[]
}

/** yt-dlp's playlist switches for at most `max` entries, and one more to learn whether there were more. */
export const playlistArgs = (max: number) => ['--yes-playlist', '--playlist-items', `1:${max + 1}`]

const isHttpUrl = (v: unknown): v is string => typeof v === 'string' && /^https?:\/\//i.test(v) && v.length <= 16_384
const whole = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null)

/**
 * The playlist of yt-dlp's -j lines (one per entry; a cut run's last line may be incomplete and is left out).
 * `cut`: the run was stopped by the time limit, so there may be more entries than were read.
 */
export function playlistOfLines(
  stdout: string,
  canMerge: boolean,
  max: number,
  url: string,
  cut = false,
): Playlist | null {
  const infos = stdout
    .split('\n')
    .slice(0, -1)
    .flatMap((line) => {
      try {
        const info = JSON.parse(line)
        return info && typeof info === 'object' ? [info as Record<string, any>] : []
      } catch {
        return []
      }
    })
  const first = infos[0]
  if (!first) return null
  const list =
    infos.length === 1 && !whole(first.playlist_index)
      ? parsePlaylist(first, canMerge, max, url)
      : parsePlaylist(
          {
            _type: 'playlist',
            title: first.playlist_title ?? first.playlist ?? '',
            webpage_url: first.playlist_webpage_url,
            extractor_key: first.playlist_extractor_key ?? first.extractor_key,
            playlist_count: first.playlist_count,
            entries: infos,
          },
          canMerge,
          max,
          url,
        )
  return list && cut ? { ...list, truncated: true, count: Math.max(list.count, infos.length) } : list
}

/**
 * The playlist of yt-dlp's JSON (a single video is a playlist of one), or null when no entry has a format we
 * can fetch. `url` is the page asked for.
 */
export function parsePlaylist(info: unknown, canMerge: boolean, max: number, url: string): Playlist | null {
  if (!info || typeof info !== 'object') return null
  const top = info as Record<string, any>
  if (top._type !== 'playlist' || !Array.isArray(top.entries)) {
    const single = parseInfo(info, canMerge)
    return single ? fromExtraction(single, url) : null
  }
  const raw = top.entries.filter((e: unknown) => e && typeof e === 'object')
  const source = isHttpUrl(top.webpage_url) ? top.webpage_url : url
  const entries: PlaylistEntry[] = []
  raw.slice(0, max).forEach((e: Record<string, any>, i: number) => {
    const entry = parseInfo(e, canMerge)
    if (!entry) return
    const index = whole(e.playlist_index) ?? i + 1
    const page = entry.source || source
    // An entry without a page of its own (one of several <video> of a page) cannot be fetched alone by yt-dlp:
    // only its direct formats are offered (the first entry is what yt-dlp fetches from the page, as without playlist=1).
    const alone = page !== source || i === 0
    const formats = entry.formats.filter((f) => alone || f.method === 'direct').slice(-ENTRY_FORMATS)
    if (formats.length === 0) return
    entries.push({
      index,
      page,
      title: entry.title,
      duration: entry.duration,
      thumbnail: entry.thumbnail,
      formats,
    })
  })
  if (entries.length === 0) return null
  const counted = whole(top.playlist_count)
  return {
    source,
    title: oneLine(String(top.title ?? top.id ?? '')).slice(0, 300),
    extractor: oneLine(String(top.extractor_key ?? top.extractor ?? 'generic')).slice(0, 64),
    count: counted ?? raw.length,
    truncated: raw.length > max || (counted !== null && counted > max),
    entries,
  }
}

/** A single video (or photo) as a playlist of one. */
export function fromExtraction(e: Extraction, url: string): Playlist {
  const page = e.source || url
  return {
    source: page,
    title: e.title,
    extractor: e.extractor,
    count: 1,
    truncated: false,
    entries: [{ index: 1, page, title: e.title, duration: e.duration, thumbnail: e.thumbnail, formats: e.formats }],
  }
}

/**
 * Every address of every entry checked by the guard, as for one video (page.ts screen): an entry whose formats
 * are all on private addresses is left out, a thumbnail on one is dropped; no entry left is a private_address.
 */
export async function screenPlaylist(
  playlist: Playlist,
  screenOne: (e: Extraction) => Promise<Extraction>,
): Promise<Playlist> {
  const screened = await Promise.all(
    playlist.entries.map(async (entry) => {
      try {
        const kept = await screenOne({
          source: entry.page,
          title: entry.title,
          kind: 'video',
          extractor: playlist.extractor,
          duration: entry.duration,
          thumbnail: entry.thumbnail,
          formats: entry.formats,
        })
        return { ...entry, thumbnail: kept.thumbnail, formats: kept.formats }
      } catch (err) {
        if (err instanceof AppError && err.code === 'private_address') return null
        throw err
      }
    }),
  )
  const entries = screened.filter((e): e is PlaylistEntry => e !== null)
  if (entries.length === 0) throw privateAddress()
  return { ...playlist, entries }
}
