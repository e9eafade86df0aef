// The write-ahead log's upkeep for SQLite's two writers: the main connection never checkpoints (a commit inside a
// request would copy pages), the click writer's connection does (clicks/storage/sqlite-thread.ts).
import { Database } from 'bun:sqlite'
import type { Db } from './index'

/**
 * The click writer's own connection: it checkpoints after a commit that leaves the WAL over 10,000 pages
 * (40 MB), not SQLite's 1,000 — a big batch is ~30 commits of ~1,500 pages, and a checkpoint after each one
 * doubled its time (2.5 s → 1.1 s for 14,000 links). A 16 MiB page cache keeps busy links' pages between commits.
 */
export function openWriterConnection(path: string): Database {
  const db = new Database(path, { readwrite: true, strict: true })
  try {
    db.exec('PRAGMA busy_timeout = 5000')
    db.exec('PRAGMA synchronous = NORMAL')
    db.exec('PRAGMA foreign_keys = ON')
    db.exec('PRAGMA wal_autocheckpoint = 10000')
    db.exec('PRAGMA cache_size = -16384')
    return db
  } catch (err) {
    db.close()
    throw err
  }
}

/** A PASSIVE checkpoint copies what it can without waiting; TRUNCATE (at close, not waiting) empties the WAL. */
export function checkpoint(db: Db, mode: 'PASSIVE' | 'TRUNCATE'): void {
  if (mode === 'TRUNCATE') db.exec('PRAGMA busy_timeout = 0')
  db.exec(`PRAGMA wal_checkpoint(${mode})`)
}

/** Automatic checkpoints after a commit leaves the WAL over `pages` (0: never, on the main connection). */
export function autocheckpoint(db: Db, pages: number): void {
  db.exec(`PRAGMA wal_autocheckpoint = ${Math.trunc(pages)}`)
}

/** Changes when another connection commits: a cheap "did anything change since?". */
export const dataVersion = (db: Db): number =>
  (db.query('PRAGMA data_version').get() as { data_version: number }).data_version
