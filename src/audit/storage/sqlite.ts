// The audit log's rows on SQLite (audit_log, migration 16); `tx` is a connection inside db.transaction.
import type { Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import type { AuditInsert, AuditQuery, AuditRow, AuditRows } from './contract'

const COLUMNS = 'id, at, actor_kind, actor_id, actor_name, action, target, detail, address'
type Args = [number, number, number, number]

/** The statements of one connection, prepared at their first use (db/sqlite/lazy.ts). */
function prepare(db: Db) {
  const q = lazyStatements(db)
  return {
    insert: q.query<{ id: number }, [number, string, number | null, string | null, string, string, string, string]>(
      `INSERT INTO audit_log (at, actor_kind, actor_id, actor_name, action, target, detail, address)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id`,
    ),
    // One fixed statement per combination of filters, so that each reads the index that fits (a single
    // statement with "?1 IS NULL OR …" would scan); never SQL text built per call.
    all: q.query<AuditRow, Args>(
      `SELECT ${COLUMNS} FROM audit_log WHERE id < ?1 AND at >= ?2 AND at < ?3 ORDER BY id DESC LIMIT ?4`,
    ),
    byActor: q.query<AuditRow, [...Args, string]>(
      `SELECT ${COLUMNS} FROM audit_log
       WHERE actor_name = ?5 AND id < ?1 AND at >= ?2 AND at < ?3 ORDER BY id DESC LIMIT ?4`,
    ),
    byAction: q.query<AuditRow, [...Args, string, string]>(
      `SELECT ${COLUMNS} FROM audit_log
       WHERE action >= ?5 AND action < ?6 AND id < ?1 AND at >= ?2 AND at < ?3 ORDER BY id DESC LIMIT ?4`,
    ),
    byBoth: q.query<AuditRow, [...Args, string, string, string]>(
      `SELECT ${COLUMNS} FROM audit_log WHERE actor_name = ?7 AND action >= ?5 AND action < ?6
       AND id < ?1 AND at >= ?2 AND at < ?3 ORDER BY id DESC LIMIT ?4`,
    ),
    // Oldest first from a time on, after a row id: `linkbox audit --since` reads the log in pages.
    since: q.query<AuditRow, [number, number, number]>(
      `SELECT ${COLUMNS} FROM audit_log WHERE at >= ?1 AND id > ?2 ORDER BY id LIMIT ?3`,
    ),
    // A batch at a time: a year of rows going at once must not hold the write lock for long.
    old: q.query<unknown, [number, number]>(
      'DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ?1 ORDER BY at LIMIT ?2)',
    ),
  }
}
type Statements = ReturnType<typeof prepare>

/** Each connection's statements, prepared once. */
const prepared = new WeakMap<Db, Statements>()
const statementsOf = (db: Db) => {
  let s = prepared.get(db)
  if (!s) prepared.set(db, (s = prepare(db)))
  return s
}

const insert = (s: Statements, r: AuditInsert) =>
  s.insert.get(r.at, r.actorKind, r.actorId, r.actorName, r.action, r.target, r.detail, r.address)!.id

function page(s: Statements, q: AuditQuery): AuditRow[] {
  const args: Args = [q.before, q.from, q.to, q.limit]
  if (q.actor !== null && q.action) return s.byBoth.all(...args, q.action.from, q.action.to, q.actor)
  if (q.actor !== null) return s.byActor.all(...args, q.actor)
  if (q.action) return s.byAction.all(...args, q.action.from, q.action.to)
  return s.all.all(...args)
}

export function sqliteAuditRows(db: Db): AuditRows<Db> {
  const s = statementsOf(db)
  return {
    // Not async: the row is written (or the error thrown) inside the caller's synchronous transaction.
    insert(tx, row) {
      if (!tx.inTransaction)
        throw new Error(`audit: ${row.action} must be written inside the transaction of its change`)
      return insert(statementsOf(tx), row)
    },
    insertAlone: async (row) => insert(s, row),
    page: async (q) => page(s, q),
    since: async (from, afterId, limit) => s.since.all(from, afterId, limit),
    removeOlder: async (before, limit) => s.old.run(before, limit).changes,
  }
}
