// The audit log's storage contract (src/audit/storage/), ONE suite run against both engines: SQLite and a real
// PostgreSQL server. Two "nodes" are
// two connections (SQLite) or two pools (PostgreSQL) on one database: a row is written with its change's
// transaction and read through the other node; pages, filters and `since` give the same rows in the same
// order on both engines; ids are never reused; two nodes writing (or sweeping) at once lose nothing.
import { describe, expect, test } from 'bun:test'
import { createAuditReader } from '../../src/audit'
import { postgresAuditRows } from '../../src/audit/storage/postgres'
import { sqliteAuditRows } from '../../src/audit/storage/sqlite'
import type { AuditInsert, AuditQuery, AuditRows } from '../../src/audit'
import { engineHarness, postgresTransaction, sqliteTransaction } from '../support/engines'

interface Node {
  audit: AuditRows<any>
  /** Runs `work` in a transaction of this node's connection, then commits (or rolls back); its result. */
  inTransaction<T>(work: (tx: any) => Promise<T>, rollback?: boolean): Promise<T>
}

interface Engine {
  node(): Node
  count(): Promise<number>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-auditrows-')
  return {
    node() {
      const db = connect()
      return { audit: sqliteAuditRows(db), inTransaction: (work, rollback) => sqliteTransaction(db, work, rollback) }
    },
    count: async () => (main.query('SELECT count(*) AS n FROM audit_log').get() as { n: number }).n,
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node() {
      const sql = pool()
      return {
        audit: postgresAuditRows(sql),
        inTransaction: (work, rollback) => postgresTransaction(sql, work, rollback),
      }
    },
    count: async () => Number((await main.sql`SELECT count(*) AS n FROM audit_log`)[0].n),
    close,
  }
}

const T0 = 1_800_000_000_000
const DAY = 86_400_000
const entry = (
  action: string,
  at: number,
  actorName: string | null = 'bob',
  extra: Partial<AuditInsert> = {},
): AuditInsert => ({
  at,
  actorKind: 'account',
  actorId: 3,
  actorName,
  action,
  target: `target of ${action}`,
  detail: '',
  address: '192.0.2.1',
  ...extra,
})
/** A page as the service asks for it: no filter, every time, from the newest. */
const query = (q: Partial<AuditQuery> = {}): AuditQuery => ({
  actor: null,
  action: null,
  from: 0,
  to: Number.MAX_SAFE_INTEGER,
  before: Number.MAX_SAFE_INTEGER,
  limit: 100,
  ...q,
})
/** An exact action, and a group, as the service turns them into ranges. */
const exact = (a: string) => ({ from: a, to: `${a}\u0001` })
const group = (g: string) => ({ from: `${g}.`, to: `${g}/` })

