// The daily counts (db/daily-counts.ts) on both engines: two nodes racing for the last uses of a day give exactly
// the limit. (Flashes: dashboard-contract.test.ts; day keys and visitor hashes: clicks-contract.test.ts.)
import { describe, expect, test } from 'bun:test'
import {
  createSharedDailyLimiter,
  postgresDailyCountRows,
  sqliteDailyCountRows,
  type DailyCountRows,
} from '../support/state-stores'
import { engineHarness } from '../support/engines'

interface Node {
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
      return { counts: sqliteDailyCountRows(db) }
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
      return { counts: postgresDailyCountRows(sql) }
    },
    rows: async (table) => [...(await main.sql.unsafe(`SELECT * FROM ${table}`))],
    close,
  }
}

const T0 = 1_800_000_000_000
const DAY = 86_400_000

for (const [name, make] of [
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const) {
  describe(name, () => {
    test('daily counts: two nodes racing for a day of 10 give exactly 10; another day starts again; old days swept', async () => {
      const e = await make()
      try {
        const [n1, n2] = [e.node(), e.node()]
        let t = T0
        const key = Buffer.alloc(32, 1)
        const l1 = createSharedDailyLimiter({ rows: n1.counts, keyOf: async () => key, scope: 'anon', clock: () => t })
        const l2 = createSharedDailyLimiter({ rows: n2.counts, keyOf: async () => key, scope: 'anon', clock: () => t })
        const answers = await Promise.all(
          Array.from({ length: 30 }, (_, i) => (i % 2 ? l1 : l2).hit('198.51.100.1', 10)),
        )
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
