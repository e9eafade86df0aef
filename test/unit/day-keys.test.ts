// The day key cache (src/clicks/day-keys.ts) over a real SQLite file: the redirect path never waits for it
// (current() answers null and reads in the background), tomorrow's key is read ahead of midnight, and the
// split and the visitor counter take the shared key as soon as it is here (a key of their own stands in).
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { AHEAD_MS, createDayKeys, DAY_MS } from '../../src/clicks/day-keys'
import { sqliteDayKeyRows } from '../../src/clicks/storage/sqlite'
import { createVisitorCounter } from '../../src/clicks/visitors'
import { openDatabase } from '../../src/db/sqlite'
import { createDestinations } from '../../src/links/destinations'
import type { LinkRow } from '../../src/links'
import { tempDir } from '../support/app'

const dir = tempDir('linkbox-daykeys-')
const db = openDatabase(join(dir, 'linkbox.db'))
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const DAY0 = 20_000
// The rows as PostgreSQL's are: asynchronous only (SQLite's also read at once, tested last).
const asyncRows = () => {
  const rows = sqliteDayKeyRows(db)
  return { ensure: rows.ensure }
}
const until = async (ok: () => boolean) => {
  for (let i = 0; i < 100 && !ok(); i++) await Bun.sleep(5)
}

test('tomorrow is read ahead of midnight; the keys of days past are deleted', async () => {
  let now = (DAY0 + 1) * DAY_MS - AHEAD_MS - 1000
  const keys = createDayKeys({ rows: asyncRows(), clock: () => now })
  await keys.refresh()
  expect(keys.current(DAY0)).not.toBeNull()
  expect(keys.current(DAY0 + 1)).toBeNull() // not yet: more than AHEAD_MS before midnight
  await until(() => keys.current(DAY0 + 1) !== null) // …but asking started a read in the background
  now += 2000
  await keys.refresh()
  // A second node made afterwards, at midnight, reads the same key without making one.
  now = (DAY0 + 1) * DAY_MS
  const other = createDayKeys({ rows: sqliteDayKeyRows(db), clock: () => now })
  expect(Buffer.from((await other.keyFor(DAY0 + 1)).split)).toEqual(Buffer.from(keys.current(DAY0 + 1)!.split))
  now = (DAY0 + 3) * DAY_MS
  await other.refresh()
  expect((db.query('SELECT day FROM day_keys ORDER BY day').all() as { day: number }[]).map((r) => r.day)).toEqual([
    DAY0 + 3,
  ])
})

test('a split answers at once with a key of its own, then takes the shared key: two nodes agree', async () => {
  const now = DAY0 * DAY_MS + 3600_000
  const row = {
    id: 1,
    long_url: 'https://example.com/',
    rules: null,
    split: JSON.stringify([
      { url: 'a', weight: 1 },
      { url: 'b', weight: 1 },
    ]),
  } as unknown as LinkRow
  const nodes = [0, 1].map(() => {
    const keys = createDayKeys({ rows: asyncRows(), clock: () => now })
    return {
      keys,
      d: createDestinations({
        clock: () => now,
        country: () => null,
        dayKey: (day) => keys.current(day)?.split ?? null,
      }),
    }
  })
  const visitors = Array.from({ length: 40 }, (_, i) => ({ ua: `ua ${i}`, address: '192.0.2.1', acceptLanguage: '' }))
  for (const v of visitors) expect(['a', 'b']).toContain(nodes[0]!.d.choose(row, v)) // no wait
  await Promise.all(nodes.map((n) => n.keys.keyFor(DAY0)))
  for (const v of visitors)
    expect(nodes[0]!.d.choose({ ...row } as LinkRow, v)).toBe(nodes[1]!.d.choose({ ...row } as LinkRow, v))
})

test('the visitor counter: two counters with the shared key see the same hashes (one stands in until it comes)', async () => {
  const now = DAY0 * DAY_MS
  const keys = createDayKeys({ rows: asyncRows(), clock: () => now })
  const counter = createVisitorCounter({ dayKey: (day) => keys.current(day)?.visitors ?? null })
  expect(counter.add(1, DAY0, '192.0.2.9', 'ua')).toBe(1) // a key of its own meanwhile
  await keys.keyFor(DAY0)
  // The shared key came: the day's trackers start again (an over-count, never an under-count).
  expect(counter.add(1, DAY0, '192.0.2.9', 'ua')).toBe(1)
  expect(counter.add(1, DAY0, '192.0.2.9', 'ua')).toBe(0)
})

test("SQLite: the day's key is read (or made) at once, so a visitor is never hashed with a stand-in key", () => {
  const now = (DAY0 + 10) * DAY_MS
  const keys = createDayKeys({ rows: sqliteDayKeyRows(db), clock: () => now })
  const counter = createVisitorCounter({ dayKey: (day) => keys.current(day)?.visitors ?? null })
  expect(counter.add(1, DAY0 + 10, '192.0.2.9', 'ua')).toBe(1)
  expect(counter.add(1, DAY0 + 10, '192.0.2.9', 'ua')).toBe(0)
  const other = createDayKeys({ rows: sqliteDayKeyRows(db), clock: () => now })
  expect(Buffer.from(other.current(DAY0 + 10)!.split)).toEqual(Buffer.from(keys.current(DAY0 + 10)!.split))
})
