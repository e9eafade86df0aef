// The stores of issue 36 item 2 (migration 20) behind their async interfaces, ONE suite run against both
// engines: SQLite (two connections on one file) and a real PostgreSQL server (two pools on one database).
// (Flashes: test/db/dashboard-contract.test.ts.) Day keys: two nodes asking at once get one key;
// old days go. Daily counts: two nodes racing for the last uses of a day give exactly the limit.
import { describe, expect, test } from 'bun:test'
import { createDayKeys, postgresDayKeyRows, sqliteDayKeyRows, type DayKeyRows } from '../support/state-stores'
import { createSharedDailyLimiter, postgresDailyCountRows, sqliteDailyCountRows, type DailyCountRows } from '../support/state-stores'
import { engineHarness } from '../support/engines'
import { postgresSharedVisitorRows } from '../../src/clicks/shared-visitors-postgres'

interface Node {
  dayKeys: DayKeyRows
  counts: DailyCountRows
}

interface Engine {
  node(): Node
  rows(table: string): Promise<Record<string, unknown>[]>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-state-')
  return {
    node() {
      const db = connect()
      return { dayKeys: sqliteDayKeyRows(db), counts: sqliteDailyCountRows(db) }
    },
    rows: async (table) => main.query(`SELECT * FROM ${table}`).all() as Record<string, unknown>[],
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node() {
      const sql = pool()
      return { dayKeys: postgresDayKeyRows(sql), counts: postgresDailyCountRows(sql) }
    },
    rows: async (table) => [...(await main.sql.unsafe(`SELECT * FROM ${table}`))],
    close,
  }
}

const T0 = 1_800_000_000_000
const DAY = 86_400_000

for (const [name, make] of [['SQLite', sqliteEngine], ['PostgreSQL', postgresEngine]] as const) {
  describe(name, () => {
    test('day keys: two nodes asking at once for a day get one key; keys of days before yesterday go', async () => {
      const e = await make()
      try {
        const [n1, n2] = [e.node(), e.node()]
        const t = T0
        const today = Math.floor(t / DAY)
        await n1.dayKeys.ensure(today - 5, new Uint8Array(32).fill(5), today - 10)
        // Asynchronous reads on both engines here (SQLite's at-once read is day-keys.test.ts's).
        const k1 = createDayKeys({ rows: { ensure: (...a) => n1.dayKeys.ensure(...a) }, clock: () => t })
        const k2 = createDayKeys({ rows: { ensure: (...a) => n2.dayKeys.ensure(...a) }, clock: () => t })
        expect(k1.current(today)).toBeNull() // not here yet: a read starts in the background
        const [a, b] = await Promise.all([k1.keyFor(today), k2.keyFor(today)])
        expect(Buffer.from(a.split).equals(Buffer.from(b.split))).toBe(true)
        expect(a.visitors.equals(b.visitors)).toBe(true)
        expect(Buffer.from(a.split).equals(a.visitors)).toBe(false)
        expect(k1.current(today)).toBe(a)
        expect((await e.rows('day_keys')).map((r) => Number(r.day))).toEqual([today])
      } finally {
        await e.close()
      }
    })

    test('daily counts: two nodes racing for a day of 10 give exactly 10; another day starts again; old days swept', async () => {
      const e = await make()
      try {
        const [n1, n2] = [e.node(), e.node()]
        let t = T0
        const key = Buffer.alloc(32, 1)
        const l1 = createSharedDailyLimiter({ rows: n1.counts, keyOf: async () => key, scope: 'anon', clock: () => t })
        const l2 = createSharedDailyLimiter({ rows: n2.counts, keyOf: async () => key, scope: 'anon', clock: () => t })
        const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? l1 : l2).hit('198.51.100.1', 10)))
        expect(answers.filter((d) => d.allowed)).toHaveLength(10)
        expect(answers.filter((d) => !d.allowed).every((d) => d.remaining === 0 && d.reset > 0)).toBe(true)
        const rows = await e.rows('daily_counts')
        expect(rows.map((r) => Number(r.count))).toEqual([10])
        expect(JSON.stringify(rows)).not.toContain('198.51.100.1')
        expect((await l1.hit('198.51.100.2', 10)).remaining).toBe(9)
        expect((await l1.hit('x', 0)).allowed).toBe(true) // 0: unlimited, not counted
        t += 2 * DAY
        expect((await l2.hit('198.51.100.1', 10)).remaining).toBe(9)
        // The limiter sweeps at its first use of a day too (in the background): the two sweeps share the rows.
        for (let i = 0; i < 100 && (await e.rows('daily_counts')).length > 1; i++) {
          await n1.counts.sweep(Math.floor(t / DAY))
          await Bun.sleep(10)
        }
        expect((await e.rows('daily_counts')).map((r) => Number(r.count))).toEqual([1])
      } finally {
        await e.close()
      }
    })
  })
}

describe('PostgreSQL', () => {
  test('shared visitor hashes: two nodes adding overlapping visitors at once count each once; a deleted link is skipped; old days go', async () => {
    const { main, pool, close } = await engines.postgres()
    try {
      const [id] = (await main.sql`INSERT INTO links (code, long_url, created, updated) VALUES ('shared', 'https://example.com/', 1, 1) RETURNING id`).map((r: any) => Number(r.id))
      const today = Math.floor(T0 / DAY)
      const [n1, n2] = [postgresSharedVisitorRows(pool()), postgresSharedVisitorRows(pool())]
      const triples = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => [id!, today, 1_000 + from + i]).flat()
      // 0-59 on one node, 40-99 on the other (40 seen by both), and a link that is gone.
      await Promise.all([n1.add([...triples(0, 60), 999_999, today, 5], today - 1), n2.add(triples(40, 100), today - 1)])
      await n1.add(triples(0, 100), today - 1) // all seen before: nothing added
      const [row] = await main.sql`SELECT visitors FROM click_days WHERE link_id = ${id}`
      expect(Number(row.visitors)).toBe(100)
      expect(Number((await main.sql`SELECT count(*) AS n FROM visitor_hashes`)[0].n)).toBe(100)
      await n2.add(triples(0, 1), today + 2)
      expect(Number((await main.sql`SELECT count(*) AS n FROM visitor_hashes`)[0].n)).toBe(0)
    } finally {
      await close()
    }
  })
})
