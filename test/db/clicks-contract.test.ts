// The clicks storage contract (src/clicks/storage/contract.ts), ONE suite run against both engines:
// SQLite (storage/sqlite.ts) and a real PostgreSQL server (storage/postgres.ts). What a node
// needs from it: increments add up (days, months, the link's totals, the names), a deleted link's clicks are
// dropped, and two writers on two connections flushing the same links at once give exactly the sum; two
// adding new names to one link-day keep its names (at most MAX_NAMES and OTHER) summing to its clicks;
// names() reads a window from months and edge days; a batch's link.clicked events commit with its last part
// or come back, all of them, with the parts a failure left unwritten. Then: the same batches through both
// engines give the same names() (the rollup rules are one), and a printed measurement of the reads of a
// 365-day window at 10M clicks. Day keys: two nodes asking at once get one key; old days go. Shared visitor
// hashes (PostgreSQL only: SQLite has one node): two nodes adding overlapping visitors count each once.
import { describe, expect, test } from 'bun:test'
import { MAX_NAMES, OTHER } from '../../src/clicks/classify'
import {
  DAY_MS,
  EXTRA_DIMENSIONS,
  newDayCounts,
  type ClickBatch,
  type ClickEvent,
  type EncodedBatch,
} from '../../src/clicks/batch'
import { createDayKeys } from '../../src/clicks/day-keys'
import { bump, DIMENSIONS, MONTH_NAMES, parseDims, type DimNames } from '../../src/clicks/names'
import { PartialWrite, type ClickCounts, type DayKeyRows } from '../../src/clicks/storage/contract'
import { postgresClickCounts, postgresDayKeyRows, postgresSharedVisitorRows } from '../../src/clicks/storage/postgres'
import { sqliteClickCounts, sqliteDayKeyRows } from '../../src/clicks/storage/sqlite'
import { eventInserts } from '../../src/webhooks/storage/sqlite'
import { postgresWebhookQueue } from '../../src/webhooks/storage/postgres'
import { engineHarness } from '../support/engines'

