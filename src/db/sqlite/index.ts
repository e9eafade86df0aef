// One SQLite file in WAL mode, migrated by plain SQL embedded in the code (PRAGMA user_version); also telling
// "cannot be written" (full disk, read-only) from other faults, so callers answer 503 and keep serving reads.
import { Database } from 'bun:sqlite'
import { closeSync, mkdirSync, openSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { AppError } from '../../kernel/errors'
import { migrations } from './migrations'

export type Db = Database

/** The database file cannot be used at all (not a database, cannot be opened): stops the program. */
export class DatabaseError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'DatabaseError'
  }
}

export interface OpenOptions {
  /** Told once the schema of a database with data was brought up to date: one line for the operator. */
  onUpgrade?: (note: string) => void
}

export function openDatabase(path: string, opts: OpenOptions = {}): Db {
  let db: Db | undefined
  try {
    // The file holds password and key hashes and the webhook secrets: made readable by its owner only
    // (SQLite would make it 0644, less the umask); its -wal and -shm files take the same mode.
    if (path !== ':memory:' && path !== '')
      try {
        closeSync(openSync(path, 'wx', 0o600))
      } catch {
        // There already (EEXIST), or not creatable: SQLite's own open below says why, naming the file.
      }
    db = new Database(path, { create: true, strict: true })
    writeLockFirst(db)
    // First: switching to WAL reads the file under a lock, which another process (a CLI command closing
    // and checkpointing, the service) may hold for a moment; without a timeout that is SQLITE_BUSY at once.
    db.exec('PRAGMA busy_timeout = 5000')
    db.exec('PRAGMA journal_mode = WAL')
    db.exec('PRAGMA synchronous = NORMAL')
    db.exec('PRAGMA foreign_keys = ON')
    const current = userVersion(db)
    // A newer linkbox wrote this file (a downgrade, or a backup restored from a newer one): tables this one
    // does not know would be written wrongly or not at all. Refused before anything is changed.
    if (current > migrations.length)
      throw new DatabaseError(
        `${path} has schema ${current}, this linkbox knows ${migrations.length}: upgrade linkbox (or restore a backup made by this version)`,
      )
    const copy =
      current >= 1 && current < migrations.length && path !== ':memory:' && path !== ''
        ? copyBeforeMigration(db, path, current)
        : null
    migrate(db)
    if (copy)
      opts.onUpgrade?.(
        `${path}: schema ${current} upgraded to ${migrations.length}; the database as it was is in ${copy}`,
      )
    return db
  } catch (err) {
    db?.close()
    const code = sqliteCode(err)
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT')
      throw new DatabaseError(
        `${path} is not a linkbox database (${(err as Error).message}); move it away to start with an empty one, or restore a backup`,
      )
    if (
      code.startsWith('SQLITE_CANTOPEN') ||
      code.startsWith('SQLITE_READONLY') ||
      code.startsWith('SQLITE_IOERR') ||
      code.startsWith('SQLITE_FULL')
    )
      throw new DatabaseError(`${path}: the database cannot be opened for writing (${storageReason(err)})`)
    throw err
  }
}

const userVersion = (db: Db) => (db.query('PRAGMA user_version').get() as { user_version: number }).user_version

/** How many automatic copies made before a migration are kept in data_dir/backups (the newest ones). */
export const KEPT_MIGRATION_COPIES = 3

/**
 * An upgrade's safety net: before the first migration runs on a database with data, a consistent copy goes
 * to <dir>/backups/linkbox-schema<N>-<time>.db (0600), so a migration that goes wrong, or a new version
 * that has to be rolled back, can be undone with the old binary. The oldest copies beyond the last three
 * are removed. A copy that cannot be made stops the upgrade: migrating without one is what it is for.
 */
function copyBeforeMigration(db: Db, path: string, schema: number): string {
  const dir = join(dirname(path), 'backups')
  const time = new Date().toISOString().replace(/[-:.]/g, '')
  const copy = join(dir, `linkbox-schema${schema}-${time}.db`)
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    closeSync(openSync(copy, 'wx', 0o600)) // VACUUM INTO fills an empty file and keeps its mode
    db.query('VACUUM INTO ?').run(copy)
  } catch (err) {
    rmSync(copy, { force: true })
    throw new DatabaseError(
      `${path}: could not copy it to ${copy} before upgrading its schema from ${schema} to ${migrations.length} (${storageReason(err)}); nothing was changed`,
    )
  }
  const copies = readdirSync(dir)
    .map((name) => ({ name, time: /^linkbox-schema\d+-(\d{8}T\d{9}Z)\.db$/.exec(name)?.[1] }))
    .filter((c): c is { name: string; time: string } => c.time !== undefined)
    .sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0))
  for (const old of copies.slice(0, Math.max(0, copies.length - KEPT_MIGRATION_COPIES)))
    rmSync(join(dir, old.name), { force: true })
  return copy
}

