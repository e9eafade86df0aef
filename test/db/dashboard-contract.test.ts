// The dashboard's storage contract (src/dashboard/storage), ONE suite on both engines: SQLite (connections on one
// file) and a real PostgreSQL server (pools on one database). Two "nodes" share a database: sessions made on one
// work on the other, an account keeps its newest sessions under races, a form token is taken once with its
// transaction, flashes are sealed, taken once and bounded, and a `within` that returns a promise stores nothing.
import { describe, expect, test } from 'bun:test'
import { hashKey } from '../../src/accounts'
import { postgresStorages } from '../../src/app/storages-postgres'
import { sqliteStorages, type Storages } from '../../src/app/storages'
import { createFlash } from '../../src/dashboard/flash'
import { createSessions, SESSION_TTL_MS } from '../../src/dashboard/sessions'
import type { FlashRows, FormTokenRows, SessionRows } from '../../src/dashboard/storage/contract'
import { postgresFormTokenRows } from '../../src/dashboard/storage/postgres'
import {
  engineHarness,
  postgresTransaction,
  ROLLBACK,
  sqliteTransaction,
  sqliteNotes,
  postgresNotes,
} from '../support/engines'

interface Node {
  sessions: SessionRows<any>
  tokens: FormTokenRows<any>
  flashes: FlashRows
  /** The node's whole storages (what app.ts hands the dashboard). */
  storages: Storages<unknown>
  /** Runs `work` in a transaction of this node's connection, then commits (or rolls back); its result. */
  inTransaction<T>(work: (tx: any) => Promise<T>, rollback?: boolean): Promise<T>
}

interface Engine {
  node(): Node
  account(name: string, opts?: { admin?: boolean; disabled?: number }): Promise<number>
  disable(accountId: number): Promise<void>
  lastSignin(accountId: number): Promise<number | null>
  audit(): Promise<{ action: string; actor_name: string; detail: string }[]>
  sessionIds(accountId: number): Promise<number[]>
  tokenCount(): Promise<number>
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  rows(table: string): Promise<Record<string, unknown>[]>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-dashboard-')
  const one = <T>(sql: string, ...args: (string | number | null)[]) => main.query(sql).get(...args) as T
  return {
    node() {
      const db = connect()
      const storages = sqliteStorages(db) as Storages<unknown>
      return {
        sessions: storages.sessions,
        tokens: storages.formTokens,
        flashes: storages.flashes,
        storages,
        inTransaction: (work, rollback) => sqliteTransaction(db, work, rollback),
      }
    },
    account: async (name, o = {}) =>
      one<{ id: number }>(
        'INSERT INTO accounts (name, admin, created, disabled) VALUES (?, ?, 0, ?) RETURNING id',
        name,
        o.admin ? 1 : 0,
        o.disabled ?? null,
      ).id,
    disable: async (id) => void main.query('UPDATE accounts SET disabled = ? WHERE id = ?').run(T0, id),
    lastSignin: async (id) =>
      one<{ last_signin: number | null }>('SELECT last_signin FROM accounts WHERE id = ?', id).last_signin,
    audit: async () =>
      main
        .query("SELECT action, actor_name, detail FROM audit_log WHERE action != 'test.note' ORDER BY id")
        .all() as never,
    sessionIds: async (accountId) =>
      (
        main.query('SELECT id FROM web_sessions WHERE account_id = ? ORDER BY id').all(accountId) as { id: number }[]
      ).map((r) => r.id),
    tokenCount: async () => (main.query('SELECT count(*) AS n FROM form_tokens').get() as { n: number }).n,
    ...sqliteNotes(main),
    rows: async (table) => main.query(`SELECT * FROM ${table}`).all() as Record<string, unknown>[],
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node() {
      const sql = pool()
      const storages = postgresStorages(sql) as Storages<unknown>
      return {
        sessions: storages.sessions,
        tokens: storages.formTokens,
        flashes: storages.flashes,
        storages,
        inTransaction: (work, rollback) => postgresTransaction(sql, work, rollback),
      }
    },
    account: async (name, o = {}) =>
      Number(
        (
          await main.sql`INSERT INTO accounts (name, admin, created, disabled) VALUES (${name}, ${o.admin ? 1 : 0}, 0, ${o.disabled ?? null}) RETURNING id`
        )[0].id,
      ),
    disable: async (id) => void (await main.sql`UPDATE accounts SET disabled = ${T0} WHERE id = ${id}`),
    lastSignin: async (id) => {
      const [r] = await main.sql`SELECT last_signin FROM accounts WHERE id = ${id}`
      return r.last_signin === null ? null : Number(r.last_signin)
    },
    audit: async () => [
      ...(await main.sql`SELECT action, actor_name, detail FROM audit_log WHERE action != 'test.note' ORDER BY id`),
    ],
    sessionIds: async (accountId) =>
      (await main.sql`SELECT id FROM web_sessions WHERE account_id = ${accountId} ORDER BY id`).map(
        (r: { id: string }) => Number(r.id),
      ),
    tokenCount: async () => Number((await main.sql`SELECT count(*) AS n FROM form_tokens`)[0].n),
    ...postgresNotes(main),
    rows: async (table) => [...(await main.sql.unsafe(`SELECT * FROM ${table}`))],
    close,
  }
}

