// One SQLite file in WAL mode. Migrations are plain SQL embedded in the code (so the compiled binary
// carries them); each runs once, in its own transaction, recorded in PRAGMA user_version.
import { Database } from 'bun:sqlite'
import { migrations } from './migrations'

export type Db = Database

export function openDatabase(path: string): Db {
  const db = new Database(path, { create: true, strict: true })
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = NORMAL')
  db.exec('PRAGMA busy_timeout = 5000')
  db.exec('PRAGMA foreign_keys = ON')
  migrate(db)
  return db
}

export function migrate(db: Db): void {
  const current = (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
  for (let version = current; version < migrations.length; version++) {
    db.transaction(() => {
      db.exec(migrations[version]!)
      db.exec(`PRAGMA user_version = ${version + 1}`)
    })()
  }
}

/** ISO 8601 UTC text for a unix time in milliseconds. */
export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())
