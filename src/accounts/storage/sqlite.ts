// Accounts and API keys on SQLite: one writer, so each decision is one synchronous transaction of the connection.
import type { Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import { syncWithin } from '../../db/sqlite/within'
import {
  nameFolds,
  type AccountRow,
  type AccountStorage,
  type AccountSummaryRow,
  type Disabled,
  type KeyRow,
  type KeyWithAccount,
  type NewKey,
  type Refusal,
} from './contract'

const KEY_WITH_ACCOUNT =
  'SELECT k.*, a.name AS account_name, a.admin AS admin, a.disabled AS disabled FROM api_keys k JOIN accounts a ON a.id = k.account_id'
// One page of accounts: LIMIT bounds the rows, each count reads an index (link_counts is kept by triggers).
const SUMMARY = `SELECT a.id, a.name, a.admin, a.created, a.disabled, a.last_signin, (a.password_hash IS NOT NULL) AS has_password,
       EXISTS (SELECT 1 FROM oidc_identities i WHERE i.account_id = a.id) AS sso,
       coalesce((SELECT c.links FROM link_counts c WHERE c.owner = a.id), 0) AS links,
       (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked IS NULL) AS keys,
       (SELECT count(*) FROM mailboxes m WHERE m.account_id = a.id) AS mailboxes
     FROM accounts a`

/** The statements of one connection, prepared at their first use (db/sqlite/lazy.ts). */
function prepare(db: Db) {
  const q = lazyStatements(db)
  return {
    insertAccount: q.query<AccountRow, [string, string | null, number, number]>(
      'INSERT INTO accounts (name, password_hash, admin, created) VALUES (?, ?, ?, ?) RETURNING *',
    ),
    accountByName: q.query<AccountRow, [string]>('SELECT * FROM accounts WHERE name = ?'),
    accountByFoldedName: q.query<AccountRow, [string]>(
      'SELECT * FROM accounts WHERE lower(name) = lower(?) ORDER BY id LIMIT 1',
    ),
    accountById: q.query<AccountRow, [number]>('SELECT * FROM accounts WHERE id = ?'),
    activeAdmins: q.query<{ n: number }, []>('SELECT count(*) AS n FROM accounts WHERE admin = 1 AND disabled IS NULL'),
    setPassword: q.query<unknown, [string, number]>('UPDATE accounts SET password_hash = ? WHERE id = ?'),
    setLastSignin: q.query<unknown, [number, number]>('UPDATE accounts SET last_signin = ? WHERE id = ?'),
    // Its keys, sessions, mailboxes and webhooks go with it (ON DELETE CASCADE); its links stay (SET NULL).
    deleteAccount: q.query<unknown, [number]>('DELETE FROM accounts WHERE id = ?'),
    linksOf: q.query<{ n: number }, [number]>('SELECT count(*) AS n FROM links WHERE account_id = ?'),
    deleteLinksOf: q.query<{ code: string; domain: string }, [number]>(
      'DELETE FROM links WHERE account_id = ? RETURNING code, domain',
    ),
    // An account's dashboard sessions (web_sessions) end with a change of its password or state.
    endSessions: q.query<unknown, [number]>('DELETE FROM web_sessions WHERE account_id = ?'),
    count: q.query<{ n: number }, []>('SELECT count(*) AS n FROM accounts'),
    setDisabled: q.query<unknown, [number | null, number]>('UPDATE accounts SET disabled = ? WHERE id = ?'),
    insertKey: q.query<KeyRow, [number, string, string, string, string, number]>(
      'INSERT INTO api_keys (account_id, prefix, hash, scopes, label, created) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
    ),
    keyByHash: q.query<KeyWithAccount, [string]>(`${KEY_WITH_ACCOUNT} WHERE k.hash = ?`),
    keysOfAccount: q.query<KeyWithAccount, [number]>(`${KEY_WITH_ACCOUNT} WHERE k.account_id = ? ORDER BY k.id`),
    allKeys: q.query<KeyWithAccount, []>(`${KEY_WITH_ACCOUNT} ORDER BY k.id`),
    keysOfAccountNewest: q.query<KeyRow, [number, number]>(
      'SELECT * FROM api_keys WHERE account_id = ? ORDER BY id DESC LIMIT ?',
    ),
    activeKeyCount: q.query<{ n: number }, [number]>(
      'SELECT count(*) AS n FROM api_keys WHERE account_id = ? AND revoked IS NULL',
    ),
    revokeOfAccount: q.query<unknown, [number, number, number]>(
      'UPDATE api_keys SET revoked = ? WHERE id = ? AND account_id = ? AND revoked IS NULL',
    ),
    // Keeps an account's `keep` most recently revoked keys (older revoked ones are only history).
    pruneRevoked: q.query<unknown, [number, number, number]>(
      `DELETE FROM api_keys WHERE account_id = ? AND revoked IS NOT NULL AND id NOT IN
       (SELECT id FROM api_keys WHERE account_id = ? AND revoked IS NOT NULL ORDER BY revoked DESC, id DESC LIMIT ?)`,
    ),
    editOfAccount: q.query<KeyRow, [string, string, number, number]>(
      'UPDATE api_keys SET label = ?, scopes = ? WHERE id = ? AND account_id = ? AND revoked IS NULL RETURNING *',
    ),
    keysByPrefix: q.query<KeyRow, [string]>('SELECT * FROM api_keys WHERE prefix = ?'),
    keyById: q.query<KeyWithAccount, [number]>(`${KEY_WITH_ACCOUNT} WHERE k.id = ?`),
    revoke: q.query<unknown, [number, number]>('UPDATE api_keys SET revoked = ? WHERE id = ? AND revoked IS NULL'),
    touch: q.query<unknown, [number, number]>('UPDATE api_keys SET last_used = ? WHERE id = ?'),
    accountPage: q.query<AccountSummaryRow, [number, number]>(`${SUMMARY} ORDER BY a.id LIMIT ? OFFSET ?`),
    accountSummary: q.query<AccountSummaryRow, [number]>(`${SUMMARY} WHERE a.id = ?`),
    // Changes whenever another connection (another process: the CLI) has committed since the last call.
    dataVersion: q.query<{ data_version: number }, []>('PRAGMA data_version'),
  }
}
type Statements = ReturnType<typeof prepare>

/** Each connection's statements, prepared once (a `tx` is a connection inside db.transaction). */
const prepared = new WeakMap<Db, Statements>()
const statementsOf = (db: Db) => {
  let s = prepared.get(db)
  if (!s) prepared.set(db, (s = prepare(db)))
  return s
}

/** The account of this name in any case (Carol is carol): the exact spelling first (see nameFolds). */
const byNameAnyCase = (s: Statements, name: string) =>
  s.accountByName.get(name) ?? (nameFolds(name) ? s.accountByFoldedName.get(name) : null) ?? null

/** Whether `actorId` may disable or delete the account, on the rows read inside the transaction. */
function refused(s: Statements, account: AccountRow, actorId: number | null): Refusal | null {
  if (actorId === account.id) return { ok: false, reason: 'own_account', account }
  if (account.admin === 1 && account.disabled === null && s.activeAdmins.get()!.n <= 1)
    return { ok: false, reason: 'last_admin', account }
  return null
}

/** A disable (at: unix ms) or an enable (null) on a connection inside its transaction: setDisabled's decision. */
function disable(s: Statements, name: string, at: number | null, actorId: number | null): Disabled | Refusal {
  const account = s.accountByName.get(name)
  if (!account) return { ok: false, reason: 'not_found' }
  if (at !== null) {
    const refusal = refused(s, account, actorId)
    if (refusal) return refusal
  }
  s.setDisabled.run(at, account.id)
  const sessionsEnded = at !== null ? s.endSessions.run(account.id).changes : 0
  return { ok: true, account, sessionsEnded }
}

export function sqliteAccountStorage(db: Db): AccountStorage<Db> {
  const s = statementsOf(db)
  const insertKey = (accountId: number, k: NewKey, now: number) =>
    s.insertKey.get(accountId, k.prefix, k.hash, k.scopes, k.label, now)!
  const revoked = (id: number, within?: (tx: Db, key: KeyWithAccount) => unknown) => {
    const key = s.keyById.get(id)!
    if (within) syncWithin(within(db, key))
    return key
  }
  // PRAGMA data_version as keysChanged() last saw it: it moves when another connection commits.
  let seenVersion = s.dataVersion.get()!.data_version

  return {
    accountByName: async (name) => s.accountByName.get(name) ?? null,
    accountByNameAnyCase: async (name) => byNameAnyCase(s, name),
    accountById: async (id) => s.accountById.get(id) ?? null,
    count: async () => s.count.get()!.n,
    activeAdmins: async () => s.activeAdmins.get()!.n,
    accountPage: async (limit, offset) => s.accountPage.all(limit, offset),
    accountSummary: async (id) => s.accountSummary.get(id) ?? null,
    linkCount: async (accountId) => s.linksOf.get(accountId)!.n,
    // Not async: in `tx` (a sign-in's session) it is written, or throws, inside the caller's synchronous transaction.
    setLastSignin(accountId, at, tx) {
      statementsOf(tx ?? db).setLastSignin.run(at, accountId)
    },

    keyById: async (id) => s.keyById.get(id) ?? null,
    async activeKeyByHash(hash) {
      const row = s.keyByHash.get(hash)
      return row && row.revoked === null && row.disabled === null ? row : null
    },
    keysOfAccount: async (accountId) => s.keysOfAccount.all(accountId),
    allKeys: async () => s.allKeys.all(),
    keysByPrefix: async (prefix) => s.keysByPrefix.all(prefix),
    keysOfAccountNewest: async (accountId, limit) => s.keysOfAccountNewest.all(accountId, limit),
    activeKeyCount: async (accountId) => s.activeKeyCount.get(accountId)!.n,
    touchKey: async (id, now) => void s.touch.run(now, id),
    keysChanged() {
      const version = s.dataVersion.get()!.data_version
      if (version === seenVersion) return false
      seenVersion = version
      return true
    },

    // One writer at a time: no other connection can commit the name between the check and the insert (a
    // transaction whose snapshot another commit has made stale cannot write: SQLITE_BUSY_SNAPSHOT).
    async createAccount(input, within) {
      return db.transaction(() => {
        if (byNameAnyCase(s, input.name)) return { ok: false as const, reason: 'name_taken' as const }
        const account = s.insertAccount.get(input.name, input.passwordHash, input.admin ? 1 : 0, input.now)!
        const key = input.key ? insertKey(account.id, input.key, input.now) : null
        if (within) syncWithin(within(db, account, key))
        return { ok: true as const, account, key }
      })()
    },

    async setDisabled(name, at, actorId, within) {
      return db.transaction(() => {
        const outcome = disable(s, name, at, actorId)
        if (outcome.ok && within) syncWithin(within(db, outcome.account, outcome.sessionsEnded))
        return outcome
      })()
    },

    // Not async: it runs, and `then` may throw, inside the caller's synchronous transaction.
    disableIn(tx, name, at, actorId, then) {
      if (!tx.inTransaction) throw new Error('accounts: disableIn must run inside the transaction of its change')
      return syncWithin(then(tx, disable(statementsOf(tx), name, at, actorId)))
    },

    async deleteAccount(name, withLinks, actorId, within) {
      return db.transaction(() => {
        const account = s.accountByName.get(name)
        if (!account) return { ok: false as const, reason: 'not_found' as const }
        const refusal = refused(s, account, actorId)
        if (refusal) return refusal
        const links = s.linksOf.get(account.id)!.n
        const deletedLinks = withLinks
          ? s.deleteLinksOf.all(account.id).map((r) => ({ code: r.code, domain: r.domain }))
          : []
        s.deleteAccount.run(account.id)
        if (within) syncWithin(within(db, account, links))
        return { ok: true as const, account, links, deletedLinks }
      })()
    },

    async setPassword(name, hash, within) {
      return db.transaction(() => {
        const account = s.accountByName.get(name)
        if (!account) return null
        s.setPassword.run(hash, account.id)
        const sessionsEnded = s.endSessions.run(account.id).changes
        if (within) syncWithin(within(db, account, sessionsEnded))
        return { account, sessionsEnded }
      })()
    },

    async createKey(name, k, now, within) {
      return db.transaction(() => {
        const account = s.accountByName.get(name)
        if (!account) return null
        const key = insertKey(account.id, k, now)
        if (within) syncWithin(within(db, account, key))
        return { account, key }
      })()
    },

    async createKeyUnder(accountId, k, now, limits, within) {
      return db.transaction(() => {
        if (s.activeKeyCount.get(accountId)!.n >= limits.max) return { ok: false as const, reason: 'full' as const }
        s.pruneRevoked.run(accountId, accountId, limits.keepRevoked)
        const account = s.accountById.get(accountId)
        if (!account) return { ok: false as const, reason: 'not_found' as const }
        const key = insertKey(accountId, k, now)
        if (within) syncWithin(within(db, account, key))
        return { ok: true as const, account, key }
      })()
    },

    async editKeyOfAccount(id, accountId, label, scopes, within) {
      return db.transaction(() => {
        const before = s.keyById.get(id)
        const after = before ? s.editOfAccount.get(label, scopes, id, accountId) : null
        if (!before || !after) return null
        if (within) syncWithin(within(db, before, after))
        return { before, after }
      })()
    },

    async revokeKeyOfAccount(id, accountId, now, within) {
      return db.transaction(() =>
        s.revokeOfAccount.run(now, id, accountId).changes > 0 ? revoked(id, within) : null,
      )()
    },

    async revokeKey(id, now, within) {
      return db.transaction(() => (s.revoke.run(now, id).changes > 0 ? revoked(id, within) : null))()
    },
  }
}
