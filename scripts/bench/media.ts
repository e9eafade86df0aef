// Media download (issue 9): what the service costs over doing the same thing without it.
//   - Extraction: download.json of a fixture page against the same yt-dlp (the bundled one the binary put
//     into data_dir/bin, run with the same python3 and arguments) called directly on the same page; a unique
//     query string each time, so neither the 10-minute cache nor the in-flight sharing answers.
//   - A cached extraction (the same URL again): one request at a time, p50/p99, beside a bare JSON answer
//     asked the same way; and under wrk.
//   - Signed downloads: the 16 MiB big-mp4 through its /dl link against the same file straight from the
//     fixture server, by the same client (curl, a process of its own), interleaved; issue 9's target ≥ 0.8.
//     A bare Bun proxy of the file (bare-proxy.ts) is timed in the same turns: the part of the gap that any
//     hop in between costs, apart from linkbox's own.
//   - Extracted audio (issue 41): media-audio.ts.
// The fixture server (test/support/media-fixtures.ts, as the tests use it) runs in the bench process on
// 127.0.0.1, so the binary runs with media.allow_private_networks = true. That lifts only the guard's
// refusal of private addresses: the guard still resolves and pins the address it connects to, and yt-dlp
// still goes through the guard proxy.
//
//   bun scripts/bench/media.ts          this section alone, on dist/linkbox (built when stale, as by bench.ts):
//                                       from source there is no bundled yt-dlp to compare with
// LINKBOX_BENCH_EXTRACTIONS (default 5) shortens the extraction part while working on the bench.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { startMediaFixtures, type MediaFixtures } from '../../test/support/media-fixtures'
import { createAccount, startServer, tempDir, writeConfig, type RunningServer } from '../../test/support/server'
import { benchBinary, removingOnStop, startBenchServer } from './binary'
import { benchExtractionRatios } from './media-extract'
import { startBare, type BenchContext } from './context'
import { benchMediaAudio } from './media-audio'
import { quantile } from './smtp-load'
import { alternating, curlGets, parallelGets } from './curl'
import { median, peakRss, rssMiB, wrk } from './wrk'

/** Extractions timed on each side (the median is reported): each is a yt-dlp run of ~1–2 s. */
export const EXTRACTIONS = Number(process.env.LINKBOX_BENCH_EXTRACTIONS ?? 5)
/** Cached download.json requests, one at a time. */
export const CACHED_REQUESTS = 200
/** GETs of the big file from each server per round, taken in turn (one 16 MiB GET over loopback is too short to time alone). */
export const GET_ROUNDS = 12
/** GETs per client in the parallel rounds. */
export const GETS_PER_CLIENT = 8
/** Clients at once in the parallel rounds. */
export const PARALLEL_CLIENTS = 4
const MiB = 1024 * 1024

/** What the service gives yt-dlp before the URL (src/media/service.ts runExtraction), for the direct baseline. */
export const YTDLP_ARGS = [
  '--ignore-config',
  '--no-cache-dir',
  '--no-playlist',
  '--no-warnings',
  '--socket-timeout',
  '15',
  '--dump-single-json',
]

const ms = (t: number) => `${t.toFixed(0)} ms`

export interface MediaBox {
  server: RunningServer
  key: string
  /** download.json of `url`: the status, the answer and how long it took (ms) from request to parsed body. */
  download(url: string): Promise<{ status: number; body: any; ms: number }>
}

/** `linkbox serve` (the given command) with media on and private addresses allowed, and an account with a key. */
export async function startMediaBox(command: readonly string[] | undefined): Promise<MediaBox> {
  const config = writeConfig(tempDir('linkbox-bench-media-'), { media: { allow_private_networks: true } })
  const server = await startBenchServer({ config, command, startTimeoutMs: 60_000 })
  try {
    const key = await createAccount(server.configPath, 'bench', { command })
    const download = async (url: string) => {
      const started = performance.now()
      const res = await fetch(`${server.url}/api/download.json?${new URLSearchParams({ url })}`, {
        headers: { 'x-api-key': key },
      })
      const body = await res.json()
      return { status: res.status, body, ms: performance.now() - started }
    }
    // The data directory goes with the server.
    return { server: removingOnStop(server, config.dir), key, download }
  } catch (err) {
    await server.kill()
    throw err
  }
}

/** The yt-dlp the binary runs: the bundled one it extracted into data_dir/bin, a zipapp run with python3 from PATH. */
export function bundledYtdlp(dataDir: string): string[] {
  const file = join(dataDir, 'bin/yt-dlp-bundled')
  if (!existsSync(file))
    throw new Error(`bench: ${file} is missing: this linkbox has no bundled yt-dlp (see scripts/bundle-ytdlp.ts)`)
  const python = Bun.which('python3')
  if (!python) throw new Error('bench: python3 is not on PATH')
  return [python, file]
}

