// The SQL of the audit log (audit_log, migration 16). The rules are in service.ts.
import type { Db } from '../db/sqlite'
import { lazyStatements } from '../db/sqlite/lazy'

export type ActorKind = 'account' | 'cli' | 'anonymous' | 'system'

export interface AuditRow {
  id: number
  /** Unix ms. */
  at: number
  actor_kind: ActorKind
  actor_id: number | null
  actor_name: string | null
  action: string
  target: string
  detail: string
  address: string
}

export interface AuditInsert {
  at: number
  actorKind: ActorKind
  actorId: number | null
  actorName: string | null
  action: string
  target: string
  detail: string
  address: string
}

/**
 * What a page of the log is filtered by: an actor's name, an action (exact: [action, action + "\u0001"),
 * or a group "account." as ["account.", "account/")), a time range [from, to) and the keyset cursor
 * (rows with an id below `before`). Each filter is a range of one indexed column.
 */
export interface AuditQuery {
  actor: string | null
  action: { from: string; to: string } | null
  from: number
  to: number
  before: number
  limit: number
}

const COLUMNS = 'id, at, actor_kind, actor_id, actor_name, action, target, detail, address'

export function createAuditStore(db: Db) {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insert = q.query<{ id: number }, [number, string, number | null, string | null, string, string, string, string]>(
    `INSERT INTO audit_log (at, actor_kind, actor_id, actor_name, action, target, detail, address)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id`,
  )
  // Four fixed statements, one per combination of filters, so that each reads the index that fits (a
  // single statement with "?1 IS NULL OR …" would scan); never SQL text built per call.
  type Args = [number, number, number, number]
  const all = q.query<AuditRow, Args>(
    `SELECT ${COLUMNS} FROM audit_log WHERE id < ?1 AND at >= ?2 AND at < ?3 ORDER BY id DESC LIMIT ?4`,
  )
  const byActor = q.query<AuditRow, [...Args, string]>(
    `SELECT ${COLUMNS} FROM audit_log WHERE actor_name = ?5 AND id < ?1 AND at >= ?2 AND at < ?3 ORDER BY id DESC LIMIT ?4`,
  )
  const byAction = q.query<AuditRow, [...Args, string, string]>(
    `SELECT ${COLUMNS} FROM audit_log WHERE action >= ?5 AND action < ?6 AND id < ?1 AND at >= ?2 AND at < ?3 ORDER BY id DESC LIMIT ?4`,
  )
  const byBoth = q.query<AuditRow, [...Args, string, string, string]>(
    `SELECT ${COLUMNS} FROM audit_log WHERE actor_name = ?7 AND action >= ?5 AND action < ?6 AND id < ?1 AND at >= ?2 AND at < ?3 ORDER BY id DESC LIMIT ?4`,
  )
  // Oldest first from a time on, after a row id: `linkbox audit --since` reads the log in pages.
  const since = q.query<AuditRow, [number, number, number]>(
    `SELECT ${COLUMNS} FROM audit_log WHERE at >= ?1 AND id > ?2 ORDER BY id LIMIT ?3`,
  )
  // A batch at a time: a year of rows going at once must not hold the write lock for long.
  const old = q.query<unknown, [number, number]>('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ?1 ORDER BY at LIMIT ?2)')

  return {
    insert: (r: AuditInsert) => insert.get(r.at, r.actorKind, r.actorId, r.actorName, r.action, r.target, r.detail, r.address)!.id,
    page(q: AuditQuery): AuditRow[] {
      const args: Args = [q.before, q.from, q.to, q.limit]
      if (q.actor !== null && q.action) return byBoth.all(...args, q.action.from, q.action.to, q.actor)
      if (q.actor !== null) return byActor.all(...args, q.actor)
      if (q.action) return byAction.all(...args, q.action.from, q.action.to)
      return all.all(...args)
    },
    since: (from: number, afterId: number, limit: number) => since.all(from, afterId, limit),
    removeOlder: (before: number, limit: number) => old.run(before, limit).changes,
  }
}
export type AuditStore = ReturnType<typeof createAuditStore>