/** What the suite needs of an engine: a fresh database, the store on one or two connections, and its rows. */
interface Engine {
  /** The store on a connection of its own (a second call: a second connection, as a second node). */
  store(): ClickCounts
  /** The day key rows on a connection of their own (a second call: a second node). */
  dayKeys(): DayKeyRows
  /** The days of the stored day keys. */
  dayKeyDays(): Promise<number[]>
  link(code: string): Promise<number>
  deleteLink(id: number): Promise<void>
  totals(id: number): Promise<{ clicks: number; bots: number }>
  row(
    table: 'click_days' | 'click_months',
    id: number,
    key: string,
  ): Promise<{ clicks: number; bots: number; dims: string } | null>
  /** `n` links named `${prefix}0` … owned by `accountId` (null: none), their ids in order. */
  links(prefix: string, n: number, accountId?: number | null): Promise<number[]>
  account(name: string): Promise<number>
  /** An enabled webhook endpoint of the account subscribed to `events` (comma-separated). */
  endpoint(accountId: number, events: string): Promise<number>
  /** The webhook events written (with their pending deliveries). */
  events(): Promise<{ account_id: number; type: string; payload: string; deliveries: number }[]>
  /** From now on, a transaction that writes a click_days row of this link fails (a trigger); null: none fails. */
  failOn(linkId: number | null): Promise<void>
  /** The engine's plan for a query with numbered parameters ($1 …), as text. */
  plan(query: string, params: (string | number)[]): Promise<string>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-counts-')
  const num = (r: any) => (r ? { clicks: Number(r.clicks), bots: Number(r.bots), dims: r.dims } : null)
  return {
    store: () => sqliteClickCounts(connect(), eventInserts),
    dayKeys: () => sqliteDayKeyRows(connect()),
    dayKeyDays: async () =>
      (main.query('SELECT day FROM day_keys ORDER BY day').all() as { day: number }[]).map((r) => Number(r.day)),
    link: async (code) =>
      Number(
        (
          main
            .query(
              "INSERT INTO links (code, long_url, created, updated) VALUES (?, 'https://example.com/', 0, 0) RETURNING id",
            )
            .get(code) as { id: number }
        ).id,
      ),
    deleteLink: async (id) => void main.query('DELETE FROM links WHERE id = ?').run(id),
    totals: async (id) =>
      main.query('SELECT clicks, bots FROM links WHERE id = ?').get(id) as { clicks: number; bots: number },
    row: async (table, id, key) =>
      num(
        main
          .query(
            `SELECT clicks, bots, dims FROM ${table} WHERE link_id = ?1 AND ${table === 'click_days' ? 'day' : 'month'} = ?2`,
          )
          .get(id, key),
      ),
    links: async (prefix, n, accountId = null) => {
      const insert = main.query(
        "INSERT INTO links (code, long_url, account_id, created, updated) VALUES (?, 'https://example.com/', ?, 0, 0) RETURNING id",
      )
      return main.transaction(() =>
        Array.from({ length: n }, (_, i) => Number((insert.get(`${prefix}${i}`, accountId) as { id: number }).id)),
      )()
    },
    account: async (name) =>
      Number(
        (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
      ),
    endpoint: async (accountId, events) =>
      Number(
        (
          main
            .query(
              "INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (?, 'https://hooks.example.com/in', ?, 'whsec_x', 0) RETURNING id",
            )
            .get(accountId, events) as { id: number }
        ).id,
      ),
    events: async () =>
      main
        .query(
          'SELECT account_id, type, payload, (SELECT count(*) FROM webhook_deliveries d WHERE d.event_id = e.id) AS deliveries FROM webhook_events e ORDER BY id',
        )
        .all() as any,
    failOn: async (linkId) => {
      main.exec('DROP TRIGGER IF EXISTS fail_clicks')
      if (linkId !== null)
        main.exec(
          `CREATE TRIGGER fail_clicks BEFORE INSERT ON click_days WHEN NEW.link_id = ${Number(linkId)} BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
        )
    },
    plan: async (query, params) =>
      (main.query(`EXPLAIN QUERY PLAN ${query.replace(/\$(\d+)/g, '?$1')}`).all(...params) as { detail: string }[])
        .map((r) => r.detail)
        .join('\n'),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    store: () => {
      const sql = pool()
      return postgresClickCounts(sql, postgresWebhookQueue(sql))
    },
    dayKeys: () => postgresDayKeyRows(pool()),
    dayKeyDays: async () =>
      (await main.sql`SELECT day FROM day_keys ORDER BY day`).map((r: { day: string }) => Number(r.day)),
    link: async (code) =>
      Number(
        (
          await main.sql`INSERT INTO links (code, long_url, created, updated) VALUES (${code}, 'https://example.com/', 0, 0) RETURNING id`
        )[0].id,
      ),
    deleteLink: async (id) => void (await main.sql`DELETE FROM links WHERE id = ${id}`),
    totals: async (id) => {
      const [r] = await main.sql`SELECT clicks, bots FROM links WHERE id = ${id}`
      return { clicks: Number(r.clicks), bots: Number(r.bots) }
    },
    row: async (table, id, key) => {
      const [r] = await main.sql.unsafe(
        `SELECT clicks, bots, dims FROM ${table} WHERE link_id = $1 AND ${table === 'click_days' ? 'day' : 'month'} = $2`,
        [id, key],
      )
      return r ? { clicks: Number(r.clicks), bots: Number(r.bots), dims: r.dims } : null
    },
    links: async (prefix, n, accountId = null) =>
      (
        await main.sql`INSERT INTO links (code, long_url, account_id, created, updated)
                       SELECT ${prefix} || (i - 1), 'https://example.com/', ${accountId}, 0, 0 FROM generate_series(1, ${n}) AS i ORDER BY i RETURNING id`
      )
        .map((r: { id: string }) => Number(r.id))
        .sort((a: number, b: number) => a - b),
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    endpoint: async (accountId, events) =>
      Number(
        (
          await main.sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (${accountId}, 'https://hooks.example.com/in', ${events}, 'whsec_x', 0) RETURNING id`
        )[0].id,
      ),
    events: async () =>
      (
        await main.sql`SELECT account_id, type, payload, (SELECT count(*) FROM webhook_deliveries d WHERE d.event_id = e.id) AS deliveries FROM webhook_events e ORDER BY id`
      ).map((r: any) => ({
        account_id: Number(r.account_id),
        type: r.type,
        payload: r.payload,
        deliveries: Number(r.deliveries),
      })),
    failOn: async (linkId) => {
      await main.sql`DROP TRIGGER IF EXISTS fail_clicks ON click_days`
      await main.sql`CREATE OR REPLACE FUNCTION fail_clicks() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`
      if (linkId !== null)
        await main.sql.unsafe(
          `CREATE TRIGGER fail_clicks BEFORE INSERT ON click_days FOR EACH ROW WHEN (NEW.link_id = ${Number(linkId)}) EXECUTE FUNCTION fail_clicks()`,
        )
    },
    plan: async (query, params) =>
      (await main.sql.unsafe(`EXPLAIN (ANALYZE, BUFFERS) ${query}`, params))
        .map((r: Record<string, string>) => r['QUERY PLAN'])
        .join('\n'),
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

/**
 * A batch as the recorder hands it to the writer (batch.ts EncodedBatch), for a batch whose names are
 * countries and destinations only (the names counted beside profiles), with `events`.
 */
function encode(b: ClickBatch, events?: ClickEvent[]): EncodedBatch {
  const rows: number[] = []
  const names: string[] = []
  for (const [linkId, days] of b)
    for (const [dayNumber, d] of days) {
      for (const dim of ['source', 'device', 'browser', 'os'] as const) expect(d.dims[dim].size).toBe(0)
      const extras = EXTRA_DIMENSIONS.flatMap((dim, i) =>
        [...d.dims[dim]].map(([name, n]) => [i, names.push(name) - 1, n]),
      )
      rows.push(linkId, dayNumber, d.clicks, d.bots, d.visitors, 0, extras.length, ...extras.flat())
    }
  return { rows: new Float64Array(rows), profiles: [], names, ...(events ? { events } : {}) }
}

/** Per dimension, the names and their clicks, in name order (what two engines' answers are compared by). */
const sorted = (names: DimNames) =>
  Object.fromEntries(DIMENSIONS.map((dim) => [dim, [...names[dim]].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]))
const sum = (m: Map<string, number>) => [...m.values()].reduce((s, n) => s + n, 0)
/** Names other than OTHER. */
const named = (m: Map<string, number>) => (m.has(OTHER) ? m.size - 1 : m.size)

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('click counts on %s', (_name, makeEngine) => {
  test('increments add up: days, the month, the link’s totals and the names; days() reads the window', async () => {
    const e = await makeEngine()
    try {
      const store = e.store()
      const [a, b] = [await e.link('a'), await e.link('b')]
      await store.add(
        batch(
          [a, '2026-03-01', 3, 1, { 'example.com': 2, direct: 1 }, 2],
          [a, '2026-03-02', 2, 0, {}, 1],
          [b, '2026-03-01', 5, 5],
        ),
      )
      await store.add(
        batch([a, '2026-03-01', 4, 2, { 'example.com': 4 }, 1], [a, '2026-04-30', 1, 0, { direct: 1 }, 1]),
      )
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
      expect({ clicks: first?.clicks, bots: first?.bots, sources: sources(first?.dims) }).toEqual({
        clicks: 7,
        bots: 3,
        sources: { 'example.com': 6, direct: 1 },
      })
      const march = await e.row('click_months', a, '2026-03')
      expect({ clicks: march?.clicks, bots: march?.bots, sources: sources(march?.dims) }).toEqual({
        clicks: 9,
        bots: 3,
        sources: { 'example.com': 6, direct: 1 },
      })
      expect((await e.row('click_months', a, '2026-04'))?.clicks).toBe(1)
      expect(await e.totals(a)).toEqual({ clicks: 10, bots: 3 })
      expect(await e.totals(b)).toEqual({ clicks: 5, bots: 5 })
    } finally {
      await e.close()
    }
  })

  test('dayAndTotal reads one day with the link’s clicks + bots of all time; a day without clicks is zeros, a gone link null', async () => {
    const e = await makeEngine()
    try {
      const store = e.store()
      const a = await e.link('a')
      await store.add(
        batch([a, '2026-03-01', 3, 1, { 'example.com': 2, direct: 1 }, 2], [a, '2026-03-02', 2, 4, {}, 1]),
      )
      const got = await store.dayAndTotal(a, '2026-03-01')
      expect({ ...got!, names: Object.fromEntries(got!.names.source) }).toEqual({
        total: 10,
        clicks: 3,
        bots: 1,
        visitors: 2,
        names: { 'example.com': 2, direct: 1 },
      })
      const none = await store.dayAndTotal(a, '2026-03-05')
      expect({ ...none!, names: none!.names.source.size }).toEqual({
        total: 10,
        clicks: 0,
        bots: 0,
        visitors: 0,
        names: 0,
      })
      await e.deleteLink(a)
      expect(await store.dayAndTotal(a, '2026-03-01')).toBeNull()
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
      expect(await store.days(kept, '2026-03-01', '2026-03-01')).toEqual([
        { day: '2026-03-01', clicks: 1, visitors: 0 },
      ])
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

  test('names() reads a window: the days at its edges from their rows, the whole months inside it from their rollups', async () => {
    const e = await makeEngine()
    try {
      const store = e.store()
      const a = await e.link('a')
      await store.add(
        batch(
          [a, '2026-02-27', 1, 0, { x: 1 }],
          [a, '2026-03-01', 2, 0, { y: 2 }],
          [a, '2026-03-31', 3, 1, { z: 3 }],
          [a, '2026-04-01', 4, 0, { w: 4 }],
          [a, '2026-04-30', 5, 0, { v: 5 }],
        ),
      )
      await store.add(batch([a, '2026-03-01', 2, 0, { y: 1, x: 1 }]))
      const source = async (from: string, to: string) => Object.fromEntries((await store.names(a, from, to)).source)
      expect(await source('2026-03-01', '2026-03-01')).toEqual({ y: 3, x: 1 })
      expect(await source('2026-03-02', '2026-03-30')).toEqual({})
      expect(await source('2026-02-27', '2026-04-01')).toEqual({ x: 2, y: 3, z: 3, w: 4 })
      expect(await source('2026-03-01', '2026-04-30')).toEqual({ x: 1, y: 3, z: 3, w: 4, v: 5 })
      expect(await source('2026-03-31', '2026-04-01')).toEqual({ z: 3, w: 4 })
      expect(await source('2025-04-01', '2026-03-31')).toEqual({ x: 2, y: 3, z: 3 })
      expect(await source('2025-01-01', '2025-12-31')).toEqual({})
      const none = await store.names(a, '2025-01-01', '2025-12-31')
      for (const dim of DIMENSIONS) expect(none[dim].size).toBe(0)
    } finally {
      await e.close()
    }
  })

  test('two nodes add new names to one link-day at once: per dimension the names and OTHER add up to the day’s clicks, never more than MAX_NAMES names', async () => {
    const e = await makeEngine()
    try {
      const link = await e.link('busy')
      const BATCHES = 60
      const NEW = 6 // new names per batch and dimension: 2 nodes × 60 batches × 6 = 720, over fourteen times what a day keeps
      const writer = async (store: ClickCounts, node: string) => {
        for (let i = 0; i < BATCHES; i++) {
          const b: ClickBatch = new Map([[link, new Map([[day('2026-08-15'), newDayCounts()]])]])
          const d = b.get(link)!.get(day('2026-08-15'))!
          for (let j = 0; j < NEW; j++) {
            const n = 1 + ((i + j) % 3)
            d.clicks += n
            bump(d.dims.source, `${node}-${i}-${j}.example`, n)
            bump(d.dims.country, `${node}${i}${j}`, n)
          }
          await store.add(b)
        }
      }
      await Promise.all([writer(e.store(), 'a'), writer(e.store(), 'b')])
      const clicks = 2 * BATCHES * NEW * 2 // n averages 2 over each batch's six names
      const row = await e.row('click_days', link, '2026-08-15')
      expect(row?.clicks).toBe(clicks)
      const dims = parseDims(row!.dims)
      for (const dim of ['source', 'country'] as const) {
        expect(sum(dims[dim])).toBe(clicks)
        expect(named(dims[dim])).toBe(MAX_NAMES)
        expect(dims[dim].get(OTHER)).toBeGreaterThan(0)
      }
      const month = await e.row('click_months', link, '2026-08')
      expect(month?.clicks).toBe(clicks)
      const monthDims = parseDims(month!.dims)
      for (const dim of ['source', 'country'] as const) {
        expect(sum(monthDims[dim])).toBe(clicks)
        expect(named(monthDims[dim])).toBeLessThanOrEqual(MONTH_NAMES)
      }
      for (const [from, to] of [
        ['2026-08-15', '2026-08-15'],
        ['2026-08-01', '2026-08-31'],
        ['2026-07-20', '2026-09-10'],
      ]) {
        const names = await e.store().names(link, from!, to!)
        expect([sum(names.source), sum(names.country)]).toEqual([clicks, clicks])
      }
    } finally {
      await e.close()
    }
  }, 60_000)

  test('link.clicked events are written in the transaction of the batch’s last part; a failed part keeps them all, unwritten, for the retry', async () => {
    const e = await makeEngine()
    try {
      const store = e.store()
      const [alice, bob] = [await e.account('alice'), await e.account('bob')]
      await e.endpoint(alice, 'link.clicked')
      await e.endpoint(bob, 'link.created') // bob's endpoint does not take link.clicked: his event leaves no row
      // 501 links: two parts (LINKS_PER_COMMIT = 500), the second one link.
      const links = await e.links('c', 501, alice)
      const [first, last] = [links[0]!, links[500]!]
      const clicked = (on: number) =>
        batch(...links.map((id): [number, string, number, number] => [id, '2026-07-04', on, 1]))
      const events: ClickEvent[] = [
        { accountId: alice, at: 1_783_000_000_000, clicks: [{ hex: 'c0', clicks: 1, bots: 1, day: '2026-07-04' }] },
        { accountId: bob, at: 1_783_000_000_000, clicks: [{ hex: 'b0', clicks: 3, bots: 0, day: '2026-07-04' }] },
      ]

      // The last part fails: the first is committed and counted, no event is written, and all come back.
      await e.failOn(last)
      const failed = await store.addEncoded(encode(clicked(1), events)).catch((err) => err)
      expect(failed).toBeInstanceOf(PartialWrite)
      expect([...(failed as PartialWrite).unwritten.keys()]).toEqual([last])
      expect((failed as PartialWrite).events).toEqual(events)
      expect(await e.events()).toEqual([])
      expect(await e.totals(first)).toEqual({ clicks: 1, bots: 1 })
      expect(await e.totals(last)).toEqual({ clicks: 0, bots: 0 })

      // The retry (what the recorder does with a PartialWrite): the unwritten part with the kept events.
      await e.failOn(null)
      await store.addEncoded(encode((failed as PartialWrite).unwritten, (failed as PartialWrite).events))
      expect(await e.totals(last)).toEqual({ clicks: 1, bots: 1 })
      expect(await e.totals(first)).toEqual({ clicks: 1, bots: 1 })
      const written = await e.events()
      expect(written.map((r) => ({ account_id: r.account_id, type: r.type, deliveries: r.deliveries }))).toEqual([
        { account_id: alice, type: 'link.clicked', deliveries: 1 },
      ])
      expect(JSON.parse(written[0]!.payload)).toEqual({
        type: 'link.clicked',
        timestamp: new Date(1_783_000_000_000).toISOString(),
        data: { clicks: events[0]!.clicks },
      })

      // The first part fails: nothing is committed; the whole batch and its events come back.
      await e.failOn(first)
      const early = await store.addEncoded(encode(clicked(2), events)).catch((err) => err)
      expect(early).toBeInstanceOf(PartialWrite)
      expect((early as PartialWrite).unwritten.size).toBe(501)
      expect((early as PartialWrite).events).toEqual(events)
      expect(await e.totals(last)).toEqual({ clicks: 1, bots: 1 })
      expect(await e.events()).toHaveLength(1)

      // Events with no counts left to write go in a transaction of their own.
      await e.failOn(null)
      await store.addEncoded(encode(new Map(), events.slice(0, 1)))
      expect((await e.events()).map((r) => r.deliveries)).toEqual([1, 1])
      // A batch without events writes none.
      await store.addEncoded(encode(clicked(1)))
      expect(await e.events()).toHaveLength(2)
      expect(await e.totals(last)).toEqual({ clicks: 2, bots: 2 })
    } finally {
      await e.failOn(null).catch(() => {})
      await e.close()
    }
  }, 60_000)

  test('day keys: two nodes asking at once for a day get one key; keys of days before yesterday go', async () => {
    const e = await makeEngine()
    try {
      const [n1, n2] = [e.dayKeys(), e.dayKeys()]
      const t = 1_800_000_000_000
      const today = Math.floor(t / DAY_MS)
      await n1.ensure(today - 5, new Uint8Array(32).fill(5), today - 10)
      // Asynchronous reads on both engines here (SQLite's at-once read is day-keys.test.ts's).
      const k1 = createDayKeys({ rows: { ensure: (...a) => n1.ensure(...a) }, clock: () => t })
      const k2 = createDayKeys({ rows: { ensure: (...a) => n2.ensure(...a) }, clock: () => t })
      expect(k1.current(today)).toBeNull() // not here yet: a read starts in the background
      const [a, b] = await Promise.all([k1.keyFor(today), k2.keyFor(today)])
      expect(Buffer.from(a.split).equals(Buffer.from(b.split))).toBe(true)
      expect(a.visitors.equals(b.visitors)).toBe(true)
      expect(Buffer.from(a.split).equals(a.visitors)).toBe(false)
      expect(k1.current(today)).toBe(a)
      expect(await e.dayKeyDays()).toEqual([today])
    } finally {
      await e.close()
    }
  })
})

describe('shared visitor hashes (PostgreSQL: SQLite has one node, which counts exactly)', () => {
  test('two nodes adding overlapping visitors at once count each once; a deleted link is skipped; old days go', async () => {
    const { main, pool, close } = await engines.postgres()
    try {
      const [id] = (
        await main.sql`INSERT INTO links (code, long_url, created, updated) VALUES ('shared', 'https://example.com/', 1, 1) RETURNING id`
      ).map((r: any) => Number(r.id))
      const today = Math.floor(1_800_000_000_000 / DAY_MS)
      const [n1, n2] = [postgresSharedVisitorRows(pool()), postgresSharedVisitorRows(pool())]
      const triples = (from: number, to: number) =>
        Array.from({ length: to - from }, (_, i) => [id!, today, 1_000 + from + i]).flat()
      // 0-59 on one node, 40-99 on the other (40 seen by both), and a link that is gone.
      await Promise.all([
        n1.add([...triples(0, 60), 999_999, today, 5], today - 1),
        n2.add(triples(40, 100), today - 1),
      ])
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

/** A small seeded random number generator (mulberry32): the same batches on both engines, and on every run. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

describe('names on both engines', () => {
  test('the same batches written through both engines give the same names() for windows of 1, 30 and 365 days, a month and a window across months', async () => {
    const [sqlite, postgres] = [await sqliteEngine(), await postgresEngine()]
    try {
      const rand = random(22)
      const pick = (n: number, skew = 2) => Math.floor(rand() ** skew * n)
      const first = day('2025-06-20')
      // 30 batches over two links: each a dozen days of a year and three weeks, drawn in no order (a month's
      // names are summed in the batch's order), up to 70 sources of 900 (a day keeps 50 and OTHER, a month
      // 200 of the hundreds it sees), up to 20 countries of 120, a few destinations; counts of 1 to 4 (ties).
      const batches: ClickBatch[] = []
      for (let i = 0; i < 30; i++) {
        const b: ClickBatch = new Map()
        for (const link of [0, 1]) {
          const days = new Map<number, ReturnType<typeof newDayCounts>>()
          b.set(link, days)
          for (let j = 0; j < 12; j++) {
            const at = first + Math.floor(rand() * 386)
            const d = days.get(at) ?? newDayCounts()
            days.set(at, d)
            for (let k = 1 + Math.floor(rand() * 70); k > 0; k--) {
              const n = 1 + Math.floor(rand() * 4)
              d.clicks += n
              bump(d.dims.source, `s${pick(900)}.example`, n)
              bump(d.dims.country, `c${pick(120)}`, n)
              if (rand() < 0.1) bump(d.dims.destination, `https://d${pick(5, 1)}.example/`, n)
            }
            d.bots += Math.floor(rand() * 3)
            d.visitors += Math.floor(rand() * 5)
          }
        }
        batches.push(b)
      }
      const ids = new Map<ClickCounts, number[]>()
      for (const e of [sqlite, postgres]) {
        const links = [await e.link('n0'), await e.link('n1')]
        const store = e.store()
        ids.set(store, links)
        // Each batch with its link numbers made the engine's ids (a fresh copy: a write takes the Maps it is given).
        for (const b of batches)
          await store.add(
            new Map(
              [...b].map(([link, days]) => [
                links[link]!,
                new Map([...days].map(([at, d]) => [at, structuredClone(d)])),
              ]),
            ),
          )
      }
      const windows = [
        ['2025-11-15', '2025-11-15'],
        ['2026-03-01', '2026-03-01'],
        ['2025-10-20', '2025-11-18'],
        ['2026-02-01', '2026-02-28'],
        ['2026-01-25', '2026-03-05'],
        ['2025-07-10', '2026-07-09'],
        ['2025-06-01', '2026-07-31'],
      ]
      let others = 0
      for (const link of [0, 1])
        for (const [from, to] of windows) {
          const answers = []
          for (const [store, links] of ids) {
            const names = await store.names(links[link]!, from!, to!)
            const clicks = (await store.days(links[link]!, from!, to!)).reduce((s, d) => s + d.clicks, 0)
            // Months and edge days add up: per dimension (destinations aside) the window's names sum to its clicks.
            expect([sum(names.source), sum(names.country)]).toEqual([clicks, clicks])
            others += names.source.get(OTHER) ?? 0
            answers.push({ clicks, names: sorted(names) })
          }
          expect(answers[1]).toEqual(answers[0]!)
        }
      // The windows did see names put under OTHER by a day's cap and by a month's.
      expect(others).toBeGreaterThan(0)
    } finally {
      await sqlite.close()
      await postgres.close()
    }
  }, 60_000)
})

describe('statistics reads at 10M clicks', () => {
  test('names() and days() for a 365-day window of a link with 10M clicks over a year: p50 of 50 reads per engine (printed, not asserted)', async () => {
    const FROM = '2025-07-16'
    const TO = '2026-07-15' // 365 days: 11 whole months and 31 edge days
    const PER_DAY = 27_397 // × 365 = 9,999,905 clicks
    const rand = random(10)
    const pool = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`)
    const sourcePool = pool('ref', 20_000).map((s) => `${s}.example`)
    const countryPool = pool('C', 200)
    const spread = (names: string[], clicks: number, into: Map<string, number>) => {
      // Busy and quiet names (weight 1/rank), every click counted under one.
      const weights = names.map((_, i) => 1 / (i + 1))
      const total = weights.reduce((s, w) => s + w, 0)
      let left = clicks
      names.forEach((name, i) => {
        const n = i === names.length - 1 ? left : Math.min(left, Math.floor((clicks * weights[i]!) / total))
        if (n > 0) bump(into, name, n)
        left -= n
      })
    }
    // Names drawn evenly from the pools: every month fills its 200 places and every edge day its 50, the
    // most names a 365-day answer can be read from (11 × 200 + 31 × 50 = 3,750 sources).
    const draw = (from: string[], k: number) => {
      const out = new Set<string>()
      while (out.size < k) out.add(from[Math.floor(rand() * from.length)]!)
      return [...out]
    }
    const year: [number, ReturnType<typeof newDayCounts>][] = []
    for (let t = day(FROM); t <= day(TO); t++) {
      const d = newDayCounts()
      d.clicks = PER_DAY
      d.bots = 900
      d.visitors = 11_000
      spread(['direct', ...draw(sourcePool, 119)], PER_DAY, d.dims.source)
      spread(['mobile', 'desktop', 'tablet'], PER_DAY, d.dims.device)
      spread(['Chrome', 'Safari', 'Firefox', 'Edge', 'Samsung Internet', 'Opera', 'other'], PER_DAY, d.dims.browser)
      spread(['Android', 'iOS', 'Windows', 'macOS', 'Linux', 'other'], PER_DAY, d.dims.os)
      spread(draw(countryPool, 60), PER_DAY, d.dims.country)
      year.push([t, d])
    }
    expect(year).toHaveLength(365)
    const median = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)]!.toFixed(2)
    for (const [name, makeEngine] of [
      ['SQLite', sqliteEngine],
      ['PostgreSQL', postgresEngine],
    ] as const) {
      const e = await makeEngine()
      try {
        const link = await e.link('big')
        const store = e.store()
        let started = performance.now()
        // Five batches of 73 days (a copy each: a write takes the Maps it is given).
        for (let at = 0; at < year.length; at += 73)
          await store.add(new Map([[link, new Map(year.slice(at, at + 73).map(([t, d]) => [t, structuredClone(d)]))]]))
        const setUp = performance.now() - started
        expect(await e.totals(link)).toEqual({ clicks: 365 * PER_DAY, bots: 365 * 900 })
        const names = await store.names(link, FROM, TO)
        expect(sum(names.source)).toBe(365 * PER_DAY)
        const times = { names: [] as number[], days: [] as number[], both: [] as number[] }
        for (let i = 0; i < 50; i++) {
          started = performance.now()
          await store.names(link, FROM, TO)
          times.names.push(performance.now() - started)
          started = performance.now()
          await store.days(link, FROM, TO)
          times.days.push(performance.now() - started)
          started = performance.now()
          await Promise.all([store.days(link, FROM, TO), store.names(link, FROM, TO)])
          times.both.push(performance.now() - started)
        }
        // What names() reads (11 months, 31 edge days) and what merging it costs here, without the query.
        const texts: string[] = []
        for (let m = 8; m <= 18; m++)
          texts.push(
            (await e.row(
              'click_months',
              link,
              `${2025 + Math.floor((m - 1) / 12)}-${String(((m - 1) % 12) + 1).padStart(2, '0')}`,
            ))!.dims,
          )
        for (const [t] of [...year.slice(0, 16), ...year.slice(-15)])
          texts.push((await e.row('click_days', link, new Date(t * DAY_MS).toISOString().slice(0, 10)))!.dims)
        const merged = parseDims('{}')
        for (const text of texts) parseDims(text, merged)
        expect(sorted(merged)).toEqual(sorted(names))
        const parse: number[] = []
        for (let i = 0; i < 50; i++) {
          started = performance.now()
          const into = parseDims('{}')
          for (const text of texts) parseDims(text, into)
          parse.push(performance.now() - started)
        }
        const bytes = texts.reduce((s, t) => s + t.length, 0)
        console.log(
          `${name}: set-up ${setUp.toFixed(0)} ms (365 link-days, 5 batches); 365-day window, p50 of 50: names() ${median(times.names)} ms, ` +
            `days() ${median(times.days)} ms, both at once ${median(times.both)} ms; names() reads ${texts.length} rows, ${(bytes / 1024).toFixed(0)} KB of JSON, ` +
            `merged in ${median(parse)} ms of it; ${names.source.size} source names in the answer`,
        )
        console.log(
          `${name} plan, the edge days:\n${await e.plan('SELECT dims FROM click_days WHERE link_id = $1 AND day BETWEEN $2 AND $3', [link, FROM, '2025-07-31'])}`,
        )
        console.log(
          `${name} plan, the months:\n${await e.plan('SELECT dims FROM click_months WHERE link_id = $1 AND month BETWEEN $2 AND $3', [link, '2025-08', '2026-06'])}`,
        )
      } finally {
        await e.close()
      }
    }
  }, 120_000)
})
