// Link creation (issue 7: getLink.json reached 0.07–0.10 of a bare JSON answer: a commit per link, the
// streamed body reader, the key lookup) against a bare Bun.serve answering a small JSON, alternately.
// Every request creates a link (post.lua with 1,000 distinct URLs), on a fresh database.
import { createAccount } from '../../test/support/server'
import { serveCopy } from './binary'
import { bodiesFile, keyHeader, LUA, mib, noted, startBare, type BenchContext } from './context'
import { formatResult as fmt, median, peakRss, rssMiB, wrk } from './wrk'

export async function benchCreate(ctx: BenchContext): Promise<string[]> {
  const lines: string[] = []
  const bodies = bodiesFile(
    'create',
    Array.from({ length: 1000 }, (_, i) => ({ url: `https://example.com/new/${i}?ref=bench` })),
  )
  const bare = await startBare('bare-json')
  const box = await serveCopy(ctx.binary, null)
  try {
    const key = await createAccount(box.configPath, 'bench', { command: [ctx.binary.path] })
    const run = (url: string, seconds = ctx.seconds) =>
      wrk(url, { seconds, headers: keyHeader(key), script: LUA.post, scriptArgs: [bodies] }).then((r) => noted(ctx, r))
    const api = `${box.url}/api/getLink.json`
    await run(bare.url, 1)
    await run(api, 1)
    const idle = rssMiB(box.proc.pid)
    const ratios: number[] = []
    const bares: number[] = []
    let peak = 0
    let errors = 0
    for (let i = 0; i < ctx.rounds; i++) {
      const b = await run(bare.url)
      const r = run(api)
      const [l, rss] = await Promise.all([r, peakRss(box.proc.pid, r)])
      peak = Math.max(peak, rss)
      errors += l.errors
      ratios.push(l.rps / b.rps)
      bares.push(b.rps)
      lines.push(`round ${i + 1}: bare Bun.serve JSON      ${fmt(b)}`)
      lines.push(`round ${i + 1}: linkbox getLink.json    ${fmt(l)}  (ratio ${(l.rps / b.rps).toFixed(2)})`)
    }
    const baseline = `bare JSON answer: ${Math.round(median(bares)).toLocaleString('en-US')} req/s`
    ctx.figures.push(
      {
        id: 'create-ratio',
        label: 'Creations (getLink.json, keyed) ÷ bare JSON answer',
        value: median(ratios),
        rounds: ratios,
        unit: '×',
        target: { op: '>=', value: 0.3 },
        baseline,
      },
      {
        id: 'rss-peak-create',
        label: 'RSS peak, creations',
        value: peak,
        unit: 'MiB',
        target: { op: '<=', value: 200 },
      },
    )
    lines.push(
      `creations / bare JSON: median ratio ${median(ratios).toFixed(2)} over ${ctx.rounds} rounds of ${ctx.seconds} s (wrk -t2 -c64); RSS ${mib(idle)} before, peak ${mib(peak)}`,
    )
    if (errors) lines.push(`ERRORS: ${errors} creations were not answered 200`)
  } finally {
    await box.stop()
    await bare.stop()
  }
  return lines
}
