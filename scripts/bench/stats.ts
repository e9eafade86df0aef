// Statistics of a popular link (issue 7: stats.json of a link with 10M clicks over 365 days took 86 ms at
// p50 and 911 KB, and one client polling it brought redirects down to 0.011 of alone). Latency is measured
// one request at a time (wrk -t1 -c1), beside the bare JSON answer's; the page /<code>+ comes from many
// client addresses (forwarded.lua), as its views are limited per address. A third stats.json variant asks
// for a different 365-day window each time, which no answer cache can serve.
import { CHROME_UA } from '../../test/support/server'
import { serveCopy } from './binary'
import { addDays, bodiesFile, codesFile, keyHeader, LUA, mib, noted, startBare, type BenchContext } from './context'
import { cachedData } from './load'
import type { Figure } from './results'
import { STATS_DATA } from './spread'
import { formatResult as fmt, median, peakRss, rssMiB, wrk, type WrkResult } from './wrk'

export async function benchStats(ctx: BenchContext): Promise<string[]> {
  const lines: string[] = []
  const { dir, data } = await cachedData(ctx.cacheDir, STATS_DATA.links, STATS_DATA.clicks)
  const code = data.statsCode
  const window = (days: number, endsBefore = 0) => ({
    code,
    from: addDays(data.endDay, -endsBefore - days + 1),
    to: addDays(data.endDay, -endsBefore),
  })
  const bodies = {
    d30: bodiesFile('stats-30', [window(30)]),
    d365: bodiesFile('stats-365', [window(365)]),
    moving: bodiesFile(
      'stats-365-moving',
      Array.from({ length: 300 }, (_, i) => window(365, i)),
    ),
  }
  const codes1k = codesFile(dir, 1_000)
  const bareJson = await startBare('bare-json')
  const box = await serveCopy(ctx.binary, dir, {
    server: { host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1/32'] },
  })
  try {
    const headers = keyHeader(data.key)
    const api = `${box.url}/api/stats.json`
    const page = `${box.url}/${code}+`
    // Sizes and a check that the answers are what they should be.
    const sizes: Record<string, number> = {}
    for (const [name, days] of [
      ['d30', 30],
      ['d365', 365],
    ] as const) {
      const res = await fetch(api, { method: 'POST', headers, body: new URLSearchParams(window(days)) })
      const text = await res.text()
      sizes[name] = text.length
      const body = JSON.parse(text)
      if (res.status !== 200) throw new Error(`bench: stats.json answered ${res.status}: ${text.slice(0, 300)}`)
      const sum = (body.return.days as { clicks: number }[]).reduce((a, d) => a + d.clicks, 0)
      lines.push(
        `stats.json ${days} days: ${text.length.toLocaleString('en-US')} bytes, ${sum.toLocaleString('en-US')} clicks in the window ` +
          `(${body.return.clicks.toLocaleString('en-US')} all time), ${body.return.sources.length} sources listed`,
      )
    }
    const pageRes = await fetch(page, { headers: { 'x-forwarded-for': '192.0.2.1' } })
    sizes.page = (await pageRes.text()).length
    if (pageRes.status !== 200) throw new Error(`bench: ${page} answered ${pageRes.status}`)
    lines.push(
      `/<code>+ (the last 30 days; the page has no window parameter): ${sizes.page.toLocaleString('en-US')} bytes`,
    )

    const one = { seconds: ctx.seconds, connections: 1, threads: 1 }
    const post = (body: string, seconds = ctx.seconds) =>
      wrk(api, { ...one, seconds, headers, script: LUA.post, scriptArgs: [body] }).then((r) => noted(ctx, r))
    const redirects = (seconds = ctx.seconds) =>
      wrk(box.url, {
        seconds,
        headers: { 'user-agent': CHROME_UA },
        script: LUA.randomCode,
        scriptArgs: [codes1k],
      }).then((r) => noted(ctx, r))
    await post(bodies.d365, 1)
    await redirects(1)
    const idle = rssMiB(box.proc.pid)

    const bare = noted(ctx, await wrk(bareJson.url, one))
    lines.push(`bare Bun.serve JSON, one at a time            ${fmt(bare)}`)
    const baseline = `bare JSON answer one at a time: p50 ${bare.p50ms.toFixed(2)} ms`
    let peak = 0
    const latency = async (label: string, r: Promise<WrkResult>) => {
      const [res, rss] = await Promise.all([r, peakRss(box.proc.pid, r)])
      peak = Math.max(peak, rss)
      lines.push(`${label.padEnd(46)} ${fmt(res)}`)
      return res
    }
    const s30 = await latency('stats.json, 30 days, one at a time', post(bodies.d30))
    const s365 = await latency('stats.json, 365 days, one at a time', post(bodies.d365))
    const moving = await latency('stats.json, 365 days, a new window each time', post(bodies.moving))
    const p30 = await latency(
      '/<code>+, 30 days, one at a time',
      wrk(page, { ...one, script: LUA.forwarded }).then((r) => noted(ctx, r)),
    )
    const size = (id: string, label: string, bytes: number, target?: number): Figure => ({
      id,
      label,
      value: bytes / 1024,
      unit: 'KB',
      ...(target ? { target: { op: '<=' as const, value: target } } : {}),
    })
    ctx.figures.push(
      {
        id: 'stats-30-p50',
        label: 'stats.json at 10M clicks, 30 days: p50',
        value: s30.p50ms,
        unit: 'ms',
        target: { op: '<=', value: 10 },
        baseline,
      },
      { id: 'stats-30-p99', label: 'stats.json at 10M clicks, 30 days: p99', value: s30.p99ms, unit: 'ms', baseline },
      size('stats-30-size', 'stats.json at 10M clicks, 30 days: answer', sizes.d30!, 50),
      {
        id: 'stats-365-p50',
        label: 'stats.json at 10M clicks, 365 days: p50',
        value: s365.p50ms,
        unit: 'ms',
        target: { op: '<=', value: 10 },
        baseline,
      },
      {
        id: 'stats-365-p99',
        label: 'stats.json at 10M clicks, 365 days: p99',
        value: s365.p99ms,
        unit: 'ms',
        baseline,
      },
      size('stats-365-size', 'stats.json at 10M clicks, 365 days: answer', sizes.d365!, 50),
      {
        id: 'stats-365-moving-p50',
        label: 'stats.json, 365 days, a different window each request: p50',
        value: moving.p50ms,
        unit: 'ms',
        baseline,
      },
      { id: 'page-30-p50', label: '/<code>+ at 10M clicks (30 days): p50', value: p30.p50ms, unit: 'ms', baseline },
      { id: 'page-30-p99', label: '/<code>+ at 10M clicks (30 days): p99', value: p30.p99ms, unit: 'ms', baseline },
      size('page-30-size', '/<code>+ at 10M clicks (30 days): page', sizes.page!),
    )

    // Redirects alone, then with one client polling stats.json (365 days) at the same time.
    const ratios: number[] = []
    for (let i = 0; i < ctx.rounds; i++) {
      const alone = await redirects()
      const r = redirects()
      const poll = post(bodies.d365)
      const [both, polled, rss] = await Promise.all([r, poll, peakRss(box.proc.pid, r)])
      peak = Math.max(peak, rss)
      ratios.push(both.rps / alone.rps)
      lines.push(`round ${i + 1}: redirects over 1,000 codes alone        ${fmt(alone)}`)
      lines.push(
        `round ${i + 1}: the same while stats.json is polled     ${fmt(both)}  (ratio ${(both.rps / alone.rps).toFixed(2)}; stats.json ${polled.rps.toFixed(0)} answers/s, p50 ${polled.p50ms.toFixed(1)} ms)`,
      )
    }
    ctx.figures.push(
      {
        id: 'redirect-while-stats',
        label: 'Redirects while one client polls stats.json (365 days) ÷ alone',
        value: median(ratios),
        rounds: ratios,
        unit: '×',
        target: { op: '>=', value: 0.8 },
        baseline: 'redirects over 1,000 codes alone, same server',
      },
      {
        id: 'rss-peak-stats',
        label: 'RSS peak, statistics and redirects while polled',
        value: peak,
        unit: 'MiB',
        target: { op: '<=', value: 200 },
      },
    )
    lines.push(
      `redirects while polled / alone: median ratio ${median(ratios).toFixed(2)} over ${ctx.rounds} rounds of ${ctx.seconds} s; RSS ${mib(idle)} before, peak ${mib(peak)}`,
    )
  } finally {
    await box.stop()
    await bareJson.stop()
  }
  return lines
}
