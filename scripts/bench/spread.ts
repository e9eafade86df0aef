// Redirects spread over many links, as real traffic is (issue 7: 0.18–0.44 of bare over 1,000 codes,
// 0.09–0.10 over 100,000 codes on a 1M-link database, where one hot code gave 0.84). Each request picks a
// random code (random-code.lua); the bare Bun.serve 302 gets the same requests, so the Lua costs both
// sides alike. Every click is recorded (a browser user agent): the click writer is part of the figure.
import { apiPost, CHROME_UA } from '../../test/support/server'
import { serveCopy } from './binary'
import { codesFile, LUA, mib, noted, startBare, THREE_RULES, type BenchContext } from './context'
import { cachedData } from './load'
import { formatResult as fmt, median, peakRss, rssMiB, wrk, type WrkResult } from './wrk'

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
    // Warm: JIT, statement caches, the link cache.
    await run(bare.url, codes1k, 1)
    await run(boxSmall.url, codes1k, 1)
    await run(boxSmall.url, rules1k, 1)
    await run(boxLarge.url, codes100k, 1)
    const ratios1k: number[] = []
    const p99s: number[] = []
    const ratios100k: number[] = []
    const rulesRatios: number[] = []
    const rulesCosts: number[] = []
    let peakSmall = 0
    let peakLarge = 0
    const measured = async (pid: number, r: Promise<WrkResult>): Promise<[WrkResult, number]> =>
      Promise.all([r, peakRss(pid, r)])
    let errors = 0
    const bares: WrkResult[] = []
    for (let i = 0; i < ctx.rounds; i++) {
      const b = await run(bare.url, codes1k)
      const [s, rssS] = await measured(boxSmall.proc.pid, run(boxSmall.url, codes1k))
      // Right after the same codes without rules, on the same server: the 1M-link server's writes after its
      // run would otherwise weigh on this one alone.
      const [r, rssR] = await measured(boxSmall.proc.pid, run(boxSmall.url, rules1k))
      const [l, rssL] = await measured(boxLarge.proc.pid, run(boxLarge.url, codes100k))
      rulesRatios.push(r.rps / b.rps)
      rulesCosts.push(r.rps / s.rps)
      peakSmall = Math.max(peakSmall, rssR)
      errors += r.errors
      bares.push(b)
      peakSmall = Math.max(peakSmall, rssS)
      peakLarge = Math.max(peakLarge, rssL)
      errors += s.errors + l.errors
      ratios1k.push(s.rps / b.rps)
      p99s.push(s.p99ms / b.p99ms)
      ratios100k.push(l.rps / b.rps)
      lines.push(`round ${i + 1}: bare Bun.serve 302, random paths          ${fmt(b)}`)
      lines.push(
        `round ${i + 1}: linkbox, 1,000 codes (100k-link db)       ${fmt(s)}  (ratio ${(s.rps / b.rps).toFixed(2)}, p99 ${(s.p99ms / b.p99ms).toFixed(1)}× bare's)`,
      )
      lines.push(
        `round ${i + 1}: linkbox, 100,000 codes (1M-link db)       ${fmt(l)}  (ratio ${(l.rps / b.rps).toFixed(2)})`,
      )
      lines.push(
        `round ${i + 1}: linkbox, 1,000 codes with 3 rules each    ${fmt(r)}  (ratio ${(r.rps / b.rps).toFixed(2)}; ÷ without rules ${(r.rps / s.rps).toFixed(2)})`,
      )
    }
    const bareRps = median(bares.map((b) => b.rps))
    const bareP99 = median(bares.map((b) => b.p99ms))
    const baseline = `bare Bun.serve 302: ${Math.round(bareRps).toLocaleString('en-US')} req/s, p99 ${bareP99.toFixed(2)} ms`
    ctx.figures.push(
      {
        id: 'redirect-1k-ratio',
        label: 'Redirects over 1,000 codes ÷ bare',
        value: median(ratios1k),
        rounds: ratios1k,
        unit: '×',
        target: { op: '>=', value: 0.85 },
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
        id: 'redirect-1k-p99',
        label: 'Redirects over 1,000 codes: p99 ÷ bare p99',
        value: median(p99s),
        rounds: p99s,
        unit: '×',
        target: { op: '<=', value: 2 },
        baseline,
      },
      {
        id: 'redirect-100k-ratio',
        label: 'Redirects over 100,000 codes on 1M links ÷ bare',
        value: median(ratios100k),
        rounds: ratios100k,
        unit: '×',
        target: { op: '>=', value: 0.6 },
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
        target: { op: '<=', value: 200 },
      },
    )
    lines.push(
      `median over ${ctx.rounds} rounds of ${ctx.seconds} s (wrk -t2 -c64): 1,000 codes ${median(ratios1k).toFixed(2)} of bare, p99 ${median(p99s).toFixed(1)}× bare's; 100,000 codes on 1M links ${median(ratios100k).toFixed(2)} of bare`,
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
  }
  return lines
}
