// Start-up (issue 7: `linkbox version` took 54 ms, every module loaded before the command was read):
// `linkbox version`, the mean of 20 runs, and `serve` from spawn to the first 200 from /healthz, the median
// of 5, on a copy of the 100k-link, 10M-click database. The baseline is a compiled Bun program that prints
// a version or answers /healthz and nothing else (bare-start.ts, built here like the binary).
import { copyFileSync, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../../test/support/server'
import { mib, type BenchContext } from './context'
import { cachedData } from './load'
import { STATS_DATA } from './spread'
import { median, rssMiB } from './wrk'

async function timeVersion(command: string): Promise<number> {
  const started = performance.now()
  const proc = Bun.spawn([command, 'version'], { stdout: 'ignore', stderr: 'ignore' })
  if ((await proc.exited) !== 0) throw new Error(`bench: ${command} version failed`)
  return performance.now() - started
}

function freePort(): number {
  const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = s.port!
  s.stop(true)
  return port
}

/** Spawn → first 200 from /healthz, polled every 2 ms; then the RSS, and SIGTERM. */
async function timeServe(command: string, configPath: string, port: number): Promise<{ ms: number; rss: number }> {
  const started = performance.now()
  const proc = Bun.spawn([command, 'serve', '--config', configPath], { stdout: 'ignore', stderr: 'pipe' })
  try {
    for (;;) {
      if (proc.exitCode !== null)
        throw new Error(
          `bench: ${command} serve exited with ${proc.exitCode}: ${await new Response(proc.stderr).text()}`,
        )
      if (performance.now() - started > 30_000)
        throw new Error(`bench: ${command} serve did not answer /healthz within 30 s`)
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status === 200,
        () => false,
      )
      if (ok) break
      await Bun.sleep(2)
    }
    const ms = performance.now() - started
    await Bun.sleep(300)
    return { ms, rss: rssMiB(proc.pid) }
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
}

export async function benchStartup(ctx: BenchContext): Promise<string[]> {
  const lines: string[] = []
  const work = tempDir('linkbox-bench-start-')
  const bareBinary = join(work, 'bare-start')
  const build = Bun.spawnSync(
    [process.execPath, 'build', '--compile', join(import.meta.dir, 'bare-start.ts'), '--outfile', bareBinary],
    { stdout: 'ignore', stderr: 'pipe' },
  )
  if (build.exitCode !== 0) throw new Error(`bench: could not compile bare-start.ts: ${build.stderr}`)
  try {
    const versions: number[] = []
    const bareVersions: number[] = []
    await timeVersion(ctx.binary.path) // the first run reads the 100 MB file from disk
    await timeVersion(bareBinary)
    for (let i = 0; i < 20; i++) {
      versions.push(await timeVersion(ctx.binary.path))
      bareVersions.push(await timeVersion(bareBinary))
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
    lines.push(
      `linkbox version: mean ${mean(versions).toFixed(1)} ms over 20 runs (min ${Math.min(...versions).toFixed(1)}); compiled bare program: ${mean(bareVersions).toFixed(1)} ms`,
    )

    const { dir } = await cachedData(ctx.cacheDir, STATS_DATA.links, STATS_DATA.clicks)
    const port = freePort()
    for (const d of ['box', 'bare']) mkdirSync(join(work, d))
    const config = writeConfig(join(work, 'box'), { server: { port } })
    mkdirSync(config.dataDir, { recursive: true })
    copyFileSync(join(dir, 'linkbox.db'), join(config.dataDir, 'linkbox.db'))
    const bareConfig = writeConfig(join(work, 'bare'), { server: { port } })
    const serves: number[] = []
    const bareServes: number[] = []
    let rss = 0
    await timeServe(ctx.binary.path, config.configPath, port)
    for (let i = 0; i < 5; i++) {
      const s = await timeServe(ctx.binary.path, config.configPath, port)
      serves.push(s.ms)
      rss = Math.max(rss, s.rss)
      bareServes.push((await timeServe(bareBinary, bareConfig.configPath, port)).ms)
    }
    lines.push(
      `serve to the first 200 from /healthz: median ${median(serves).toFixed(1)} ms over 5 starts (100k links, 10M clicks); compiled bare program: ${median(bareServes).toFixed(1)} ms; RSS just after start ${mib(rss)}`,
    )
    ctx.figures.push(
      {
        id: 'startup-version',
        label: '`linkbox version` (mean of 20)',
        value: mean(versions),
        unit: 'ms',
        target: { op: '<=', value: 20 },
        baseline: `compiled bare program: ${mean(bareVersions).toFixed(1)} ms`,
      },
      {
        id: 'startup-serve',
        label: '`serve` to first answer, 100k links / 10M clicks (median of 5)',
        value: median(serves),
        rounds: serves,
        unit: 'ms',
        // Issue 39's target (issue 21's was 80 ms).
        target: { op: '<=', value: 60 },
        baseline: `compiled bare program: ${median(bareServes).toFixed(1)} ms`,
      },
      {
        id: 'rss-after-start',
        label: 'RSS just after start, 100k links + 10M clicks',
        value: rss,
        unit: 'MiB',
        target: { op: '<=', value: 80 },
      },
    )
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  return lines
}
