// The accounts storage contract (src/accounts/storage/), ONE suite run against both engines: SQLite and a real
// PostgreSQL server; single sign-on's identities join where names meet. Two "nodes" are two connections
// (SQLite) or two pools (PostgreSQL) on one database. Each re-check the services make is raced from both
// nodes at once, the first one's transaction held open (in `within`) until the other has arrived too, or for
// HOLD_MS: with the row locks the other waits and then finds the first's commit; without them both would
// decide on what they read and both would write.
import { describe, expect, test } from 'bun:test'
import { hashKey } from '../../src/accounts'
import { postgresAccountStorage } from '../../src/accounts/storage/postgres'
import { sqliteAccountStorage } from '../../src/accounts/storage/sqlite'
import type { AccountStorage, NewKey } from '../../src/accounts'
import { postgresIdentityStorage } from '../../src/oidc/storage/postgres'
import { sqliteIdentityStorage } from '../../src/oidc/storage/sqlite'
import type { IdentityStorage } from '../../src/oidc'
import { engineHarness, postgresTransaction, sqliteTransaction, sqliteNotes, postgresNotes } from '../support/engines'
import { holding, meeting } from '../support/racers'

interface Node {
  accounts: AccountStorage<any>
  identities: IdentityStorage<any>
  /** Runs `work` in a transaction of this node's connection, then commits (or rolls back); its result. */
  inTransaction<T>(work: (tx: any) => Promise<T>, rollback?: boolean): Promise<T>
}

