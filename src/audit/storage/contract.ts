// The audit log's rows on either engine: `insert` runs in the caller's transaction (on SQLite written before it
// returns, so a synchronous `within` calls it); ids grow and are never reused. Design notes: ARCHITECTURE (audit).
import type { Written } from '../../db/written'

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
 * What a page of the log is filtered by: an actor's name, an action range (exact: [a, a + "\u0001"), a group
 * "account." as ["account.", "account/")), a time range [from, to) and the keyset cursor (ids below `before`).
 */
export interface AuditQuery {
  actor: string | null
  action: { from: string; to: string } | null
  from: number
  to: number
  before: number
  limit: number
}

export interface AuditRows<Tx> {
  /** Inside the caller's transaction: the row of its change; its id. */
  insert(tx: Tx, row: AuditInsert): Written<number>
  /** A row that is no change's (a failed sign-in: nothing else is written), in a statement of its own; its id. */
  insertAlone(row: AuditInsert): Promise<number>
  /** One page, newest first (by id), filtered (see AuditQuery). */
  page(q: AuditQuery): Promise<AuditRow[]>
  /** Rows from `from` (unix ms) on, after row `afterId`, oldest first (by id). */
  since(from: number, afterId: number, limit: number): Promise<AuditRow[]>
  /** Up to `limit` of the rows older than `before` (unix ms), oldest first; how many went. */
  removeOlder(before: number, limit: number): Promise<number>
}
