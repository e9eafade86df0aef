// links.json of a big account (issue 7: ~300 req/s at any depth with 100,000 links, for a count(*) of
// the account's links on every page) against the same pages of an account with 100 links, on the same
// server, alternately. Pages of 50: the first (newest) and a deep one (a cursor that leaves the 50 oldest).
// The cost ratio is the small account's throughput over the big one's: 1.0 means size costs nothing.
import { serveCopy } from './binary'
import { bodiesFile, keyHeader, LUA, mib, noted, type BenchContext } from './context'
import { cachedData } from './load'
import { STATS_DATA } from './spread'
import { formatResult as fmt, median, peakRss, rssMiB, wrk, type WrkResult } from './wrk'

const PAGE = 50

export async function benchLists(ctx: BenchContext): Promise<string[]> {
  const lines: string[] = []
  const { dir, data } = await cachedData(ctx.cacheDir, STATS_DATA.links, STATS_DATA.clicks)
  const box = await serveCopy(ctx.binary, dir)
  try {
    const api = `${box.url}/api/links.json`
    const accounts = [
      { name: '100,000 links', key: data.key, deep: data.benchFirstId + PAGE, links: data.links },
      { name: '100 links', key: data.smallKey, deep: data.smallFirstId + PAGE, links: data.smallLinks },
    ]
    const pages = accounts.flatMap((a) =>
      (
        [
          ['first page', { limit: String(PAGE) }],
          ['deep page', { limit: String(PAGE), cursor: String(a.deep) }],
        ] as [string, Record<string, string>][]
      ).map(([page, fields]) => ({ ...a, page, fields, body: bodiesFile('links', [fields]) })),
    )
    for (const p of pages) {
      const res = await fetch(api, { method: 'POST', headers: keyHeader(p.key), body: new URLSearchParams(p.fields) })
      const body = (await res.json()) as { return?: { links: unknown[]; count: number | null; next: string | null } }
      if (res.status !== 200 || body.return?.links.length !== PAGE)
        throw new Error(
          `bench: links.json (${p.name}, ${p.page}) answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`,
        )
      lines.push(
        `${p.name}, ${p.page}: ${body.return.links.length} links, count ${body.return.count}, next ${body.return.next}`,
      )
    }
    const run = (p: (typeof pages)[number], seconds = ctx.seconds) =>
      wrk(api, { seconds, headers: keyHeader(p.key), script: LUA.post, scriptArgs: [p.body] }).then((r) =>
        noted(ctx, r),
      )
    for (const p of pages) await run(p, 1)
    const idle = rssMiB(box.proc.pid)
    let peak = 0
    const results = pages.map(() => [] as WrkResult[])
    for (let i = 0; i < ctx.rounds; i++) {
      for (const [j, p] of pages.entries()) {
        const r = run(p)
        const [res, rss] = await Promise.all([r, peakRss(box.proc.pid, r)])
        peak = Math.max(peak, rss)
        results[j]!.push(res)
        lines.push(`round ${i + 1}: ${`${p.name}, ${p.page}`.padEnd(28)} ${fmt(res)}`)
      }
    }
    // pages: [big first, big deep, small first, small deep]
    for (const [k, page] of [
      [0, 'first'],
      [1, 'deep'],
    ] as const) {
      const ratios = results[k]!.map((big, i) => results[k + 2]![i]!.rps / big.rps)
      const small = median(results[k + 2]!.map((r) => r.rps))
      ctx.figures.push({
        id: `links-${page}-cost`,
        label: `links.json ${page} page: time at 100,000 links ÷ at 100`,
        value: median(ratios),
        rounds: ratios,
        unit: '×',
        target: { op: '<=', value: 1.5 },
        baseline: `the same page at 100 links: ${Math.round(small).toLocaleString('en-US')} req/s`,
      })
      lines.push(
        `${page} page: 100 links / 100,000 links throughput, median ${median(ratios).toFixed(2)} (target ≤ 1.5)`,
      )
    }
    ctx.figures.push({
      id: 'rss-peak-links',
      label: 'RSS peak, links.json',
      value: peak,
      unit: 'MiB',
      target: { op: '<=', value: 200 },
    })
    lines.push(`RSS ${mib(idle)} before, peak ${mib(peak)} (wrk -t2 -c64, ${ctx.rounds} rounds of ${ctx.seconds} s)`)
  } finally {
    await box.stop()
  }
  return lines
}
