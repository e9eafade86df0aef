// The dashboard's state on PostgreSQL (contract.ts), for any number of nodes sharing one database: a session made
// on one node is found by every other.
import type { SQL, TransactionSQL } from 'bun'
import type {
  FlashRow,
  FlashRows,
  FormTokenRow,
  FormTokenRows,
  PendingImportRow,
  PendingImportRows,
  SessionRows,
  SessionWithAccount,
} from './contract'

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
    // Locks the account's row first (FOR NO KEY UPDATE): two sign-ins of one account take turns, so each trim
    // sees every committed session and the account keeps exactly `keep`.
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
      return (
        await sql`DELETE FROM web_sessions WHERE id IN (SELECT id FROM web_sessions WHERE expires <= ${now} LIMIT 5000)`
      ).count
    },
  }
}

// ON CONFLICT DO NOTHING: a second claim of a token waits for the first transaction, then does nothing (it
// committed) or inserts (it rolled back).
const claim = async (
  tx: TransactionSQL,
  token: string,
  sessionId: number | null,
  fingerprint: string,
  now: number,
  result: string,
) =>
  (
    await tx`INSERT INTO form_tokens (token, session_id, fingerprint, created, result)
             VALUES (${token}, ${sessionId}, ${fingerprint}, ${now}, ${result}) ON CONFLICT (token) DO NOTHING`
  ).count === 1

const byToken = async (sql: SQL, token: string): Promise<FormTokenRow | null> => {
  const [r] = await sql`SELECT token, session_id, fingerprint, created, result FROM form_tokens WHERE token = ${token}`
  return r
    ? {
        token: r.token,
        session_id: num(r.session_id),
        fingerprint: r.fingerprint,
        created: Number(r.created),
        result: r.result,
      }
    : null
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

const row = (r: Record<string, unknown>): FlashRow => ({
  id: r.id as string,
  pool: Number(r.pool),
  owner: r.owner as string,
  kind: r.kind as string,
  value: new Uint8Array(r.value as Uint8Array),
  size: Number(r.size),
  expires: Number(r.expires),
})

export function postgresFlashRows(sql: SQL): FlashRows {
  return {
    async put(r, bounds) {
      await sql.begin(async (tx) => {
        await tx`INSERT INTO flashes (id, pool, owner, kind, value, size, expires)
                 VALUES (${r.id}, ${r.pool}, ${r.owner}, ${r.kind}, ${r.value}, ${r.size}, ${r.expires})
                 ON CONFLICT (id) DO UPDATE SET pool = excluded.pool, owner = excluded.owner, kind = excluded.kind,
                   value = excluded.value, size = excluded.size, expires = excluded.expires`
        await tx`DELETE FROM flashes WHERE owner = ${r.owner} AND seq NOT IN
                   (SELECT seq FROM flashes WHERE owner = ${r.owner} ORDER BY seq DESC LIMIT ${bounds.perOwner})`
        await tx`DELETE FROM flashes WHERE seq IN (SELECT seq FROM (
                   SELECT seq, row_number() OVER w AS n, sum(size) OVER w AS total FROM flashes WHERE pool = ${r.pool}
                   WINDOW w AS (ORDER BY seq DESC)) t WHERE n > ${bounds.rows} OR total > ${bounds.bytes})`
      })
    },
    // DELETE … RETURNING: of two nodes taking one row, one gets it; the other waits for its commit, finds nothing.
    async take(id, owner) {
      const [r] = owner
        ? await sql`DELETE FROM flashes WHERE id = ${id} AND owner = ${owner.owner} AND kind = ${owner.kind}
                    RETURNING id, pool, owner, kind, value, size, expires`
        : await sql`DELETE FROM flashes WHERE id = ${id} RETURNING id, pool, owner, kind, value, size, expires`
      return r ? row(r) : null
    },
    async sweep(now) {
      return (await sql`DELETE FROM flashes WHERE seq IN (SELECT seq FROM flashes WHERE expires <= ${now} LIMIT 5000)`)
        .count
    },
    async usage(pool) {
      const [r] = await sql`SELECT count(*) AS rows, coalesce(sum(size), 0) AS bytes FROM flashes WHERE pool = ${pool}`
      return { rows: Number(r.rows), bytes: Number(r.bytes) }
    },
  }
}

/** The advisory lock every upload takes in turn ("lbimport" in ASCII): the bytes bound is checked against committed rows. */
const PENDING_IMPORTS_LOCK = 0x6c62696d706f7274n

const pending = (r: Record<string, unknown>): PendingImportRow => ({
  id: r.id as string,
  account_id: Number(r.account_id),
  name: r.name as string,
  format: r.format as string,
  body: r.body as string,
  size: Number(r.size),
  state: r.state as PendingImportRow['state'],
  result: (r.result as string | null) ?? null,
  created: Number(r.created),
  expires: Number(r.expires),
})

export function postgresPendingImportRows(sql: SQL): PendingImportRows {
  return {
    async put(r, bounds, now) {
      return sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${PENDING_IMPORTS_LOCK.toString()}::bigint)`
        await tx`DELETE FROM pending_imports WHERE id IN (SELECT id FROM pending_imports WHERE expires <= ${now} LIMIT 100)`
        const keep = bounds.perAccount - 1
        const [k] =
          await tx`SELECT coalesce(sum(size), 0) AS bytes FROM pending_imports WHERE account_id != ${r.account_id}
          OR id IN (SELECT id FROM pending_imports WHERE account_id = ${r.account_id} ORDER BY created DESC, id DESC LIMIT ${keep})`
        if (Number(k.bytes) + r.size > bounds.bytes) return false
        await tx`DELETE FROM pending_imports WHERE account_id = ${r.account_id} AND id NOT IN
          (SELECT id FROM pending_imports WHERE account_id = ${r.account_id} ORDER BY created DESC, id DESC LIMIT ${keep})`
        await tx`INSERT INTO pending_imports (id, account_id, name, format, body, size, state, result, created, expires)
          VALUES (${r.id}, ${r.account_id}, ${r.name}, ${r.format}, ${r.body}, ${r.size}, 'pending', NULL, ${r.created}, ${r.expires})`
        return true
      })
    },
    async get(id, accountId, now) {
      const [r] =
        await sql`SELECT * FROM pending_imports WHERE id = ${id} AND account_id = ${accountId} AND expires > ${now}`
      return r ? pending(r) : null
    },
    // One UPDATE: of two nodes confirming at once, the second waits for the first's commit and matches nothing.
    async start(id, accountId, now) {
      return (
        (
          await sql`UPDATE pending_imports SET state = 'running'
          WHERE id = ${id} AND account_id = ${accountId} AND state = 'pending' AND expires > ${now}`
        ).count === 1
      )
    },
    async settle(id, accountId, result, expires) {
      if (result === null)
        await sql`UPDATE pending_imports SET state = 'pending' WHERE id = ${id} AND account_id = ${accountId} AND state = 'running'`
      else
        await sql`UPDATE pending_imports SET state = 'done', result = ${result}, expires = ${expires}
          WHERE id = ${id} AND account_id = ${accountId} AND state = 'running'`
    },
    async sweep(now) {
      return (
        await sql`DELETE FROM pending_imports WHERE id IN (SELECT id FROM pending_imports WHERE expires <= ${now} LIMIT 100)`
      ).count
    },
  }
}
