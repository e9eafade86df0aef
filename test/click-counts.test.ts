// Click counts behind the async store interface (src/clicks/counts.ts), ONE suite run against both engines:
// SQLite (the synchronous store wrapped) and a real PostgreSQL server (counts-postgres.ts). What a node
// needs from it: increments add up (days, months, the link's totals, the names), a deleted link's clicks are
// dropped, and two writers on two connections flushing the same links at once give exactly the sum.
import { describe, expect, test } from 'bun:test'
import { sqliteClickCounts, type ClickCounts } from '../src/clicks/counts'
import { postgresClickCounts } from '../src/clicks/counts-postgres'
import { bump, DAY_MS, newDayCounts, parseDims, type ClickBatch } from '../src/clicks/store'
import { engineHarness } from './support/engines'

/** What the suite needs of an engine: a fresh database, the store on one or two connections, and its rows. */
interface Engine {
  /** The store on a connection of its own (a second call: a second connection, as a second node). */
  store(): ClickCounts
  link(code: string): Promise<number>
  deleteLink(id: number): Promise<void>
  totals(id: number): Promise<{ clicks: number; bots: number }>
  row(table: 'click_days' | 'click_months', id: number, key: string): Promise<{ clicks: number; bots: number; dims: string } | null>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-counts-')
  const num = (r: any) => (r ? { clicks: Number(r.clicks), bots: Number(r.bots), dims: r.dims } : null)
  return {
    store: () => sqliteClickCounts(connect()),
    link: async (code) => Number((main.query("INSERT INTO links (code, long_url, created, updated) VALUES (?, 'https://example.com/', 0, 0) RETURNING id").get(code) as { id: number }).id),
    deleteLink: async (id) => void main.query('DELETE FROM links WHERE id = ?').run(id),
    totals: async (id) => main.query('SELECT clicks, bots FROM links WHERE id = ?').get(id) as { clicks: number; bots: number },
    row: async (table, id, key) => num(main.query(`SELECT clicks, bots, dims FROM ${table} WHERE link_id = ?1 AND ${table === 'click_days' ? 'day' : 'month'} = ?2`).get(id, key)),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    store: () => postgresClickCounts(pool()),
    link: async (code) => Number((await main.sql`INSERT INTO links (code, long_url, created, updated) VALUES (${code}, 'https://example.com/', 0, 0) RETURNING id`)[0].id),
    deleteLink: async (id) => void (await main.sql`DELETE FROM links WHERE id = ${id}`),
    totals: async (id) => {
      const [r] = await main.sql`SELECT clicks, bots FROM links WHERE id = ${id}`
      return { clicks: Number(r.clicks), bots: Number(r.bots) }
    },
    row: async (table, id, key) => {
      const [r] = await main.sql.unsafe(`SELECT clicks, bots, dims FROM ${table} WHERE link_id = $1 AND ${table === 'click_days' ? 'day' : 'month'} = $2`, [id, key])
      return r ? { clicks: Number(r.clicks), bots: Number(r.bots), dims: r.dims } : null
    },
    close,
  }
}

const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / DAY_MS

/** A batch: for each [link, day, clicks, bots, sources, visitors], the counts, human clicks by source name, and new visitors. */
function batch(...items: [number, string, number, number, Record<string, number>?, number?][]): ClickBatch {
  const b: ClickBatch = new Map()
  for (const [link, iso, clicks, bots, sources, visitors] of items) {
    let days = b.get(link)
    if (!days) b.set(link, (days = new Map()))
    const d = days.get(day(iso)) ?? newDayCounts()
    d.clicks += clicks
    d.bots += bots
    d.visitors += visitors ?? 0
    for (const [name, n] of Object.entries(sources ?? {})) bump(d.dims.source, name, n)
    days.set(day(iso), d)
  }
  return b
}

