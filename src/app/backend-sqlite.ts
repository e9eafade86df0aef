// Where linkbox keeps its data, chosen once by `[database] url` (SPEC §11, issue 22): what the composition root
// (app.ts) builds everything else on. A Backend is the one engine's parts together:
// - the stores behind their async interfaces (storages.ts), which the services are handed;
// - the change feed between processes and nodes (changes.ts): local on SQLite, LISTEN/NOTIFY on PostgreSQL;
// - the database's availability (health.ts): SQLite is a file of this process, always "up" (a full disk is
//   /readyz's business, ../health.ts); PostgreSQL's goes down on a connection error and comes back by itself;
// - the signing secret: a file in data_dir on SQLite, a row of the database on PostgreSQL, so that a link signed
//   by one node opens on all;
// - where click batches go: SQLite's writer thread (the recorder's default), PostgreSQL's increments;
// - what /healthz and /readyz say about the database (../health.ts).
// SQLite's is made here, synchronously (tests build apps in one call); PostgreSQL's (postgres/backend.ts) needs
// a connection first, so it is made by openLinkbox (app.ts) before the app, and only then loaded.
import { join } from 'node:path'
import type { BatchWriter, ClickRecorder } from '../clicks'
import { createDatabaseCheck, type DatabaseCheck } from './health'
import type { Logger } from '../kernel/log'
import { loadSigningSecret } from '../kernel/signing'
import { localChangeFeed, type ChangeFeed } from '../db/changes'
import { localHealth, type DatabaseHealth } from '../db/health'
import { openDatabase, type Db } from '../db/sqlite/index'
import { sqliteStorages, type Storages } from './storages'

export interface Backend {
  engine: 'sqlite' | 'postgres'
  /** SQLite's connection (data_dir/linkbox.db); null on PostgreSQL. */
  db: Db | null
  // The transaction type differs by engine; the services take it as a type parameter and never look at it.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  storages: Storages<any>
  changes: ChangeFeed
  health: DatabaseHealth
  signingSecret: Buffer
  /** Where click batches are written instead of the SQLite file's writer thread (PostgreSQL). */
  clickWriter?: BatchWriter
  /** Whether the database can be written right now, and why not: /healthz, /readyz and the admin's health page. */
  databaseCheck(recorder: ClickRecorder): DatabaseCheck
  /** Closes the connections (after every feature closed). */
  close(): Promise<void>
}

export function sqliteBackend(dataDir: string, log: Pick<Logger, 'info'>, onFeedError: (err: unknown) => void): Backend {
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
