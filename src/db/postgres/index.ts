// One PostgreSQL database that any number of nodes share (issue 22, SPEC §11), through Bun.SQL: openPostgres
// connects and migrates once under an advisory lock, and refuses a database a newer linkbox has migrated.
import { SQL } from 'bun'
import { redactDatabaseUrl } from '../../kernel/config-database'
import { DatabaseError } from '../sqlite/index'
import { PG_SCHEMA_VERSION, pgMigrations } from './migrations'

/** The advisory lock key of migrations: "linkbox" in ASCII, one 64-bit number that no other program is likely to use. */
export const MIGRATION_LOCK_KEY = 0x6c696e6b626f78n

export interface PgOpenOptions {
  /** Connections in the pool (Bun.SQL's max; default 10). */
  max?: number
  /** Seconds to wait for a connection (default 10). */
  connectionTimeout?: number
  /** Told once the schema of a database that had one was brought up to date: one line for the operator. */
  onUpgrade?: (note: string) => void
}

export interface PgDb {
  sql: SQL
  /** The database's schema version (PG_SCHEMA_VERSION once open). */
  schema: number
  /** The URL with its password replaced by ***: what messages and logs show. */
  redacted: string
  close(): Promise<void>
}

/** One line on why a connection or a query failed, without the password (Bun's messages never carry the URL). */
export function pgReason(err: unknown): string {
  const e = err as { code?: unknown; errno?: unknown; message?: unknown } | null
  const code = typeof e?.code === 'string' ? e.code : ''
  const message = typeof e?.message === 'string' ? e.message : String(err)
  const known: Record<string, string> = {
    ERR_POSTGRES_CONNECTION_REFUSED: 'connection refused: is PostgreSQL running on that host and port?',
    ERR_POSTGRES_CONNECTION_TIMEOUT: 'no connection within the timeout: is the host reachable?',
    ERR_POSTGRES_CONNECTION_CLOSED: 'the server closed the connection',
  }
  if (known[code]) return known[code]
  const sqlstate =
    typeof e?.errno === 'string' ? ` (SQLSTATE ${e.errno})` : code && !message.includes(code) ? ` (${code})` : ''
  return `${message}${sqlstate}`.slice(0, 300)
}

/** The SQL client for a database.url: the database named explicitly, so that PGDATABASE cannot send it elsewhere. */
export function pgClient(url: string, opts: { max?: number; connectionTimeout?: number } = {}): SQL {
  const name = new URL(url).pathname.slice(1)
  let database = name
  try {
    database = decodeURIComponent(name)
  } catch {
    // Not valid percent-encoding (%zz): the name as written, which the server then names in its refusal.
  }
  return new SQL(url, {
    database,
    max: opts.max ?? 10,
    connectionTimeout: opts.connectionTimeout ?? 10,
  })
}

/** The version recorded in linkbox_schema; 0 for a database without linkbox tables; null for one whose tables are someone else's. */
export async function schemaVersion(sql: SQL): Promise<number | null> {
  const [found] =
    await sql`SELECT to_regclass('linkbox_schema') IS NOT NULL AS has, to_regclass('links') IS NOT NULL OR to_regclass('accounts') IS NOT NULL AS other`
  if (!found.has) return found.other ? null : 0
  const [row] = await sql`SELECT version FROM linkbox_schema`
  return row ? Number(row.version) : 0
}

export async function openPostgres(url: string, opts: PgOpenOptions = {}): Promise<PgDb> {
  const redacted = redactDatabaseUrl(url) ?? 'database.url'
  const sql = pgClient(url, opts)
  try {
    const schema = await migratePostgres(sql, redacted, opts)
    return { sql, schema, redacted, close: () => sql.close() }
  } catch (err) {
    await sql.close().catch(() => {})
    if (err instanceof DatabaseError) throw err
    throw new DatabaseError(`${redacted}: ${pgReason(err)}`)
  }
}

async function migratePostgres(sql: SQL, redacted: string, opts: PgOpenOptions): Promise<number> {
  const session = await sql.reserve()
  try {
    await session`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`
    try {
      // Read under the lock: a node that waited finds what the first one did.
      const current = await schemaVersion(session)
      if (current === null)
        throw new DatabaseError(
          `${redacted} has tables named like linkbox's (links, accounts) but no linkbox_schema: it is not a linkbox database; give linkbox an empty one`,
        )
      if (current > PG_SCHEMA_VERSION)
        throw new DatabaseError(
          `${redacted} has schema ${current}, this linkbox knows ${PG_SCHEMA_VERSION}: upgrade linkbox on this node (a newer one migrated the database)`,
        )
      let at = current
      for (const migration of pgMigrations) {
        if (migration.version <= at) continue
        const first = at === 0
        await session.begin(async (tx) => {
          await tx.unsafe(migration.sql)
          if (first)
            await tx`CREATE TABLE linkbox_schema (
              one boolean PRIMARY KEY DEFAULT true CHECK (one),
              version integer NOT NULL,
              migrated bigint NOT NULL
            )`
          await tx`INSERT INTO linkbox_schema (one, version, migrated) VALUES (true, ${migration.version}, ${Date.now()})
            ON CONFLICT (one) DO UPDATE SET version = excluded.version, migrated = excluded.migrated`
        })
        at = migration.version
      }
      if (current > 0 && current < PG_SCHEMA_VERSION)
        opts.onUpgrade?.(`${redacted}: schema ${current} upgraded to ${PG_SCHEMA_VERSION}`)
      return PG_SCHEMA_VERSION
    } finally {
      await session`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY.toString()}::bigint)`.catch(() => {})
    }
  } finally {
    session.release()
  }
}