export function migrate(db: Db): void {
  const current = userVersion(db)
  for (let version = current; version < migrations.length; version++) {
    const migration = migrations[version]!
    const sql = typeof migration === 'string' ? migration : migration.sql
    const rebuilds = typeof migration !== 'string' && migration.rebuildsTables
    // PRAGMA foreign_keys does nothing inside a transaction, so it is switched off around it; the check
    // inside the transaction stands in for the enforcement that was off.
    const enforced = (db.query('PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys === 1
    if (rebuilds && enforced) db.exec('PRAGMA foreign_keys = OFF')
    try {
      db.transaction(() => {
        db.exec(sql)
        if (rebuilds) {
          const broken = db.query('PRAGMA foreign_key_check').all() as { table: string; parent: string }[]
          if (broken.length > 0)
            throw new Error(
              `migration ${version + 1} would leave ${broken.length} rows of "${broken[0]!.table}" without their "${broken[0]!.parent}" row; nothing was changed`,
            )
        }
        db.exec(`PRAGMA user_version = ${version + 1}`)
      })()
    } finally {
      if (rebuilds && enforced) db.exec('PRAGMA foreign_keys = ON')
    }
  }
}

/** ISO 8601 UTC text for a unix time in milliseconds. */
export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

const sqliteCode = (err: unknown): string => {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : ''
}

/** One line for the log or a message: SQLite's own text and its code ("database or disk is full (SQLITE_FULL)"). */
export function storageReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  const code = sqliteCode(err)
  return (code && !message.includes(code) ? `${message} (${code})` : message).slice(0, 300)
}

const UNWRITABLE = ['SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_IOERR', 'SQLITE_CANTOPEN']

/** True when the error says the database cannot be written (full disk, read-only file, I/O error), not a bug. */
export function isStorageFailure(err: unknown): boolean {
  const code = sqliteCode(err)
  if (UNWRITABLE.some((c) => code === c || code.startsWith(`${c}_`))) return true
  return code.startsWith('SQLITE_') && /\bdisk\b/i.test(err instanceof Error ? err.message : '')
}

/** What the client is told when a change cannot be stored: 503, and nothing of the database's internals. */
export const storageUnavailable = () =>
  new AppError(
    503,
    'storage_unavailable',
    'The change could not be stored: the database cannot be written right now (disk full or read-only). Try again later.',
  )

// The last write that failed for want of storage, per database, until a write succeeds again: /healthz
// reports it, because a rolled-back probe cannot see a full disk that only larger writes run into.
const writeFailures = new WeakMap<Db, string>()
export const noteWriteSuccess = (db: Db) => void writeFailures.delete(db)
export const lastWriteFailure = (db: Db): string | null => writeFailures.get(db) ?? null

/** Runs a write; a storage failure becomes the 503 above (and is remembered), anything else is thrown as it is. */
/**
 * The connection's transactions take the write lock as they begin (BEGIN IMMEDIATE, waiting up to busy_timeout), as
 * the write group's do. A deferred one that reads before it writes fails at once with SQLITE_BUSY(_SNAPSHOT) when
 * another connection (the click writer's) commits in between: an account created while clicks were written failed so
 * in CI. `.deferred` is still there for a read-only transaction.
 */
function writeLockFirst(db: Database) {
  const transaction = db.transaction.bind(db)
  db.transaction = ((fn: (...args: any[]) => unknown) => {
    const t = transaction(fn)
    const { deferred, immediate, exclusive } = t
    return Object.assign((...args: any[]) => immediate(...args), { deferred, immediate, exclusive, database: db })
  }) as Database['transaction']
}

export function stored<T>(db: Db, write: () => T): T {
  try {
    const result = write()
    writeFailures.delete(db)
    return result
  } catch (err) {
    throw storageError(db, err)
  }
}

/** The error to throw for a failed write: the 503 for a storage failure (remembered), else the error itself. */
export function storageError(db: Db, err: unknown): unknown {
  if (!isStorageFailure(err)) return err
  writeFailures.set(db, storageReason(err))
  return storageUnavailable()
}

/**
 * Tries a real write without keeping it: takes the write lock and allocates a page, then rolls back.
 * Finds a read-only file or directory, a database at its size limit and a lock held elsewhere; a disk
 * that fills up shows itself only when a committed write needs new space. Null when it works, else why.
 */
export function probeWrite(db: Db): string | null {
  try {
    db.exec('BEGIN IMMEDIATE')
    try {
      db.exec('CREATE TABLE linkbox_write_probe (x)')
    } finally {
      // SQLite may have rolled back already (it does on SQLITE_FULL); a second ROLLBACK would hide why.
      if (db.inTransaction) db.exec('ROLLBACK')
    }
    return null
  } catch (err) {
    return storageReason(err)
  }
}
