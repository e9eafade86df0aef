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
            throw new Error(`migration ${version + 1} would leave ${broken.length} rows of "${broken[0]!.table}" without their "${broken[0]!.parent}" row; nothing was changed`)
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
