// Media tickets' storage contract (src/media/storage/contract.ts), ONE suite run against both engines: SQLite
// (storage/sqlite.ts) and a real PostgreSQL server (storage/postgres.ts). Two "nodes" are two connections
// (SQLite) or two pools (PostgreSQL) on one database: a ticket made by one node is redeemed through any node.
import { describe, expect, test } from 'bun:test'
import {
  DOWNLOADS_KEPT,
  type DownloadInput,
  type TicketInput,
  type TicketStorage,
} from '../../src/media/storage/contract'
import { postgresTicketStorage } from '../../src/media/storage/postgres'
import { sqliteTicketStorage } from '../../src/media/storage/sqlite'
import { engineHarness } from '../support/engines'

interface Engine {
  /** The tickets on one more connection (a node). */
  node(): { tickets: TicketStorage }
  account(name: string): Promise<number>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-media-')
  return {
    node: () => ({ tickets: sqliteTicketStorage(connect()) }),
    account: async (name) =>
      Number(
        (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
      ),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node: () => ({ tickets: postgresTicketStorage(pool(10)) }),
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    close,
  }
}

const T0 = 1_800_000_000_123

const ticketInput = (n: number, o: Partial<TicketInput> = {}): TicketInput => ({
  account_id: 0,
  page_url: `https://video.example/watch?v=${n}&t=1`,
  format_id: `hls-${n}`,
  method: n % 2 ? 'direct' : 'ytdlp',
  upstream_url: `https://cdn.example/${n}.m3u8?sig=a%2Fb`,
  headers: '{"User-Agent":"Mozilla/5.0 (X11; Linux x86_64)","Referer":"https://video.example/é"}',
  filename: `Vidéo ${n} "quoted".mp4`,
  content_type: 'video/mp4',
  created: T0 + n,
  expires: T0 + 1000 * n,
  ...o,
})

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('media tickets on %s', (_name, makeEngine) => {
  test('an extraction’s tickets read back field for field on the other node, ids in order and never reused; the sweep takes the expired', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const inputs = [1, 2, 3, 4].map((n) => ticketInput(n, { account_id: alice }))
      const ids = await a.tickets.insertAll(inputs)
      expect(ids).toHaveLength(4)
      expect(ids).toEqual([...ids].sort((x, y) => x - y))
      for (const [i, id] of ids.entries()) expect(await b.tickets.ticket(id)).toEqual({ id, ...inputs[i]! })
      expect(await b.tickets.ticket(999_999)).toBeNull()
      expect(await b.tickets.count()).toBe(4)
      expect(await a.tickets.insertAll([])).toEqual([])
      // Expired at T0 + 2000: the first two.
      expect(await b.tickets.sweep(T0 + 1999)).toBe(1)
      expect(await a.tickets.sweep(T0 + 2000)).toBe(1)
      expect(await a.tickets.ticket(ids[1]!)).toBeNull()
      expect(await b.tickets.count()).toBe(2)
      // Deleting the newest does not give its id again.
      await b.tickets.sweep(T0 + 10_000)
      const [next] = await b.tickets.insertAll([ticketInput(9, { account_id: alice })])
      expect(next).toBeGreaterThan(ids[3]!)
      // A ticket's account must exist: a failing ticket stores none of its extraction.
      await expect(
        a.tickets.insertAll([ticketInput(10, { account_id: alice }), ticketInput(11, { account_id: 999_999 })]),
      ).rejects.toThrow()
      expect(await b.tickets.count()).toBe(1)
    } finally {
      await e.close()
    }
  })

  test('the downloads an account started: the same ticket again moves up, its newest 50 kept, two nodes at once keep 50, another account’s apart', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [alice, bob] = [await e.account('alice'), await e.account('bob')]
      const started = (n: number, o: Partial<DownloadInput> = {}): DownloadInput => ({
        account_id: alice,
        ticket_id: n,
        page_url: `https://video.example/watch?v=${n}`,
        filename: `Vidéo ${n} "quoted".mp4`,
        format_id: '0+1',
        created: T0 + n,
        link_expires: T0 + 3_600_000 + n,
        ...o,
      })
      expect(await b.tickets.downloads(alice)).toEqual([])
      await a.tickets.started(started(1))
      await a.tickets.started(started(2))
      await a.tickets.started(started(3, { account_id: bob }))
      const [two, one] = await b.tickets.downloads(alice)
      expect(two).toEqual({ id: two!.id, ...started(2) })
      expect(one).toEqual({ id: one!.id, ...started(1) })
      // Ticket 1 started again: same row, newer time and link, first now.
      await b.tickets.started(started(1, { created: T0 + 10, link_expires: T0 + 7_200_000 }))
      const again = await a.tickets.downloads(alice)
      expect(again.map((d) => [d.id, d.ticket_id, d.created, d.link_expires])).toEqual([
        [one!.id, 1, T0 + 10, T0 + 7_200_000],
        [two!.id, 2, T0 + 2, T0 + 3_600_002],
      ])
      // 60 more from two nodes at once: the newest 50 stay.
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          (i % 2 ? a : b).tickets.started(started(100 + i, { created: T0 + 100 + i })),
        ),
      )
      const kept = await a.tickets.downloads(alice)
      expect(kept).toHaveLength(DOWNLOADS_KEPT)
      expect(kept.map((d) => d.ticket_id)).toEqual(Array.from({ length: 50 }, (_, i) => 159 - i))
      expect((await b.tickets.downloads(bob)).map((d) => d.ticket_id)).toEqual([3])
      // The account's must exist.
      await expect(a.tickets.started(started(7, { account_id: 999_999 }))).rejects.toThrow()
    } finally {
      await e.close()
    }
  })

  test('the sweep deletes at most 5000 a call; two nodes sweeping at once delete each ticket once', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const batch = [...Array(1000)].map((_, i) => ticketInput(i, { account_id: alice, expires: T0 }))
      for (let i = 0; i < 6; i++) await a.tickets.insertAll(batch)
      expect(await b.tickets.count()).toBe(6000)
      const swept = await Promise.all([a.tickets.sweep(T0), b.tickets.sweep(T0)])
      expect(swept[0]! + swept[1]!).toBe(6000)
      expect(Math.max(...swept)).toBeLessThanOrEqual(5000)
      expect(await a.tickets.count()).toBe(0)
    } finally {
      await e.close()
    }
  }, 60_000)
})
