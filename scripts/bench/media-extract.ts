// Extraction overhead (issue 41): download.json with a cold cache (a new query string each time) ÷ the same yt-dlp
// run directly with the same switches on the same page, for a page with a video, one with subtitles (two more
// tickets a language) and one with three videos asked with playlist=1; the two sides taken in turn, each first
// every other round. Target ≤ 1.05× (the service's part: the guard, its proxy, the tickets, the answer). The best
// rounds' ratio (fastest ÷ fastest) is given too: on a busy machine it is the least disturbed estimate.
//   bun scripts/bench/media-extract.ts    these rows alone, on dist/linkbox (built when stale)
import { startMediaFixtures, type FixtureName, type MediaFixtures } from '../../test/support/media-fixtures'
import { benchBinary } from './binary'
import type { BenchContext } from './context'
import { bundledYtdlp, directExtraction, type MediaBox, startMediaBox, YTDLP_ARGS } from './media'
import { median } from './wrk'

/** Rounds per page (each a yt-dlp run of ~1–2 s on each side). */
export const RATIO_ROUNDS = Number(process.env.LINKBOX_BENCH_EXTRACTIONS ?? 5)
const TARGET = 1.05

const PAGES: { name: FixtureName; id: string; label: string; playlist: boolean }[] = [
  { name: 'video-page', id: 'media-extract-ratio', label: 'a page with a video', playlist: false },
  { name: 'subtitles-page', id: 'media-extract-ratio-subs', label: 'a page with subtitles (en, fr)', playlist: false },
  { name: 'playlist-page', id: 'media-extract-ratio-playlist', label: 'three videos, playlist=1', playlist: true },
]

/** The service's playlist switches (src/media/service.ts, playlist.ts) at the default media.playlist_max of 50. */
const playlistArgs = () =>
  YTDLP_ARGS.flatMap((a) =>
    a === '--no-playlist'
      ? ['--yes-playlist', '--playlist-items', '1:51']
      : a === '--dump-single-json'
        ? ['--dump-json']
        : [a],
  )

export async function benchExtractionRatios(opts: {
  box: MediaBox
  fx: MediaFixtures
  ytdlp: string[]
  figures: BenchContext['figures']
  commands?: string[]
}): Promise<string[]> {
  const { box, fx, ytdlp } = opts
  const lines: string[] = []
  let unique = 0
  for (const page of PAGES) {
    const fresh = () => `${fx.url(page.name)}?ratio=${Date.now()}-${++unique}`
    const args = page.playlist ? playlistArgs() : YTDLP_ARGS
    const viaService = async () => {
      const query = new URLSearchParams({ url: fresh(), ...(page.playlist ? { playlist: '1' } : {}) })
      const started = performance.now()
      const res = await fetch(`${box.server.url}/api/download.json?${query}`, { headers: { 'x-api-key': box.key } })
      const body = await res.json()
      const ms = performance.now() - started
      if (res.status !== 200) throw new Error(`bench: download.json answered ${res.status}: ${JSON.stringify(body)}`)
      return ms
    }
    await viaService() // the page and the program warm on both sides alike
    await directExtraction(ytdlp, fresh(), args)
    const ratios: number[] = []
    const service: number[] = []
    const direct: number[] = []
    for (let i = 0; i < RATIO_ROUNDS; i++) {
      let s = 0
      if (i % 2) s = await viaService()
      const d = await directExtraction(ytdlp, fresh(), args)
      if (i % 2 === 0) s = await viaService()
      service.push(s)
      direct.push(d)
      ratios.push(s / d)
    }
    const ratio = median(ratios)
    const range = `${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}`
    lines.push(
      `extraction overhead, ${page.label}: download.json ÷ yt-dlp directly, median of ${RATIO_ROUNDS} alternated rounds ` +
        `${ratio.toFixed(3)} (rounds ${range}; service ${median(service).toFixed(0)} ms, yt-dlp ${median(direct).toFixed(0)} ms; ` +
        `fastest ÷ fastest ${(Math.min(...service) / Math.min(...direct)).toFixed(3)}); ` +
        `target ≤ ${TARGET}: ${ratio <= TARGET ? 'met' : 'MISSED'}`,
    )
    opts.figures.push({
      id: page.id,
      label: `download.json, uncached, ${page.label} ÷ the same yt-dlp run directly`,
      value: ratio,
      unit: '×',
      target: { op: '<=', value: TARGET },
      baseline: `yt-dlp directly: ${median(direct).toFixed(0)} ms`,
      rounds: ratios,
    })
  }
  opts.commands?.push(
    `# media extraction overhead: per page (video, subtitles, three videos with playlist=1), ${RATIO_ROUNDS} rounds of ` +
      `GET /api/download.json?url=<page>?ratio=<unique> and python3 data_dir/bin/yt-dlp-bundled ${YTDLP_ARGS.join(' ')} -- <page>?ratio=<unique> ` +
      '(for playlist=1: --yes-playlist --playlist-items 1:51 --dump-json instead of --no-playlist --dump-single-json), taken in turn',
  )
  return lines
}

if (import.meta.main) {
  const binary = await benchBinary()
  const fx = await startMediaFixtures()
  const box = await startMediaBox([binary.path])
  try {
    const first = await box.download(fx.url('video-page'))
    if (first.status !== 200) throw new Error(`bench: download.json answered ${first.status}`)
    const ytdlp = bundledYtdlp(box.server.dataDir)
    console.log((await benchExtractionRatios({ box, fx, ytdlp, figures: [] })).join('\n'))
  } finally {
    await box.server.stop()
    await fx.stop()
  }
}
