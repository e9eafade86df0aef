// The link service (src/links/service.ts) handed PostgreSQL's storages (issue 22): the SAME service code as on
// SQLite — create, resolve (a miss read through the storage, then the cache's synchronous hit), update, stats
// from the click counts, delete, each change's webhook event through the queue in its transaction — with
// every row in the PostgreSQL database. It fails when the service reads or writes anything but the storages
// it is handed (there is no SQLite database here at all). Two services on two pools stand for two nodes: one
// alias is taken once, whichever asks first.
import { describe, expect, test } from 'bun:test'
import type { Caller } from '../../src/kernel/caller'
import { createClickRecorder } from '../../src/clicks/recorder'
import { countsWriter } from '../../src/clicks/writer'
import { dayOf } from '../../src/clicks/batch'
import { localChangeFeed } from '../../src/db/changes'
import { postgresStorages } from '../../src/app/storages-postgres'
import { AppError } from '../../src/kernel/errors'
import { createEvents } from '../../src/kernel/events'
import { importLinks } from '../../src/links/import'
import { createLinkService } from '../../src/links/service'
import { testConfig } from '../support/app'
import { engineHarness } from '../support/engines'

const engines = engineHarness()

const callerOf = (accountId: number, accountName: string): Caller => ({
  accountId,
  accountName,
  admin: false,
  scopes: new Set(),
  keyId: null,
  via: 'key',
})

/** A node: the link service on its own pool of the one database, with the app's parts beside it. */
function nodeOn(sql: import('bun').SQL, dir: string, clock: () => number, feed = localChangeFeed()) {
  const s = postgresStorages(sql)
  const recorder = createClickRecorder(null, { writer: countsWriter(s.counts), log: () => {} })
  const woken: number[] = []
  const links = createLinkService({
    links: s.links,
    counts: s.counts,
    queue: s.queue,
    config: testConfig(dir),
    recorder,
    events: createEvents(),
    clock,
    changes: feed,
    // Everyone listens (the queue still writes a delivery only for the endpoints the table has).
    outbox: { wanted: () => true, wake: () => void woken.push(clock()) },
  })
  return { links, recorder, woken }
}

