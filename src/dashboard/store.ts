// The SQL of dashboard sessions (web_sessions, migration 8). Only hashes of session tokens are stored.
import type { Db } from '../db/sqlite'
import { lazyStatements } from '../db/sqlite/lazy'

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
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insert = q.query<SessionRow, [string, number, string, number, number, number]>(
    'INSERT INTO web_sessions (token_hash, account_id, csrf, created, expires, last_seen) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
  )
  const byHash = q.query<SessionWithAccount, [string]>(
    `SELECT s.*, a.name AS account_name, a.admin AS admin, a.disabled AS disabled
     FROM web_sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ?`,
  )
  const touch = q.query<unknown, [number, number, number]>('UPDATE web_sessions SET last_seen = ?, expires = ? WHERE id = ?')
  const remove = q.query<unknown, [number]>('DELETE FROM web_sessions WHERE id = ?')
  const removeOfAccount = q.query<unknown, [number]>('DELETE FROM web_sessions WHERE account_id = ?')
  // Keeps an account's newest `keep` sessions (a sign-in beyond them signs out the oldest).
  const trim = q.query<unknown, [number, number, number]>(
    `DELETE FROM web_sessions WHERE account_id = ? AND id NOT IN
       (SELECT id FROM web_sessions WHERE account_id = ? ORDER BY id DESC LIMIT ?)`,
  )
  const expired = q.query<unknown, [number]>('DELETE FROM web_sessions WHERE id IN (SELECT id FROM web_sessions WHERE expires <= ? LIMIT 5000)')

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

// The SQL of one-time form tokens (form_tokens, migration 10; the rules are in form-tokens.ts).
export interface FormTokenRow {
  token: string
  session_id: number | null
  fingerprint: string
  created: number
  result: string
}

export function createFormTokenStore(db: Db) {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insert = q.query<unknown, [string, number | null, string, number, string]>(
    'INSERT INTO form_tokens (token, session_id, fingerprint, created, result) VALUES (?, ?, ?, ?, ?) ON CONFLICT (token) DO NOTHING',
  )
  const byToken = q.query<FormTokenRow, [string]>('SELECT * FROM form_tokens WHERE token = ?')
  // A few of the oldest at a time: each claim removes more than it adds, so the table holds about a day's.
  const old = q.query<unknown, [number]>(
    'DELETE FROM form_tokens WHERE token IN (SELECT token FROM form_tokens WHERE created <= ? ORDER BY created LIMIT 20)',
  )
  return {
    /** False when the token is there already. */
    insert: (token: string, sessionId: number | null, fingerprint: string, now: number, result: string) =>
      insert.run(token, sessionId, fingerprint, now, result).changes === 1,
    byToken: (token: string) => byToken.get(token),
    removeOld: (before: number) => old.run(before).changes,
  }
}