const sources = (dims: string | undefined) => Object.fromEntries(parseDims(dims ?? '{}').source)

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('click counts on %s', (_name, makeEngine) => {
  test('increments add up: days, the month, the link’s totals and the names; days() reads the window', async () => {
    const e = await makeEngine()
    try {
      const store = e.store()
      const [a, b] = [await e.link('a'), await e.link('b')]
      await store.add(batch([a, '2026-03-01', 3, 1, { 'example.com': 2, direct: 1 }, 2], [a, '2026-03-02', 2, 0, {}, 1], [b, '2026-03-01', 5, 5]))
      await store.add(batch([a, '2026-03-01', 4, 2, { 'example.com': 4 }, 1], [a, '2026-04-30', 1, 0, { direct: 1 }, 1]))
      // Visitors are added like clicks: each flush brings the visitors new since the last one.
      expect(await store.days(a, '2026-03-01', '2026-04-30')).toEqual([
        { day: '2026-03-01', clicks: 7, visitors: 3 },
        { day: '2026-03-02', clicks: 2, visitors: 1 },
        { day: '2026-04-30', clicks: 1, visitors: 1 },
      ])
      expect(await store.days(a, '2026-03-02', '2026-03-31')).toEqual([{ day: '2026-03-02', clicks: 2, visitors: 1 }])
      expect(await store.days(b, '2026-01-01', '2026-12-31')).toEqual([{ day: '2026-03-01', clicks: 5, visitors: 0 }])
      expect(await store.days(a, '2025-01-01', '2025-12-31')).toEqual([])
      const first = await e.row('click_days', a, '2026-03-01')
      expect({ clicks: first?.clicks, bots: first?.bots, sources: sources(first?.dims) }).toEqual({ clicks: 7, bots: 3, sources: { 'example.com': 6, direct: 1 } })
      const march = await e.row('click_months', a, '2026-03')
      expect({ clicks: march?.clicks, bots: march?.bots, sources: sources(march?.dims) }).toEqual({ clicks: 9, bots: 3, sources: { 'example.com': 6, direct: 1 } })
      expect((await e.row('click_months', a, '2026-04'))?.clicks).toBe(1)
      expect(await e.totals(a)).toEqual({ clicks: 10, bots: 3 })
      expect(await e.totals(b)).toEqual({ clicks: 5, bots: 5 })
    } finally {
      await e.close()
    }
  })

  test('the clicks of a link deleted before the write are dropped; the other links of the batch are counted', async () => {
    const e = await makeEngine()
    try {
      const store = e.store()
      const [gone, kept] = [await e.link('gone'), await e.link('kept')]
      await e.deleteLink(gone)
      await store.add(batch([gone, '2026-03-01', 9, 9, { x: 9 }], [kept, '2026-03-01', 1, 0]))
      expect(await e.row('click_days', gone, '2026-03-01')).toBeNull()
      expect(await e.row('click_months', gone, '2026-03')).toBeNull()
      expect(await store.days(kept, '2026-03-01', '2026-03-01')).toEqual([{ day: '2026-03-01', clicks: 1, visitors: 0 }])
    } finally {
      await e.close()
    }
  })

  test('two writers on two connections, 20 batches each, interleaved on the same links and days: exactly the sum', async () => {
    const e = await makeEngine()
    try {
      const links = [await e.link('x'), await e.link('y'), await e.link('z')]
      const writer = async (store: ClickCounts, order: number[], salt: number) => {
        for (let i = 0; i < 20; i++) {
          // The same three links every time, in opposite orders in the two writers; two days, two months.
          const items = order.flatMap((link): [number, string, number, number, Record<string, number>][] => [
            [link, '2026-05-31', 1, 1, { [`s${(i + salt) % 3}`]: 1 }],
            [link, '2026-06-01', 2, 0, { shared: 2 }],
          ])
          await store.add(batch(...items))
          await Bun.sleep(0)
        }
      }
      await Promise.all([writer(e.store(), links, 0), writer(e.store(), [...links].reverse(), 1)])
      for (const link of links) {
        expect(await e.totals(link)).toEqual({ clicks: 2 * 20 * 3, bots: 2 * 20 })
        const may = await e.row('click_days', link, '2026-05-31')
        expect({ clicks: may?.clicks, bots: may?.bots }).toEqual({ clicks: 40, bots: 40 })
        const names = sources(may?.dims)
        expect(Object.values(names).reduce((s, n) => s + n, 0)).toBe(40)
        expect(Object.keys(names).sort()).toEqual(['s0', 's1', 's2'])
        expect((await e.row('click_days', link, '2026-06-01'))?.clicks).toBe(80)
        expect(sources((await e.row('click_days', link, '2026-06-01'))?.dims)).toEqual({ shared: 80 })
        expect((await e.row('click_months', link, '2026-05'))?.clicks).toBe(40)
        const june = await e.row('click_months', link, '2026-06')
        expect({ clicks: june?.clicks, sources: sources(june?.dims) }).toEqual({ clicks: 80, sources: { shared: 80 } })
      }
    } finally {
      await e.close()
    }
  }, 60_000)
})