async function write(node: Node, rows: AuditInsert[]): Promise<number[]> {
  // Every insert started before the first await: a SQLite transaction is synchronous (its rows are written by
  // then); on PostgreSQL the transaction's one connection runs them in order.
  return node.inTransaction((tx) => Promise.all(rows.map((r) => node.audit.insert(tx, r))))
}

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('audit rows on %s', (_name, makeEngine) => {
  test('a row is written with its change’s transaction and read through the other node; a rolled-back change leaves none', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [id] = await write(a, [entry('key.create', T0, 'bob', { detail: 'scopes links:write', actorId: 7 })])
      expect(await b.audit.page(query())).toEqual([
        {
          id: id!,
          at: T0,
          actor_kind: 'account',
          actor_id: 7,
          actor_name: 'bob',
          action: 'key.create',
          target: 'target of key.create',
          detail: 'scopes links:write',
          address: '192.0.2.1',
        },
      ])
      await a.inTransaction(async (tx) => a.audit.insert(tx, entry('key.revoke', T0 + 1)), true)
      expect(await e.count()).toBe(1)
      // The other kinds of actor: the command line, a failed sign-in, the service itself.
      await write(b, [
        entry('account.create', T0 + 2, 'cli', { actorKind: 'cli', actorId: null, address: 'cli' }),
        entry('signin.failed', T0 + 3, 'mallory', { actorKind: 'anonymous', actorId: null }),
        entry('account.create', T0 + 4, 'linkbox', { actorKind: 'system', actorId: null, address: '' }),
      ])
      expect((await a.audit.page(query())).map((r) => [r.actor_kind, r.actor_id, r.actor_name, r.address])).toEqual([
        ['system', null, 'linkbox', ''],
        ['anonymous', null, 'mallory', '192.0.2.1'],
        ['cli', null, 'cli', 'cli'],
        ['account', 7, 'bob', '192.0.2.1'],
      ])
    } finally {
      await e.close()
    }
  })

  test('insertAlone: a row that is no change’s (a failed sign-in) is written on its own and read through the other node; ids keep growing', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const id = await a.audit.insertAlone(
        entry('signin.failed', T0, 'mallory', { actorKind: 'anonymous', actorId: null, detail: 'wrong password' }),
      )
      expect(await b.audit.page(query())).toEqual([
        {
          id,
          at: T0,
          actor_kind: 'anonymous',
          actor_id: null,
          actor_name: 'mallory',
          action: 'signin.failed',
          target: 'target of signin.failed',
          detail: 'wrong password',
          address: '192.0.2.1',
        },
      ])
      const [inChange] = await write(b, [entry('key.create', T0 + 1)])
      expect(inChange!).toBeGreaterThan(id)
      expect(
        await b.audit.insertAlone(entry('signin.failed', T0 + 2, 'x', { actorKind: 'anonymous', actorId: null })),
      ).toBeGreaterThan(inChange!)
      expect(await e.count()).toBe(3)
    } finally {
      await e.close()
    }
  })

  test('pages: newest first by id, filtered by actor, exact action, group (byte order), time range, and the keyset cursor', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      // Times out of id order on purpose: pages go by id, not by time.
      const actions = [
        'account.create',
        'accounts.x',
        'account.delete',
        'ACCOUNT.create',
        'account',
        'key.create',
        'account.create',
        'accountx.y',
        'Account.disable',
        'account.password',
      ]
      const ids = await write(
        a,
        actions.map((act, i) => entry(act, T0 + ((i * 7) % 10) * DAY, i % 3 === 0 ? 'Bob' : 'bob')),
      )
      const page = async (q: Partial<AuditQuery>) => (await b.audit.page(query(q))).map((r) => r.id)
      const where = (f: (i: number) => boolean) => ids.filter((_, i) => f(i)).reverse()

      expect(await page({})).toEqual([...ids].reverse())
      expect(await page({ actor: 'bob' })).toEqual(where((i) => i % 3 !== 0))
      expect(await page({ actor: 'Bob' })).toEqual(where((i) => i % 3 === 0))
      expect(await page({ actor: 'nobody' })).toEqual([])
      expect(await page({ action: exact('account.create') })).toEqual(where((i) => actions[i] === 'account.create'))
      // The group "account" is ["account.", "account/"): not "account", "accounts.x", "accountx.y" or other cases.
      expect(await page({ action: group('account') })).toEqual(where((i) => actions[i]!.startsWith('account.')))
      expect(await page({ action: group('account'), actor: 'Bob' })).toEqual(
        where((i) => actions[i]!.startsWith('account.') && i % 3 === 0),
      )
      expect(await page({ action: exact('key.create'), actor: 'Bob' })).toEqual([])
      // [from, to): days 2 to 5.
      expect(await page({ from: T0 + 2 * DAY, to: T0 + 6 * DAY })).toEqual(
        where((i) => (i * 7) % 10 >= 2 && (i * 7) % 10 < 6),
      )
      // The cursor: pages of 3 through the whole log, and through a filtered one.
      const walk = async (q: Partial<AuditQuery>) => {
        const seen: number[] = []
        for (let before = Number.MAX_SAFE_INTEGER; ; ) {
          const rows = await a.audit.page(query({ ...q, before, limit: 3 }))
          seen.push(...rows.map((r) => r.id))
          if (rows.length < 3) return seen
          before = rows[rows.length - 1]!.id
        }
      }
      expect(await walk({})).toEqual([...ids].reverse())
      expect(await walk({ actor: 'bob', action: group('account') })).toEqual(
        where((i) => i % 3 !== 0 && actions[i]!.startsWith('account.')),
      )
    } finally {
      await e.close()
    }
  })

  test('since: oldest first from a time, after a row id, a page at a time', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ids = await write(
        a,
        Array.from({ length: 9 }, (_, i) => entry('key.update', T0 + (i % 2 ? 10 : i))),
      )
      expect((await b.audit.since(T0 + 4, 0, 100)).map((r) => r.id)).toEqual(
        ids.filter((_, i) => i % 2 === 1 || i >= 4),
      )
      const seen: number[] = []
      for (let after = 0; ; ) {
        const rows = await b.audit.since(0, after, 4)
        seen.push(...rows.map((r) => r.id))
        if (rows.length < 4) break
        after = rows[rows.length - 1]!.id
      }
      expect(seen).toEqual(ids)
      expect(await b.audit.since(T0 + 11, 0, 100)).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('removeOlder takes the oldest a batch at a time; ids are never reused, even after every row went', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ids = await write(
        a,
        Array.from({ length: 7 }, (_, i) => entry('webhook.update', T0 + i)),
      )
      expect(await b.audit.removeOlder(T0 + 5, 3)).toBe(3)
      expect(await b.audit.removeOlder(T0 + 5, 3)).toBe(2)
      expect(await b.audit.removeOlder(T0 + 5, 3)).toBe(0)
      expect((await a.audit.page(query())).map((r) => r.id)).toEqual([ids[6]!, ids[5]!])
      expect(await a.audit.removeOlder(T0 + 100, 10)).toBe(2)
      expect(await e.count()).toBe(0)
      const [next] = await write(b, [entry('webhook.create', T0 + 200)])
      expect(next).toBeGreaterThan(ids[6]!)
    } finally {
      await e.close()
    }
  })

  test('two nodes writing at once, 100 changes each of 1 to 3 rows (398 in all): every row is kept, under its own id, and read back in id order', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const changes = (node: Node, name: string) =>
        Promise.all(
          Array.from({ length: 100 }, (_, i) =>
            write(
              node,
              Array.from({ length: 1 + (i % 3) }, (_, j) =>
                entry('link.disable', T0 + i, name, { detail: `${name} ${i}.${j}` }),
              ),
            ),
          ),
        )
      const [fromA, fromB] = await Promise.all([changes(a, 'a'), changes(b, 'b')])
      const written = [...fromA.flat(), ...fromB.flat()]
      expect(written).toHaveLength(398)
      expect(new Set(written).size).toBe(398)
      // Each change's rows in its own order.
      for (const c of [...fromA, ...fromB]) expect(c).toEqual([...c].sort((x, y) => x - y))
      const all: number[] = []
      const details = new Set<string>()
      for (let after = 0; ; ) {
        const rows = await a.audit.since(0, after, 100)
        all.push(...rows.map((r) => r.id))
        rows.forEach((r) => details.add(r.detail))
        if (rows.length < 100) break
        after = rows[rows.length - 1]!.id
      }
      expect(all).toEqual([...written].sort((x, y) => x - y))
      expect(details.size).toBe(398)
      expect((await b.audit.page(query({ actor: 'b' }))).length).toBe(100)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('two nodes sweeping at once remove each old row once, and nothing newer', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      for (let k = 0; k < 4; k++)
        await write(
          a,
          Array.from({ length: 50 }, (_, i) => entry('host.ban', T0 + k * 50 + i)),
        )
      const sweep = async (node: Node) => {
        let n = 0
        for (let i = 0; i < 20; i++) n += await node.audit.removeOlder(T0 + 150, 7)
        return n
      }
      const [x, y] = await Promise.all([sweep(a), sweep(b)])
      expect(x + y).toBe(150)
      expect(await e.count()).toBe(50)
      expect((await b.audit.since(0, 0, 100)).map((r) => r.at)).toEqual(
        Array.from({ length: 50 }, (_, i) => T0 + 150 + i),
      )
    } finally {
      await e.close()
    }
  }, 60_000)
})

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('the audit page and sweep (createAuditReader) over the rows on %s', (_name, makeEngine) => {
  test('pages with their "older" cursor and filters, a refused filter naming its field, and the keep_days sweep', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const reader = createAuditReader(b.audit, () => T0 + 10 * DAY)
      const ids = await write(a, [
        entry('key.create', T0),
        entry('signin.ok', T0 + DAY),
        entry('key.revoke', T0 + 5 * DAY),
        entry('key.create', T0 + 9 * DAY, 'carol'),
      ])
      const first = await reader.page({ limit: 3 })
      expect(first.rows.map((r) => r.id)).toEqual([ids[3]!, ids[2]!, ids[1]!])
      expect(first.next).toBe(String(ids[1]))
      expect(await reader.page({ limit: 3, before: first.next! })).toEqual({
        rows: [expect.objectContaining({ id: ids[0] })],
        next: null,
      })
      expect((await reader.page({ action: 'key', actor: 'bob' })).rows.map((r) => r.id)).toEqual([ids[2]!, ids[0]!])
      await expect(reader.page({ action: 'key.*' })).rejects.toMatchObject({
        status: 400,
        message: expect.stringContaining('"action"'),
      })
      // Rows older than 6 days at T0 + 10 days: the first two.
      expect(await reader.sweep(6)).toBe(2)
      expect((await reader.page()).rows.map((r) => r.id)).toEqual([ids[3]!, ids[2]!])
      expect(await reader.sweep(6)).toBe(0)
    } finally {
      await e.close()
    }
  })
})
