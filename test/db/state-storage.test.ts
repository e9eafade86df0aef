// The stores of issue 36 item 2 (migration 20) behind their async interfaces, ONE suite run against both
// engines: SQLite (two connections on one file) and a real PostgreSQL server (two pools on one database).
// Flashes: a row is taken once, by one node, only by its owner and kind, sealed (nothing of the value or the
// owner in clear), bounded per owner and per pool, swept. Daily counts: two nodes racing for the last uses
// of a day give exactly the limit. (Day keys and shared visitor hashes: test/db/clicks-contract.test.ts.)
import { describe, expect, test } from 'bun:test'
import { createFlash, postgresFlashRows, sqliteFlashRows, type FlashRows } from '../support/state-stores'
import { createSharedDailyLimiter, postgresDailyCountRows, sqliteDailyCountRows, type DailyCountRows } from '../support/state-stores'
import { engineHarness } from '../support/engines'

interface Node {
  flashes: FlashRows
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
      return { flashes: sqliteFlashRows(db), counts: sqliteDailyCountRows(db) }
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
      return { flashes: postgresFlashRows(sql), counts: postgresDailyCountRows(sql) }
    },
    rows: async (table) => [...(await main.sql.unsafe(`SELECT * FROM ${table}`))],
    close,
  }
}

const T0 = 1_800_000_000_000
const DAY = 86_400_000

for (const [name, make] of [['SQLite', sqliteEngine], ['PostgreSQL', postgresEngine]] as const) {
  describe(name, () => {
    test('a flash: sealed, taken once by one of two nodes, only by its owner and kind', async () => {
      const e = await make()
      try {
        const [n1, n2] = [e.node(), e.node()]
        const t = T0
        const f1 = createFlash({ rows: n1.flashes, clock: () => t })
        const f2 = createFlash({ rows: n2.flashes, clock: () => t })
        const owner = 's7.TOKEN-only-the-browser-has-0123456789'
        const id = await f1.put(owner, 'key', { key: 'lbk_SECRETVALUE' })
        const dump = JSON.stringify(await e.rows('flashes'), (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v))
        for (const clear of ['SECRETVALUE', 'TOKEN-only', id]) expect(dump).not.toContain(clear)
        expect(await f2.take('s7.another-token-of-the-same-session-id', 'key', id)).toBeNull() // another owner: left alone
        expect(await f2.take(owner, 'other kind', id)).toBeNull()
        const both = await Promise.all([f1.take(owner, 'key', id), f2.take(owner, 'key', id)])
        expect(both.filter((v) => v !== null)).toEqual([{ key: 'lbk_SECRETVALUE' }])
        expect(await e.rows('flashes')).toEqual([])
        // A row whose owner hash matches but whose value was changed opens to nothing.
        const id2 = await f1.put(owner, 'key', 'x')
        const [row] = await e.rows('flashes')
        const sealed = Buffer.from(row!.value as Uint8Array)
        sealed[sealed.length - 1]! ^= 1
        await n1.flashes.put({ id: row!.id as string, pool: 0, owner: row!.owner as string, kind: 'key', value: sealed, size: 1, expires: T0 + 60_000 }, { perOwner: 10, rows: 10, bytes: 1e6 })
        expect(await f2.take(owner, 'key', id2)).toBeNull()
        // takeAny: whoever's, once, saying whether it was this owner's.
        const id3 = await f1.put('oBINDING-of-a-browser-000000000000', 'oidc sign-in', { nonce: 'n' }, undefined, 600_000)
        expect(await f2.takeAny('oANOTHER-binding-0000000000000000', 'oidc sign-in', id3)).toEqual({ mine: false, expired: false, value: null })
        expect(await f2.takeAny('oBINDING-of-a-browser-000000000000', 'oidc sign-in', id3)).toBeNull()
      } finally {
        await e.close()
      }
    })

    test('flashes: bounded per owner and per pool (the oldest go first), apart by pool; expired ones swept', async () => {
      const e = await make()
      try {
        const n = e.node()
        let t = T0
        const bounds = { perOwner: 3, rows: 5, bytes: 100_000 }
        const f = createFlash({ rows: n.flashes, clock: () => t, bounds: { 0: bounds, 1: bounds, 2: bounds } })
        const ids: string[] = []
        for (let i = 0; i < 5; i++) ids.push(await f.put('sA.tok', 'k', i))
        expect(await f.take('sA.tok', 'k', ids[1]!)).toBeNull()
        expect(await f.take('sA.tok', 'k', ids[4]!)).toBe(4)
        for (let i = 0; i < 8; i++) await f.put(`v${i}`, 'k', i) // visitors: their own pool
        expect(await n.flashes.usage(1)).toMatchObject({ rows: 5 })
        expect(await n.flashes.usage(0)).toMatchObject({ rows: 2 })
        for (let i = 0; i < 3; i++) await f.put(`vbig${i}`, 'k', 'x'.repeat(40_000))
        expect((await n.flashes.usage(1)).bytes).toBeLessThanOrEqual(100_000)
        const late = await f.put('sA.tok', 'k', 'late', undefined, 1_000)
        t += 1_000
        expect(await f.take('sA.tok', 'k', late)).toBeNull() // expired
        t += 5 * 60_000 // FLASH_TTL_MS: all the others have expired too
        expect(await f.sweep()).toBeGreaterThan(0)
        expect(await e.rows('flashes')).toEqual([])
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
