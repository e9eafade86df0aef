// Redirects while the database cannot be written (issue 6, finding 3): two real servers (child processes,
// as `linkbox serve` runs), one healthy and one whose files may not grow more than 64 KiB past their size at start (`ulimit -f`: the WAL
// fills and every write fails), measured alternately in the same run. Target: the failing one within 2×.
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import {
  apiPost,
  CHROME_UA,
  createAccount,
  startServer,
  writeConfig,
  type RunningServer,
} from '../../test/support/server'
import { formatResult as fmt, median, wrk } from './wrk'

const MAIN = join(import.meta.dir, '../../src/main.ts')

async function linkOn(server: RunningServer, command?: readonly string[]): Promise<{ code: string; key: string }> {
  const key = await createAccount(server.configPath, 'bench', { command })
  const made = await apiPost(server.url, 'getLink.json', { url: 'https://example.com/bench' }, { 'x-api-key': key })
  if (made.status !== 200) throw new Error(`bench: could not create the link: ${JSON.stringify(made.body)}`)
  return { code: made.body.return.hex, key }
}

export async function benchUnwritable(
  opts: { rounds?: number; seconds?: number; command?: readonly string[] } = {},
): Promise<string[]> {
  const rounds = opts.rounds ?? 3
  const seconds = opts.seconds ?? 5
  // The linkbox under test: the bench's binary, or `bun src/main.ts` when run alone.
  const command = opts.command ?? [process.execPath, MAIN]
  const healthy = await startServer({ command })
  const limitedConfig = writeConfig()
  await createAccount(limitedConfig.configPath, 'setup', { command }) // the database exists before the limit applies
  // No file may grow more than 64 KiB past the largest the set-up left (the schema's size grows with its
  // migrations: a fixed limit once refused the very first link), counted in ulimit's 512-byte blocks.
  const largest = Math.max(
    ...readdirSync(limitedConfig.dataDir).map((f) => statSync(join(limitedConfig.dataDir, f)).size),
  )
  const blocks = Math.ceil((largest + 64 * 1024) / 512)
  const failing = await startServer({
    config: limitedConfig,
    command: ['sh', '-c', `trap "" XFSZ; ulimit -f ${blocks}; exec "$0" "$@"`, ...command],
  })
  const lines: string[] = []
  try {
    const good = await linkOn(healthy, command)
    const bad = await linkOn(failing, command)
    // Fill the WAL: creates until one cannot be stored.
    let refused: { n: number; status: number } | null = null
    for (let i = 0; i < 500 && !refused; i++) {
      const r = await apiPost(
        failing.url,
        'getLink.json',
        { url: `https://example.com/${i}/${'x'.repeat(2000)}` },
        { 'x-api-key': bad.key },
      )
      if (r.status !== 200) refused = { n: i + 1, status: r.status }
    }
    if (!refused) throw new Error('bench: the limited server never refused a write')
    const headers = { 'user-agent': CHROME_UA }
    await wrk(`${healthy.url}/${good.code}`, { seconds: 1, headers })
    await wrk(`${failing.url}/${bad.code}`, { seconds: 1, headers })
    const health = await fetch(`${failing.url}/healthz`)
    lines.push(
      `limited server: create number ${refused.n} got ${refused.status}; /healthz ${health.status} ${await health.text()}`,
    )
    const ratios: number[] = []
    for (let i = 0; i < rounds; i++) {
      const h = await wrk(`${healthy.url}/${good.code}`, { seconds, headers })
      const f = await wrk(`${failing.url}/${bad.code}`, { seconds, headers })
      ratios.push(f.rps / h.rps)
      lines.push(`round ${i + 1}: writable   ${fmt(h)}`)
      lines.push(`round ${i + 1}: unwritable ${fmt(f)}  (ratio ${(f.rps / h.rps).toFixed(2)})`)
    }
    const m = median(ratios)
    lines.push(
      `redirects while the database cannot be written / while it can: median ratio ${m.toFixed(2)} over ${rounds} rounds of ${seconds} s (wrk -t2 -c64); target ≥ 0.50: ${m >= 0.5 ? 'met' : 'MISSED'}`,
    )
    const metrics = await (await fetch(`${failing.url}/metrics`)).text()
    const metric = (name: string) => metrics.match(new RegExp(`^${name} (\\d+)`, 'm'))?.[1] ?? '?'
    lines.push(
      `unwritable server: ${metric('linkbox_click_buffer')} clicks buffered, ${metric('linkbox_clicks_dropped_total')} dropped (buffer full); its log: ${failing.stderr().trim().split('\n').length} lines`,
    )
  } finally {
    await healthy.stop()
    await failing.stop().catch(() => {})
  }
  return lines
}

if (import.meta.main) console.log((await benchUnwritable()).join('\n'))
