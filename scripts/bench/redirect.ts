// The redirect path /<code> of the real service (a child process, as `linkbox serve` runs) against a bare
// Bun.serve answering 302, measured alternately in the same run so both see the same machine load.
import { apiPost, CHROME_UA, startServer } from '../../test/support/server'
import { benchLink, startBare } from './context'
import { formatResult as fmt, median, peakRss, rssMiB, wrk } from './wrk'

export async function benchRedirect(opts: { rounds?: number; seconds?: number; command?: readonly string[] } = {}): Promise<string[]> {
  const rounds = opts.rounds ?? 3
  const seconds = opts.seconds ?? 5
  const bare = await startBare('bare-redirect')
  // The linkbox under test: the bench's binary, or `bun src/main.ts` when run alone.
  const box = await startServer({ command: opts.command })
  const lines: string[] = []
  try {
    const { key, code } = await benchLink(box, opts.command)
    const headers = { 'user-agent': CHROME_UA }
    // Warm both (JIT, statement cache).
    await wrk(`${bare.url}/`, { seconds: 1, headers })
    await wrk(`${box.url}/${code}`, { seconds: 1, headers })
    const idleRss = rssMiB(box.proc.pid)
    const ratios: number[] = []
    let peak = 0
    for (let i = 0; i < rounds; i++) {
      const b = await wrk(`${bare.url}/`, { seconds, headers })
      const run = wrk(`${box.url}/${code}`, { seconds, headers })
      const [l, rss] = await Promise.all([run, peakRss(box.proc.pid, run)])
      peak = Math.max(peak, rss)
      ratios.push(l.rps / b.rps)
      lines.push(`round ${i + 1}: bare Bun.serve 302 ${fmt(b)}`)
      lines.push(`round ${i + 1}: linkbox /<code>     ${fmt(l)}  (ratio ${(l.rps / b.rps).toFixed(2)})`)
    }
    const stats = await apiPost(box.url, 'stats.json', { code }, { 'x-api-key': key })
    lines.push(`redirect throughput, linkbox / bare: median ratio ${median(ratios).toFixed(2)} over ${rounds} rounds of ${seconds} s (wrk -t2 -c64)`)
    lines.push(`linkbox RSS: ${idleRss.toFixed(0)} MiB idle, ${peak.toFixed(0)} MiB peak under load; clicks recorded: ${stats.body.return.clicks}`)
  } finally {
    await box.stop()
    await bare.stop()
  }
  return lines
}

if (import.meta.main) console.log((await benchRedirect()).join('\n'))