/** One direct yt-dlp run, timed from spawn to exit; it must succeed, or the comparison means nothing. */
export async function directExtraction(ytdlp: string[], url: string, args = YTDLP_ARGS): Promise<number> {
  const started = performance.now()
  const proc = Bun.spawn([...ytdlp, ...args, '--', url], {
    // As runner.ts gives it (minus the proxy, which is the service's part).
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      PYTHONIOENCODING: 'utf-8',
      PYTHONDONTWRITEBYTECODE: '1',
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  const elapsed = performance.now() - started
  if (code !== 0) throw new Error(`bench: yt-dlp exited ${code}: ${err.slice(-2000)}`)
  const info = JSON.parse(out.split('\n')[0]!) // -j prints a line per entry
  if (!Array.isArray(info.formats) && !Array.isArray(info.entries)) throw new Error('bench: yt-dlp found no formats')
  return elapsed
}

export async function benchMedia(opts: {
  rounds: number
  seconds: number
  /** The linkbox to run: a compiled binary (only that one has the bundled yt-dlp the baseline runs). */
  command: readonly string[]
  figures?: BenchContext['figures']
  commands?: string[]
}): Promise<string[]> {
  const lines: string[] = []
  const figures = opts.figures ?? []
  let fx: MediaFixtures | undefined
  let box: MediaBox | undefined
  let bare: RunningServer | undefined
  let proxy: RunningServer | undefined
  try {
    fx = await startMediaFixtures()
    box = await startMediaBox(opts.command)
    const page = fx.url('video-page')
    let unique = 0
    const fresh = () => `${page}?bench=${Date.now()}-${++unique}`

    // --- extraction, uncached ---
    // The first extraction also waits for the bundled yt-dlp to be in place and warms the page cache.
    const first = await box.download(fresh())
    if (first.status !== 200)
      throw new Error(`bench: download.json answered ${first.status}: ${JSON.stringify(first.body)}`)
    const ytdlp = bundledYtdlp(box.server.dataDir)
    await directExtraction(ytdlp, fresh())
    const direct: number[] = []
    const service: number[] = []
    const viaService = async () => {
      const r = await box!.download(fresh())
      if (r.status !== 200) throw new Error(`bench: download.json answered ${r.status}: ${JSON.stringify(r.body)}`)
      service.push(r.ms)
    }
    for (let i = 0; i < EXTRACTIONS; i++) {
      // Interleaved, and each side first every other time: a noisy moment of the machine, or the wake of
      // the run before, falls on both sides alike.
      if (i % 2) await viaService()
      direct.push(await directExtraction(ytdlp, fresh()))
      if (i % 2 === 0) await viaService()
    }
    const d = median(direct)
    const s = median(service)
    lines.push(
      `yt-dlp ${ytdlp.slice(1).join(' ').replace(box.server.dataDir, 'data_dir')} run with ${ytdlp[0]}, directly:  ${direct.map(ms).join(', ')}`,
    )
    lines.push(
      `download.json of the same page (unique query string each), through the service:  ${service.map(ms).join(', ')}`,
    )
    lines.push(
      `extraction, median of ${EXTRACTIONS}: service ${ms(s)}, yt-dlp directly ${ms(d)}; overhead ${ms(s - d)} (ratio ${(s / d).toFixed(2)})`,
    )
    figures.push(
      {
        id: 'media-extract-ms',
        label: 'download.json, uncached extraction of a fixture page: median',
        value: s,
        unit: 'ms',
        baseline: `the same yt-dlp run directly: ${ms(d)}`,
      },
      {
        id: 'media-extract-overhead',
        label: 'download.json, uncached: overhead over yt-dlp directly',
        value: s - d,
        unit: 'ms',
        baseline: `ratio ${(s / d).toFixed(2)}`,
      },
    )

    // Issue 41: the same as ratios with a target, per kind of page (media-extract.ts).
    lines.push(...(await benchExtractionRatios({ box, fx, ytdlp, figures, commands: opts.commands })))

    // --- extraction, cached ---
    bare = await startBare('bare-json')
    const cachedUrl = fresh()
    if ((await box.download(cachedUrl)).status !== 200)
      throw new Error('bench: download.json of the cached page failed')
    const cachedMs: number[] = []
    const bareMs: number[] = []
    for (let i = 0; i < CACHED_REQUESTS; i++) {
      const r = await box.download(cachedUrl)
      if (r.status !== 200) throw new Error(`bench: cached download.json answered ${r.status}`)
      cachedMs.push(r.ms)
      const started = performance.now()
      await (await fetch(bare.url)).json()
      bareMs.push(performance.now() - started)
    }
    // quantile() takes sorted values.
    cachedMs.sort((a, b) => a - b)
    bareMs.sort((a, b) => a - b)
    const c50 = quantile(cachedMs, 0.5)
    const c99 = quantile(cachedMs, 0.99)
    const b50 = quantile(bareMs, 0.5)
    const b99 = quantile(bareMs, 0.99)
    lines.push(
      `download.json, cached (the same URL again), ${CACHED_REQUESTS} one at a time (fetch from the bench process): ` +
        `p50 ${c50.toFixed(2)} ms  p99 ${c99.toFixed(2)} ms; bare Bun.serve JSON asked the same way: p50 ${b50.toFixed(2)} ms  p99 ${b99.toFixed(2)} ms`,
    )
    const cachedQuery = `${box.server.url}/api/download.json?${new URLSearchParams({ url: cachedUrl })}`
    const load = await wrk(cachedQuery, { seconds: opts.seconds, connections: 16, headers: { 'x-api-key': box.key } })
    opts.commands?.push(load.command)
    lines.push(
      `download.json, cached, under wrk (16 connections, ${opts.seconds} s): ${load.rps.toFixed(0)} req/s  p50 ${load.p50ms.toFixed(2)} ms  ` +
        `p99 ${load.p99ms.toFixed(2)} ms${load.errors ? `  ERRORS ${load.errors}` : ''}`,
    )
    figures.push(
      {
        id: 'media-cached-p50',
        label: 'download.json, cached: p50 (one at a time)',
        value: c50,
        unit: 'ms',
        baseline: `bare JSON answer: p50 ${b50.toFixed(2)} ms`,
      },
      {
        id: 'media-cached-p99',
        label: 'download.json, cached: p99 (one at a time)',
        value: c99,
        unit: 'ms',
        baseline: `bare JSON answer: p99 ${b99.toFixed(2)} ms`,
      },
      {
        id: 'media-cached-rps',
        label: 'download.json, cached, under wrk (16 connections)',
        value: load.rps,
        unit: 'req/s',
      },
    )
    await bare.stop()
    bare = undefined

    // --- signed download throughput ---
    const big = fx.bytes('big.mp4')
    const asked = await box.download(fx.url('big-mp4'))
    if (asked.status !== 200)
      throw new Error(`bench: download.json of big-mp4 answered ${asked.status}: ${JSON.stringify(asked.body)}`)
    const signed = new URL(asked.body.return.formats[0].url)
    const dl = `${box.server.url}${signed.pathname}${signed.search}`
    const straight = fx.url('big-mp4')
    // Once, byte for byte: what is timed below is the right file.
    const got = new Uint8Array(await (await fetch(dl)).arrayBuffer())
    if (got.length !== big.length || Buffer.compare(got, big) !== 0)
      throw new Error("bench: the /dl link does not give the fixture's bytes")
    const proxyConfig = writeConfig(tempDir('linkbox-bench-proxy-'))
    proxy = removingOnStop(
      await startServer({
        command: [process.execPath, join(import.meta.dir, 'bare-proxy.ts')],
        config: proxyConfig,
        env: { LINKBOX_BENCH_UPSTREAM: straight },
      }),
      proxyConfig.dir,
    )
    const proxied = `${proxy.url}/big.mp4`
    await curlGets([straight, proxied, dl], big.length)
    const idle = rssMiB(box.server.proc.pid)
    let peak = 0
    const ratios: number[] = []
    const proxyRatios: number[] = []
    const straightRates: number[] = []
    const proxyRates: number[] = []
    const dlRates: number[] = []
    for (let i = 0; i < opts.rounds; i++) {
      const run = alternating([straight, proxied, dl], GET_ROUNDS, big.length, i)
      const [[a, p, b], rss] = await Promise.all([run, peakRss(box.server.proc.pid, run)])
      peak = Math.max(peak, rss)
      straightRates.push(a!)
      proxyRates.push(p!)
      dlRates.push(b!)
      ratios.push(b! / a!)
      proxyRatios.push(b! / p!)
      lines.push(
        `round ${i + 1}: straight from the fixture ${a!.toFixed(0).padStart(5)} MiB/s   bare Bun proxy ${p!.toFixed(0).padStart(5)} MiB/s   ` +
          `through /dl ${b!.toFixed(0).padStart(5)} MiB/s   (/dl ÷ straight ${(b! / a!).toFixed(2)}, ÷ bare proxy ${(b! / p!).toFixed(2)})`,
      )
    }
    const ratio = median(ratios)
    const size = (big.length / MiB).toFixed(1)
    lines.push(
      `signed download / straight from the fixture: median ratio ${ratio.toFixed(2)} over ${opts.rounds} rounds of ${GET_ROUNDS} GETs of ${size} MiB each ` +
        `(one curl, taking the servers in turn); target ≥ 0.80: ${ratio >= 0.8 ? 'met' : 'MISSED'}`,
    )
    const proxyRatio = median(proxyRatios)
    lines.push(
      `signed download / a bare Bun proxy of the same file (scripts/bench/bare-proxy.ts, fetch → Response): median ratio ${proxyRatio.toFixed(2)}; ` +
        `bare proxy / straight ${median(proxyRates.map((p, i) => p / straightRates[i]!)).toFixed(2)}: what any Bun hop in between costs on this machine`,
    )
    const pRatios: number[] = []
    const pStraight: number[] = []
    for (let i = 0; i < opts.rounds; i++) {
      const a = await parallelGets(straight, PARALLEL_CLIENTS, GETS_PER_CLIENT, big.length)
      const run = parallelGets(dl, PARALLEL_CLIENTS, GETS_PER_CLIENT, big.length)
      const [b, rss] = await Promise.all([run, peakRss(box.server.proc.pid, run)])
      peak = Math.max(peak, rss)
      pStraight.push(a)
      pRatios.push(b / a)
      lines.push(
        `round ${i + 1}, ${PARALLEL_CLIENTS} clients at once: straight ${a.toFixed(0).padStart(5)} MiB/s   through /dl ${b.toFixed(0).padStart(5)} MiB/s   (ratio ${(b / a).toFixed(2)})`,
      )
    }
    const pRatio = median(pRatios)
    lines.push(
      `with ${PARALLEL_CLIENTS} clients at once: median ratio ${pRatio.toFixed(2)} (MiB/s of all over the wall-clock time, curl's start included on both sides)`,
    )
    lines.push(`linkbox RSS ${idle.toFixed(0)} MiB before the downloads, peak ${peak.toFixed(0)} MiB during them`)
    lines.push(
      'the fixture server runs in the bench process on 127.0.0.1, so linkbox runs with media.allow_private_networks = true; ' +
        'the guard still resolves and pins the address it connects to, and yt-dlp still goes through the guard proxy',
    )
    figures.push(
      {
        id: 'media-dl-ratio',
        label: `Signed download (/dl) of a ${size} MiB file ÷ straight from its server`,
        value: ratio,
        unit: '×',
        target: { op: '>=', value: 0.8 },
        baseline: `straight from the fixture server: ${median(straightRates).toFixed(0)} MiB/s (through /dl ${median(dlRates).toFixed(0)} MiB/s), same curl`,
      },
      {
        id: 'media-dl-ratio-bare-proxy',
        label: `Signed download (/dl) ÷ a bare Bun proxy of the same file`,
        value: proxyRatio,
        unit: '×',
        baseline: `bare Bun proxy (fetch → Response): ${median(proxyRates).toFixed(0)} MiB/s`,
      },
      {
        id: 'media-dl-ratio-parallel',
        label: `Signed download, ${PARALLEL_CLIENTS} clients at once ÷ straight`,
        value: pRatio,
        unit: '×',
        baseline: `straight from the fixture server: ${median(pStraight).toFixed(0)} MiB/s`,
      },
      { id: 'rss-peak-media', label: 'RSS peak, signed downloads', value: peak, unit: 'MiB' },
    )
    lines.push(...(await benchMediaAudio(box, { rounds: opts.rounds, figures, commands: opts.commands })))
    opts.commands?.push(
      `# media: ${EXTRACTIONS} × (python3 data_dir/bin/yt-dlp-bundled ${YTDLP_ARGS.join(' ')} -- <fixture video page>?bench=<unique>) ` +
        `interleaved with GET /api/download.json?url=<the same, another unique>; ${CACHED_REQUESTS} × GET /api/download.json of one URL with fetch; ` +
        `curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}\\n' <url> … with the fixture's /media/big.mp4 and the signed /dl link and scripts/bench/bare-proxy.ts taken in turn, ${GET_ROUNDS} of each ` +
        `(and ${PARALLEL_CLIENTS} curls at once, ${GETS_PER_CLIENT} GETs each, one URL after the other); alone: bun scripts/bench/media.ts`,
    )
  } finally {
    await bare?.stop()
    await proxy?.stop()
    await box?.server.stop()
    await fx?.stop()
  }
  return lines
}

if (import.meta.main) {
  const rounds = Number(process.env.LINKBOX_BENCH_ROUNDS ?? 3)
  const seconds = Number(process.env.LINKBOX_BENCH_SECONDS ?? 4)
  const binary = await benchBinary()
  console.log((await benchMedia({ rounds, seconds, command: [binary.path] })).join('\n'))
}
