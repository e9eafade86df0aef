// Dashboard sessions and one-time form tokens on PostgreSQL (see session-store.ts for the contract), for any
// number of nodes sharing one database: a session made on one node is found by every other.
//
// create locks the account's row (FOR NO KEY UPDATE: it waits for another session being made for the same
// account, not for the foreign-key checks of other tables) before inserting, so two nodes signing one
// account in at once take turns, and each trim sees every committed session: the account keeps exactly
// `keep`, the newest by id. A form token's claim is INSERT … ON CONFLICT DO NOTHING: a second claim of the
// same token waits for the first transaction and then does nothing (it committed) or inserts (it rolled back).
import type { SQL, TransactionSQL } from 'bun'
import type { FormTokenRow, FormTokenRows, SessionRows, SessionWithAccount } from './session-store'

/** bigint columns come back from Bun.SQL as text; every number here stays far below 2^53. */
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))

const session = (r: Record<string, unknown>): SessionWithAccount => ({
  id: Number(r.id),
  token_hash: r.token_hash as string,
  account_id: Number(r.account_id),
  csrf: r.csrf as string,
  created: Number(r.created),
  expires: Number(r.expires),
  last_seen: Number(r.last_seen),
  account_name: r.account_name as string,
  admin: Number(r.admin),
  disabled: num(r.disabled),
})

const byHash = (sql: SQL, tokenHash: string) => sql`
  SELECT s.id, s.token_hash, s.account_id, s.csrf, s.created, s.expires, s.last_seen, a.name AS account_name, a.admin, a.disabled
    FROM web_sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ${tokenHash}`

export function postgresSessionRows(sql: SQL): SessionRows<TransactionSQL> {
  return {
    async create(s, keep, within) {
      return sql.begin(async (tx) => {
        await tx`SELECT 1 FROM accounts WHERE id = ${s.accountId} FOR NO KEY UPDATE`
        await tx`INSERT INTO web_sessions (token_hash, account_id, csrf, created, expires, last_seen)
                 VALUES (${s.tokenHash}, ${s.accountId}, ${s.csrf}, ${s.now}, ${s.expires}, ${s.now})`
        await tx`DELETE FROM web_sessions WHERE account_id = ${s.accountId} AND id NOT IN
                   (SELECT id FROM web_sessions WHERE account_id = ${s.accountId} ORDER BY id DESC LIMIT ${keep})`
        const made = session((await byHash(tx, s.tokenHash))[0])
        if (within) await within(tx, made)
        return made
      })
    },
    async byHash(tokenHash) {
      const [row] = await byHash(sql, tokenHash)
      return row ? session(row) : null
    },
    async touch(id, now, expires) {
      await sql`UPDATE web_sessions SET last_seen = ${now}, expires = ${expires} WHERE id = ${id}`
    },
    async remove(id) {
      await sql`DELETE FROM web_sessions WHERE id = ${id}`
    },
    async removeOfAccount(accountId) {
      return (await sql`DELETE FROM web_sessions WHERE account_id = ${accountId}`).count
    },
    async sweep(now) {
      return (await sql`DELETE FROM web_sessions WHERE id IN (SELECT id FROM web_sessions WHERE expires <= ${now} LIMIT 5000)`).count
    },
  }
}

const claim = async (tx: TransactionSQL, token: string, sessionId: number | null, fingerprint: string, now: number, result: string) =>
  (
    await tx`INSERT INTO form_tokens (token, session_id, fingerprint, created, result)
             VALUES (${token}, ${sessionId}, ${fingerprint}, ${now}, ${result}) ON CONFLICT (token) DO NOTHING`
  ).count === 1

const byToken = async (sql: SQL, token: string): Promise<FormTokenRow | null> => {
  const [r] = await sql`SELECT token, session_id, fingerprint, created, result FROM form_tokens WHERE token = ${token}`
  return r ? { token: r.token, session_id: num(r.session_id), fingerprint: r.fingerprint, created: Number(r.created), result: r.result } : null
}

export function postgresFormTokenRows(sql: SQL): FormTokenRows<TransactionSQL> {
  return {
    claim,
    async claimIn(tx, token, sessionId, fingerprint, now, result, then) {
      // Not claimed: the first claim committed (ON CONFLICT waited for it), so this statement, a new
      // snapshot in READ COMMITTED, sees its row.
      if (await claim(tx, token, sessionId, fingerprint, now, result)) return then(tx, { claimed: true })
      return then(tx, { claimed: false, first: await byToken(tx, token) })
    },
    byToken: (token, tx) => byToken(tx ?? sql, token),
    async removeOld(before, tx) {
      // SKIP LOCKED: two nodes tidying at once each take other rows, neither waits for the other.
      return (
        await (tx ?? sql)`DELETE FROM form_tokens WHERE token IN
          (SELECT token FROM form_tokens WHERE created <= ${before} ORDER BY created LIMIT 20 FOR UPDATE SKIP LOCKED)`
      ).count
    },
  }
}
