// The SQL of dashboard sessions (web_sessions, migration 8). Only hashes of session tokens are stored.
import type { Db } from '../db'

export interface SessionRow {
  id: number
  token_hash: string
  account_id: number
  csrf: string
  created: number
  expires: number
  last_seen: number
}
export interface SessionWithAccount extends SessionRow {
  account_name: string
  admin: number
  disabled: number | null
}

export function createSessionStore(db: Db) {
  const insert = db.query<SessionRow, [string, number, string, number, number, number]>(
    'INSERT INTO web_sessions (token_hash, account_id, csrf, created, expires, last_seen) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
  )
  const byHash = db.query<SessionWithAccount, [string]>(
    `SELECT s.*, a.name AS account_name, a.admin AS admin, a.disabled AS disabled
     FROM web_sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ?`,
  )
  const touch = db.query<unknown, [number, number, number]>('UPDATE web_sessions SET last_seen = ?, expires = ? WHERE id = ?')
  const remove = db.query<unknown, [number]>('DELETE FROM web_sessions WHERE id = ?')
  const removeOfAccount = db.query<unknown, [number]>('DELETE FROM web_sessions WHERE account_id = ?')
  // Keeps an account's newest `keep` sessions (a sign-in beyond them signs out the oldest).
  const trim = db.query<unknown, [number, number, number]>(
    `DELETE FROM web_sessions WHERE account_id = ? AND id NOT IN
       (SELECT id FROM web_sessions WHERE account_id = ? ORDER BY id DESC LIMIT ?)`,
  )
  const expired = db.query<unknown, [number]>('DELETE FROM web_sessions WHERE id IN (SELECT id FROM web_sessions WHERE expires <= ? LIMIT 5000)')

  return {
    insert: (tokenHash: string, accountId: number, csrf: string, now: number, expires: number) =>
      insert.get(tokenHash, accountId, csrf, now, expires, now)!,
    byHash: (tokenHash: string) => byHash.get(tokenHash),
    touch: (id: number, now: number, expires: number) => touch.run(now, expires, id),
    remove: (id: number) => remove.run(id),
    removeOfAccount: (accountId: number) => removeOfAccount.run(accountId).changes,
    trim: (accountId: number, keep: number) => trim.run(accountId, accountId, keep),
    sweep: (now: number) => expired.run(now).changes,
  }
}
export type SessionStore = ReturnType<typeof createSessionStore>
