// The audit log's rows on PostgreSQL: ids from the identity column (two nodes never draw the same one); page has one
// fixed statement per combination of filters; removeOlder takes its batch FOR UPDATE SKIP LOCKED (sweeps never wait).
import type { SQL, TransactionSQL } from 'bun'
import type { AuditInsert, AuditRow, AuditRows } from './contract'

/** bigint columns come back from Bun.SQL as text; every number here stays far below 2^53. */
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))

const row = (r: Record<string, unknown>): AuditRow => ({
  id: Number(r.id),
  at: Number(r.at),
  actor_kind: r.actor_kind as AuditRow['actor_kind'],
  actor_id: num(r.actor_id),
  actor_name: (r.actor_name ?? null) as string | null,
  action: r.action as string,
  target: r.target as string,
  detail: r.detail as string,
  address: r.address as string,
})

const insert = async (tx: SQL, r: AuditInsert) => {
  const [made] = await tx`INSERT INTO audit_log (at, actor_kind, actor_id, actor_name, action, target, detail, address)
                          VALUES (${r.at}, ${r.actorKind}, ${r.actorId}, ${r.actorName}, ${r.action}, ${r.target}, ${r.detail}, ${r.address}) RETURNING id`
  return Number(made.id)
}

export function postgresAuditRows(sql: SQL): AuditRows<TransactionSQL> {
  return {
    insert,
    insertAlone: (r) => insert(sql, r),

    async page(q) {
      // Numbers as bigint (MAX_SAFE_INTEGER stands for "no bound"), compared with the bigint columns as they are indexed.
      const [before, from, to, limit] = [String(q.before), String(q.from), String(q.to), q.limit]
      let rows
      if (q.actor !== null && q.action)
        rows = await sql`SELECT id, at, actor_kind, actor_id, actor_name, action, target, detail, address FROM audit_log
                          WHERE actor_name = ${q.actor} AND action >= ${q.action.from} AND action < ${q.action.to}
                            AND id < ${before}::bigint AND at >= ${from}::bigint AND at < ${to}::bigint ORDER BY id DESC LIMIT ${limit}`
      else if (q.actor !== null)
        rows = await sql`SELECT id, at, actor_kind, actor_id, actor_name, action, target, detail, address FROM audit_log
                          WHERE actor_name = ${q.actor} AND id < ${before}::bigint AND at >= ${from}::bigint AND at < ${to}::bigint ORDER BY id DESC LIMIT ${limit}`
      else if (q.action)
        rows = await sql`SELECT id, at, actor_kind, actor_id, actor_name, action, target, detail, address FROM audit_log
                          WHERE action >= ${q.action.from} AND action < ${q.action.to}
                            AND id < ${before}::bigint AND at >= ${from}::bigint AND at < ${to}::bigint ORDER BY id DESC LIMIT ${limit}`
      else
        rows = await sql`SELECT id, at, actor_kind, actor_id, actor_name, action, target, detail, address FROM audit_log
                          WHERE id < ${before}::bigint AND at >= ${from}::bigint AND at < ${to}::bigint ORDER BY id DESC LIMIT ${limit}`
      return rows.map(row)
    },

    async since(from, afterId, limit) {
      const rows =
        await sql`SELECT id, at, actor_kind, actor_id, actor_name, action, target, detail, address FROM audit_log
                              WHERE at >= ${String(from)}::bigint AND id > ${String(afterId)}::bigint ORDER BY id LIMIT ${limit}`
      return rows.map(row)
    },

    async removeOlder(before, limit) {
      return (
        await sql`DELETE FROM audit_log WHERE id IN
                    (SELECT id FROM audit_log WHERE at < ${String(before)}::bigint ORDER BY at LIMIT ${limit} FOR UPDATE SKIP LOCKED)`
      ).count
    },
  }
}
