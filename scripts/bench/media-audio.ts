// Media, extracted audio (issue 41): the mp3 of a page's video through its /dl link (download.json?audio=1, the
// media cache emptied before each round, so every round converts) against ffmpeg alone converting the same file
// with the same arguments (src/media/audio.ts ffmpegArgs), taken in turn; issue 41's target ≤ 1.2×.
// The page and its 5-minute h264 + aac file are served from the bench process on 127.0.0.1.
//   bun scripts/bench/media-audio.ts    this row alone, on dist/linkbox (LINKBOX_BENCH_ROUNDS, at least 5)
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ffmpegArgs } from '../../src/media/audio'
import type { MediaBox } from './media'
import type { Figure } from './results'
import { median } from './wrk'

/** Seconds of the source: long enough that the conversion, not the start of a process, is what is timed. */
export const AUDIO_SOURCE_SECONDS = 300
const TARGET = 1.2

async function run(argv: string[]): Promise<void> {
  const proc = Bun.spawn(argv, { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [, err, code] = await Promise.all([
    new Response(proc.stdout).arrayBuffer(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  if (code !== 0) throw new Error(`bench: ${argv[0]} exited ${code}: ${err.slice(-1000)}`)
}

export async function benchMediaAudio(
  box: MediaBox,
  opts: { rounds: number; figures: Figure[]; commands?: string[] },
): Promise<string[]> {
  const lines: string[] = []
  const dir = mkdtempSync(join(tmpdir(), 'linkbox-bench-audio-'))
  let server: ReturnType<typeof Bun.serve> | undefined
  try {
    const source = join(dir, 'long.mp4')
    await run([
      'ffmpeg',
      ...['-v', 'error', '-nostdin', '-y'],
      ...['-f', 'lavfi', '-i', `testsrc=size=160x120:rate=10:duration=${AUDIO_SOURCE_SECONDS}`],
      ...['-f', 'lavfi', '-i', `sine=frequency=440:duration=${AUDIO_SOURCE_SECONDS}`],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-c:a', 'aac', '-b:a', '128k', '-shortest', source],
    ])
    const page =
      '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bench audio page</title></head>' +
      '<body><video src="/long.mp4" controls></video></body></html>'
    server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (req) =>
        new URL(req.url).pathname === '/long.mp4'
          ? new Response(Bun.file(source), { headers: { 'content-type': 'video/mp4' } })
          : new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } }),
    })
    const answer = await box.download(`http://127.0.0.1:${server.port}/page.html?audio-bench=${Date.now()}`)
    const listed = answer.status === 200 ? answer.body.return.formats : []
    const mp3 = listed.find((f: { ext: string; kind: string }) => f.kind === 'audio' && f.ext === 'mp3')
    if (!mp3) throw new Error(`bench: download.json listed no extracted mp3: ${JSON.stringify(answer.body)}`)
    const signed = new URL(mp3.url)
    const link = `${box.server.url}${signed.pathname}${signed.search}`
    const cacheDir = join(box.server.dataDir, 'media', 'cache')
    const emptyCache = () => {
      for (const f of readdirSync(cacheDir, { withFileTypes: true }))
        if (f.isFile()) rmSync(join(cacheDir, f.name), { force: true })
    }
    const viaLinkbox = async () => {
      const started = performance.now()
      const res = await fetch(link)
      const bytes = (await res.arrayBuffer()).byteLength
      if (res.status !== 200 || bytes < 1000)
        throw new Error(`bench: the mp3 link answered ${res.status}, ${bytes} bytes`)
      return performance.now() - started
    }
    const alone = async () => {
      const out = join(dir, 'alone.mp3')
      const started = performance.now()
      await run(['ffmpeg', ...ffmpegArgs('mp3', source, null, { title: answer.body.return.title, artist: null }, out)])
      return performance.now() - started
    }
    // Once each, untimed: the first conversion also warms the page cache and ffmpeg's libraries.
    await viaLinkbox()
    emptyCache()
    await alone()
    const rounds = Math.max(5, opts.rounds)
    const ours: number[] = []
    const theirs: number[] = []
    const ratios: number[] = []
    for (let i = 0; i < rounds; i++) {
      emptyCache()
      let a: number
      let b: number
      // Each side first every other round.
      if (i % 2) {
        b = await alone()
        a = await viaLinkbox()
      } else {
        a = await viaLinkbox()
        b = await alone()
      }
      ours.push(a)
      theirs.push(b)
      ratios.push(a / b)
      lines.push(
        `round ${i + 1}: /dl of the extracted mp3 ${a.toFixed(0)} ms, ffmpeg alone ${b.toFixed(0)} ms (ratio ${(a / b).toFixed(2)})`,
      )
    }
    const ratio = median(ratios)
    const range = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`
    lines.push(
      `extracted mp3 of a ${AUDIO_SOURCE_SECONDS} s h264 + aac video: /dl (fetch, convert into the cache, send) ÷ ffmpeg alone on the same file, ` +
        `median ratio ${ratio.toFixed(2)} (rounds ${range}); target ≤ ${TARGET}: ${ratio <= TARGET ? 'met' : 'MISSED'}`,
    )
    opts.figures.push({
      id: 'media-audio-ratio',
      label: `Extracted mp3 (/dl, cache emptied) of a ${AUDIO_SOURCE_SECONDS} s video ÷ ffmpeg alone on the same file`,
      value: ratio,
      unit: '×',
      target: { op: '<=', value: TARGET },
      baseline: `ffmpeg alone: median ${median(theirs).toFixed(0)} ms (through /dl ${median(ours).toFixed(0)} ms)`,
      rounds: ratios,
    })
    opts.commands?.push(
      `# media audio: ${rounds} × (GET <the extracted mp3's /dl link>, data_dir/media/cache emptied first) taken in turn with ` +
        `ffmpeg ${ffmpegArgs('mp3', 'long.mp4', null, { title: '<title>', artist: null }, 'out.mp3').join(' ')}`,
    )
  } finally {
    await server?.stop(true)
    rmSync(dir, { recursive: true, force: true })
  }
  return lines
}

if (import.meta.main) {
  const { benchBinary } = await import('./binary')
  const { startMediaBox } = await import('./media')
  const box = await startMediaBox([(await benchBinary()).path])
  try {
    const rounds = Number(process.env.LINKBOX_BENCH_ROUNDS ?? 5)
    console.log((await benchMediaAudio(box, { rounds, figures: [] })).join('\n'))
  } finally {
    await box.server.stop()
  }
}
