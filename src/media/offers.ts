// What an answer offers: the page's formats, then the audio extracted from its best sound (audio.ts); in a
// playlist, each entry's. Made once per cached extraction, so that its tickets and its answers line up.
import { extractedAudio } from './audio'
import type { Extraction, MediaFormat } from './extract'
import type { Playlist } from './playlist'

export function createOffers(canConvert: boolean) {
  const offers = new WeakMap<Extraction, MediaFormat[]>()
  const playlists = new WeakMap<Playlist, Playlist>()

  const offered = (found: Extraction) => {
    let list = offers.get(found)
    if (!list) offers.set(found, (list = [...found.formats, ...extractedAudio(found, canConvert)]))
    return list
  }

  /** The playlist with each entry's extracted audio after its own formats. */
  const withAudio = (p: Playlist): Playlist => {
    let made = playlists.get(p)
    if (made) return made
    const entries = p.entries.map((e) => {
      const found: Extraction = {
        source: e.page,
        title: e.title,
        kind: 'video',
        extractor: p.extractor,
        duration: e.duration,
        thumbnail: e.thumbnail,
        formats: e.formats,
      }
      return { ...e, formats: offered(found) }
    })
    playlists.set(p, (made = { ...p, entries }))
    return made
  }

  return { offered, withAudio }
}

/** audio=1: only the audio formats (extracted and the page's own). */
export const audioOnly = <F extends { kind: string }>(formats: F[], audio: boolean | undefined) =>
  audio ? formats.filter((f) => f.kind === 'audio') : formats
