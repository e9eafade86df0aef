// Cookies per site's storage contract (src/media/storage/cookies-contract.ts), ONE suite run against both engines:
// SQLite (sqlite-cookies.ts) and a real PostgreSQL server (postgres-cookies.ts). Two "nodes" are two connections
// (SQLite) or two pools (PostgreSQL) on one database: a site one node stores, another finds.
import { describe, expect, test } from 'bun:test'
import type { CookieStorage } from '../../src/media/storage/cookies-contract'
import { MAX_SITES } from '../../src/media/storage/cookies-contract'
import { postgresCookieStorage } from '../../src/media/storage/postgres-cookies'
import { sqliteCookieStorage } from '../../src/media/storage/sqlite-cookies'
import { engineHarness } from '../support/engines'

interface Engine {
  node(): CookieStorage
  /** The sealed column as stored, read directly. */
  raw(site: string): Promise<Uint8Array | null>
  /** Fills the table up to `n` sites in one statement. */
  fill(n: number): Promise<void>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-cookies-')
  return {
    node: () => sqliteCookieStorage(connect()),
    raw: async (site) => {
      const r = main.query('SELECT sealed FROM media_cookies WHERE site = ?').get(site) as { sealed: Uint8Array } | null
      return r ? new Uint8Array(r.sealed) : null
    },
    fill: async (n) =>
      void main.exec(`WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ${n})
        INSERT INTO media_cookies (site, sealed, cookies, expires, created) SELECT 'fill' || n || '.example', x'00', 1, NULL, 0 FROM i`),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node: () => postgresCookieStorage(pool(4)),
    raw: async (site) => {
      const [r] = await main.sql`SELECT sealed FROM media_cookies WHERE site = ${site}`
      return r ? new Uint8Array(r.sealed) : null
    },
    fill: async (n) =>
      void (await main.sql`INSERT INTO media_cookies (site, sealed, cookies, expires, created)
        SELECT 'fill' || n || '.example', '\\x00'::bytea, 1, NULL, 0 FROM generate_series(1, ${n}) AS n`),
    close,
  }
}

const T0 = 1_800_000_000_123
const bytes = (...b: number[]) => new Uint8Array(b)

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('media cookies on %s', (_name, makeEngine) => {
  test('a site stored by one node is found by another, by the longest candidate; listed without its bytes', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const b = e.node()
      expect(await a.put({ site: 'example.com', sealed: bytes(1, 0, 255), cookies: 3, expires: T0, created: T0 })).toBe(
        true,
      )
      expect(
        await a.put({ site: 'www.example.com', sealed: bytes(2), cookies: 1, expires: null, created: T0 + 1 }),
      ).toBe(true)
      expect(await b.find(['a.www.example.com', 'www.example.com', 'example.com'])).toEqual({
        site: 'www.example.com',
        sealed: bytes(2),
        cookies: 1,
        expires: null,
        created: T0 + 1,
        last_used: null,
      })
      expect((await b.find(['cdn.example.com', 'example.com']))?.sealed).toEqual(bytes(1, 0, 255))
      expect(await b.find(['example.net'])).toBeNull()
      expect(await b.find([])).toBeNull()
      await b.touch('example.com', T0 + 5)
      expect(await a.list()).toEqual([
        { site: 'example.com', cookies: 3, expires: T0, created: T0, last_used: T0 + 5 },
        { site: 'www.example.com', cookies: 1, expires: null, created: T0 + 1, last_used: null },
      ])
      expect(JSON.stringify(await a.list())).not.toContain('sealed')
      expect(await e.raw('example.com')).toEqual(bytes(1, 0, 255))
    } finally {
      await e.close()
    }
  })

  test('a new file replaces the old whole (last use cleared); remove says whether there was one', async () => {
    const e = await makeEngine()
    try {
      const s = e.node()
      await s.put({ site: 'example.com', sealed: bytes(1), cookies: 3, expires: T0, created: T0 })
      await s.touch('example.com', T0 + 1)
      await s.put({ site: 'example.com', sealed: bytes(9, 9), cookies: 7, expires: null, created: T0 + 2 })
      expect(await s.list()).toEqual([
        { site: 'example.com', cookies: 7, expires: null, created: T0 + 2, last_used: null },
      ])
      expect(await e.raw('example.com')).toEqual(bytes(9, 9))
      expect(await s.remove('example.com')).toBe(true)
      expect(await s.remove('example.com')).toBe(false)
      expect(await s.find(['example.com'])).toBeNull()
    } finally {
      await e.close()
    }
  })

  test("`within` runs in the change's transaction: when it throws, nothing was stored or removed", async () => {
    const e = await makeEngine()
    try {
      const s = e.node()
      const fail = () => {
        throw new Error('the audit row could not be written')
      }
      await expect(
        s.put({ site: 'example.com', sealed: bytes(1), cookies: 1, expires: null, created: T0 }, fail),
      ).rejects.toThrow('audit row')
      expect(await s.list()).toEqual([])
      let ran = 0
      expect(
        await s.put({ site: 'example.com', sealed: bytes(1), cookies: 1, expires: null, created: T0 }, () => ran++),
      ).toBe(true)
      await expect(s.remove('example.com', fail)).rejects.toThrow('audit row')
      expect(await e.raw('example.com')).toEqual(bytes(1))
      expect(await s.remove('example.com', () => ran++)).toBe(true)
      expect(await s.remove('example.com', () => ran++)).toBe(false) // nothing removed: not run
      expect(ran).toBe(2)
    } finally {
      await e.close()
    }
  })

  test(`at most ${MAX_SITES} sites; a stored one may still be replaced`, async () => {
    const e = await makeEngine()
    try {
      const s = e.node()
      await e.fill(MAX_SITES)
      expect(await s.put({ site: 'one-more.example', sealed: bytes(1), cookies: 1, expires: null, created: T0 })).toBe(
        false,
      )
      expect(await s.put({ site: 'fill1.example', sealed: bytes(2), cookies: 2, expires: null, created: T0 })).toBe(
        true,
      )
      expect(await e.raw('fill1.example')).toEqual(bytes(2))
      expect(await s.list()).toHaveLength(MAX_SITES)
    } finally {
      await e.close()
    }
  })
})