describe('the link service on PostgreSQL', () => {
  test('create → resolve → update → stats → delete, with the webhook events in each change’s transaction', async () => {
    const pg = await engines.postgres()
    const dir = engines.tracked('linkbox-link-service-pg-')
    const now = Date.UTC(2026, 10, 26, 12)
    const { links, recorder, woken } = nodeOn(pg.pool(4), dir, () => now)
    const sql = pg.main.sql
    try {
      const [{ id: aliceId }] = await sql`INSERT INTO accounts (name, created) VALUES ('alice', 0) RETURNING id`
      const alice = callerOf(Number(aliceId), 'alice')
      await sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, created)
                VALUES (${aliceId}, 'https://hooks.example/', 'link.created,link.updated,link.deleted', 'whsec_x', 0)`

      const made = await links.create({ url: 'https://example.com/pg', tags: 'b,a', max_visits: '2' }, alice)
      expect(made).toMatchObject({
        long_url: 'https://example.com/pg',
        tags: ['a', 'b'],
        max_visits: 2,
        visits_left: 2,
      })
      const [stored] = await sql`SELECT long_url, account_id FROM links WHERE code = ${made.hex}`
      expect({ long_url: stored.long_url, account_id: Number(stored.account_id) }).toEqual({
        long_url: 'https://example.com/pg',
        account_id: Number(aliceId),
      })
      // A random code drawn again when taken, in the same transaction: the storage's insertFresh.
      expect(made.hex).toMatch(/^[A-Za-z0-9]{6}$/)

      // resolve: a miss is the storage's read (a promise), the next visit the cached row itself.
      const missed = links.resolve(made.hex)
      expect(missed).toBeInstanceOf(Promise)
      const row = (await missed)!
      expect(row.long_url).toBe('https://example.com/pg')
      const hit = links.resolve(made.hex)
      expect(hit).toBe(row)
      expect(await links.resolve('nosuch')).toBeNull()
      // A limited link's visits are taken in the database.
      expect(await links.takeVisit(row)).toBe(true)
      expect(await links.visitsLeft(row)).toBe(1)

      const updated = await links.update({ code: made.hex, url: 'https://example.com/pg2', tags: 'c' }, alice)
      expect(updated).toMatchObject({ long_url: 'https://example.com/pg2', tags: ['c'], visits_left: 1 })
      expect((await links.resolve(made.hex))!.long_url).toBe('https://example.com/pg2')
      await expect(
        links.update({ code: made.hex, url: 'https://example.com/x' }, callerOf(Number(aliceId) + 1000, 'mallory')),
      ).rejects.toMatchObject({ status: 403 })

      // Statistics from the click counts this node wrote.
      recorder.record(
        row.id,
        now,
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
        '',
        Number(aliceId),
        made.hex,
        '192.0.2.1',
        '',
      )
      const stats = await links.stats({ code: made.hex }, alice)
      expect(stats.clicks).toBe(1)
      expect(stats.days.find((d) => d.date === dayOf(now))).toEqual({ date: dayOf(now), clicks: 1, visitors: 1 })
      expect(stats.long_url).toBe('https://example.com/pg2')

      expect((await links.list({}, alice)).links.map((l) => l.hex)).toEqual([made.hex])
      expect((await links.search({ q: 'pg2' }, alice)).total).toBe(1)
      expect(await links.total()).toBe(1)

      expect(await links.delete({ code: made.hex }, alice)).toEqual({ hex: made.hex, deleted: true })
      expect(await links.resolve(made.hex)).toBeNull()
      await expect(links.delete({ code: made.hex }, alice)).rejects.toMatchObject({ status: 404 })
      expect(await links.total()).toBe(0)

      // One event per change, written with it; the deliverer woken after each commit.
      const events = await sql`SELECT type, payload FROM webhook_events ORDER BY id`
      expect(events.map((e: { type: string }) => e.type)).toEqual(['link.created', 'link.updated', 'link.deleted'])
      expect(JSON.parse(events[1].payload).data).toMatchObject({
        hex: made.hex,
        long_url: 'https://example.com/pg2',
        tags: ['c'],
      })
      expect(JSON.parse(events[2].payload).data).toMatchObject({ hex: made.hex, tags: ['c'] })
      expect(woken).toHaveLength(3)
      expect(links.creationCommits).toEqual({ commits: 1, links: 1 })
      await links.flushCreations()
    } finally {
      await recorder.stop()
      await pg.close()
    }
  }, 60_000)

  test('two nodes on two pools: one alias is taken once, the other told alias_taken (409)', async () => {
    const pg = await engines.postgres()
    const dir = engines.tracked('linkbox-link-service-pg2-')
    const now = () => Date.UTC(2026, 10, 26, 12)
    const one = nodeOn(pg.pool(4), dir, now)
    const two = nodeOn(pg.pool(4), dir, now)
    try {
      for (let round = 0; round < 5; round++) {
        const alias = `shared-${round}`
        const outcomes = await Promise.allSettled([
          one.links.create({ url: 'https://example.com/one', alias }, null),
          two.links.create({ url: 'https://example.com/two', alias }, null),
        ])
        const won = outcomes.filter((o) => o.status === 'fulfilled')
        const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected')
        expect(won).toHaveLength(1)
        expect(lost).toHaveLength(1)
        expect(lost[0]!.reason).toBeInstanceOf(AppError)
        expect(lost[0]!.reason).toMatchObject({
          status: 409,
          code: 'alias_taken',
          message: `The alias "${alias}" is already in use.`,
        })
        const rows = await pg.main.sql`SELECT long_url FROM links WHERE code = ${alias}`
        expect(rows).toHaveLength(1)
        // Both nodes resolve it to the one row.
        expect((await one.links.resolve(alias))!.long_url).toBe(rows[0].long_url)
        expect((await two.links.resolve(alias))!.long_url).toBe(rows[0].long_url)
      }
      // Taken once committed, whichever node asks.
      await expect(
        two.links.create({ url: 'https://example.com/late', alias: 'shared-0' }, null),
      ).rejects.toMatchObject({ status: 409 })
    } finally {
      await Promise.all([one.recorder.stop(), two.recorder.stop?.()])
      await pg.close()
    }
  }, 60_000)
})

describe('imports on PostgreSQL (issue 36)', () => {
  test('two nodes: one import of an account at a time (the other node answers 429), dates and titles kept, one links.imported event', async () => {
    const pg = await engines.postgres()
    const dir = engines.tracked('linkbox-link-import-pg-')
    const now = () => Date.now()
    const one = nodeOn(pg.pool(4), dir, now)
    const two = nodeOn(pg.pool(4), dir, now)
    const sql = pg.main.sql
    try {
      const [{ id }] = await sql`INSERT INTO accounts (name, created) VALUES ('importer', 0) RETURNING id`
      const caller = callerOf(Number(id), 'importer')
      await sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, created)
                VALUES (${id}, 'https://hooks.example/', 'link.created,links.imported', 'whsec_x', 0)`
      const rows = Array.from(
        { length: 3000 },
        (_, i) => `pg-${i},https://example.com/pg/${i},2024-01-02T03:04:05.000Z,Title ${i}\r\n`,
      )
      const file = `code,long_url,created,title\r\n${rows.join('')}`
      const first = importLinks(one.links, caller, file, 'csv', { maxRows: 50_000 })
      // The lock row is there once the first import began (it is taken before the file is read).
      for (let i = 0; i < 500 && (await sql`SELECT 1 FROM import_locks WHERE account_id = ${id}`).length === 0; i++)
        await Bun.sleep(5)
      const second = await importLinks(two.links, caller, 'long_url\r\nhttps://example.com/other\r\n', 'csv', {
        maxRows: 50_000,
      }).catch((err) => err)
      expect(second).toBeInstanceOf(AppError)
      expect(second).toMatchObject({ status: 429, code: 'rate_limited' })
      expect(Number(second.headers['Retry-After'])).toBeGreaterThanOrEqual(1)
      expect(await first).toEqual({ created: 3000, skipped: [], skipped_total: 0 })
      const [kept] = await sql`SELECT created, title FROM links WHERE code = 'pg-2999'`
      expect({ created: Number(kept.created), title: kept.title }).toEqual({
        created: Date.parse('2024-01-02T03:04:05Z'),
        title: 'Title 2999',
      })
      const events = await sql`SELECT type, payload FROM webhook_events ORDER BY id`
      expect(events.map((e: { type: string }) => e.type)).toEqual(['links.imported'])
      const data = JSON.parse(events[0].payload).data
      expect({ ...data, codes: data.codes.length }).toEqual({
        account: 'importer',
        created: 3000,
        skipped: 0,
        codes: 1000,
      })
      expect((await sql`SELECT count(*)::int AS n FROM import_locks`)[0].n).toBe(0)
      // Free again, on either node.
      expect(
        (await importLinks(two.links, caller, 'long_url\r\nhttps://example.com/after\r\n', 'csv', { maxRows: 50_000 }))
          .created,
      ).toBe(1)
    } finally {
      await Promise.all([one.recorder.stop(), two.recorder.stop?.()])
      await pg.close()
    }
  }, 60_000)
})
