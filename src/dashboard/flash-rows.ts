// The rows of flashes (migration 20; the rules are in flash.ts), behind one async interface on either engine:
// SQLite's here, PostgreSQL's in flash-rows-postgres.ts; test/db/state-storage.test.ts runs against both.
// A row holds only hashes (id, owner) and a sealed value: nothing in it reads without the owner's secret.
import type { Db } from '../db/sqlite'
import { lazyStatements } from '../db/sqlite/lazy'

export interface FlashRow {
  /** SHA-256 of the id the redirect's URL carries. */
  id: string
  /** 0 sessions', 1 visitors', 2 started sign-ins: each pool has its own bounds. */
  pool: number
  /** SHA-256 of the owner (a session with its token, a visitor's cookie). */
  owner: string
  kind: string
  /** The sealed value (flash.ts). */
  value: Uint8Array
  /** What the pool's size bound counts for it. */
  size: number
  expires: number
}

/** What a pool may hold: per owner, in rows, in bytes (the oldest go first). */
export interface FlashBounds {
  perOwner: number
  rows: number
  bytes: number
}

export interface FlashRows {
  /** Stores the row (replacing one of the same id), then trims its owner and its pool to `bounds`, oldest first. */
  put(row: FlashRow, bounds: FlashBounds): Promise<void>
  /**
   * Deletes and returns the row of `id` (in one statement: two nodes cannot both take it); with `owner` and
   * `kind`, only when they match (another owner's row is left alone). Null: none.
   */
  take(id: string, owner?: { owner: string; kind: string }): Promise<FlashRow | null>
  /** Rows expired at `now` (up to 5,000 a call); how many. */
  sweep(now: number): Promise<number>
  /** Rows and bytes of a pool (tests, bounds). */
  usage(pool: number): Promise<{ rows: number; bytes: number }>
}

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
  const take = q.query<FlashRow, [string]>('DELETE FROM flashes WHERE id = ? RETURNING id, pool, owner, kind, value, size, expires')
  const takeOwned = q.query<FlashRow, [string, string, string]>(
    'DELETE FROM flashes WHERE id = ? AND owner = ? AND kind = ? RETURNING id, pool, owner, kind, value, size, expires',
  )
  const sweep = q.query<unknown, [number]>('DELETE FROM flashes WHERE seq IN (SELECT seq FROM flashes WHERE expires <= ? LIMIT 5000)')
  const usage = q.query<{ rows: number; bytes: number }, [number]>('SELECT count(*) AS rows, coalesce(sum(size), 0) AS bytes FROM flashes WHERE pool = ?')
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
