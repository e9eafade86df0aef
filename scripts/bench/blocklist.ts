// Blocklists (issue 26): a list of 1,000,000 hosts in hosts-file and plain lines, as the public phishing and
// malware lists are published — its load time and memory in a process of its own, and the redirect of one
// hot code from a service that has it loaded against the same service without it, alternately in one run.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CHROME_UA, tempDir, writeConfig } from '../../test/support/server'
import { startBenchServer } from './binary'
import { benchLink } from './context'
import type { Figure } from './results'
import { formatResult as fmt, median, wrk } from './wrk'

const HOSTS = 1_000_000

/** Writes the list: half `0.0.0.0 host` lines, half plain names, a comment now and then. */
export function writeList(dir: string, n = HOSTS): string {
  const path = join(dir, 'blocklist-1m.txt')
  const lines: string[] = []
  for (let i = 0; i < n; i++) {
    if (i % 10_000 === 0) lines.push(`# part ${i / 10_000}`)
    lines.push(i % 2 ? `0.0.0.0 login-${i.toString(36)}.phish${i % 997}.example` : `malware-${i.toString(36)}.test`)
  }
  writeFileSync(path, `${lines.join('\n')}\n`)
  return path
}

// Run as a child: load the list once and print what it cost (a fresh process, so its memory is its own).
const LOADER = `
import { loadBlocklist } from ${JSON.stringify(join(import.meta.dir, '../../src/abuse/blocklist.ts'))}
Bun.gc(true)
const before = process.memoryUsage()
const list = await loadBlocklist([process.argv[2]])
Bun.gc(true)
const after = process.memoryUsage()
console.log(JSON.stringify({ ms: list.ms, hosts: list.set.size, table: list.set.bytes, rss: after.rss - before.rss, heap: after.heapUsed - before.heapUsed }))
`

export async function benchBlocklist(
  opts: { rounds?: number; seconds?: number; command?: readonly string[]; figures?: Figure[] } = {},
): Promise<string[]> {
  const rounds = opts.rounds ?? 3
  const seconds = opts.seconds ?? 4
  const dir = tempDir('linkbox-bench-blocklist-')
  const list = writeList(dir)
  const lines: string[] = []
  const loader = join(dir, 'load.ts')
  writeFileSync(loader, LOADER)
  const loads: { ms: number; hosts: number; table: number; rss: number }[] = []
  for (let i = 0; i < 3; i++) {
    const p = Bun.spawnSync([process.execPath, loader, list], { stdout: 'pipe', stderr: 'pipe' })
    loads.push(JSON.parse(p.stdout.toString()))
  }
  const ms = median(loads.map((l) => l.ms))
  const rss = median(loads.map((l) => l.rss)) / 2 ** 20
  lines.push(
    `load of ${loads[0]!.hosts.toLocaleString('en-US')} hosts: ${loads.map((l) => `${l.ms.toFixed(0)} ms`).join(', ')} (median ${ms.toFixed(0)} ms); table ${(loads[0]!.table / 2 ** 20).toFixed(0)} MiB, RSS +${rss.toFixed(0)} MiB`,
  )

  const withList = await startBenchServer({
    command: opts.command,
    config: writeConfig(tempDir(), { links: { blocklist_files: [list] } }),
  })
  const without = await startBenchServer({ command: opts.command })
  try {
    const a = await benchLink(withList, opts.command)
    const b = await benchLink(without, opts.command)
    const headers = { 'user-agent': CHROME_UA }
    await wrk(`${withList.url}/${a.code}`, { seconds: 1, headers })
    await wrk(`${without.url}/${b.code}`, { seconds: 1, headers })
    const ratios: number[] = []
    for (let i = 0; i < rounds; i++) {
      const w = await wrk(`${withList.url}/${a.code}`, { seconds, headers })
      const o = await wrk(`${without.url}/${b.code}`, { seconds, headers })
      ratios.push(w.rps / o.rps)
      lines.push(`round ${i + 1}: 1M hosts listed   ${fmt(w)}`)
      lines.push(`round ${i + 1}: no list           ${fmt(o)}  (with ÷ without ${(w.rps / o.rps).toFixed(2)})`)
    }
    lines.push(
      `redirect of one hot code with 1M listed hosts ÷ without: median ${median(ratios).toFixed(2)} over ${rounds} rounds of ${seconds} s`,
    )
    opts.figures?.push(
      {
        id: 'blocklist-load-ms',
        label: 'Blocklist of 1,000,000 hosts: load time',
        value: ms,
        unit: 'ms',
        target: { op: '<=', value: 2000 },
        baseline: 'a child process reading the file',
      },
      { id: 'blocklist-rss', label: 'Blocklist of 1,000,000 hosts: memory (RSS added)', value: rss, unit: 'MiB' },
      {
        id: 'blocklist-redirect-ratio',
        label: 'Redirects of one hot code with 1M hosts listed ÷ without',
        value: median(ratios),
        rounds: ratios,
        unit: '×',
        target: { op: '>=', value: 0.95 },
        baseline: 'the same binary without blocklist_files',
      },
    )
  } finally {
    await withList.stop()
    await without.stop()
  }
  return lines
}

if (import.meta.main) console.log((await benchBlocklist()).join('\n'))
