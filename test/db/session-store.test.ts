// Dashboard sessions and one-time form tokens behind the async interface (src/dashboard/session-store.ts),
// ONE suite run against both engines: SQLite (the synchronous stores wrapped) and a real PostgreSQL server
// (session-store-postgres.ts). Two "nodes" are two connections (SQLite) or two pools (PostgreSQL) on one
// database: a session made through one is found, touched and ended through the other; two nodes signing one
// account in at once leave it exactly its newest sessions; a form token is taken once, with its transaction.
import { describe, expect, test } from 'bun:test'
import type { SQL } from 'bun'
import { hashKey } from '../../src/accounts'
import type { Db } from '../../src/db/sqlite'
import { postgresFormTokenRows, postgresSessionRows } from '../../src/dashboard/session-store-postgres'
import { sqliteFormTokenRows, sqliteSessionRows, type FormTokenRows, type SessionRows } from '../../src/dashboard/session-store'
import { engineHarness, postgresTransaction, ROLLBACK, sqliteTransaction } from '../support/engines'

interface Node {
  sessions: SessionRows<any>
  tokens: FormTokenRows<any>
  /** Runs `work` in a transaction of this node's connection, then commits (or rolls back); its result. */
  inTransaction<T>(work: (tx: any) => Promise<T>, rollback?: boolean): Promise<T>
}

interface Engine {
  node(): Node
  account(name: string, opts?: { admin?: boolean; disabled?: number }): Promise<number>
  sessionIds(accountId: number): Promise<number[]>
  tokenCount(): Promise<number>
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-sessions-')
  return {
    node() {
      const db = connect()
      return { sessions: sqliteSessionRows(db), tokens: sqliteFormTokenRows(db), inTransaction: (work, rollback) => sqliteTransaction(db, work, rollback) }
    },
    account: async (name, o = {}) =>
      Number((main.query('INSERT INTO accounts (name, admin, created, disabled) VALUES (?, ?, 0, ?) RETURNING id').get(name, o.admin ? 1 : 0, o.disabled ?? null) as { id: number }).id),
    sessionIds: async (accountId) => (main.query('SELECT id FROM web_sessions WHERE account_id = ? ORDER BY id').all(accountId) as { id: number }[]).map((r) => r.id),
    tokenCount: async () => (main.query('SELECT count(*) AS n FROM form_tokens').get() as { n: number }).n,
    note: (tx: Db, text) => tx.query("INSERT INTO audit_log (at, actor_kind, action, detail) VALUES (0, 'system', 'test.note', ?)").run(text),
    notes: async () => (main.query("SELECT detail FROM audit_log WHERE action = 'test.note' ORDER BY id").all() as { detail: string }[]).map((r) => r.detail),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node() {
      const sql = pool()
      return { sessions: postgresSessionRows(sql), tokens: postgresFormTokenRows(sql), inTransaction: (work, rollback) => postgresTransaction(sql, work, rollback) }
    },
    account: async (name, o = {}) => Number((await main.sql`INSERT INTO accounts (name, admin, created, disabled) VALUES (${name}, ${o.admin ? 1 : 0}, 0, ${o.disabled ?? null}) RETURNING id`)[0].id),
    sessionIds: async (accountId) => (await main.sql`SELECT id FROM web_sessions WHERE account_id = ${accountId} ORDER BY id`).map((r: { id: string }) => Number(r.id)),
    tokenCount: async () => Number((await main.sql`SELECT count(*) AS n FROM form_tokens`)[0].n),
    note: (tx: SQL, text) => tx`INSERT INTO audit_log (at, actor_kind, action, detail) VALUES (0, 'system', 'test.note', ${text})`,
    notes: async () => (await main.sql`SELECT detail FROM audit_log WHERE action = 'test.note' ORDER BY id`).map((r: { detail: string }) => r.detail),
    close,
  }
}

