// PostgreSQL's Backend (backend-sqlite.ts): the pool, migrated once, its stores, the LISTEN/NOTIFY feed, its
// availability and the signing secret from the database. Loaded only when `[database] url` is set.
import type { WriteFailures } from '../db/health'
import { countsWriter } from '../clicks'
import type { Logger } from '../kernel/log'
import { postgresSigningSecret } from '../db/postgres/signing'
import type { PostgresBackend } from './backend-sqlite'
import { DatabaseError } from '../db/sqlite/index'
import { openPostgres, pgReason } from '../db/postgres/index'
import { postgresChangeFeed } from '../db/postgres/changes'
import { createPostgresCheck, postgresHealth } from '../db/postgres/health'
import { postgresStorages } from './storages-postgres'

export interface PostgresBackendOptions {
  /** Connections in this node's pool (default 10). */
  max?: number
}

export async function postgresBackend(
  url: string,
  log: Pick<Logger, 'info'>,
  onFeedError: (err: unknown) => void,
  opts: PostgresBackendOptions = {},
): Promise<PostgresBackend> {
  const pg = await openPostgres(url, { max: opts.max, onUpgrade: (note) => log.info(note) })
  const { sql } = pg
  try {
    const [changes, signingSecret] = await Promise.all([
      postgresChangeFeed(sql, { onError: onFeedError }),
      postgresSigningSecret(sql)(),
    ])
    const storages = postgresStorages(sql, { changes })
    const health = postgresHealth(sql)
    return {
      engine: 'postgres',
      db: null,
      storages,
      changes,
      health,
      signingSecret,
      clickWriter: countsWriter(storages.counts),
      databaseCheck: (recorder: WriteFailures) => createPostgresCheck(sql, health, recorder),
      async close() {
        health.close()
        await changes.close().catch(() => {})
        await pg.close()
      },
    }
  } catch (err) {
    await pg.close().catch(() => {})
    throw new DatabaseError(`${pg.redacted}: ${pgReason(err)}`)
  }
}
