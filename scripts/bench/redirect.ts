// The redirect path /<code> of the real service (a child process, as `linkbox serve` runs) against the floor
// (bare-reads.ts: a bare Bun.serve reading what a redirect must read) and a bare Bun.serve answering 302,
// measured alternately in the same run so all see the same machine load, throughput and the servers' CPU per
// request from /proc (issue 39: ≥ 0.85 of the floor's throughput, ≤ 1.2× its CPU per request); and the
// same service with `[log] requests = false`, for what the request lines (on by default) cost. The servers'
// output goes through a pipe that this process reads, as journald reads the service's.
import { apiPost, CHROME_UA, tempDir, writeConfig } from '../../test/support/server'
import { startBenchServer } from './binary'
import { benchLink, startBare, THREE_RULES } from './context'
import type { Figure } from './results'
import { formatResult as fmt, median, peakRss, rssMiB, wrk, wrkWithCpu } from './wrk'

type Measured = Awaited<ReturnType<typeof wrkWithCpu>>

export async function benchRedirect(
  opts: { rounds?: number; seconds?: number; command?: readonly string[]; figures?: Figure[] } = {},
): Promise<string[]> {
  const rounds = opts.rounds ?? 3
  const seconds = opts.seconds ?? 5
  const bare = await startBare('bare-redirect')
  // The floor: a bare server that reads what a redirect must read and sends its three headers (bare-reads.ts).
  const floor = await startBare('bare-reads')
  // The linkbox under test: the bench's binary, or `bun src/main.ts` when run alone.
  const box = await startBenchServer({ command: opts.command })
  const quiet = await startBenchServer({
    command: opts.command,
    config: writeConfig(tempDir(), { log: { requests: false } }),
  })
  const lines: string[] = []
  try {
    const { key, code } = await benchLink(box, opts.command)
    const quietLink = await benchLink(quiet, opts.command)
    // A link with three rules (none matching) on the same server, measured in the same rounds.
    const ruled = await apiPost(
      box.url,
      'getLink.json',
      { url: 'https://example.com/bench', rules: THREE_RULES },
      { 'x-api-key': key },
    )
    if (ruled.status !== 200)
      throw new Error(`bench: a link with rules could not be made: ${JSON.stringify(ruled.body)}`)
    const rulesCode = ruled.body.return.hex as string
    const headers = { 'user-agent': CHROME_UA }
    // Warm all four (JIT, statement cache). The country database is read on the first country rule's
    // lookup: the idle figure is taken before that, as before rules existed, and once after.
    await wrk(`${bare.url}/`, { seconds: 1, headers })
    await wrk(`${floor.url}/${code}`, { seconds: 1, headers })
    await wrk(`${box.url}/${code}`, { seconds: 1, headers })
    await wrk(`${quiet.url}/${quietLink.code}`, { seconds: 1, headers })
    const idleRss = rssMiB(box.proc.pid)
    await wrk(`${box.url}/${rulesCode}`, { seconds: 1, headers })
    const rulesRss = rssMiB(box.proc.pid)
    const ratios: number[] = []
    const rulesRatios: number[] = []
    const rulesCosts: number[] = []
    const logCosts: number[] = []
    const bares: number[] = []
    const floors: number[] = []
    // The servers' CPU per request (all their threads): µs that load elsewhere on the machine disturbs less.
    const cpus = { bare: [] as number[], floor: [] as number[], linkbox: [] as number[], quiet: [] as number[] }
    const cpuRatios: number[] = []
    const overFloor: number[] = []
    let peak = 0
    for (let i = 0; i < rounds; i++) {
      // Bare, the floor, linkbox and linkbox without request lines, in the reverse order every other round:
      // none of the sides that a ratio compares always runs first.
      const servers = [
        { url: `${bare.url}/`, pid: bare.proc.pid },
        { url: `${floor.url}/${code}`, pid: floor.proc.pid },
        { url: `${box.url}/${code}`, pid: box.proc.pid },
        { url: `${quiet.url}/${quietLink.code}`, pid: quiet.proc.pid },
      ]
      const results: Measured[] = []
      let rss = 0
      for (const k of i % 2 === 0 ? [0, 1, 2, 3] : [3, 2, 1, 0]) {
        const run = wrkWithCpu(servers[k]!.url, servers[k]!.pid, { seconds, headers })
        if (k === 2) rss = await peakRss(box.proc.pid, run)
        results[k] = await run
      }
      const [b, f, l, q] = [0, 1, 2, 3].map((k) => results[k]!) as [Measured, Measured, Measured, Measured]
      const r = await wrk(`${box.url}/${rulesCode}`, { seconds, headers })
      peak = Math.max(peak, rss)
      rulesRatios.push(r.rps / b.rps)
      rulesCosts.push(r.rps / l.rps)
      ratios.push(l.rps / b.rps)
      bares.push(b.rps)
      cpus.bare.push(b.cpuUs)
      cpus.floor.push(f.cpuUs)
      cpus.linkbox.push(l.cpuUs)
      cpus.quiet.push(q.cpuUs)
      cpuRatios.push(l.cpuUs / f.cpuUs)
      floors.push(f.rps / b.rps)
      overFloor.push(l.rps / f.rps)
      logCosts.push(l.rps / q.rps)
      lines.push(`round ${i + 1}: bare Bun.serve 302   ${fmt(b)}`)
      lines.push(`round ${i + 1}: floor (reads, 3 hdrs) ${fmt(f)}  (ratio ${(f.rps / b.rps).toFixed(2)})`)
      lines.push(
        `round ${i + 1}: linkbox /<code>       ${fmt(l)}  (ratio ${(l.rps / b.rps).toFixed(2)}; ÷ floor ${(l.rps / f.rps).toFixed(2)})`,
      )
      lines.push(
        `round ${i + 1}: same, requests=false  ${fmt(q)}  (ratio ${(q.rps / b.rps).toFixed(2)}; logged ÷ not ${(l.rps / q.rps).toFixed(2)})`,
      )
      lines.push(
        `round ${i + 1}: server CPU per request: bare ${b.cpuUs.toFixed(1)} µs, floor ${f.cpuUs.toFixed(1)} µs, linkbox ${l.cpuUs.toFixed(1)} µs (${(l.cpuUs / f.cpuUs).toFixed(2)}× the floor's), requests=false ${q.cpuUs.toFixed(1)} µs`,
      )
      lines.push(
        `round ${i + 1}: a code with 3 rules    ${fmt(r)}  (ratio ${(r.rps / b.rps).toFixed(2)}; ÷ without rules ${(r.rps / l.rps).toFixed(2)})`,
      )
    }
    const stats = await apiPost(box.url, 'stats.json', { code }, { 'x-api-key': key })
    const cpu = (xs: number[]) => `${median(xs).toFixed(1)} µs`
    lines.push(
      `redirect throughput, linkbox / the floor: median ratio ${median(overFloor).toFixed(2)} over ${rounds} rounds of ${seconds} s (wrk -t2 -c64; target ≥ 0.85); linkbox / bare ${median(ratios).toFixed(2)}`,
    )
    lines.push(
      `the floor (a bare server reading what a redirect must read, bare-reads.ts): ${median(floors).toFixed(2)} of bare`,
    )
    lines.push(
      `server CPU per request (median): bare ${cpu(cpus.bare)}, floor ${cpu(cpus.floor)}, linkbox ${cpu(cpus.linkbox)} (request lines off: ${cpu(cpus.quiet)}); linkbox ÷ floor ${median(cpuRatios).toFixed(2)} (target ≤ 1.2)`,
    )
    lines.push(
      `request lines (on by default) cost: throughput with them ÷ without ${median(logCosts).toFixed(2)} (target ≥ 0.95); CPU per request with them ÷ without ${(median(cpus.linkbox) / median(cpus.quiet)).toFixed(2)}`,
    )
    lines.push(
      `a code with 3 rules (none matching): ${median(rulesRatios).toFixed(2)} of bare, ${median(rulesCosts).toFixed(2)} of the same code without rules`,
    )
    lines.push(
      `linkbox RSS: ${idleRss.toFixed(0)} MiB idle (${rulesRss.toFixed(0)} MiB after the rules code's 1 s warm-up, whose first country lookup read the country database), ${peak.toFixed(0)} MiB peak under load; clicks recorded: ${stats.body.return.clicks}`,
    )
    const bareRps = median(bares)
    const bareWords = `bare Bun.serve 302: ${Math.round(bareRps).toLocaleString('en-US')} req/s`
    opts.figures?.push(
      {
        id: 'redirect-hot-floor-ratio',
        label: 'Redirects of one hot code ÷ the floor',
        value: median(overFloor),
        rounds: overFloor,
        unit: '×',
        target: { op: '>=', value: 0.85 },
        baseline: `the floor server in the same rounds (${median(floors).toFixed(2)} of bare)`,
      },
      {
        id: 'redirect-hot-cpu-ratio',
        label: "Server CPU per redirect of one hot code ÷ the floor's (from /proc, all threads)",
        value: median(cpuRatios),
        rounds: cpuRatios,
        unit: '×',
        target: { op: '<=', value: 1.2 },
        baseline: `linkbox ${cpu(cpus.linkbox)}, floor ${cpu(cpus.floor)}, bare ${cpu(cpus.bare)}`,
      },
      {
        id: 'redirect-hot-ratio',
        label: 'Redirects of one hot code ÷ bare Bun.serve 302 (default config: request lines on)',
        value: median(ratios),
        rounds: ratios,
        unit: '×',
        baseline: `${bareWords} (issue 21's target, ≥ 0.85 of bare, is now issue 39's ÷ the floor)`,
      },
      {
        id: 'redirect-floor-ratio',
        label:
          'The floor: a bare Bun.serve that reads what a redirect must (method, path, X-Request-Id, User-Agent, Referer, peer address) and sends its 3 headers ÷ bare',
        value: median(floors),
        rounds: floors,
        unit: '×',
        baseline: `${bareWords} (reads nothing, 2 headers)`,
      },
      {
        id: 'redirect-hot-cpu',
        label: 'Server CPU per redirect of one hot code (all threads; request lines on)',
        value: median(cpus.linkbox),
        rounds: cpus.linkbox,
        unit: 'µs',
        baseline: `bare ${cpu(cpus.bare)}, floor ${cpu(cpus.floor)}, request lines off ${cpu(cpus.quiet)}`,
      },
      {
        id: 'redirect-hot-rules-ratio',
        label:
          'Redirects of one hot code with 3 redirect rules (none matching: device, country and language looked at) ÷ bare',
        value: median(rulesRatios),
        rounds: rulesRatios,
        unit: '×',
        target: { op: '>=', value: 0.85 },
        baseline: `${bareWords}; ÷ the code without rules: ${median(rulesCosts).toFixed(2)}`,
      },
      {
        id: 'redirect-log-cost',
        label: 'Redirects of one code with request lines (the default) ÷ with `[log] requests = false`',
        value: median(logCosts),
        rounds: logCosts,
        unit: '×',
        target: { op: '>=', value: 0.95 },
        baseline: `the same binary and load, request lines off; CPU per request ${cpu(cpus.linkbox)} with, ${cpu(cpus.quiet)} without`,
      },
    )
  } finally {
    await box.stop()
    await quiet.stop()
    await bare.stop()
    await floor.stop()
  }
  return lines
}

if (import.meta.main) console.log((await benchRedirect()).join('\n'))
