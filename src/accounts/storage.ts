// Accounts and API keys behind one async interface, on either engine (issue 22, SPEC §11): what the account
// service (service.ts), the dashboard's sign-in and single sign-on read and write. The SQLite implementation
// wraps the synchronous store (store.ts) as it is; the PostgreSQL one is storage-postgres.ts. One test suite
// (test/db/account-storage.test.ts) runs against both.
//
// Every change the service makes today in one transaction that reads, decides and writes (a "re-check") is
// ONE method here, its decision returned as a typed outcome, and `within(tx, …)` runs in the same
// transaction after the write (the service writes the audit row there; on SQLite it must be synchronous).
// What they promise, on any number of nodes:
// - createAccount: two creations of one name at once make one account; the other gets 'name_taken'. Names
//   compare in any case (store.ts nameFolds): Carol is taken when carol exists.
// - setDisabled / deleteAccount: the last active administrator is never disabled or deleted, nor is the
//   account of the one asking ('own_account'); two nodes disabling (or deleting) the two last administrators
//   at once leave one.
// - createKeyUnder: an account never holds more than `max` active keys; two nodes making the last one at
//   once: one gets it, the other 'full'.
// - revokeKey / revokeKeyOfAccount: a key is revoked once (the other revoker gets null); once revoked,
//   activeKeyByHash finds nothing on any node.
//
// The account service (service.ts) and single sign-on (oidc/accounts.ts) use this interface only. On SQLite
// each decision is one transaction of the connection (one writer: nothing runs between the read and the
// write); `within` writes the audit row through AuditRows.insert(tx, …).
//
// keysChanged() is the service's key cache's question, asked on every API request with a key, so it is
// synchronous and never a round trip: "has a change made elsewhere (another connection, another node) since
// the last call perhaps changed what activeKeyByHash answers?" (changes made through this service empty the
// cache themselves). One reader: the key cache. SQLite answers with PRAGMA data_version, which moves with
// every commit of another connection (`linkbox key revoke` from the CLI). PostgreSQL has nothing like it:
// until the change feed (db/changes.ts) tells every node of revokes, edits, disables and deletions, it
// answers true, so the key cache keeps nothing and every request with a key reads its row (a revoke on one
// node is refused on every other at once, at one query a request).
import type { Db } from '../db/sqlite'
import { createAccountStore, type AccountRow, type AccountSummaryRow, type KeyRow, type KeyWithAccount } from './store'

/** The change feed's topic (db/changes.ts) of changes that may turn a cached key away. */
export const ACCOUNT_TOPIC = 'account'

export type { AccountRow, AccountSummaryRow, KeyRow, KeyWithAccount } from './store'

/** A key as stored: the visible prefix and the SHA-256 of the key (never the key). */
export interface NewKey {
  prefix: string
  hash: string
  /** Comma-separated scopes. */
  scopes: string
  label: string
}

export interface NewAccount {
  name: string
  passwordHash: string | null
  admin: boolean
  now: number
  /** The account's first key, made in the same transaction (none: an account made by the marketplace or a provider). */
  key: NewKey | null
}

/** Why a disable or a deletion was refused: no such account, the caller's own, or the last active administrator. */
export type Refusal = { ok: false; reason: 'not_found' } | { ok: false; reason: 'own_account' | 'last_admin'; account: AccountRow }

/** A disable done: the account as it was before, and its dashboard sessions ended. */
export type Disabled = { ok: true; account: AccountRow; sessionsEnded: number }

export interface AccountStorage<Tx> {
  accountByName(name: string): Promise<AccountRow | null>
  /** The account of this name in any case (store.ts nameFolds), the exact spelling first. */
  accountByNameAnyCase(name: string): Promise<AccountRow | null>
  accountById(id: number): Promise<AccountRow | null>
  /** Accounts stored. */
  count(): Promise<number>
  /** Administrators not disabled. */
  activeAdmins(): Promise<number>
  /** One page of accounts, by id, with what each owns counted. */
  accountPage(limit: number, offset: number): Promise<AccountSummaryRow[]>
  accountSummary(id: number): Promise<AccountSummaryRow | null>
  /** Links the account owns. */
  linkCount(accountId: number): Promise<number>
  /** In `tx` when given: a sign-in sets it in the transaction of its session (SessionRows.create's `within`). */
  setLastSignin(accountId: number, at: number, tx?: Tx): Promise<void>