const T0 = 1_800_000_000_000
const token = (n: number) => `token-${n}-${'x'.repeat(30)}`
const newSession = (accountId: number, n: number, now = T0, ttl = 3_600_000) => ({ tokenHash: hashKey(token(n)), accountId, csrf: `csrf-${n}`, now, expires: now + ttl })

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('sessions and form tokens on %s', (_name, makeEngine) => {
  test('a session made through one node is found, touched and ended through the other; the sign-in’s rows go in its transaction', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice', { admin: true })
      const made = await a.sessions.create(newSession(alice, 1), 20, (tx, s) => e.note(tx, `signed in ${s.account_name} #${s.id}`))
      expect(made).toEqual({
        id: expect.any(Number),
        token_hash: hashKey(token(1)),
        account_id: alice,
        csrf: 'csrf-1',
        created: T0,
        expires: T0 + 3_600_000,
        last_seen: T0,
        account_name: 'alice',
        admin: 1,
        disabled: null,
      })
      expect(await e.notes()).toEqual([`signed in alice #${made.id}`])
      expect(await b.sessions.byHash(hashKey(token(1)))).toEqual(made)
      expect(await b.sessions.byHash(hashKey(token(2)))).toBeNull()

      await b.sessions.touch(made.id, T0 + 60_000, T0 + 7_200_000)
      expect(await a.sessions.byHash(made.token_hash)).toMatchObject({ last_seen: T0 + 60_000, expires: T0 + 7_200_000 })

      // A sign-in whose other rows fail leaves no session.
      const failing = a.sessions.create(newSession(alice, 2), 20, () => {
        throw new Error('the audit row could not be written')
      })
      await expect(failing).rejects.toThrow('the audit row could not be written')
      expect(await b.sessions.byHash(hashKey(token(2)))).toBeNull()

      await b.sessions.remove(made.id)
      expect(await a.sessions.byHash(made.token_hash)).toBeNull()
      // A disabled account's session is found with its disabled time (the service refuses it).
      const bob = await e.account('bob', { disabled: T0 - 1 })
      await b.sessions.create(newSession(bob, 3), 20)
      expect(await a.sessions.byHash(hashKey(token(3)))).toMatchObject({ account_name: 'bob', admin: 0, disabled: T0 - 1 })
    } finally {
      await e.close()
    }
  })

  test('sweep removes the expired sessions only; removeOfAccount signs an account out on every node', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [alice, bob] = [await e.account('alice'), await e.account('bob')]
      await a.sessions.create(newSession(alice, 1, T0, 1_000), 20)
      await a.sessions.create(newSession(alice, 2, T0, 5_000), 20)
      await b.sessions.create(newSession(bob, 3, T0, 1_000), 20)
      await b.sessions.create(newSession(bob, 4, T0, 9_000), 20)
      expect(await b.sessions.sweep(T0 + 999)).toBe(0)
      expect(await b.sessions.sweep(T0 + 1_000)).toBe(2)
      expect(await a.sessions.byHash(hashKey(token(1)))).toBeNull()
      expect(await a.sessions.byHash(hashKey(token(2)))).not.toBeNull()
      expect(await a.sessions.removeOfAccount(bob)).toBe(1)
      expect(await b.sessions.byHash(hashKey(token(4)))).toBeNull()
      expect(await e.sessionIds(alice)).toHaveLength(1)
    } finally {
      await e.close()
    }
  })

  test('two nodes signing one account in at once, round after round: after each round it keeps exactly its 20 newest', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const made: number[] = []
      for (let i = 0; i < 20; i++) made.push((await a.sessions.create(newSession(alice, i), 20)).id)
      // Each round: four sign-ins at the same moment, two per node. Without the two trims taking turns, each
      // would keep the 20 it sees and the account would end a round with more.
      for (let round = 1; round <= 12; round++) {
        const ids = await Promise.all([a, b, a, b].map((node, i) => node.sessions.create(newSession(alice, 100 * round + i), 20)))
        made.push(...ids.map((s) => s.id))
        expect(await e.sessionIds(alice)).toEqual([...made].sort((x, y) => x - y).slice(-20))
      }
    } finally {
      await e.close()
    }
  }, 60_000)

  test('a form token is taken once, with its transaction: a rolled-back creation leaves it free; the other node then finds it taken', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const s = await a.sessions.create(newSession(alice, 1), 20)
      const once = 'AAAAAAAAAAAAAAAAAAAAAA'
      expect(await a.inTransaction((tx) => a.tokens.claim(tx, once, s.id, 'fp', T0, '/dashboard/keys?made=1'), true)).toBe(true)
      expect(await b.tokens.byToken(once)).toBeNull()
      expect(await b.inTransaction((tx) => b.tokens.claim(tx, once, s.id, 'fp', T0, '/dashboard/keys?made=2'))).toBe(true)
      expect(await a.inTransaction((tx) => a.tokens.claim(tx, once, s.id, 'fp', T0 + 1, '/dashboard/keys?made=3'))).toBe(false)
      expect(await a.tokens.byToken(once)).toEqual({ token: once, session_id: s.id, fingerprint: 'fp', created: T0, result: '/dashboard/keys?made=2' })
      // Read in the claim's transaction: what the service compares against.
      expect(await a.inTransaction(async (tx) => (await a.tokens.byToken(once, tx))?.result)).toBe('/dashboard/keys?made=2')
      // A visitor's token (no session) too.
      expect(await b.inTransaction((tx) => b.tokens.claim(tx, 'BBBBBBBBBBBBBBBBBBBBBB', null, 'fp2', T0 + 10, '/x'))).toBe(true)
      expect((await a.tokens.byToken('BBBBBBBBBBBBBBBBBBBBBB'))?.session_id).toBeNull()
      // Old ones go, a few at a time; and with their session.
      expect(await a.inTransaction((tx) => a.tokens.claim(tx, 'EEEEEEEEEEEEEEEEEEEEEE', s.id, 'fp3', T0 + 20, '/y'))).toBe(true)
      expect(await a.tokens.removeOld(T0 + 5)).toBe(1)
      expect(await e.tokenCount()).toBe(2)
      await b.sessions.removeOfAccount(alice)
      expect(await e.tokenCount()).toBe(1)
      expect(await b.tokens.byToken('BBBBBBBBBBBBBBBBBBBBBB')).not.toBeNull() // the visitor's stays
    } finally {
      await e.close()
    }
  })

  test('claimIn hands `then` the outcome in the claim’s transaction: the first claim’s row when taken; a `then` that throws undoes the caller’s change and the claim', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const s = await a.sessions.create(newSession(alice, 1), 20)
      const once = 'FFFFFFFFFFFFFFFFFFFFFF'
      const outcomes: unknown[] = []
      // A change and its claim, written as a service's `within` is: started, not awaited (SQLite's transaction is synchronous).
      const change = (node: Node, note: string, token: string, result: string, then: (outcome: unknown) => unknown) =>
        node.inTransaction((tx) => Promise.all([e.note(tx, note), node.tokens.claimIn(tx, token, s.id, 'fp', T0, result, (_, o) => (outcomes.push(o), then(o)))]).then((r) => r[1]))
      // Free: claimed, and what `then` gives is what claimIn gives.
      expect(await change(a, 'first', once, '/first', () => 'made')).toBe('made')
      // Taken: `then` gets the first claim's row, read in this transaction; its refusal undoes this change.
      const refused = change(b, 'second', once, '/second', () => {
        throw new Error('sent twice')
      })
      await expect(refused).rejects.toThrow('sent twice')
      expect(outcomes).toEqual([{ claimed: true }, { claimed: false, first: { token: once, session_id: s.id, fingerprint: 'fp', created: T0, result: '/first' } }])
      expect(await e.notes()).toEqual(['first'])
      expect((await a.tokens.byToken(once))?.result).toBe('/first')
      // A refusal of a free token's claim leaves it free.
      const refusedFree = change(a, 'third', 'GGGGGGGGGGGGGGGGGGGGGG', '/third', () => {
        throw new Error('refused')
      })
      await expect(refusedFree).rejects.toThrow('refused')
      expect(await b.tokens.byToken('GGGGGGGGGGGGGGGGGGGGGG')).toBeNull()
      expect(await e.notes()).toEqual(['first'])
      if (_name === 'SQLite') {
        // `then` runs, or throws, before claimIn returns: a synchronous transaction cannot wait for it.
        let ran = false
        await a.inTransaction((tx) => {
          const claimed = a.tokens.claimIn(tx, 'HHHHHHHHHHHHHHHHHHHHHH', s.id, 'fp', T0, '/h', () => (ran = true))
          expect(ran).toBe(true)
          return claimed
        })
      }
    } finally {
      await e.close()
    }
  })
})

