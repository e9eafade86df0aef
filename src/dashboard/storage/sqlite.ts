// The dashboard's state on SQLite (contract.ts). Only hashes of session tokens are stored (web_sessions, migration 8);
// form_tokens is migration 10, flashes migration 20, pending_imports migration 24.
import type { Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import { syncWithin } from '../../db/sqlite/within'
import type {
  FlashRow,
  FlashRows,
  FormTokenRow,
  FormTokenRows,
  PendingImportRow,
  PendingImportRows,
  SessionRow,
  SessionRows,
  SessionWithAccount,
} from './contract'

export function sqliteSessionRows(db: Db): SessionRows<Db> {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insert = q.query<SessionRow, [string, number, string, number, number, number]>(
    'INSERT INTO web_sessions (token_hash, account_id, csrf, created, expires, last_seen) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
  )
  const byHash = q.query<SessionWithAccount, [string]>(
    `SELECT s.*, a.name AS account_name, a.admin AS admin, a.disabled AS disabled
     FROM web_sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ?`,
  )
  const touch = q.query<unknown, [number, number, number]>(
    'UPDATE web_sessions SET last_seen = ?, expires = ? WHERE id = ?',
  )
  const remove = q.query<unknown, [number]>('DELETE FROM web_sessions WHERE id = ?')
  const removeOfAccount = q.query<unknown, [number]>('DELETE FROM web_sessions WHERE account_id = ?')
  // Keeps an account's newest `keep` sessions (a sign-in beyond them signs out the oldest).
  const trim = q.query<unknown, [number, number, number]>(
    `DELETE FROM web_sessions WHERE account_id = ? AND id NOT IN
       (SELECT id FROM web_sessions WHERE account_id = ? ORDER BY id DESC LIMIT ?)`,
  )
  const expired = q.query<unknown, [number]>(
    'DELETE FROM web_sessions WHERE id IN (SELECT id FROM web_sessions WHERE expires <= ? LIMIT 5000)',
  )

  return {
    create: async (s, keep, within) =>
      db.transaction(() => {
        const inserted = insert.get(s.tokenHash, s.accountId, s.csrf, s.now, s.expires, s.now)!
        trim.run(s.accountId, s.accountId, keep)
        const made = byHash.get(inserted.token_hash)!
        if (within) syncWithin(within(db, made))
        return made
      })(),
    byHash: async (tokenHash) => byHash.get(tokenHash) ?? null,
    touch: async (id, now, expires) => void touch.run(now, expires, id),
    remove: async (id) => void remove.run(id),
    removeOfAccount: async (accountId) => removeOfAccount.run(accountId).changes,
    sweep: async (now) => expired.run(now).changes,
  }
}

/** The form token statements of each SQLite connection (a claim runs on the caller's), prepared once. */
const tokenStatements = new WeakMap<Db, ReturnType<typeof formTokenStatements>>()
function formTokenStatements(db: Db) {
  const q = lazyStatements(db)
  return {
    insert: q.query<unknown, [string, number | null, string, number, string]>(
      'INSERT INTO form_tokens (token, session_id, fingerprint, created, result) VALUES (?, ?, ?, ?, ?) ON CONFLICT (token) DO NOTHING',
    ),
    byToken: q.query<FormTokenRow, [string]>('SELECT * FROM form_tokens WHERE token = ?'),
    // A few of the oldest at a time: each claim removes more than it adds, so the table holds about a day's.
    old: q.query<unknown, [number]>(
      'DELETE FROM form_tokens WHERE token IN (SELECT token FROM form_tokens WHERE created <= ? ORDER BY created LIMIT 20)',
    ),
  }
}
const tokensOf = (db: Db) => {
  let s = tokenStatements.get(db)
  if (!s) tokenStatements.set(db, (s = formTokenStatements(db)))
  return s
}

/** `tx` is a connection inside db.transaction; a claim is written (or throws) before its call returns. */
export function sqliteFormTokenRows(db: Db): FormTokenRows<Db> {
  const inTransaction = (tx: Db) => {
    if (!tx.inTransaction) throw new Error('form tokens: a token is claimed inside the transaction of its creation')
    return tokensOf(tx)
  }
  const insert = (tx: Db, token: string, sessionId: number | null, fingerprint: string, now: number, result: string) =>
    inTransaction(tx).insert.run(token, sessionId, fingerprint, now, result).changes === 1
  return {
    // Not async: the row is written (or the error thrown) inside the caller's synchronous transaction.
    claim: (tx, token, sessionId, fingerprint, now, result) =>
      Promise.resolve(insert(tx, token, sessionId, fingerprint, now, result)),
    claimIn(tx, token, sessionId, fingerprint, now, result, then) {
      if (insert(tx, token, sessionId, fingerprint, now, result))
        return Promise.resolve(syncWithin(then(tx, { claimed: true })))
      const first = tokensOf(tx).byToken.get(token) ?? null
      return Promise.resolve(syncWithin(then(tx, { claimed: false, first })))
    },
    byToken: async (token, tx) => tokensOf(tx ?? db).byToken.get(token) ?? null,
    // Not async: in a claim's transaction it runs, or throws, before it returns.
    removeOld: (before, tx) => Promise.resolve(tokensOf(tx ?? db).old.run(before).changes),
  }
}

/** A row holds only hashes (id, owner) and a sealed value: nothing in it reads without the owner's secret. */
export function sqliteFlashRows(db: Db): FlashRows {
  const q = lazyStatements(db)
  const insert = q.query<unknown, [string, number, string, string, Uint8Array, number, number]>(
    'INSERT OR REPLACE INTO flashes (id, pool, owner, kind, value, size, expires) VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
  const trimOwner = q.query<unknown, [string, string, number]>(
    'DELETE FROM flashes WHERE owner = ? AND seq NOT IN (SELECT seq FROM flashes WHERE owner = ? ORDER BY seq DESC LIMIT ?)',
  )
  // The newest rows within both bounds stay: a running count and sum from the newest down.
  const trimPool = q.query<unknown, [number, number, number]>(
    `DELETE FROM flashes WHERE seq IN (SELECT seq FROM (
       SELECT seq, row_number() OVER w AS n, sum(size) OVER w AS total FROM flashes WHERE pool = ?
       WINDOW w AS (ORDER BY seq DESC)) WHERE n > ? OR total > ?)`,
  )
  const take = q.query<FlashRow, [string]>(
    'DELETE FROM flashes WHERE id = ? RETURNING id, pool, owner, kind, value, size, expires',
  )
  const takeOwned = q.query<FlashRow, [string, string, string]>(
    'DELETE FROM flashes WHERE id = ? AND owner = ? AND kind = ? RETURNING id, pool, owner, kind, value, size, expires',
  )
  const sweep = q.query<unknown, [number]>(
    'DELETE FROM flashes WHERE seq IN (SELECT seq FROM flashes WHERE expires <= ? LIMIT 5000)',
  )
  const usage = q.query<{ rows: number; bytes: number }, [number]>(
    'SELECT count(*) AS rows, coalesce(sum(size), 0) AS bytes FROM flashes WHERE pool = ?',
  )
  return {
    put: async (r, bounds) =>
      db.transaction(() => {
        insert.run(r.id, r.pool, r.owner, r.kind, r.value, r.size, r.expires)
        trimOwner.run(r.owner, r.owner, bounds.perOwner)
        trimPool.run(r.pool, bounds.rows, bounds.bytes)
      })(),
    take: async (id, owner) => (owner ? takeOwned.get(id, owner.owner, owner.kind) : take.get(id)) ?? null,
    sweep: async (now) => sweep.run(now).changes,
    usage: async (pool) => usage.get(pool)!,
  }
}

/** Pending imports: one transaction checks the bytes bound and trims the account, so no two uploads pass it together. */
export function sqlitePendingImportRows(db: Db): PendingImportRows {
  const q = lazyStatements(db)
  const expired = q.query<unknown, [number]>(
    'DELETE FROM pending_imports WHERE id IN (SELECT id FROM pending_imports WHERE expires <= ? LIMIT 100)',
  )
  // What would stay of the others: every row but the account's oldest beyond its newest `keep`.
  const kept = q.query<{ bytes: number }, [number, number, number]>(
    `SELECT coalesce(sum(size), 0) AS bytes FROM pending_imports WHERE account_id != ? OR id IN
       (SELECT id FROM pending_imports WHERE account_id = ? ORDER BY created DESC, rowid DESC LIMIT ?)`,
  )
  const insert = q.query<unknown, [string, number, string, string, string, number, number, number]>(
    `INSERT INTO pending_imports (id, account_id, name, format, body, size, state, result, created, expires)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', NULL, ?, ?)`,
  )
  const trim = q.query<unknown, [number, number, number]>(
    `DELETE FROM pending_imports WHERE account_id = ? AND id NOT IN
       (SELECT id FROM pending_imports WHERE account_id = ? ORDER BY created DESC, rowid DESC LIMIT ?)`,
  )
  const get = q.query<PendingImportRow, [string, number, number]>(
    'SELECT * FROM pending_imports WHERE id = ? AND account_id = ? AND expires > ?',
  )
  const start = q.query<unknown, [string, number, number]>(
    "UPDATE pending_imports SET state = 'running' WHERE id = ? AND account_id = ? AND state = 'pending' AND expires > ?",
  )
  const done = q.query<unknown, [string, number, string, number]>(
    "UPDATE pending_imports SET state = 'done', result = ?, expires = ? WHERE id = ? AND account_id = ? AND state = 'running'",
  )
  const back = q.query<unknown, [string, number]>(
    "UPDATE pending_imports SET state = 'pending' WHERE id = ? AND account_id = ? AND state = 'running'",
  )
  return {
    put: async (r, bounds, now) =>
      db.transaction(() => {
        expired.run(now)
        const keep = bounds.perAccount - 1
        if (kept.get(r.account_id, r.account_id, keep)!.bytes + r.size > bounds.bytes) return false
        trim.run(r.account_id, r.account_id, keep)
        insert.run(r.id, r.account_id, r.name, r.format, r.body, r.size, r.created, r.expires)
        return true
      })(),
    get: async (id, accountId, now) => get.get(id, accountId, now) ?? null,
    start: async (id, accountId, now) => start.run(id, accountId, now).changes === 1,
    settle: async (id, accountId, result, expires) =>
      void (result === null ? back.run(id, accountId) : done.run(result, expires, id, accountId)),
    sweep: async (now) => expired.run(now).changes,
  }
}
