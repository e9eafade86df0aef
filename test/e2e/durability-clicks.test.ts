// Clicks across a shutdown and a crash (issue 7, "How it is checked"): the real server as a child process,
// real sockets, the real SQLite file. 100,000 clicks over 5,000 links, then SIGTERM: every one is recorded,
// once. Under a steady stream, SIGKILL: what is lost is bounded by the write interval.
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import {
  CHROME_UA,
  createAccount,
  killAllServers,
  removeDir,
  startServer,
  tempDir,
  writeConfig,
  type TestConfig,
} from '../support/server'

setDefaultTimeout(90_000)

const LINKS = 5_000
/** The recorder's write interval in the server (ClickRecorderOptions.intervalMs, default). */
const INTERVAL_MS = 1_000

const dirs: string[] = []
afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
})

/** A data directory with LINKS links, put straight into the file (5,000 API calls would only cost time). */
async function withLinks(): Promise<{ config: TestConfig; codes: string[] }> {
  const config = writeConfig(tempDir('linkbox-clicks-durability-'))
  dirs.push(config.dir)
  await createAccount(config.configPath, 'owner') // creates the database, migrated
  const codes = Array.from({ length: LINKS }, (_, i) => `d${i.toString(36).padStart(5, '0')}`)
  const db = new Database(join(config.dataDir, 'linkbox.db'))
  const insert = db.query('INSERT INTO links (code, long_url, created, updated) VALUES (?, ?, ?, ?)')
  db.transaction(() =>
    codes.forEach((code, i) => insert.run(code, `https://example.com/${i}`, Date.now(), Date.now())),
  )()
  db.close()
  return { config, codes }
}

/** Clicks recorded in the file: the links' totals and the daily rows (humans and bots). */
function recorded(config: TestConfig) {
  const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
  try {
    const n = (sql: string) => (db.query(sql).get() as { n: number | null }).n ?? 0
    return {
      links: n('SELECT sum(clicks + bots) AS n FROM links'),
      days: n('SELECT sum(clicks + bots) AS n FROM click_days'),
      perLink: db.query('SELECT DISTINCT clicks + bots AS n FROM links').all() as { n: number }[],
    }
  } finally {
    db.close()
  }
}

/**
 * Visits `codes[i % codes.length]` for i < total, `concurrency` at a time; every answer must be a 302.
 * `paceMs` spaces each client's visits (a steady stream). Returns when the last answer is in.
 */
async function drive(base: string, codes: string[], total: number, concurrency: number, paceMs = 0) {
  let next = 0
  const client = async () => {
    for (let i = next++; i < total; i = next++) {
      const r = await fetch(`${base}/${codes[i % codes.length]}`, {
        redirect: 'manual',
        headers: { 'user-agent': CHROME_UA },
      })
      if (r.status !== 302) throw new Error(`visit ${i}: ${r.status}`)
      await r.arrayBuffer()
      if (paceMs) await Bun.sleep(paceMs)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, client))
}

test('100,000 clicks over 5,000 links, then SIGTERM: exactly 100,000 recorded, 20 per link', async () => {
  const { config, codes } = await withLinks()
  const server = await startServer({ config })
  const TOTAL = 100_000
  await drive(server.url, codes, TOTAL, 64)
  expect(await server.stop('SIGTERM')).toBe(0)
  expect(recorded(config)).toEqual({ links: TOTAL, days: TOTAL, perLink: [{ n: TOTAL / LINKS }] })
})

test('SIGKILL under a steady stream loses at most the clicks of the last interval and the write in flight', async () => {
  const { config, codes } = await withLinks()
  const server = await startServer({ config })
  const TOTAL = 10_000
  const started = performance.now()
  await drive(server.url, codes, TOTAL, 8, 5)
  const seconds = (performance.now() - started) / 1000
  await server.kill() // the moment the last answer is in: no handler, no flush
  const after = recorded(config)
  // Committed counts are exact: the totals and the daily rows agree, and nothing is counted twice.
  expect(after.days).toBe(after.links)
  expect(after.links).toBeLessThanOrEqual(TOTAL)
  // What was not committed at the kill: the batch being filled (at most one interval of clicks, the
  // timer cuts it every INTERVAL_MS) and the batch the writer thread held (cut one interval earlier;
  // a write takes far less than an interval at this rate). So at most two intervals of the rate driven;
  // half an interval more for a tick delayed on a busy machine.
  const rate = TOTAL / seconds
  const bound = Math.ceil(rate * 2.5 * (INTERVAL_MS / 1000))
  expect(TOTAL - after.links).toBeLessThanOrEqual(bound)
  expect(bound).toBeLessThan(TOTAL / 2) // the bound says something: the stream lasted several intervals

  // Restarted on the same file, it counts on from what was committed.
  const again = await startServer({ config })
  await drive(again.url, codes, LINKS, 16)
  expect(await again.stop('SIGTERM')).toBe(0)
  const end = recorded(config)
  expect(end.links).toBe(after.links + LINKS)
  expect(end.days).toBe(end.links)
})