  /** The key with its account, any state (null: none). */
  keyById(id: number): Promise<KeyWithAccount | null>
  /** The key of this hash with its account, when the key is not revoked and its account not disabled; null otherwise. */
  activeKeyByHash(hash: string): Promise<KeyWithAccount | null>
  keysOfAccount(accountId: number): Promise<KeyWithAccount[]>
  allKeys(): Promise<KeyWithAccount[]>
  keysByPrefix(prefix: string): Promise<KeyRow[]>
  /** The account's keys, newest first, at most `limit`. */
  keysOfAccountNewest(accountId: number, limit: number): Promise<KeyRow[]>
  activeKeyCount(accountId: number): Promise<number>
  touchKey(id: number, now: number): Promise<void>
  /** Synchronous (the key cache asks on every request): whether keys may have changed elsewhere since the last call. */
  keysChanged(): boolean

  /** A new account (and its first key) unless the name is taken. */
  createAccount(
    input: NewAccount,
    within?: (tx: Tx, account: AccountRow, key: KeyRow | null) => unknown,
  ): Promise<{ ok: true; account: AccountRow; key: KeyRow | null } | { ok: false; reason: 'name_taken' }>
  /**
   * Disables (at: unix ms) or enables again (at: null) the named account; a disable ends its dashboard sessions
   * and is refused for `actorId`'s own account and for the last active administrator. `account` is the row as
   * it was before the change.
   */
  setDisabled(
    name: string,
    at: number | null,
    actorId: number | null,
    within?: (tx: Tx, account: AccountRow, sessionsEnded: number) => unknown,
  ): Promise<Disabled | Refusal>
  /**
   * Inside the caller's transaction (another feature's change: a report closed by disabling its owner):
   * setDisabled's disable, decided in the same way; `then` runs in that transaction with the outcome, and a
   * refusal thrown there rolls the caller's change back with it. On SQLite it runs (or throws) before it returns.
   */
  disableIn(tx: Tx, name: string, at: number, actorId: number | null, then: (tx: Tx, outcome: Disabled | Refusal) => unknown): Promise<unknown>
  /**
   * Deletes the named account (its keys, sessions, mailboxes, webhooks and identity go with it); its links stay,
   * owned by nobody, or (withLinks) go too: their codes. Refused as setDisabled's disable is.
   */
  deleteAccount(
    name: string,
    withLinks: boolean,
    actorId: number | null,
    within?: (tx: Tx, account: AccountRow, links: number) => unknown,
  ): Promise<{ ok: true; account: AccountRow; links: number; deletedLinks: string[] } | Refusal>
  /** The named account's new password hash, its sessions ended; null: no such account. */
  setPassword(name: string, hash: string, within?: (tx: Tx, account: AccountRow, sessionsEnded: number) => unknown): Promise<{ account: AccountRow; sessionsEnded: number } | null>
  /** A key for the named account (the CLI: no bound); null: no such account. */
  createKey(name: string, key: NewKey, now: number, within?: (tx: Tx, account: AccountRow, key: KeyRow) => unknown): Promise<{ account: AccountRow; key: KeyRow } | null>
  /**
   * A key for the account with this id when it holds fewer than `max` active keys; its revoked keys beyond the
   * `keepRevoked` most recently revoked are deleted in the same transaction.
   */
  createKeyUnder(
    accountId: number,
    key: NewKey,
    now: number,
    limits: { max: number; keepRevoked: number },
    within?: (tx: Tx, account: AccountRow, key: KeyRow) => unknown,
  ): Promise<{ ok: true; account: AccountRow; key: KeyRow } | { ok: false; reason: 'full' | 'not_found' }>
  /** The label and scopes of one of the account's active keys; null: it has no such active key. */
  editKeyOfAccount(
    id: number,
    accountId: number,
    label: string,
    scopes: string,
    within?: (tx: Tx, before: KeyWithAccount, after: KeyRow) => unknown,
  ): Promise<{ before: KeyWithAccount; after: KeyRow } | null>
  /** Revokes one of the account's keys: the key as revoked; null when it has no such key not revoked yet. */
  revokeKeyOfAccount(id: number, accountId: number, now: number, within?: (tx: Tx, key: KeyWithAccount) => unknown): Promise<KeyWithAccount | null>
  /** Revokes a key of any account (the CLI): the key as revoked; null when there is no such key not revoked yet. */
  revokeKey(id: number, now: number, within?: (tx: Tx, key: KeyWithAccount) => unknown): Promise<KeyWithAccount | null>
}