describe('form tokens on PostgreSQL, two nodes at the same moment', () => {
  test('the second claim of a token waits for the first transaction: taken when it commits, free when it rolls back', async () => {
    const { main, pool, close } = await engines.postgres(1)
    const [one, two] = [pool(2), pool(2)]
    try {
      const tokensA = postgresFormTokenRows(one)
      const tokensB = postgresFormTokenRows(two)
      for (const [token, outcome, expected] of [
        ['CCCCCCCCCCCCCCCCCCCCCC', 'commit', false],
        ['DDDDDDDDDDDDDDDDDDDDDD', 'rollback', true],
      ] as const) {
        let release!: () => void
        const held = new Promise<void>((r) => (release = r))
        let claimedA!: () => void
        const aClaimed = new Promise<void>((r) => (claimedA = r))
        const first = one
          .begin(async (tx) => {
            expect(await tokensA.claim(tx, token, null, 'fp', T0, '/a')).toBe(true)
            claimedA()
            await held
            if (outcome === 'rollback') throw ROLLBACK
          })
          .catch((err) => {
            if (err !== ROLLBACK) throw err
          })
        await aClaimed
        let secondDone = false
        const second = two.begin(async (tx) => {
          const taken = await tokensB.claim(tx, token, null, 'fp', T0, '/b')
          secondDone = true
          return taken
        })
        await Bun.sleep(200)
        // Still waiting on the first transaction's row.
        expect(secondDone).toBe(false)
        release()
        await first
        expect(await second).toBe(expected)
        const [row] = await main.sql`SELECT result FROM form_tokens WHERE token = ${token}`
        expect(row.result).toBe(outcome === 'commit' ? '/a' : '/b')
      }
    } finally {
      await close()
    }
  }, 60_000)
})
