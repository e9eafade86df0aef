// The dashboard's session service (src/dashboard/sessions.ts) on the async storages, two "nodes" on one
// database — two connections to one SQLite file, or two pools on one PostgreSQL database — each with its own
// session service, as two linkbox processes would have: a session made on one is valid on the other, a
// sign-out on either ends it on both at once (no copy kept per process), a disabled account is refused
// everywhere, and the sign-in's rows (last sign-in, signin.ok) and a failed sign-in's row are written.
import { describe, expect, test } from 'bun:test'
import { postgresStorages } from '../../src/app/storages-postgres'
import { sqliteStorages, type Storages } from '../../src/app/storages'
import { createSessions, SESSION_TTL_MS } from '../../src/dashboard/sessions'
import { engineHarness } from '../support/engines'

const engines = engineHarness()
const T0 = 1_800_000_000_000

interface Engine {
  /** A node: the storages of a connection (SQLite) or a pool (PostgreSQL) of its own. */
  node(): Storages<unknown>
  account(name: string): Promise<number>
  disable(accountId: number): Promise<void>
  lastSignin(accountId: number): Promise<number | null>
  audit(): Promise<{ action: string; actor_name: string; detail: string }[]>
  close(): Promise<void>
}

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-sessions-nodes-')
  const one = <T>(sql: string, ...args: (string | number | null)[]) => main.query(sql).get(...args) as T
  return {
    node: () => sqliteStorages(connect()) as Storages<unknown>,
    account: async (name) => one<{ id: number }>('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id', name).id,
    disable: async (id) => void main.query('UPDATE accounts SET disabled = ? WHERE id = ?').run(T0, id),
    lastSignin: async (id) => one<{ last_signin: number | null }>('SELECT last_signin FROM accounts WHERE id = ?', id).last_signin,
    audit: async () => main.query('SELECT action, actor_name, detail FROM audit_log ORDER BY id').all() as never,
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node: () => postgresStorages(pool()) as Storages<unknown>,
    account: async (name) => Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    disable: async (id) => void (await main.sql`UPDATE accounts SET disabled = ${T0} WHERE id = ${id}`),
    lastSignin: async (id) => {
      const [r] = await main.sql`SELECT last_signin FROM accounts WHERE id = ${id}`
      return r.last_signin === null ? null : Number(r.last_signin)
    },
    audit: async () => [...(await main.sql`SELECT action, actor_name, detail FROM audit_log ORDER BY id`)],
    close,
  }
}

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('dashboard sessions on two nodes, %s', (_name, makeEngine) => {
  test('made on A, valid on B; signed out on B, refused on A at once; a disabled account is refused on both', async () => {
    const e = await makeEngine()
    let now = T0
    const clock = () => now
    const [a, b] = [createSessions({ storages: e.node(), clock }), createSessions({ storages: e.node(), clock })]
    try {
      const alice = await e.account('alice')
      const made = await a.create(alice, { address: '192.0.2.7', method: 'password' })
      // The sign-in's rows, in the session's transaction.
      expect(await e.lastSignin(alice)).toBe(T0)
      expect(await e.audit()).toEqual([{ action: 'signin.ok', actor_name: 'alice', detail: 'password' }])

      const onB = await b.lookup(made.token)
      expect(onB).toEqual(made.session)
      expect(onB).toMatchObject({ accountId: alice, accountName: 'alice', admin: false })
      // Used a minute later on B: its expiry slides there, and A reads the new one.
      now = T0 + 60_000
      expect(await b.lookup(made.token)).not.toBeNull()
      now = T0 + SESSION_TTL_MS + 30_000 // past the first expiry, within the slid one
      expect(await a.lookup(made.token)).not.toBeNull()

      // Signed out on B: A refuses it on its very next request (nothing cached on A).
      await b.end(made.session.id)
      expect(await a.lookup(made.token)).toBeNull()
      expect(await b.lookup(made.token)).toBeNull()

      // Signed in on B, disabled (by anyone, anywhere): refused on A.
      const again = await b.create(alice)
      expect(await a.lookup(again.token)).not.toBeNull()
      await e.disable(alice)
      expect(await a.lookup(again.token)).toBeNull()
      expect(await b.lookup(again.token)).toBeNull()

      // Signed out everywhere from one node (endAll): every node refuses.
      const bob = await e.account('bob')
      const [one, two] = [await a.create(bob), await b.create(bob)]
      expect(await b.endAll(bob)).toBe(2)
      expect(await a.lookup(one.token)).toBeNull()
      expect(await a.lookup(two.token)).toBeNull()

      // A failed sign-in's row, written on its own; a session made without a sign-in writes none.
      await b.failed('mallory', 'no such account', '192.0.2.9')
      expect((await e.audit()).slice(1)).toEqual([{ action: 'signin.failed', actor_name: 'mallory', detail: 'no such account' }])
    } finally {
      await e.close()
    }
  })

  test('the sweep on one node removes the sessions expired on every node', async () => {
    const e = await makeEngine()
    let now = T0
    const clock = () => now
    const [a, b] = [createSessions({ storages: e.node(), clock }), createSessions({ storages: e.node(), clock })]
    try {
      const alice = await e.account('alice')
      const old = await a.create(alice)
      now = T0 + 1_000
      const young = await a.create(alice)
      expect(await b.sweep(T0 + SESSION_TTL_MS)).toBe(1)
      now = T0 + 2_000
      expect(await b.lookup(old.token)).toBeNull()
      expect(await b.lookup(young.token)).not.toBeNull()
    } finally {
      await e.close()
    }
  })
})
