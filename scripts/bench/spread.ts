// Redirects spread over many links, as real traffic is (issue 7: 0.18–0.44 of bare over 1,000 codes,
// 0.09–0.10 over 100,000 codes on a 1M-link database, where one hot code gave 0.84). Each request picks a
// random code (random-code.lua); the bare Bun.serve 302 and the floors (bare-reads.ts serving the same codes
// from a Map: issue 39's baselines) get the same requests, so the Lua costs every side alike. Every click is
// recorded (a browser user agent): the click writer is part of the figure.
import { apiPost, CHROME_UA } from '../../test/support/server'
import { serveCopy } from './binary'
import { codesFile, LUA, mib, noted, startBare, THREE_RULES, type BenchContext } from './context'
import { cachedData } from './load'
import { formatResult as fmt, median, peakRss, rssMiB, wrk, wrkWithCpu, type WrkResult } from './wrk'

type Cpu = WrkResult & { cpuUs: number }

export const STATS_DATA = { links: 100_000, clicks: 10_000_000 }
export const MILLION_DATA = { links: 1_000_000, clicks: 0 }

export async function benchSpread(ctx: BenchContext): Promise<string[]> {
  const lines: string[] = []
  const small = await cachedData(ctx.cacheDir, STATS_DATA.links, STATS_DATA.clicks)
  const large = await cachedData(ctx.cacheDir, MILLION_DATA.links, MILLION_DATA.clicks)
  for (const d of [small, large])
    lines.push(
      `data: ${d.data.links.toLocaleString('en-US')} links, schema ${d.data.schema}, ${d.made ? `made in ${(d.ms / 1000).toFixed(1)} s` : 'from the cache'} (${d.dir})`,
    )
  const codes1k = codesFile(small.dir, 1_000)
  // Another 1,000 codes of the same data set, given three rules each on the server's copy below.
  const rules1k = codesFile(small.dir, 1_000, 1)
  const codes100k = codesFile(large.dir, 100_000)
  const bare = await startBare('bare-redirect')
  // The floors (issue 39): bare-reads.ts serving the same codes from a Map, measured beside linkbox each round.
  const floor1k = await startBare('bare-reads', codes1k)
  const floor100k = await startBare('bare-reads', codes100k)
  const boxSmall = await serveCopy(ctx.binary, small.dir)
  const boxLarge = await serveCopy(ctx.binary, large.dir)
  try {
    await Bun.sleep(500)
    const idleSmall = rssMiB(boxSmall.proc.pid)
    const idleLarge = rssMiB(boxLarge.proc.pid)
    const headers = { 'user-agent': CHROME_UA }
    const ruled = (await Bun.file(rules1k).text()).trim().split('\n')
    for (let i = 0; i < ruled.length; i += 20)
      await Promise.all(
        ruled.slice(i, i + 20).map(async (code) => {
          const r = await apiPost(
            boxSmall.url,
            'update.json',
            { code, rules: THREE_RULES },
            { 'x-api-key': small.data.key },
          )
          if (r.status !== 200) throw new Error(`bench: rules on ${code} refused: ${JSON.stringify(r.body)}`)
        }),
      )
    const run = (url: string, codes: string, seconds = ctx.seconds) =>
      wrk(url, { seconds, headers, script: LUA.randomCode, scriptArgs: [codes] }).then((r) => noted(ctx, r))
    /** A run with the server's CPU per request (wrkWithCpu) and its peak RSS. */
    const measured = async (server: { url: string; proc: { pid: number } }, codes: string): Promise<[Cpu, number]> => {
      const r = wrkWithCpu(server.url, server.proc.pid, {
        seconds: ctx.seconds,
        headers,
        script: LUA.randomCode,
        scriptArgs: [codes],
      }).then((x) => (noted(ctx, x), x))
      return Promise.all([r, peakRss(server.proc.pid, r)])
    }
    /** linkbox and its floor side by side, their order swapped every other round. */
    const pair = async (i: number, floor: typeof floor1k, box: typeof boxSmall, codes: string) => {
      if (i % 2 === 0) {
        const [f] = await measured(floor, codes)
        return [f, ...(await measured(box, codes))] as const
      }
      const [l, rss] = await measured(box, codes)
      const [f] = await measured(floor, codes)
      return [f, l, rss] as const
    }
    // Warm: JIT, statement caches, the link cache.
    await run(bare.url, codes1k, 1)
    await run(floor1k.url, codes1k, 1)
    await run(floor100k.url, codes100k, 1)
    await run(boxSmall.url, codes1k, 1)
    await run(boxSmall.url, rules1k, 1)
    await run(boxLarge.url, codes100k, 1)
    const ratios1k: number[] = []
    const p99s: number[] = []
    const ratios100k: number[] = []
    const floor1kRatios: number[] = []
    const floorP99s: number[] = []
    const floor100kRatios: number[] = []
    const cpu1k: number[] = []
    const cpu100k: number[] = []
    const rulesRatios: number[] = []
    const rulesCosts: number[] = []
    let peakSmall = 0
    let peakLarge = 0
    let errors = 0
    const bares: WrkResult[] = []
    const floors1k: Cpu[] = []
    const floors100k: Cpu[] = []
    for (let i = 0; i < ctx.rounds; i++) {
      const b = await run(bare.url, codes1k)
      const [f1, s, rssS] = await pair(i, floor1k, boxSmall, codes1k)
      // Right after the same codes without rules, on the same server: the 1M-link server's writes after its
      // run would otherwise weigh on this one alone.
      const [r, rssR] = await measured(boxSmall, rules1k)
      const [f100, l, rssL] = await pair(i, floor100k, boxLarge, codes100k)
      rulesRatios.push(r.rps / b.rps)
      rulesCosts.push(r.rps / s.rps)
      peakSmall = Math.max(peakSmall, rssR, rssS)
      peakLarge = Math.max(peakLarge, rssL)
      errors += r.errors + s.errors + l.errors + f1.errors + f100.errors
      bares.push(b)
      floors1k.push(f1)
      floors100k.push(f100)
      ratios1k.push(s.rps / b.rps)
      p99s.push(s.p99ms / b.p99ms)
      ratios100k.push(l.rps / b.rps)
      floor1kRatios.push(s.rps / f1.rps)
      floorP99s.push(s.p99ms / f1.p99ms)
      floor100kRatios.push(l.rps / f100.rps)
      cpu1k.push(s.cpuUs / f1.cpuUs)
      cpu100k.push(l.cpuUs / f100.cpuUs)
      const cpu = (x: Cpu, f: Cpu) => `CPU ${x.cpuUs.toFixed(1)} µs, ${(x.cpuUs / f.cpuUs).toFixed(2)}× the floor's`
      lines.push(`round ${i + 1}: bare Bun.serve 302, random paths          ${fmt(b)}`)
      lines.push(
        `round ${i + 1}: floor, 1,000 codes from a Map            ${fmt(f1)}  (ratio ${(f1.rps / b.rps).toFixed(2)}; CPU ${f1.cpuUs.toFixed(1)} µs)`,
      )
      lines.push(
        `round ${i + 1}: linkbox, 1,000 codes (100k-link db)       ${fmt(s)}  (÷ floor ${(s.rps / f1.rps).toFixed(2)}, p99 ${(s.p99ms / f1.p99ms).toFixed(1)}× the floor's; ratio ${(s.rps / b.rps).toFixed(2)}; ${cpu(s, f1)})`,
      )
      lines.push(
        `round ${i + 1}: floor, 100,000 codes from a Map          ${fmt(f100)}  (ratio ${(f100.rps / b.rps).toFixed(2)}; CPU ${f100.cpuUs.toFixed(1)} µs)`,
      )
      lines.push(
        `round ${i + 1}: linkbox, 100,000 codes (1M-link db)       ${fmt(l)}  (÷ floor ${(l.rps / f100.rps).toFixed(2)}; ratio ${(l.rps / b.rps).toFixed(2)}; ${cpu(l, f100)})`,
      )
      lines.push(
        `round ${i + 1}: linkbox, 1,000 codes with 3 rules each    ${fmt(r)}  (ratio ${(r.rps / b.rps).toFixed(2)}; ÷ without rules ${(r.rps / s.rps).toFixed(2)})`,
      )
    }
    const bareRps = median(bares.map((b) => b.rps))
    const bareP99 = median(bares.map((b) => b.p99ms))
    const baseline = `bare Bun.serve 302: ${Math.round(bareRps).toLocaleString('en-US')} req/s, p99 ${bareP99.toFixed(2)} ms`
    const floorWords = (fs: Cpu[], n: string) =>
      `the floor serving the ${n} codes from a Map, same rounds: ${Math.round(median(fs.map((f) => f.rps))).toLocaleString('en-US')} req/s, p99 ${median(fs.map((f) => f.p99ms)).toFixed(2)} ms`
    ctx.figures.push(
      {
        id: 'redirect-1k-floor-ratio',
        label: 'Redirects over 1,000 codes ÷ the floor serving them from a Map',
        value: median(floor1kRatios),
        rounds: floor1kRatios,
        unit: '×',
        target: { op: '>=', value: 0.85 },
        baseline: `${floorWords(floors1k, '1,000')}; CPU per request ${median(cpu1k).toFixed(2)}× the floor's`,
      },
      {
        id: 'redirect-1k-floor-p99',
        label: "Redirects over 1,000 codes: p99 ÷ the floor's p99",
        value: median(floorP99s),
        rounds: floorP99s,
        unit: '×',
        target: { op: '<=', value: 2 },
        baseline: floorWords(floors1k, '1,000'),
      },
      {
        id: 'redirect-100k-floor-ratio',
        label: 'Redirects over 100,000 codes on 1M links ÷ the floor serving them from a Map',
        value: median(floor100kRatios),
        rounds: floor100kRatios,
        unit: '×',
        target: { op: '>=', value: 0.6 },
        baseline: `${floorWords(floors100k, '100,000')}; CPU per request ${median(cpu100k).toFixed(2)}× the floor's`,
      },
      {
        id: 'redirect-1k-ratio',
        label: 'Redirects over 1,000 codes ÷ bare',
        value: median(ratios1k),
        rounds: ratios1k,
        unit: '×',
        baseline: `${baseline} (issue 21's target, ≥ 0.85 of bare, is now issue 39's ÷ the floor)`,
      },
      {
        id: 'redirect-1k-p99',
        label: 'Redirects over 1,000 codes: p99 ÷ bare p99',
        value: median(p99s),
        rounds: p99s,
        unit: '×',
        baseline,
      },
      {
        id: 'redirect-1k-rules-ratio',
        label: 'Redirects over 1,000 codes with 3 redirect rules each (none matching) ÷ bare',
        value: median(rulesRatios),
        rounds: rulesRatios,
        unit: '×',
        target: { op: '>=', value: 0.85 },
        baseline: `${baseline}; ÷ 1,000 codes without rules: ${median(rulesCosts).toFixed(2)}`,
      },
      {
        id: 'redirect-100k-ratio',
        label: 'Redirects over 100,000 codes on 1M links ÷ bare',
        value: median(ratios100k),
        rounds: ratios100k,
        unit: '×',
        baseline,
      },
      {
        id: 'rss-idle-100k',
        label: 'RSS idle, 100k links + 10M clicks',
        value: idleSmall,
        unit: 'MiB',
        target: { op: '<=', value: 80 },
      },
      {
        id: 'rss-idle-1m',
        label: 'RSS idle, 1M links',
        value: idleLarge,
        unit: 'MiB',
        target: { op: '<=', value: 80 },
      },
      {
        id: 'rss-peak-redirect-1k',
        label: 'RSS peak, redirects over 1,000 codes',
        value: peakSmall,
        unit: 'MiB',
        target: { op: '<=', value: 200 },
      },
      {
        id: 'rss-peak-redirect-100k',
        label: 'RSS peak, redirects over 100,000 codes on 1M links',
        value: peakLarge,
        unit: 'MiB',
        target: { op: '<=', value: 160 },
      },
    )
    lines.push(
      `median over ${ctx.rounds} rounds of ${ctx.seconds} s (wrk -t2 -c64): 1,000 codes ${median(floor1kRatios).toFixed(2)} of the floor (target ≥ 0.85), p99 ${median(floorP99s).toFixed(1)}× the floor's (≤ 2); 100,000 codes on 1M links ${median(floor100kRatios).toFixed(2)} of the floor (≥ 0.6)`,
    )
    lines.push(
      `server CPU per request ÷ the floor's: 1,000 codes ${median(cpu1k).toFixed(2)}, 100,000 codes ${median(cpu100k).toFixed(2)}; against bare: 1,000 codes ${median(ratios1k).toFixed(2)}, p99 ${median(p99s).toFixed(1)}× bare's, 100,000 codes ${median(ratios100k).toFixed(2)}`,
    )
    lines.push(
      `1,000 codes with 3 rules each: ${median(rulesRatios).toFixed(2)} of bare, ${median(rulesCosts).toFixed(2)} of 1,000 codes without rules`,
    )
    lines.push(
      `RSS: idle ${mib(idleSmall)} (100k links) and ${mib(idleLarge)} (1M links); peak ${mib(peakSmall)} and ${mib(peakLarge)}`,
    )
    if (errors) lines.push(`ERRORS: ${errors} answers were not 302 (unknown codes?)`)
  } finally {
    await boxSmall.stop()
    await boxLarge.stop()
    await bare.stop()
    await floor1k.stop()
    await floor100k.stop()
  }
  return lines
}
