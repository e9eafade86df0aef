// Single sign-on's identity storage contract (src/oidc/storage/), run against both engines: SQLite and a real
// PostgreSQL server. Two "nodes" are two connections (SQLite) or two pools (PostgreSQL) on one database.
import { describe, expect, test } from 'bun:test'
import type { AccountStorage } from '../../src/accounts'
import { postgresAccountStorage } from '../../src/accounts/storage/postgres'
import { sqliteAccountStorage } from '../../src/accounts/storage/sqlite'
import type { IdentityStorage } from '../../src/oidc'
import { postgresIdentityStorage } from '../../src/oidc/storage/postgres'
import { sqliteIdentityStorage } from '../../src/oidc/storage/sqlite'
import { engineHarness, sqliteNotes, postgresNotes } from '../support/engines'
import { holding, meeting } from '../support/racers'

interface Node {
  accounts: AccountStorage<any>
  identities: IdentityStorage<any>
}

interface Engine {
  /** SQLite: a `within` must be synchronous (a promise returned is refused). */
  sqlite: boolean
  node(): Node
  /** A row in audit_log, written in `tx` (what the services' `within` does). */
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-oidc-')
  return {
    sqlite: true,
    node() {
      const db = connect()
      return { accounts: sqliteAccountStorage(db), identities: sqliteIdentityStorage(db) }
    },
    ...sqliteNotes(main),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    sqlite: false,
    node() {
      const p = pool()
      return { accounts: postgresAccountStorage(p), identities: postgresIdentityStorage(p) }
    },
    ...postgresNotes(main),
    close,
  }
}

const T0 = 1_800_000_000_000

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('identities on %s', (_name, makeEngine) => {
  test('single sign-on: two nodes seeing the same new subject at once make ONE account; names, admin by groups, disabled', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const issuer = 'https://id.example'
      for (const [round, sub] of ['s-1', 's-2', 's-3'].entries()) {
        const meet = meeting(2)
        const hold = holding(e, meet, (l: { outcome: string; name: string }) => `${l.outcome} ${l.name}`)
        const both = await Promise.all([
          a.identities.link({ issuer, sub, name: 'pat', admin: null, now: T0 + round }, hold),
          b.identities.link({ issuer, sub, name: 'pat', admin: null, now: T0 + round }, hold),
        ])
        expect(both.map((l) => l.outcome).sort()).toEqual(['created', 'signed_in'])
        expect(new Set(both.map((l) => l.accountId)).size).toBe(1)
        // Each person is one account: pat, pat-2, pat-3.
        expect(both[0]!.name).toBe(round === 0 ? 'pat' : `pat-${round + 1}`)
      }
      expect(await a.accounts.count()).toBe(3)
      expect(await e.notes()).toEqual([
        'created pat',
        'signed_in pat',
        'created pat-2',
        'signed_in pat-2',
        'created pat-3',
        'signed_in pat-3',
      ])

      const pat = (await b.identities.find(issuer, 's-1'))!
      expect(pat).toEqual({ issuer, sub: 's-1', account_id: expect.any(Number), created: T0, last_seen: T0 })
      expect(await b.identities.ofAccount(pat.account_id)).toEqual(pat)
      expect(await b.identities.find(issuer, 'nobody')).toBeNull()
      expect(await b.identities.find('https://other.example', 's-1')).toBeNull()

      // The groups decide admin at each sign-in when admin_groups is set (admin given); null leaves it.
      const up = await a.identities.link({ issuer, sub: 's-1', name: 'ignored', admin: true, now: T0 + 10 })
      expect(up).toEqual({
        outcome: 'signed_in',
        accountId: pat.account_id,
        name: 'pat',
        admin: true,
        adminBefore: false,
      })
      expect((await b.accounts.accountById(pat.account_id))!.admin).toBe(1)
      expect((await b.identities.find(issuer, 's-1'))!.last_seen).toBe(T0 + 10)
      expect(await b.identities.link({ issuer, sub: 's-1', name: 'pat', admin: null, now: T0 + 11 })).toMatchObject({
        admin: true,
        adminBefore: true,
      })
      expect(await b.identities.link({ issuer, sub: 's-1', name: 'pat', admin: false, now: T0 + 12 })).toMatchObject({
        admin: false,
        adminBefore: true,
      })
      // A new person in the admin groups is made an admin.
      expect(await b.identities.link({ issuer, sub: 's-9', name: 'boss', admin: true, now: T0 })).toMatchObject({
        outcome: 'created',
        name: 'boss',
        admin: true,
      })
      expect((await a.accounts.accountByName('boss'))!.admin).toBe(1)

      // A disabled account is not signed in, and nothing of the sign-in is written.
      await a.accounts.setDisabled('pat', T0 + 20, null)
      let called = false
      const refused = await b.identities.link(
        { issuer, sub: 's-1', name: 'pat', admin: true, now: T0 + 21 },
        () => (called = true),
      )
      expect(refused).toEqual({ outcome: 'disabled', accountId: pat.account_id, name: 'pat' })
      expect(called).toBe(false)
      expect((await a.identities.find(issuer, 's-1'))!.last_seen).toBe(T0 + 12)
      expect((await a.accounts.accountById(pat.account_id))!.admin).toBe(0)

      // Its account deleted, the person is new again: a new account (and a new id).
      await a.accounts.deleteAccount('pat', false, null)
      expect(await a.identities.find(issuer, 's-1')).toBeNull()
      const again = await b.identities.link({ issuer, sub: 's-1', name: 'pat', admin: null, now: T0 + 30 })
      expect(again).toMatchObject({ outcome: 'created', name: 'pat' })
      expect(again.accountId).toBeGreaterThan(pat.account_id)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('an async `within` stores nothing: SQLite refuses it; on PostgreSQL one that throws after an await rolls back', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const issuer = 'https://id.example'
      const late = async () => {
        await Bun.sleep(1)
        throw new Error('thrown after an await')
      }
      const refused = e.sqlite ? 'within must be synchronous on SQLite' : 'thrown after an await'
      await expect(
        a.identities.link({ issuer, sub: 'late', name: 'late', admin: null, now: T0 }, late),
      ).rejects.toThrow(refused)
      expect(await b.identities.find(issuer, 'late')).toBeNull()
      expect(await b.accounts.accountByName('late')).toBeNull()
      // A known person's sign-in: its last_seen and admin flag stay as they were.
      await a.identities.link({ issuer, sub: 'kim', name: 'kim', admin: null, now: T0 })
      await expect(
        a.identities.link({ issuer, sub: 'kim', name: 'kim', admin: true, now: T0 + 5 }, late),
      ).rejects.toThrow(refused)
      expect(await b.identities.find(issuer, 'kim')).toMatchObject({ last_seen: T0 })
      expect(await b.accounts.accountByName('kim')).toMatchObject({ admin: 0 })
    } finally {
      await e.close()
    }
  })
})
