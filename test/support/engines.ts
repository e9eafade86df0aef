// The set-up shared by the store suites that run ONE suite against both engines (click counts, sessions and
// form tokens, the webhook queue, mail messages): SQLite, a database file in a temporary directory, and a real
// PostgreSQL server (./postgres.ts: the process's shared one), a fresh database per test (a copy of the
// migrated template). Each suite keeps only what is its own: its
// Engine interface and its queries; this file makes the databases, the "nodes" and the cleaning up.
//
//   const engines = engineHarness()      // at the top of the file: starts PostgreSQL in beforeAll, and in
//                                        // afterAll removes every directory made here, then stops it
//   const s = engines.sqlite('linkbox-x-')  // { dir, path, main, connect(), close() }
//   const p = await engines.postgres()      // { url, main, pool(max?), close() }
//   const dir = engines.tracked('linkbox-x-')  // a temporary directory removed in afterAll
//
// A "node" is a connection of its own to the one database: connect() opens one more on the SQLite file,
// pool() makes one more Bun.SQL pool on the PostgreSQL database; close() closes main and all of them.
// sqliteTransaction and postgresTransaction run a node's work in a transaction, committed, or rolled back on
// request (the ROLLBACK sentinel, thrown inside and caught here).
import { afterAll, beforeAll } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { SQL } from 'bun'
import { openDatabase, type Db } from '../../src/db/sqlite'
import { openPostgres, type PgDb } from '../../src/db/postgres'
import { tempDir } from './app'
import { sharedPostgres, type Postgres } from './postgres'

/** One SQLite database file (linkbox.db in `dir`) and the connections open on it. */
export interface SqliteDatabase {
  dir: string
  path: string
  /** The connection the suite reads and seeds rows through. */
  main: Db
  /** Another connection to the same file: a node. */
  connect(): Db
  /** Closes main and every connection connect() opened. */
  close(): Promise<void>
}

/** One PostgreSQL database of the test server (migrated by openPostgres) and the pools open on it. */
export interface PostgresDatabase {
  url: string
  /** The pool the suite reads and seeds rows through. */
  main: PgDb
  /** Another pool on the same database (max connections, 4 unless given): a node. */
  pool(max?: number): SQL
  /** Closes main and every pool pool() made. */
  close(): Promise<void>
}

export interface EngineHarness {
  /** A fresh SQLite database in a fresh temporary directory named from `prefix`. */
  sqlite(prefix: string): SqliteDatabase
  /** A fresh database on the file's PostgreSQL server; its main pool has `mainMax` connections (2 unless given). */
  postgres(mainMax?: number): Promise<PostgresDatabase>
  /** A fresh temporary directory named from `prefix`, removed when the file's tests are done. */
  tracked(prefix: string): string
}

/** Registers the file's beforeAll (the shared PostgreSQL server) and afterAll (remove the directories, drop its databases). */
export function engineHarness(): EngineHarness {
  const dirs: string[] = []
  let pg: Postgres
  beforeAll(async () => {
    pg = await sharedPostgres()
  }, 120_000)
  afterAll(async () => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
    await pg?.stop()
  })

  function tracked(prefix: string): string {
    const dir = tempDir(prefix)
    dirs.push(dir)
    return dir
  }

  function sqlite(prefix: string): SqliteDatabase {
    const dir = tracked(prefix)
    const path = join(dir, 'linkbox.db')
    const main = openDatabase(path)
    const opened: Db[] = [main]
    return {
      dir,
      path,
      main,
      connect() {
        const db = openDatabase(path)
        opened.push(db)
        return db
      },
      close: async () => opened.forEach((db) => db.close()),
    }
  }

  async function postgres(mainMax = 2): Promise<PostgresDatabase> {
    const url = await pg.createDatabase({ migrated: true })
    const main = await openPostgres(url, { max: mainMax })
    const pools: SQL[] = [main.sql]
    return {
      url,
      main,
      pool(max = 4) {
        const sql = new Bun.SQL(url, { max })
        pools.push(sql)
        return sql
      },
      close: async () => void (await Promise.all(pools.map((p) => p.close()))),
    }
  }

  return { sqlite, postgres, tracked }
}

/** Thrown inside a transaction to roll it back on purpose; the helpers below catch it (and only it). */
export const ROLLBACK = new Error('rollback')

/**
 * Runs `work` in a transaction of `db`, then commits (or rolls back); its result. bun:sqlite's transactions
 * are synchronous: `work` does its writes before its first await.
 */
export async function sqliteTransaction<T>(db: Db, work: (tx: Db) => Promise<T>, rollback = false): Promise<T> {
  let result: Promise<T> | undefined
  try {
    db.transaction(() => {
      result = work(db)
      if (rollback) throw ROLLBACK
    })()
  } catch (err) {
    if (err !== ROLLBACK) throw err
  }
  return await result!
}

/** Runs `work` in a transaction of the pool `sql`, then commits (or rolls back); its result. */
export async function postgresTransaction<T>(sql: SQL, work: (tx: SQL) => Promise<T>, rollback = false): Promise<T> {
  let result: T
  try {
    await sql.begin(async (tx) => {
      result = await work(tx)
      if (rollback) throw ROLLBACK
    })
  } catch (err) {
    if (err !== ROLLBACK) throw err
  }
  return result!
}

/** A suite's note(tx, text) and notes() on SQLite: an audit row written in a node's transaction, read back. */
export function sqliteNotes(main: Db) {
  return {
    note: (tx: Db, text: string) =>
      tx.query("INSERT INTO audit_log (at, actor_kind, action, detail) VALUES (0, 'system', 'test.note', ?)").run(text),
    notes: async () =>
      (
        main.query("SELECT detail FROM audit_log WHERE action = 'test.note' ORDER BY id").all() as { detail: string }[]
      ).map((r) => r.detail),
  }
}

/** The same note(tx, text) and notes() on PostgreSQL. */
export function postgresNotes(main: PgDb) {
  return {
    note: (tx: SQL, text: string) =>
      tx`INSERT INTO audit_log (at, actor_kind, action, detail) VALUES (0, 'system', 'test.note', ${text})`,
    notes: async () =>
      (await main.sql`SELECT detail FROM audit_log WHERE action = 'test.note' ORDER BY id`).map(
        (r: { detail: string }) => r.detail,
      ),
  }
}
