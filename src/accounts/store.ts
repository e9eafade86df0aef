import type { Db } from '../db/sqlite'
import { lazyStatements } from '../db/sqlite/lazy'

export interface AccountRow {
  id: number
  name: string
  password_hash: string | null
  admin: number
  created: number
  /** Unix ms when an admin disabled the account; null: active. */
  disabled: number | null
  /** Unix ms of the last password sign-in; null: never. */
  last_signin: number | null
}
export interface KeyRow {
  id: number
  account_id: number
  prefix: string
  hash: string
  scopes: string
  label: string
  created: number
  last_used: number | null
  revoked: number | null
}
export interface KeyWithAccount extends KeyRow {
  account_name: string
  admin: number
  disabled: number | null
}

/** An account as the admin's list shows it, with what it owns counted. */
export interface AccountSummaryRow {
  id: number
  name: string
  admin: number
  created: number
  disabled: number | null
  last_signin: number | null
  /** Has a dashboard password (can sign in). */
  has_password: number
  /** Made by (linked to) an OpenID provider: signs in there (oidc_identities). */
  sso: number
  links: number
  /** Keys not revoked. */
  keys: number
  mailboxes: number
}

/**
 * Account names compare without regard to case: `Carol` is taken when `carol` exists (issue 36). Names are
 * ASCII (ACCOUNT_NAME), so SQLite's lower() and PostgreSQL's (COLLATE "C") agree. The marketplace's made-up
 * names (marketplace:<user>, which no account may be given) stay exact: its users are told apart as it does.
 */
export const nameFolds = (name: string) => !name.includes(':')

