// Accounts and API keys behind one async interface, on either engine (issue 22, SPEC §11): what the account
// service (service.ts), the dashboard's sign-in and single sign-on read and write. The SQLite implementation
// wraps the synchronous store (store.ts) as it is; the PostgreSQL one is storage-postgres.ts. One test suite
// (test/account-storage.test.ts) runs against both.
//
// Every change the service makes today in one transaction that reads, decides and writes (a "re-check") is
// ONE method here, its decision returned as a typed outcome, and `within(tx, …)` runs in the same
// transaction after the write (the service writes the audit row there; on SQLite it must be synchronous).
// What they promise, on any number of nodes:
// - createAccount: two creations of one name at once make one account; the other gets 'name_taken'.
// - setDisabled / deleteAccount: the last active administrator is never disabled or deleted, nor is the
//   account of the one asking ('own_account'); two nodes disabling (or deleting) the two last administrators
//   at once leave one.
// - createKeyUnder: an account never holds more than `max` active keys; two nodes making the last one at
//   once: one gets it, the other 'full'.
// - revokeKey / revokeKeyOfAccount: a key is revoked once (the other revoker gets null); once revoked,
//   activeKeyByHash finds nothing on any node.
//
// The service still calls the synchronous store directly: it moves onto this interface when the services go
// async. On SQLite each decision is the service's transaction of today (one writer: nothing runs between
// the read and the write). Not here yet: PRAGMA data_version, with which the service's key cache sees a
// revoke made by another connection at the next request: PostgreSQL has nothing like it, so on that engine
// the cache must be dropped or told of revokes, disables and edits on every node (LISTEN/NOTIFY), or a key
// revoked on one node works on another for up to KEY_CACHE_MS. The audit rows that `within` writes need the
// audit log's own PostgreSQL form (a recorder taking `tx`).
import type { Db } from '../db'
import { createAccountStore, type AccountRow, type AccountSummaryRow, type KeyRow, type KeyWithAccount } from './store'

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

export interface AccountStorage<Tx> {
  accountByName(name: string): Promise<AccountRow | null>
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
  ): Promise<{ ok: true; account: AccountRow; sessionsEnded: number } | Refusal>
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

  /** refusedChange of service.ts, on the rows read inside the transaction. */
  function refused(account: AccountRow, actorId: number | null): Refusal | null {
    if (actorId === account.id) return { ok: false, reason: 'own_account', account }
    if (account.admin === 1 && account.disabled === null && store.activeAdmins() <= 1) return { ok: false, reason: 'last_admin', account }
    return null
  }

  const insertKey = (accountId: number, k: NewKey, now: number) => store.insertKey(accountId, k.prefix, k.hash, k.scopes, k.label, now)

  return {
    accountByName: async (name) => store.accountByName(name) ?? null,
    accountById: async (id) => store.accountById(id) ?? null,
    count: async () => store.count(),
    activeAdmins: async () => store.activeAdmins(),
    accountPage: async (limit, offset) => store.accountPage(limit, offset),
    accountSummary: async (id) => store.accountSummary(id) ?? null,
    linkCount: async (accountId) => store.linkCount(accountId),
    setLastSignin: async (accountId, at, tx) => void storeOf(tx ?? db).setLastSignin(accountId, at),

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

    // One writer at a time: no other connection can commit the name between the check and the insert (a
    // transaction whose snapshot another commit has made stale cannot write: SQLITE_BUSY_SNAPSHOT).
    async createAccount(input, within) {
      return db.transaction(() => {
        if (store.accountByName(input.name)) return { ok: false as const, reason: 'name_taken' as const }
        const account = store.insertAccount(input.name, input.passwordHash, input.admin, input.now)
        const key = input.key ? insertKey(account.id, input.key, input.now) : null
        within?.(db, account, key)
        return { ok: true as const, account, key }
      })()
    },

    async setDisabled(name, at, actorId, within) {
      return db.transaction(() => {
        const account = store.accountByName(name)
        if (!account) return { ok: false as const, reason: 'not_found' as const }
        if (at !== null) {
          const refusal = refused(account, actorId)
          if (refusal) return refusal
        }
        store.setDisabled(account.id, at)
        const sessionsEnded = at !== null ? store.endSessions(account.id) : 0
        within?.(db, account, sessionsEnded)
        return { ok: true as const, account, sessionsEnded }
      })()
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