interface Engine {
  /** SQLite: a `within` must be synchronous (a promise returned is refused). */
  sqlite: boolean
  node(): Node
  /** A row in audit_log, written in `tx` (what the services' `within` does). */
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  link(accountId: number | null, code: string): Promise<void>
  mailbox(accountId: number, address: string): Promise<void>
  session(accountId: number, token: string): Promise<void>
  sessions(accountId: number): Promise<number>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-accounts-')
  return {
    sqlite: true,
    node() {
      const db = connect()
      return {
        accounts: sqliteAccountStorage(db),
        identities: sqliteIdentityStorage(db),
        inTransaction: (work, rollback) => sqliteTransaction(db, work, rollback),
      }
    },
    ...sqliteNotes(main),
    link: async (accountId, code) =>
      void main
        .query(
          "INSERT INTO links (code, long_url, account_id, created, updated) VALUES (?, 'https://example.com/', ?, 0, 0)",
        )
        .run(code, accountId),
    mailbox: async (accountId, address) =>
      void main
        .query('INSERT INTO mailboxes (address, account_id, created, expires) VALUES (?, ?, 0, 9999999999999)')
        .run(address, accountId),
    session: async (accountId, token) =>
      void main
        .query(
          "INSERT INTO web_sessions (token_hash, account_id, csrf, created, expires, last_seen) VALUES (?, ?, 'c', 0, 9999999999999, 0)",
        )
        .run(hashKey(token), accountId),
    sessions: async (accountId) =>
      (main.query('SELECT count(*) AS n FROM web_sessions WHERE account_id = ?').get(accountId) as { n: number }).n,
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  const sql = main.sql
  return {
    sqlite: false,
    node() {
      const p = pool()
      return {
        accounts: postgresAccountStorage(p),
        identities: postgresIdentityStorage(p),
        inTransaction: (work, rollback) => postgresTransaction(p, work, rollback),
      }
    },
    ...postgresNotes(main),
    link: async (accountId, code) =>
      void (await sql`INSERT INTO links (code, long_url, account_id, created, updated) VALUES (${code}, 'https://example.com/', ${accountId}, 0, 0)`),
    mailbox: async (accountId, address) =>
      void (await sql`INSERT INTO mailboxes (address, account_id, created, expires) VALUES (${address}, ${accountId}, 0, 9999999999999)`),
    session: async (accountId, token) =>
      void (await sql`INSERT INTO web_sessions (token_hash, account_id, csrf, created, expires, last_seen) VALUES (${hashKey(token)}, ${accountId}, 'c', 0, 9999999999999, 0)`),
    sessions: async (accountId) =>
      Number((await sql`SELECT count(*) AS n FROM web_sessions WHERE account_id = ${accountId}`)[0].n),
    close,
  }
}

const T0 = 1_800_000_000_000

const newKey = (n: number | string, label = `label ${n}`): NewKey => ({
  prefix: `lbk_${String(n).padStart(7, '0')}`,
  hash: hashKey(`key-${n}`),
  scopes: 'links,qr',
  label,
})
const newAccount = (
  name: string,
  o: { admin?: boolean; password?: string | null; key?: NewKey | null; now?: number } = {},
) => ({
  name,
  passwordHash: o.password ?? null,
  admin: !!o.admin,
  now: o.now ?? T0,
  key: o.key === undefined ? newKey(name) : o.key,
})

async function made<T extends { ok: boolean }>(p: Promise<T>): Promise<Extract<T, { ok: true }>> {
  const r = await p
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r)}`)
  return r as Extract<T, { ok: true }>
}

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('accounts, keys and identities on %s', (_name, makeEngine) => {
  test('an account and its keys round trip every field through the other node; a change’s rows go in its transaction', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const { account, key } = await made(
        a.accounts.createAccount(
          newAccount('alice', { admin: true, password: '$argon2id$v=19$hash', key: newKey(1, 'laptop – ünïcode ✓') }),
          (tx, acc, k) => e.note(tx, `made ${acc.name} #${acc.id} with key #${k!.id}`),
        ),
      )
      expect(account).toEqual({
        id: expect.any(Number),
        name: 'alice',
        password_hash: '$argon2id$v=19$hash',
        admin: 1,
        created: T0,
        disabled: null,
        last_signin: null,
      })
      expect(key).toEqual({
        id: expect.any(Number),
        account_id: account.id,
        prefix: 'lbk_0000001',
        hash: hashKey('key-1'),
        scopes: 'links,qr',
        label: 'laptop – ünïcode ✓',
        created: T0,
        last_used: null,
        revoked: null,
      })
      expect(await e.notes()).toEqual([`made alice #${account.id} with key #${key!.id}`])
      expect(await b.accounts.accountByName('alice')).toEqual(account)
      expect(await b.accounts.accountByName('Alice')).toBeNull() // names are compared byte for byte
      expect(await b.accounts.accountById(account.id)).toEqual(account)
      expect(await b.accounts.accountById(account.id + 1000)).toBeNull()

      // An API-only account, made without a key (a marketplace user, a provider's person).
      const bob = (await made(b.accounts.createAccount(newAccount('bob', { key: null, now: T0 + 1 })))).account
      expect(bob).toMatchObject({ name: 'bob', password_hash: null, admin: 0, created: T0 + 1 })
      expect(await a.accounts.count()).toBe(2)
      expect(await a.accounts.activeAdmins()).toBe(1)

      // In the transaction of a sign-in's session: it goes, or stays, with it.
      await b.inTransaction(async (tx) => b.accounts.setLastSignin(account.id, T0 + 4, tx), true)
      expect((await a.accounts.accountById(account.id))!.last_signin).toBeNull()
      await b.inTransaction(async (tx) => b.accounts.setLastSignin(account.id, T0 + 5, tx))
      expect((await a.accounts.accountById(account.id))!.last_signin).toBe(T0 + 5)
      await a.accounts.setLastSignin(bob.id, T0 + 6)
      expect((await b.accounts.accountById(bob.id))!.last_signin).toBe(T0 + 6)

      // Keys: the CLI's (no bound) and the dashboard's (under a bound), read every way.
      const withAccount = { account_name: 'alice', admin: 1, disabled: null }
      const cli = await b.accounts.createKey('alice', newKey(2, ''), T0 + 10, (tx, acc, k) =>
        e.note(tx, `key #${k.id} of ${acc.name}`),
      )
      expect(cli!.key).toEqual({
        ...key!,
        id: expect.any(Number),
        prefix: 'lbk_0000002',
        hash: hashKey('key-2'),
        label: '',
        created: T0 + 10,
      })
      expect(await a.accounts.createKey('nobody', newKey(3), T0)).toBeNull()
      const dash = await made(a.accounts.createKeyUnder(account.id, newKey(4), T0 + 20, { max: 100, keepRevoked: 100 }))
      const keys = [key!, cli!.key, dash.key]
      expect(await b.accounts.keyById(cli!.key.id)).toEqual({ ...cli!.key, ...withAccount })
      expect(await b.accounts.keyById(999_999)).toBeNull()
      expect(await b.accounts.activeKeyByHash(hashKey('key-4'))).toEqual({ ...dash.key, ...withAccount })
      expect(await b.accounts.activeKeyByHash(hashKey('key-nothing'))).toBeNull()
      expect(await b.accounts.keysOfAccount(account.id)).toEqual(keys.map((k) => ({ ...k, ...withAccount })))
      expect(await b.accounts.keysOfAccount(bob.id)).toEqual([])
      expect(await b.accounts.allKeys()).toEqual(keys.map((k) => ({ ...k, ...withAccount })))
      expect(await b.accounts.keysByPrefix('lbk_0000002')).toEqual([cli!.key])
      expect(await b.accounts.keysOfAccountNewest(account.id, 2)).toEqual([dash.key, cli!.key])
      expect(await b.accounts.activeKeyCount(account.id)).toBe(3)

      await a.accounts.touchKey(dash.key.id, T0 + 30)
      expect((await b.accounts.keyById(dash.key.id))!.last_used).toBe(T0 + 30)
      const edited = await b.accounts.editKeyOfAccount(
        dash.key.id,
        account.id,
        'renamed',
        'mail',
        (tx, before, after) => e.note(tx, `${before.label} → ${after.label}`),
      )
      expect(edited).toEqual({
        before: { ...dash.key, last_used: T0 + 30, ...withAccount },
        after: { ...dash.key, last_used: T0 + 30, label: 'renamed', scopes: 'mail' },
      })
      expect(await a.accounts.editKeyOfAccount(dash.key.id, bob.id, 'not yours', 'mail')).toBeNull()
      expect(await a.accounts.editKeyOfAccount(999_999, account.id, 'none', 'mail')).toBeNull()

      // What the admin's list counts: links (link_counts, kept by triggers), active keys, mailboxes, sso.
      await e.link(account.id, 'a1')
      await e.link(account.id, 'a2')
      await e.link(null, 'anon')
      await e.mailbox(account.id, 'x@example.com')
      await b.identities.link({
        issuer: 'https://id.example',
        sub: 'carol-sub',
        name: 'carol',
        admin: null,
        now: T0 + 40,
      })
      const carol = (await a.accounts.accountByName('carol'))!
      expect(await a.accounts.linkCount(account.id)).toBe(2)
      const aliceSummary = {
        id: account.id,
        name: 'alice',
        admin: 1,
        created: T0,
        disabled: null,
        last_signin: T0 + 5,
        has_password: 1,
        sso: 0,
        links: 2,
        keys: 3,
        mailboxes: 1,
      }
      expect(await b.accounts.accountSummary(account.id)).toEqual(aliceSummary)
      expect(await b.accounts.accountSummary(999_999)).toBeNull()
      expect(await b.accounts.accountPage(10, 0)).toEqual([
        aliceSummary,
        {
          id: bob.id,
          name: 'bob',
          admin: 0,
          created: T0 + 1,
          disabled: null,
          last_signin: T0 + 6,
          has_password: 0,
          sso: 0,
          links: 0,
          keys: 0,
          mailboxes: 0,
        },
        {
          id: carol.id,
          name: 'carol',
          admin: 0,
          created: T0 + 40,
          disabled: null,
          last_signin: null,
          has_password: 0,
          sso: 1,
          links: 0,
          keys: 0,
          mailboxes: 0,
        },
      ])
      expect((await b.accounts.accountPage(1, 1)).map((r) => r.name)).toEqual(['bob'])

      // A password: the account's sessions end with it.
      await e.session(account.id, 's1')
      await e.session(account.id, 's2')
      const password = await a.accounts.setPassword('alice', '$argon2id$new', (tx, acc, ended) =>
        e.note(tx, `password of ${acc.name}, ${ended} ended`),
      )
      expect(password).toEqual({ account: { ...account, last_signin: T0 + 5 }, sessionsEnded: 2 })
      expect((await b.accounts.accountById(account.id))!.password_hash).toBe('$argon2id$new')
      expect(await a.accounts.setPassword('nobody', 'x')).toBeNull()

      // A change whose other rows fail leaves nothing.
      const failing = a.accounts.createAccount(newAccount('dave'), () => {
        throw new Error('the audit row could not be written')
      })
      await expect(failing).rejects.toThrow('the audit row could not be written')
      expect(await b.accounts.accountByName('dave')).toBeNull()
      expect(await b.accounts.activeKeyByHash(hashKey('key-dave'))).toBeNull()
      expect(await e.notes()).toEqual([
        `made alice #${account.id} with key #${key!.id}`,
        `key #${cli!.key.id} of alice`,
        'label 4 → renamed',
        'password of alice, 2 ended',
      ])
    } finally {
      await e.close()
    }
  })

  test('an async `within` stores nothing: SQLite refuses it (its transaction is synchronous); on PostgreSQL one that throws after an await rolls back', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const late = async () => {
        await Bun.sleep(1)
        throw new Error('thrown after an await')
      }
      const refused = e.sqlite ? 'within must be synchronous on SQLite' : 'thrown after an await'
      await expect(a.accounts.createAccount(newAccount('late'), late)).rejects.toThrow(refused)
      expect(await b.accounts.accountByName('late')).toBeNull()
      expect(await b.accounts.activeKeyByHash(hashKey('key-late'))).toBeNull()

      const owner = await made(a.accounts.createAccount(newAccount('owner')))
      await expect(a.accounts.createKey('owner', newKey('late-key'), T0, late)).rejects.toThrow(refused)
      await expect(
        a.accounts.createKeyUnder(owner.account.id, newKey('late-under'), T0, { max: 9, keepRevoked: 9 }, late),
      ).rejects.toThrow(refused)
      expect(await b.accounts.keysOfAccount(owner.account.id)).toHaveLength(1)
      await expect(a.accounts.editKeyOfAccount(owner.key!.id, owner.account.id, 'late', 'mail', late)).rejects.toThrow(
        refused,
      )
      await expect(a.accounts.revokeKey(owner.key!.id, T0, late)).rejects.toThrow(refused)
      await expect(a.accounts.revokeKeyOfAccount(owner.key!.id, owner.account.id, T0, late)).rejects.toThrow(refused)
      expect(await b.accounts.activeKeyByHash(hashKey('key-owner'))).toMatchObject({
        label: 'label owner',
        scopes: 'links,qr',
      })
      await expect(a.accounts.setPassword('owner', '$late', late)).rejects.toThrow(refused)
      await expect(a.accounts.setDisabled('owner', T0, null, late)).rejects.toThrow(refused)
      // disableIn's `then` runs in the caller's transaction: refused there, the caller's change rolls back.
      await expect(
        a.inTransaction((tx) => Promise.resolve(a.accounts.disableIn(tx, 'owner', T0, null, late))),
      ).rejects.toThrow(refused)
      expect(await b.accounts.accountByName('owner')).toMatchObject({ password_hash: null, disabled: null })
      await expect(a.accounts.deleteAccount('owner', true, null, late)).rejects.toThrow(refused)
      expect(await b.accounts.accountByName('owner')).not.toBeNull()
    } finally {
      await e.close()
    }
  })

  test('ids are never reused: an account or a key made after the newest one was deleted gets a new id', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const first = (await made(a.accounts.createAccount(newAccount('first')))).account
      const last = await made(a.accounts.createAccount(newAccount('last')))
      expect((await b.accounts.deleteAccount('last', false, null)).ok).toBe(true)
      const next = await made(b.accounts.createAccount(newAccount('next', { key: newKey('next') })))
      expect(next.account.id).toBeGreaterThan(last.account.id)
      expect(next.key!.id).toBeGreaterThan(last.key!.id)
      // A revoked key pruned (keepRevoked 0), then a new one.
      const k = await made(a.accounts.createKeyUnder(first.id, newKey('k'), T0, { max: 10, keepRevoked: 0 }))
      expect(await b.accounts.revokeKey(k.key.id, T0 + 1)).not.toBeNull()
      const after = await made(
        b.accounts.createKeyUnder(first.id, newKey('after'), T0 + 2, { max: 10, keepRevoked: 0 }),
      )
      expect(await a.accounts.keyById(k.key.id)).toBeNull()
      expect(after.key.id).toBeGreaterThan(k.key.id)
    } finally {
      await e.close()
    }
  })

  test('a name taken: two nodes creating one name at once make one account; the other is told name_taken and writes nothing', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      for (const name of ['zoe', 'yann', 'xavier']) {
        const meet = meeting(2)
        const hold = holding(e, meet, (acc: { name: string }) => `made ${acc.name}`)
        const results = await Promise.all([
          a.accounts.createAccount(newAccount(name, { key: newKey(`${name}-a`) }), hold),
          b.accounts.createAccount(newAccount(name, { key: newKey(`${name}-b`) }), hold),
        ])
        expect(results.filter((r) => r.ok)).toHaveLength(1)
        expect(results.filter((r) => !r.ok)).toEqual([{ ok: false, reason: 'name_taken' }])
        const winner = results.find((r) => r.ok)!
        if (!winner.ok) throw new Error('unreachable')
        expect(await a.accounts.keysOfAccount(winner.account.id)).toHaveLength(1)
      }
      expect(await a.accounts.count()).toBe(3)
      expect(await e.notes()).toEqual(['made zoe', 'made yann', 'made xavier'])
      expect(await b.accounts.allKeys()).toHaveLength(3)
      // Sequentially too.
      expect(await b.accounts.createAccount(newAccount('zoe', { key: newKey('zoe-c') }))).toEqual({
        ok: false,
        reason: 'name_taken',
      })
      expect(await b.accounts.activeKeyByHash(hashKey('key-zoe-c'))).toBeNull()
    } finally {
      await e.close()
    }
  }, 60_000)

  test('names compare in any case (issue 36): Carol is taken when carol exists, also when two nodes make Dana and dana at once, and by single sign-on', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      await made(a.accounts.createAccount(newAccount('carol')))
      expect(await b.accounts.createAccount(newAccount('Carol', { key: newKey('Carol') }))).toEqual({
        ok: false,
        reason: 'name_taken',
      })
      expect(await b.accounts.createAccount(newAccount('CAROL', { key: null }))).toEqual({
        ok: false,
        reason: 'name_taken',
      })
      expect(await a.accounts.activeKeyByHash(hashKey('key-Carol'))).toBeNull()
      expect((await b.accounts.accountByNameAnyCase('cArOl'))!.name).toBe('carol')
      expect(await b.accounts.accountByName('Carol')).toBeNull() // the exact lookup (sign-in) is unchanged
      // At once from two nodes, the first's transaction held open: one account.
      const meet = meeting(2)
      const hold = holding(e, meet, (acc: { name: string }) => `made ${acc.name}`)
      const results = await Promise.all([
        a.accounts.createAccount(newAccount('Dana', { key: newKey('Dana') }), hold),
        b.accounts.createAccount(newAccount('dana', { key: newKey('dana') }), hold),
      ])
      expect(results.filter((r) => r.ok)).toHaveLength(1)
      expect(await e.notes()).toHaveLength(1)
      // Single sign-on: the provider's Carol gets the next free name in any case; Erin and erin at once differ.
      const issuer = 'https://id.example'
      expect(await a.identities.link({ issuer, sub: 'c-1', name: 'Carol', admin: null, now: T0 })).toMatchObject({
        outcome: 'created',
        name: 'Carol-2',
      })
      expect(await b.identities.link({ issuer, sub: 'c-2', name: 'CAROL-2', admin: null, now: T0 })).toMatchObject({
        outcome: 'created',
        name: 'CAROL-2-2',
      })
      const wait = e.sqlite ? undefined : () => Bun.sleep(50)
      const erins = await Promise.all([
        a.identities.link({ issuer, sub: 'e-1', name: 'Erin', admin: null, now: T0 }, wait),
        b.identities.link({ issuer, sub: 'e-2', name: 'erin', admin: null, now: T0 }, wait),
      ])
      expect(new Set(erins.map((l) => l.name.toLowerCase())).size).toBe(2)
      // The marketplace's made-up names stay exact: two users told apart by case are two accounts.
      await made(a.accounts.createAccount(newAccount('marketplace:Bob', { key: null })))
      await made(b.accounts.createAccount(newAccount('marketplace:bob', { key: null })))
      expect(await a.accounts.count()).toBe(8) // carol, Dana|dana, Carol-2, CAROL-2-2, Erin, erin-2, two marketplace users
    } finally {
      await e.close()
    }
  }, 60_000)

  test('the last active administrator: two nodes disabling or deleting the two last ones at once leave one', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const pairs = [
        ['disable', 'disable'],
        ['delete', 'delete'],
        ['disable', 'delete'],
        ['delete', 'disable'],
      ] as const
      for (const [i, [one, two]] of pairs.entries()) {
        const [x, y] = [`x${i}`, `y${i}`]
        await made(a.accounts.createAccount(newAccount(x, { admin: true })))
        await made(a.accounts.createAccount(newAccount(y, { admin: true })))
        // The admins of earlier rounds are disabled (or gone): these two are the last.
        for (const acc of await a.accounts.accountPage(50, 0))
          if (acc.admin === 1 && acc.disabled === null && acc.name !== x && acc.name !== y)
            await a.accounts.setDisabled(acc.name, T0, null)
        expect(await b.accounts.activeAdmins()).toBe(2)
        const meet = meeting(2)
        const hold = holding(e, meet, (acc: { name: string }) => `${acc.name} removed`)
        const act = (node: Node, what: 'disable' | 'delete', name: string) =>
          what === 'disable'
            ? node.accounts.setDisabled(name, T0 + i, null, hold)
            : node.accounts.deleteAccount(name, false, null, hold)
        const results = await Promise.all([act(a, one, x), act(b, two, y)])
        expect(results.map((r) => (r.ok ? 'ok' : r.reason)).sort()).toEqual(['last_admin', 'ok'])
        expect(await a.accounts.activeAdmins()).toBe(1)
        const refused = results.find((r) => !r.ok)!
        if (refused.ok || refused.reason === 'not_found') throw new Error('unreachable')
        expect(await b.accounts.accountByName(refused.account.name)).toMatchObject({ admin: 1, disabled: null })
        // The last one, alone, is refused too; enabling another lets it go.
        expect(await b.accounts.setDisabled(refused.account.name, T0, null)).toMatchObject({
          ok: false,
          reason: 'last_admin',
        })
        expect(await b.accounts.deleteAccount(refused.account.name, true, null)).toMatchObject({
          ok: false,
          reason: 'last_admin',
        })
      }
      expect((await e.notes()).length).toBe(pairs.length)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('disable, enable and delete: one’s own account is refused, a disable ends the sessions, links stay or go', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const root = (await made(a.accounts.createAccount(newAccount('root', { admin: true })))).account
      const ann = (await made(a.accounts.createAccount(newAccount('ann', { admin: true })))).account
      const ben = (await made(a.accounts.createAccount(newAccount('ben')))).account
      expect(await b.accounts.setDisabled('ann', T0, ann.id)).toEqual({
        ok: false,
        reason: 'own_account',
        account: ann,
      })
      expect(await b.accounts.deleteAccount('ann', false, ann.id)).toEqual({
        ok: false,
        reason: 'own_account',
        account: ann,
      })
      expect(await b.accounts.setDisabled('nobody', T0, null)).toEqual({ ok: false, reason: 'not_found' })
      expect(await b.accounts.deleteAccount('nobody', false, null)).toEqual({ ok: false, reason: 'not_found' })
      expect(await b.accounts.setDisabled('nobody', null, null)).toEqual({ ok: false, reason: 'not_found' })

      await e.session(ben.id, 'ben-1')
      await e.session(ben.id, 'ben-2')
      const off = await b.accounts.setDisabled('ben', T0 + 7, root.id, (tx, acc, ended) =>
        e.note(tx, `${acc.name} disabled, ${ended} ended`),
      )
      expect(off).toEqual({ ok: true, account: ben, sessionsEnded: 2 })
      expect(await e.sessions(ben.id)).toBe(0)
      expect((await a.accounts.accountById(ben.id))!.disabled).toBe(T0 + 7)
      // A disabled account's key is not active on any node.
      expect(await a.accounts.activeKeyByHash(hashKey('key-ben'))).toBeNull()
      const on = await a.accounts.setDisabled('ben', null, ben.id, (tx, acc) => e.note(tx, `${acc.name} enabled`))
      expect(on).toEqual({ ok: true, account: { ...ben, disabled: T0 + 7 }, sessionsEnded: 0 })
      expect(await b.accounts.activeKeyByHash(hashKey('key-ben'))).toMatchObject({ account_name: 'ben' })

      // Deleted with its links kept (owned by nobody), or with them.
      await e.link(ben.id, 'b1')
      await e.link(ann.id, 'n1')
      await e.link(ann.id, 'n2')
      const kept = await b.accounts.deleteAccount('ben', false, root.id, (tx, acc, links) =>
        e.note(tx, `${acc.name} deleted, ${links} links`),
      )
      expect(kept).toEqual({ ok: true, account: ben, links: 1, deletedLinks: [] })
      const gone = await a.accounts.deleteAccount('ann', true, root.id)
      expect(gone).toMatchObject({ ok: true, links: 2 })
      expect(gone.ok && gone.deletedLinks.map((l) => `${l.domain}/${l.code}`).sort()).toEqual(['/n1', '/n2'])
      expect(await b.accounts.accountByName('ann')).toBeNull()
      expect(await b.accounts.keysOfAccount(ann.id)).toEqual([])
      expect((await b.accounts.accountPage(50, 0)).map((r) => r.name)).toEqual(['root'])
      expect(await e.notes()).toEqual(['ben disabled, 2 ended', 'ben enabled', 'ben deleted, 1 links'])
    } finally {
      await e.close()
    }
  })

  test('disableIn: a disable inside another change’s transaction commits with it; a refusal thrown in then() rolls that change back', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const root = (await made(a.accounts.createAccount(newAccount('root', { admin: true })))).account
      const ben = (await made(a.accounts.createAccount(newAccount('ben')))).account
      const cal = (await made(a.accounts.createAccount(newAccount('cal')))).account
      await e.session(ben.id, 'ben-1')

      // The last active administrator: then() is told so and throws; the caller's change rolls back with it.
      const refused = new Error('refused')
      const told: unknown[] = []
      const closeRoot = (tx: any) =>
        Promise.all([
          e.note(tx, 'closed with root'),
          a.accounts.disableIn(tx, 'root', T0, null, (_tx, outcome) => {
            told.push(outcome)
            if (!outcome.ok) throw refused
          }),
        ])
      await expect(a.inTransaction(closeRoot)).rejects.toBe(refused)
      expect(told).toEqual([{ ok: false, reason: 'last_admin', account: root }])
      expect(await e.notes()).toEqual([])
      expect((await b.accounts.accountById(root.id))!.disabled).toBeNull()

      // Another account: disabled with the change, its sessions ended, its key inactive on the other node.
      await a.inTransaction((tx) =>
        Promise.all([
          e.note(tx, 'closed with ben'),
          a.accounts.disableIn(tx, 'ben', T0 + 5, root.id, (tx, outcome) =>
            e.note(tx, outcome.ok ? `ben disabled, ${outcome.sessionsEnded} ended` : outcome.reason),
          ),
        ]),
      )
      expect(await e.notes()).toEqual(['closed with ben', 'ben disabled, 1 ended'])
      expect((await b.accounts.accountById(ben.id))!.disabled).toBe(T0 + 5)
      expect(await e.sessions(ben.id)).toBe(0)
      expect(await b.accounts.activeKeyByHash(hashKey('key-ben'))).toBeNull()

      // The caller's transaction rolled back for its own reasons: the disable goes with it.
      await a.inTransaction(async (tx) => a.accounts.disableIn(tx, 'cal', T0 + 9, root.id, () => {}), true)
      expect((await b.accounts.accountById(cal.id))!.disabled).toBeNull()
      expect(await b.accounts.activeKeyByHash(hashKey('key-cal'))).toMatchObject({ account_name: 'cal' })
    } finally {
      await e.close()
    }
  })

  test('keysChanged: SQLite tells a change committed by another connection once (not its own); PostgreSQL always says so', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const dan = (await made(a.accounts.createAccount(newAccount('dan', { key: newKey('dan-1') })))).account
      const postgres = _name === 'PostgreSQL'
      a.accounts.keysChanged()
      expect(a.accounts.keysChanged()).toBe(postgres)
      // Its own connection's change: the service that made it empties its cache itself.
      await a.accounts.createKey('dan', newKey('dan-2'), T0)
      expect(a.accounts.keysChanged()).toBe(postgres)
      // Another connection's (the CLI's, another node's) revoke: told at the next call, once.
      const first = (await a.accounts.keysOfAccount(dan.id))[0]!
      expect(await b.accounts.revokeKey(first.id, T0 + 1)).toMatchObject({ id: first.id })
      expect(a.accounts.keysChanged()).toBe(true)
      expect(a.accounts.keysChanged()).toBe(postgres)
    } finally {
      await e.close()
    }
  })

  test('MAX_ACTIVE_KEYS: two nodes making the last key of an account at once: one gets it, the other is told full', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const owner = (await made(a.accounts.createAccount(newAccount('owner')))).account // holds 1 active key
      const limits = { max: 3, keepRevoked: 2 }
      await made(a.accounts.createKeyUnder(owner.id, newKey('k1'), T0, limits))
      for (let round = 0; round < 4; round++) {
        expect(await a.accounts.activeKeyCount(owner.id)).toBe(2)
        const meet = meeting(2)
        const hold = holding(e, meet, (_acc: unknown, k: { prefix: string }) => `key ${k.prefix}`)
        const results = await Promise.all([
          a.accounts.createKeyUnder(owner.id, newKey(`a${round}`), T0 + round, limits, hold),
          b.accounts.createKeyUnder(owner.id, newKey(`b${round}`), T0 + round, limits, hold),
        ])
        expect(results.map((r) => (r.ok ? 'ok' : r.reason)).sort()).toEqual(['full', 'ok'])
        expect(await b.accounts.activeKeyCount(owner.id)).toBe(3)
        // Room for the next round: the newest key revoked.
        const [newest] = await b.accounts.keysOfAccountNewest(owner.id, 1)
        expect(await b.accounts.revokeKeyOfAccount(newest!.id, owner.id, T0 + 100 + round)).not.toBeNull()
      }
      expect(await e.notes()).toHaveLength(4)
      // Only the keepRevoked most recently revoked are kept (pruned at the next creation).
      await made(a.accounts.createKeyUnder(owner.id, newKey('last'), T0 + 200, limits))
      const revoked = (await b.accounts.keysOfAccount(owner.id)).filter((k) => k.revoked !== null)
      expect(revoked.map((k) => k.revoked)).toEqual([T0 + 102, T0 + 103])
      expect(await a.accounts.createKeyUnder(owner.id, newKey('over'), T0, limits)).toEqual({
        ok: false,
        reason: 'full',
      })
      expect(await a.accounts.createKeyUnder(999_999, newKey('none'), T0, limits)).toEqual({
        ok: false,
        reason: 'not_found',
      })
    } finally {
      await e.close()
    }
  }, 60_000)

  test('revocation vs use: once one node revokes a key, the other’s hash lookup finds nothing; two revokes at once: one does it', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const kim = await made(a.accounts.createAccount(newAccount('kim')))
      const lee = await made(a.accounts.createAccount(newAccount('lee')))
      expect(await a.accounts.activeKeyByHash(hashKey('key-kim'))).toMatchObject({ id: kim.key!.id })
      // Another account's key is not revoked through this account.
      expect(await b.accounts.revokeKeyOfAccount(kim.key!.id, lee.account.id, T0)).toBeNull()
      const revoked = await b.accounts.revokeKeyOfAccount(kim.key!.id, kim.account.id, T0 + 1, (tx, k) =>
        e.note(tx, `revoked ${k.prefix} of ${k.account_name}`),
      )
      expect(revoked).toEqual({ ...kim.key!, revoked: T0 + 1, account_name: 'kim', admin: 0, disabled: null })
      expect(await a.accounts.activeKeyByHash(hashKey('key-kim'))).toBeNull()
      expect((await a.accounts.keyById(kim.key!.id))!.revoked).toBe(T0 + 1)
      expect(await a.accounts.revokeKeyOfAccount(kim.key!.id, kim.account.id, T0 + 2)).toBeNull()
      expect(await a.accounts.revokeKey(kim.key!.id, T0 + 2)).toBeNull()
      // An edit of a revoked key is refused.
      expect(await a.accounts.editKeyOfAccount(kim.key!.id, kim.account.id, 'x', 'links')).toBeNull()

      // Two nodes revoking one key at once (the CLI's revoke on one, the dashboard's on the other).
      const meet = meeting(2)
      const hold = holding(e, meet, (k: { prefix: string }) => `revoked ${k.prefix}`)
      const both = await Promise.all([
        a.accounts.revokeKey(lee.key!.id, T0 + 3, hold),
        b.accounts.revokeKeyOfAccount(lee.key!.id, lee.account.id, T0 + 3, hold),
      ])
      expect(both.filter((r) => r !== null)).toHaveLength(1)
      expect(await b.accounts.activeKeyByHash(hashKey('key-lee'))).toBeNull()
      expect(await e.notes()).toEqual(['revoked lbk_0000kim of kim', 'revoked lbk_0000lee'])
    } finally {
      await e.close()
    }
  }, 60_000)
})

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('many changes at once on %s', (_name, makeEngine) => {
  test('disables, deletions, enables, passwords, keys and sign-ins of the same accounts from two nodes at once: none fails, one administrator is left', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const admins = ['ad0', 'ad1', 'ad2', 'ad3', 'ad4', 'ad5']
      for (const name of admins) await made(a.accounts.createAccount(newAccount(name, { admin: true })))
      const ids = new Map<string, number>()
      for (const name of admins) ids.set(name, (await a.accounts.accountByName(name))!.id)
      const limits = { max: 5, keepRevoked: 1 }
      // Every change touches an administrator's row, in an order that differs from node to node.
      const work: Promise<unknown>[] = []
      for (let i = 0; i < 6; i++) {
        const [n1, n2] = i % 2 ? [a, b] : [b, a]
        const name = admins[i]!
        const other = admins[(i + 3) % admins.length]!
        work.push(
          n1.accounts.setDisabled(name, T0 + i, null),
          n2.accounts.deleteAccount(other, i % 3 === 0, null),
          n1.accounts.createKeyUnder(ids.get(other)!, newKey(`storm-${i}`), T0, limits),
          n2.accounts.setPassword(name, `$hash-${i}`),
          n1.accounts.setDisabled(other, null, null),
          n2.accounts.createKey(name, newKey(`cli-${i}`), T0),
          n1.identities.link({
            issuer: 'https://id.example',
            sub: `storm-${i % 2}`,
            name: 'storm',
            admin: i % 2 === 0,
            now: T0 + i,
          }),
        )
      }
      const results = await Promise.allSettled(work)
      expect(results.filter((r) => r.status === 'rejected')).toEqual([])
      // (The person of sub storm-0 is made an administrator by the groups: they count too.)
      expect(await a.accounts.activeAdmins()).toBeGreaterThanOrEqual(1)
      expect((await a.accounts.accountPage(50, 0)).filter((r) => r.name.startsWith('storm'))).toHaveLength(2)
    } finally {
      await e.close()
    }
  }, 60_000)
})

describe('key revocation on PostgreSQL while a node uses the key', () => {
  test('until the revoke commits the key still works on the other node (the use came first); from its commit on it is found nowhere', async () => {
    const { pool, close } = await engines.postgres(1)
    try {
      const [a, b] = [postgresAccountStorage(pool(2)), postgresAccountStorage(pool(2))]
      const kim = await made(a.createAccount(newAccount('kim')))
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      let inside!: () => void
      const revoking = new Promise<void>((r) => (inside = r))
      const revoke = a.revokeKey(kim.key!.id, T0, async () => {
        inside()
        await held
      })
      await revoking
      expect(await b.activeKeyByHash(hashKey('key-kim'))).toMatchObject({ id: kim.key!.id, revoked: null })
      // last_used is written meanwhile (it waits for the revoke's row lock, then writes its column).
      const touch = b.touchKey(kim.key!.id, T0 + 1)
      release()
      expect(await revoke).toMatchObject({ revoked: T0 })
      await touch
      expect(await b.activeKeyByHash(hashKey('key-kim'))).toBeNull()
      expect(await b.keyById(kim.key!.id)).toMatchObject({ revoked: T0, last_used: T0 + 1 })
    } finally {
      await close()
    }
  }, 60_000)
})