export function createAccountStore(db: Db) {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insertAccount = q.query<AccountRow, [string, string | null, number, number]>(
    'INSERT INTO accounts (name, password_hash, admin, created) VALUES (?, ?, ?, ?) RETURNING *',
  )
  const accountByName = q.query<AccountRow, [string]>('SELECT * FROM accounts WHERE name = ?')
  const accountByFoldedName = q.query<AccountRow, [string]>('SELECT * FROM accounts WHERE lower(name) = lower(?) ORDER BY id LIMIT 1')
  const accountById = q.query<AccountRow, [number]>('SELECT * FROM accounts WHERE id = ?')
  const activeAdmins = q.query<{ n: number }, []>('SELECT count(*) AS n FROM accounts WHERE admin = 1 AND disabled IS NULL')
  const setPassword = q.query<unknown, [string, number]>('UPDATE accounts SET password_hash = ? WHERE id = ?')
  const setLastSignin = q.query<unknown, [number, number]>('UPDATE accounts SET last_signin = ? WHERE id = ?')
  // Its keys, sessions, mailboxes (their messages) and webhooks go with it (ON DELETE CASCADE); its links
  // stay, owned by nobody (ON DELETE SET NULL), unless they are deleted first (deleteLinksOf).
  const deleteAccount = q.query<unknown, [number]>('DELETE FROM accounts WHERE id = ?')
  const linksOf = q.query<{ n: number }, [number]>('SELECT count(*) AS n FROM links WHERE account_id = ?')
  const deleteLinksOf = q.query<{ code: string }, [number]>('DELETE FROM links WHERE account_id = ? RETURNING code')
  // An account's dashboard sessions (web_sessions, migration 8) end with a change of its password or state.
  const endSessions = q.query<unknown, [number]>('DELETE FROM web_sessions WHERE account_id = ?')
  const count = q.query<{ n: number }, []>('SELECT count(*) AS n FROM accounts')
  const setDisabled = q.query<unknown, [number | null, number]>('UPDATE accounts SET disabled = ? WHERE id = ?')
  const insertKey = q.query<KeyRow, [number, string, string, string, string, number]>(
    'INSERT INTO api_keys (account_id, prefix, hash, scopes, label, created) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
  )
  const keyByHash = q.query<KeyWithAccount, [string]>(
    `SELECT k.*, a.name AS account_name, a.admin AS admin, a.disabled AS disabled FROM api_keys k JOIN accounts a ON a.id = k.account_id
     WHERE k.hash = ?`,
  )
  const keysOfAccount = q.query<KeyWithAccount, [number]>(
    `SELECT k.*, a.name AS account_name, a.admin AS admin, a.disabled AS disabled FROM api_keys k JOIN accounts a ON a.id = k.account_id
     WHERE k.account_id = ? ORDER BY k.id`,
  )
  const allKeys = q.query<KeyWithAccount, []>(
    'SELECT k.*, a.name AS account_name, a.admin AS admin, a.disabled AS disabled FROM api_keys k JOIN accounts a ON a.id = k.account_id ORDER BY k.id',
  )
  // The dashboard's API section: one account's keys, newest first, bounded; and the account-scoped revoke.
  const keysOfAccountNewest = q.query<KeyRow, [number, number]>(
    'SELECT * FROM api_keys WHERE account_id = ? ORDER BY id DESC LIMIT ?',
  )
  const activeKeyCount = q.query<{ n: number }, [number]>('SELECT count(*) AS n FROM api_keys WHERE account_id = ? AND revoked IS NULL')
  const keyOfAccount = q.query<KeyRow, [number, number]>('SELECT * FROM api_keys WHERE id = ? AND account_id = ?')
  const revokeOfAccount = q.query<unknown, [number, number, number]>(
    'UPDATE api_keys SET revoked = ? WHERE id = ? AND account_id = ? AND revoked IS NULL',
  )
  // Keeps an account's `keep` most recently revoked keys (older revoked ones are only history).
  const pruneRevoked = q.query<unknown, [number, number, number]>(
    `DELETE FROM api_keys WHERE account_id = ? AND revoked IS NOT NULL AND id NOT IN
       (SELECT id FROM api_keys WHERE account_id = ? AND revoked IS NOT NULL ORDER BY revoked DESC, id DESC LIMIT ?)`,
  )
  // The owner's edit of an active key: its label and scopes (null: no such active key of this account).
  const editOfAccount = q.query<KeyRow, [string, string, number, number]>(
    'UPDATE api_keys SET label = ?, scopes = ? WHERE id = ? AND account_id = ? AND revoked IS NULL RETURNING *',
  )
  const keysByPrefix = q.query<KeyRow, [string]>('SELECT * FROM api_keys WHERE prefix = ?')
  const keyById = q.query<KeyWithAccount, [number]>(
    'SELECT k.*, a.name AS account_name, a.admin AS admin, a.disabled AS disabled FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ?',
  )
  const revoke = q.query<unknown, [number, number]>('UPDATE api_keys SET revoked = ? WHERE id = ? AND revoked IS NULL')
  const touch = q.query<unknown, [number, number]>('UPDATE api_keys SET last_used = ? WHERE id = ?')
  // One page of accounts: LIMIT bounds the rows, each count reads an index (link_counts is kept by triggers).
  const accountPage = q.query<AccountSummaryRow, [number, number]>(
    `SELECT a.id, a.name, a.admin, a.created, a.disabled, a.last_signin, (a.password_hash IS NOT NULL) AS has_password,
       EXISTS (SELECT 1 FROM oidc_identities i WHERE i.account_id = a.id) AS sso,
       coalesce((SELECT c.links FROM link_counts c WHERE c.owner = a.id), 0) AS links,
       (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked IS NULL) AS keys,
       (SELECT count(*) FROM mailboxes m WHERE m.account_id = a.id) AS mailboxes
     FROM accounts a ORDER BY a.id LIMIT ? OFFSET ?`,
  )
  const accountSummary = q.query<AccountSummaryRow, [number]>(
    `SELECT a.id, a.name, a.admin, a.created, a.disabled, a.last_signin, (a.password_hash IS NOT NULL) AS has_password,
       EXISTS (SELECT 1 FROM oidc_identities i WHERE i.account_id = a.id) AS sso,
       coalesce((SELECT c.links FROM link_counts c WHERE c.owner = a.id), 0) AS links,
       (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked IS NULL) AS keys,
       (SELECT count(*) FROM mailboxes m WHERE m.account_id = a.id) AS mailboxes
     FROM accounts a WHERE a.id = ?`,
  )
  // Changes whenever another connection (another process: the CLI) has committed since the last call.
  const dataVersion = q.query<{ data_version: number }, []>('PRAGMA data_version')

  return {
    insertAccount: (name: string, passwordHash: string | null, admin: boolean, now: number) =>
      insertAccount.get(name, passwordHash, admin ? 1 : 0, now)!,
    accountByName: (name: string) => accountByName.get(name),
    /** The account of this name in any case (Carol is carol): the exact spelling first (see nameFolds). */
    accountByNameAnyCase: (name: string) => accountByName.get(name) ?? (nameFolds(name) ? accountByFoldedName.get(name) : null) ?? null,
    accountById: (id: number) => accountById.get(id),
    activeAdmins: () => activeAdmins.get()!.n,
    setPassword: (id: number, hash: string) => setPassword.run(hash, id).changes > 0,
    setLastSignin: (id: number, at: number) => setLastSignin.run(at, id),
    deleteAccount: (id: number) => deleteAccount.run(id).changes > 0,
    linkCount: (id: number) => linksOf.get(id)!.n,
    deleteLinksOf: (id: number) => deleteLinksOf.all(id).map((r) => r.code),
    endSessions: (accountId: number) => endSessions.run(accountId).changes,
    keyById: (id: number) => keyById.get(id),
    count: () => count.get()!.n,
    accountPage: (limit: number, offset: number) => accountPage.all(limit, offset),
    accountSummary: (id: number) => accountSummary.get(id),
    setDisabled: (id: number, at: number | null) => setDisabled.run(at, id).changes > 0,
    insertKey: (accountId: number, prefix: string, hash: string, scopes: string, label: string, now: number) =>
      insertKey.get(accountId, prefix, hash, scopes, label, now)!,
    keyByHash: (hash: string) => keyByHash.get(hash),
    keysOfAccount: (accountId: number) => keysOfAccount.all(accountId),
    allKeys: () => allKeys.all(),
    keysByPrefix: (prefix: string) => keysByPrefix.all(prefix),
    keysOfAccountNewest: (accountId: number, limit: number) => keysOfAccountNewest.all(accountId, limit),
    activeKeyCount: (accountId: number) => activeKeyCount.get(accountId)!.n,
    keyOfAccount: (id: number, accountId: number) => keyOfAccount.get(id, accountId),
    revokeKeyOfAccount: (id: number, accountId: number, now: number) => revokeOfAccount.run(now, id, accountId).changes > 0,
    editKeyOfAccount: (id: number, accountId: number, label: string, scopes: string) => editOfAccount.get(label, scopes, id, accountId),
    pruneRevoked: (accountId: number, keep: number) => pruneRevoked.run(accountId, accountId, keep).changes,
    revokeKey: (id: number, now: number) => revoke.run(now, id).changes > 0,
    touchKey: (id: number, now: number) => touch.run(now, id),
    dataVersion: () => dataVersion.get()!.data_version,
  }
}
export type AccountStore = ReturnType<typeof createAccountStore>