/** The account stores of each SQLite connection, prepared once (a `tx` is a connection inside db.transaction). */
const stores = new WeakMap<Db, ReturnType<typeof createAccountStore>>()
const storeOf = (db: Db) => {
  let store = stores.get(db)
  if (!store) stores.set(db, (store = createAccountStore(db)))
  return store
}

/** The SQLite account store as it is, behind the async interface; each decision is the service's transaction of today. */
export function sqliteAccountStorage(db: Db): AccountStorage<Db> {
  const store = storeOf(db)

  /** Whether `actorId` may disable or delete the account, on the rows read inside the transaction. */
  function refused(account: AccountRow, actorId: number | null, s = store): Refusal | null {
    if (actorId === account.id) return { ok: false, reason: 'own_account', account }
    if (account.admin === 1 && account.disabled === null && s.activeAdmins() <= 1) return { ok: false, reason: 'last_admin', account }
    return null
  }

  /** A disable (at: unix ms) or an enable (null) on a connection inside its transaction: setDisabled's decision. */
  function disable(s: typeof store, name: string, at: number | null, actorId: number | null): Disabled | Refusal {
    const account = s.accountByName(name)
    if (!account) return { ok: false, reason: 'not_found' }
    if (at !== null) {
      const refusal = refused(account, actorId, s)
      if (refusal) return refusal
    }
    s.setDisabled(account.id, at)
    const sessionsEnded = at !== null ? s.endSessions(account.id) : 0
    return { ok: true, account, sessionsEnded }
  }

  const insertKey = (accountId: number, k: NewKey, now: number) => store.insertKey(accountId, k.prefix, k.hash, k.scopes, k.label, now)
  // PRAGMA data_version as keysChanged() last saw it: it moves when another connection commits.
  let seenVersion = store.dataVersion()

  return {
    accountByName: async (name) => store.accountByName(name) ?? null,
    accountByNameAnyCase: async (name) => store.accountByNameAnyCase(name) ?? null,
    accountById: async (id) => store.accountById(id) ?? null,
    count: async () => store.count(),
    activeAdmins: async () => store.activeAdmins(),
    accountPage: async (limit, offset) => store.accountPage(limit, offset),
    accountSummary: async (id) => store.accountSummary(id) ?? null,
    linkCount: async (accountId) => store.linkCount(accountId),
    // Not async: in `tx` (a sign-in's session) it is written, or throws, inside the caller's synchronous transaction.
    setLastSignin(accountId, at, tx) {
      storeOf(tx ?? db).setLastSignin(accountId, at)
      return Promise.resolve()
    },

    keyById: async (id) => store.keyById(id) ?? null,
    async activeKeyByHash(hash) {
      const row = store.keyByHash(hash)
      return row && row.revoked === null && row.disabled === null ? row : null
    },
    keysOfAccount: async (accountId) => store.keysOfAccount(accountId),
    allKeys: async () => store.allKeys(),
    keysByPrefix: async (prefix) => store.keysByPrefix(prefix),
    keysOfAccountNewest: async (accountId, limit) => store.keysOfAccountNewest(accountId, limit),
    activeKeyCount: async (accountId) => store.activeKeyCount(accountId),
    touchKey: async (id, now) => void store.touchKey(id, now),
    keysChanged() {
      const version = store.dataVersion()
      if (version === seenVersion) return false
      seenVersion = version
      return true
    },

    // One writer at a time: no other connection can commit the name between the check and the insert (a
    // transaction whose snapshot another commit has made stale cannot write: SQLITE_BUSY_SNAPSHOT).
    async createAccount(input, within) {
      return db.transaction(() => {
        if (store.accountByNameAnyCase(input.name)) return { ok: false as const, reason: 'name_taken' as const }
        const account = store.insertAccount(input.name, input.passwordHash, input.admin, input.now)
        const key = input.key ? insertKey(account.id, input.key, input.now) : null
        within?.(db, account, key)
        return { ok: true as const, account, key }
      })()
    },

    async setDisabled(name, at, actorId, within) {
      return db.transaction(() => {
        const outcome = disable(store, name, at, actorId)
        if (outcome.ok) within?.(db, outcome.account, outcome.sessionsEnded)
        return outcome
      })()
    },

    // Not async: it runs, and `then` may throw, inside the caller's synchronous transaction.
    disableIn(tx, name, at, actorId, then) {
      if (!tx.inTransaction) throw new Error('accounts: disableIn must run inside the transaction of its change')
      return Promise.resolve(then(tx, disable(storeOf(tx), name, at, actorId)))
    },

    async deleteAccount(name, withLinks, actorId, within) {
      return db.transaction(() => {
        const account = store.accountByName(name)
        if (!account) return { ok: false as const, reason: 'not_found' as const }
        const refusal = refused(account, actorId)
        if (refusal) return refusal
        const links = store.linkCount(account.id)
        const deletedLinks = withLinks ? store.deleteLinksOf(account.id) : []
        store.deleteAccount(account.id)
        within?.(db, account, links)
        return { ok: true as const, account, links, deletedLinks }
      })()
    },

    async setPassword(name, hash, within) {
      return db.transaction(() => {
        const account = store.accountByName(name)
        if (!account) return null
        store.setPassword(account.id, hash)
        const sessionsEnded = store.endSessions(account.id)
        within?.(db, account, sessionsEnded)
        return { account, sessionsEnded }
      })()
    },

    async createKey(name, k, now, within) {
      return db.transaction(() => {
        const account = store.accountByName(name)
        if (!account) return null
        const key = insertKey(account.id, k, now)
        within?.(db, account, key)
        return { account, key }
      })()
    },

    async createKeyUnder(accountId, k, now, limits, within) {
      return db.transaction(() => {
        if (store.activeKeyCount(accountId) >= limits.max) return { ok: false as const, reason: 'full' as const }
        store.pruneRevoked(accountId, limits.keepRevoked)
        const account = store.accountById(accountId)
        if (!account) return { ok: false as const, reason: 'not_found' as const }
        const key = insertKey(accountId, k, now)
        within?.(db, account, key)
        return { ok: true as const, account, key }
      })()
    },

    async editKeyOfAccount(id, accountId, label, scopes, within) {
      return db.transaction(() => {
        const before = store.keyById(id)
        const after = before ? store.editKeyOfAccount(id, accountId, label, scopes) : null
        if (!before || !after) return null
        within?.(db, before, after)
        return { before, after }
      })()
    },

    async revokeKeyOfAccount(id, accountId, now, within) {
      return db.transaction(() => {
        if (!store.revokeKeyOfAccount(id, accountId, now)) return null
        const key = store.keyById(id)!
        within?.(db, key)
        return key
      })()
    },

    async revokeKey(id, now, within) {
      return db.transaction(() => {
        if (!store.revokeKey(id, now)) return null
        const key = store.keyById(id)!
        within?.(db, key)
        return key
      })()
    },
  }
}
