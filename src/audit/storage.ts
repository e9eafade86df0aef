// The audit log's rows behind one async interface, on either engine (issue 22, SPEC §11). The SQLite
// implementation wraps the synchronous store (store.ts) as it is; the PostgreSQL one is storage-postgres.ts.
// One test suite (test/db/audit-storage.test.ts) runs against both.
//
// What both promise:
// - insert runs INSIDE the caller's transaction (`tx`: the SQLite connection inside db.transaction, or the
//   handle of a PostgreSQL sql.begin): a row is part of its change, committed or rolled back with it. On
//   SQLite the row is written, or the error thrown, before the call returns, so a synchronous transaction
//   calls it without await.
// - Ids grow and are never reused, not even after every row was swept (SQLite: AUTOINCREMENT; PostgreSQL:
//   an identity column). page is newest first and since oldest first, both by id, on both engines; text
//   filters compare bytes (SQLite's BINARY, PostgreSQL's COLLATE "C"), so an action group is the same range.
// - Any number of nodes writing at once lose nothing; two sweeping at once remove each row once.
//
// What differs: on PostgreSQL an id is drawn when the row is inserted, not when it commits, so for a moment a
// committed row can have a higher id than one still being written on another node. A reader paging `since`
// an id may then pass over that slower row; `linkbox audit --since` reads the log once, from a time, and
// does not follow it.
import type { Db } from '../db/sqlite'
import { createAuditStore, type AuditInsert, type AuditQuery, type AuditRow } from './store'

export type { ActorKind, AuditInsert, AuditQuery, AuditRow } from './store'

export interface AuditRows<Tx> {
  /** Inside the caller's transaction: the row of its change; its id. */
  insert(tx: Tx, row: AuditInsert): Promise<number>
  /** A row that is no change's (a failed sign-in: nothing else is written), in a statement of its own; its id. */
  insertAlone(row: AuditInsert): Promise<number>
  /** One page, newest first (by id), filtered (see AuditQuery). */
  page(q: AuditQuery): Promise<AuditRow[]>
  /** Rows from `from` (unix ms) on, after row `afterId`, oldest first (by id). */
  since(from: number, afterId: number, limit: number): Promise<AuditRow[]>
  /** Up to `limit` of the rows older than `before` (unix ms), oldest first; how many went. */
  removeOlder(before: number, limit: number): Promise<number>
}

/** The audit stores of each SQLite connection, prepared once. */
const stores = new WeakMap<Db, ReturnType<typeof createAuditStore>>()
const storeOf = (db: Db) => {
  let store = stores.get(db)
  if (!store) stores.set(db, (store = createAuditStore(db)))
  return store
}

/** The SQLite audit store as it is, behind the async interface; `tx` is a connection inside db.transaction. */
export function sqliteAuditRows(db: Db): AuditRows<Db> {
  const store = storeOf(db)
  return {
    // Not async: the row is written (or the error thrown) inside the caller's synchronous transaction.
    insert(tx, row) {
      if (!tx.inTransaction) throw new Error(`audit: ${row.action} must be written inside the transaction of its change`)
      return Promise.resolve(storeOf(tx).insert(row))
    },
    insertAlone: async (row) => store.insert(row),
    page: async (q) => store.page(q),
    since: async (from, afterId, limit) => store.since(from, afterId, limit),
    removeOlder: async (before, limit) => store.removeOlder(before, limit),
  }
}
