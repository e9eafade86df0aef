// Redirects when every request carries a different 1 KB user agent (issue 6, finding 9: classification
// at flush time cut redirects from 38k to 6.5k req/s with ~100 ms stalls), against the same service
// with one repeated browser user agent, measured alternately in the same run. A bare Bun.serve 302 under
// the same distinct-user-agent load shows what the 1 KB header and wrk's Lua requests cost by themselves.
import { rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { apiPost, CHROME_UA, tempDir } from '../../test/support/server'
import { startBenchServer } from './binary'
import { benchLink, startBare } from './context'
import { formatResult as fmt, median, wrk } from './wrk'

// Each wrk thread numbers its requests; with the thread's number that makes every user agent distinct.
const DISTINCT_UA_LUA = `
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local n = 0
local pad = string.rep("x", 1000)
function request()
  n = n + 1
  return wrk.format("GET", nil, { ["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64) bench/" .. tid .. "." .. n .. " " .. pad })
end
`

export async function benchDistinctUa(
  opts: { rounds?: number; seconds?: number; command?: readonly string[] } = {},
): Promise<string[]> {
  const rounds = opts.rounds ?? 3
  const seconds = opts.seconds ?? 5
  const script = join(tempDir('linkbox-bench-'), 'distinct-ua.lua')
  writeFileSync(script, DISTINCT_UA_LUA)
  const bare = await startBare('bare-redirect')
  // The linkbox under test: the bench's binary, or `bun src/main.ts` when run alone.
  const box = await startBenchServer({ command: opts.command })
  const lines: string[] = []
  try {
    const { key, code } = await benchLink(box, opts.command)
    const url = `${box.url}/${code}`
    const headers = { 'user-agent': CHROME_UA }
    await wrk(url, { seconds: 1, headers })
    await wrk(url, { seconds: 1, script })
    await wrk(`${bare.url}/`, { seconds: 1, script })
    const ratios: number[] = []
    const bareRatios: number[] = []
    for (let i = 0; i < rounds; i++) {
      const base = await wrk(`${bare.url}/`, { seconds, script })
      const same = await wrk(url, { seconds, headers })
      const distinct = await wrk(url, { seconds, script })
      ratios.push(distinct.rps / same.rps)
      bareRatios.push(distinct.rps / base.rps)
      lines.push(`round ${i + 1}: bare Bun.serve, distinct 1 KB user agents ${fmt(base)}`)
      lines.push(`round ${i + 1}: linkbox, one browser user agent          ${fmt(same)}`)
      lines.push(
        `round ${i + 1}: linkbox, distinct 1 KB user agents       ${fmt(distinct)}  (ratio to one user agent ${(distinct.rps / same.rps).toFixed(2)}, to bare ${(distinct.rps / base.rps).toFixed(2)})`,
      )
    }
    const stats = await apiPost(box.url, 'stats.json', { code }, { 'x-api-key': key })
    lines.push(
      `redirect throughput, distinct 1 KB user agents / one user agent: median ratio ${median(ratios).toFixed(2)} over ${rounds} rounds of ${seconds} s (wrk -t2 -c64)`,
    )
    lines.push(
      `redirect throughput with distinct 1 KB user agents, linkbox / bare Bun.serve: median ratio ${median(bareRatios).toFixed(2)}`,
    )
    const browsers = (stats.body.return.browsers as { name: string; clicks: number }[])
      .map((b) => `${b.name} ${b.clicks}`)
      .join(', ')
    lines.push(
      `clicks recorded: ${stats.body.return.clicks} humans, ${stats.body.return.bots} bots; browsers: ${browsers}`,
    )
  } finally {
    await box.stop()
    await bare.stop()
    rmSync(dirname(script), { recursive: true, force: true })
  }
  return lines
}

if (import.meta.main) console.log((await benchDistinctUa()).join('\n'))
