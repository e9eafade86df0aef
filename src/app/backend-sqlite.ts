// Where linkbox keeps its data, chosen once by `[database] url`: a Backend is one engine's parts together (stores,
// change feed, availability, signing secret, click writer, database check). SQLite's is made here, synchronously.
import { join } from 'node:path'
import type { TransactionSQL } from 'bun'
import type { BatchWriter } from '../clicks'
import { createDatabaseCheck } from './health'
import type { Logger } from '../kernel/log'
import { loadSigningSecret } from '../kernel/signing'
import { localChangeFeed, type ChangeFeed } from '../db/changes'
import { localHealth, type DatabaseCheck, type DatabaseHealth, type WriteFailures } from '../db/health'
import { openDatabase, type Db } from '../db/sqlite/index'
import { sqliteStorages, type Storages } from './storages'

/** The parts of one engine, its transaction type `Tx` (what a store's `within` hands its callback). */
interface EngineParts<Tx> {
  storages: Storages<Tx>
  changes: ChangeFeed
  health: DatabaseHealth
  signingSecret: Buffer
  /** Where click batches are written instead of the SQLite file's writer thread (PostgreSQL). */
  clickWriter?: BatchWriter
  /** Whether the database can be written right now, and why not: /healthz, /readyz and the admin's health page. */
  databaseCheck(recorder: WriteFailures): DatabaseCheck
  /** Closes the connections (after every feature closed). */
  close(): Promise<void>
}

/** SQLite: data_dir/linkbox.db, its connection `db`. */
export interface SqliteBackend extends EngineParts<Db> {
  engine: 'sqlite'
  db: Db
}

/** PostgreSQL: a pool (no SQLite connection). */
export interface PostgresBackend extends EngineParts<TransactionSQL> {
  engine: 'postgres'
  db: null
}

export type Backend = SqliteBackend | PostgresBackend

/** Calls `use` with the backend's stores, their transaction type kept: the one place that narrows the engine. */
export function withStorages<R>(backend: Backend, use: <Tx>(storages: Storages<Tx>) => R): R {
  return backend.engine === 'sqlite' ? use(backend.storages) : use(backend.storages)
}

export function sqliteBackend(
  dataDir: string,
  log: Pick<Logger, 'info'>,
  onFeedError: (err: unknown) => void,
): SqliteBackend {
  const db = openDatabase(join(dataDir, 'linkbox.db'), { onUpgrade: (note) => log.info(note) })
  const changes = localChangeFeed({ onError: onFeedError })
  return {
    engine: 'sqlite',
    db,
    storages: sqliteStorages(db),
    changes,
    health: localHealth(),
    signingSecret: loadSigningSecret(dataDir),
    databaseCheck: (recorder) => createDatabaseCheck(db, recorder),
    async close() {
      await changes.close()
      db.close()
    },
  }
}