const ENGINES = [
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const
const T0 = 1_800_000_000_000

const token = (n: number) => `token-${n}-${'x'.repeat(30)}`
const newSession = (accountId: number, n: number, now = T0, ttl = 3_600_000) => ({
  tokenHash: hashKey(token(n)),
  accountId,
  csrf: `csrf-${n}`,
  now,
  expires: now + ttl,
})

describe.each(ENGINES)('sessions and form tokens on %s', (_name, makeEngine) => {
  test('a session made through one node is found, touched and ended through the other; the sign-in’s rows go in its transaction', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice', { admin: true })
      const made = await a.sessions.create(newSession(alice, 1), 20, (tx, s) =>
        e.note(tx, `signed in ${s.account_name} #${s.id}`),
      )
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
      expect(await a.sessions.byHash(made.token_hash)).toMatchObject({
        last_seen: T0 + 60_000,
        expires: T0 + 7_200_000,
      })

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
      expect(await a.sessions.byHash(hashKey(token(3)))).toMatchObject({
        account_name: 'bob',
        admin: 0,
        disabled: T0 - 1,
      })
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
        const ids = await Promise.all(
          [a, b, a, b].map((node, i) => node.sessions.create(newSession(alice, 100 * round + i), 20)),
        )
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
      expect(
        await a.inTransaction((tx) => a.tokens.claim(tx, once, s.id, 'fp', T0, '/dashboard/keys?made=1'), true),
      ).toBe(true)
      expect(await b.tokens.byToken(once)).toBeNull()
      expect(await b.inTransaction((tx) => b.tokens.claim(tx, once, s.id, 'fp', T0, '/dashboard/keys?made=2'))).toBe(
        true,
      )
      expect(
        await a.inTransaction((tx) => a.tokens.claim(tx, once, s.id, 'fp', T0 + 1, '/dashboard/keys?made=3')),
      ).toBe(false)
      expect(await a.tokens.byToken(once)).toEqual({
        token: once,
        session_id: s.id,
        fingerprint: 'fp',
        created: T0,
        result: '/dashboard/keys?made=2',
      })
      // Read in the claim's transaction: what the service compares against.
      expect(await a.inTransaction(async (tx) => (await a.tokens.byToken(once, tx))?.result)).toBe(
        '/dashboard/keys?made=2',
      )
      // A visitor's token (no session) too.
      expect(
        await b.inTransaction((tx) => b.tokens.claim(tx, 'BBBBBBBBBBBBBBBBBBBBBB', null, 'fp2', T0 + 10, '/x')),
      ).toBe(true)
      expect((await a.tokens.byToken('BBBBBBBBBBBBBBBBBBBBBB'))?.session_id).toBeNull()
      // Old ones go, a few at a time; and with their session.
      expect(
        await a.inTransaction((tx) => a.tokens.claim(tx, 'EEEEEEEEEEEEEEEEEEEEEE', s.id, 'fp3', T0 + 20, '/y')),
      ).toBe(true)
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
        node.inTransaction((tx) =>
          Promise.all([
            e.note(tx, note),
            node.tokens.claimIn(tx, token, s.id, 'fp', T0, result, (_, o) => (outcomes.push(o), then(o))),
          ]).then((r) => r[1]),
        )
      // Free: claimed, and what `then` gives is what claimIn gives.
      expect(await change(a, 'first', once, '/first', () => 'made')).toBe('made')
      // Taken: `then` gets the first claim's row, read in this transaction; its refusal undoes this change.
      const refused = change(b, 'second', once, '/second', () => {
        throw new Error('sent twice')
      })
      await expect(refused).rejects.toThrow('sent twice')
      expect(outcomes).toEqual([
        { claimed: true },
        { claimed: false, first: { token: once, session_id: s.id, fingerprint: 'fp', created: T0, result: '/first' } },
      ])
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

describe.each(ENGINES)('dashboard sessions on two nodes, %s', (_name, makeEngine) => {
  test('made on A, valid on B; signed out on B, refused on A at once; a disabled account is refused on both', async () => {
    const e = await makeEngine()
    let now = T0
    const clock = () => now
    const [a, b] = [
      createSessions({ storages: e.node().storages, clock }),
      createSessions({ storages: e.node().storages, clock }),
    ]
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
      expect((await e.audit()).slice(1)).toEqual([
        { action: 'signin.failed', actor_name: 'mallory', detail: 'no such account' },
      ])
    } finally {
      await e.close()
    }
  })

  test('the sweep on one node removes the sessions expired on every node', async () => {
    const e = await makeEngine()
    let now = T0
    const clock = () => now
    const [a, b] = [
      createSessions({ storages: e.node().storages, clock }),
      createSessions({ storages: e.node().storages, clock }),
    ]
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

describe.each(ENGINES)('flashes on %s', (_name, makeEngine) => {
  test('a flash: sealed, taken once by one of two nodes, only by its owner and kind', async () => {
    const e = await makeEngine()
    try {
      const [n1, n2] = [e.node(), e.node()]
      const t = T0
      const f1 = createFlash({ rows: n1.flashes, clock: () => t })
      const f2 = createFlash({ rows: n2.flashes, clock: () => t })
      const owner = 's7.TOKEN-only-the-browser-has-0123456789'
      const id = await f1.put(owner, 'key', { key: 'lbk_SECRETVALUE' })
      const dump = JSON.stringify(await e.rows('flashes'), (_k, v) =>
        v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v,
      )
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
      await n1.flashes.put(
        {
          id: row!.id as string,
          pool: 0,
          owner: row!.owner as string,
          kind: 'key',
          value: sealed,
          size: 1,
          expires: T0 + 60_000,
        },
        { perOwner: 10, rows: 10, bytes: 1e6 },
      )
      expect(await f2.take(owner, 'key', id2)).toBeNull()
      // takeAny: whoever's, once, saying whether it was this owner's.
      const id3 = await f1.put('oBINDING-of-a-browser-000000000000', 'oidc sign-in', { nonce: 'n' }, undefined, 600_000)
      expect(await f2.takeAny('oANOTHER-binding-0000000000000000', 'oidc sign-in', id3)).toEqual({
        mine: false,
        expired: false,
        value: null,
      })
      expect(await f2.takeAny('oBINDING-of-a-browser-000000000000', 'oidc sign-in', id3)).toBeNull()
    } finally {
      await e.close()
    }
  })

  test('flashes: bounded per owner and per pool (the oldest go first), apart by pool; expired ones swept', async () => {
    const e = await makeEngine()
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
})

describe.each(ENGINES)('a `within` that returns a promise, %s', (name, makeEngine) => {
  test('an async `within` of a new session throws and stores nothing (SQLite refuses it; PostgreSQL rolls back after the await)', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const alice = await e.account('alice')
      const made = a.sessions.create(newSession(alice, 1), 20, async (tx) => {
        await e.note(tx, 'before the await')
        await Bun.sleep(1)
        throw new Error('failed after an await')
      })
      await expect(made).rejects.toThrow(
        name === 'SQLite' ? 'within must be synchronous on SQLite' : 'failed after an await',
      )
      expect(await e.sessionIds(alice)).toEqual([])
      expect(await e.notes()).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('an async `then` of a form token claim throws and leaves the token free', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const once = 'IIIIIIIIIIIIIIIIIIIIII'
      const claimed = a.inTransaction((tx) =>
        a.tokens.claimIn(tx, once, null, 'fp', T0, '/i', async () => {
          await Bun.sleep(1)
          throw new Error('refused after an await')
        }),
      )
      await expect(claimed).rejects.toThrow(
        name === 'SQLite' ? 'within must be synchronous on SQLite' : 'refused after an await',
      )
      expect(await b.tokens.byToken(once)).toBeNull()
      expect(await e.tokenCount()).toBe(0)
    } finally {
      await e.close()
    }
  })
})
