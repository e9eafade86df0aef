// doctor's checks of where the data is: data_dir, the database (SQLite or PostgreSQL), free disk, the clock.
import { accessSync, constants, existsSync, mkdirSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { checkDataDirMode } from './lock'
import { redactDatabaseUrl } from '../kernel/config-database'
import { DatabaseError, openDatabase, probeWrite, type Db } from '../db/sqlite'
import { migrations } from '../db/sqlite/migrations'
import { size, type Finding } from './doctor-finding'

export function checkDataDir(dir: string): Finding {
  try {
    if (existsSync(dir) && !statSync(dir).isDirectory())
      return { verdict: 'FAIL', what: 'data_dir', detail: `${dir} is not a directory` }
    // serve refuses to start on it: say why here, with the fix.
    const unsafe = checkDataDirMode(dir)
    if (unsafe) return { verdict: 'FAIL', what: 'data_dir', detail: unsafe.replace(/^data_dir /, '') }
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    accessSync(dir, constants.W_OK)
    const probe = join(dir, `.doctor-${process.pid}`)
    writeFileSync(probe, 'ok')
    rmSync(probe)
    return { verdict: 'ok', what: 'data_dir', detail: `${dir} is writable` }
  } catch (err) {
    return { verdict: 'FAIL', what: 'data_dir', detail: `${dir}: ${(err as Error).message}` }
  }
}

export function checkDatabase(dir: string): Finding[] {
  const path = join(dir, 'linkbox.db')
  const fresh = !existsSync(path)
  let db: Db
  try {
    db = openDatabase(path) // creates it, or brings its schema up to date
  } catch (err) {
    const detail = err instanceof DatabaseError ? err.message : `${path}: ${(err as Error).message}`
    return [
      { verdict: 'FAIL', what: 'database', detail },
      { verdict: 'skip', what: 'database write', detail: 'the database does not open' },
    ]
  }
  try {
    const check = (db.query('PRAGMA quick_check').get() as { quick_check: string }).quick_check
    const version = (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
    const opened: Finding =
      check === 'ok'
        ? {
            verdict: 'ok',
            what: 'database',
            detail: `${path} ${fresh ? 'created' : 'opens'}, schema ${version}/${migrations.length}, quick_check ok`,
          }
        : { verdict: 'FAIL', what: 'database', detail: `${path}: quick_check says ${check}` }
    return [opened, checkWritable(db, dir)]
  } catch (err) {
    return [{ verdict: 'FAIL', what: 'database', detail: `${path}: ${(err as Error).message}` }]
  } finally {
    db.close()
  }
}

/** PostgreSQL 14 or newer (SPEC §11): a FAIL below, naming what runs. server_version_num is e.g. 150008. */
export const MIN_POSTGRES = 14

export function judgePostgresVersion(versionNum: number, version: string): Finding {
  const major = Math.floor(versionNum / 10_000)
  if (major < MIN_POSTGRES)
    return {
      verdict: 'FAIL',
      what: 'database server',
      detail: `PostgreSQL ${version}: linkbox needs ${MIN_POSTGRES} or newer; upgrade the server`,
    }
  return { verdict: 'ok', what: 'database server', detail: `PostgreSQL ${version}` }
}

/**
 * [database] url set: the connection (the URL shown with its password as ***), the server's version, and the
 * schema, read without changing anything (serve creates or upgrades it, under its lock). Also the newest
 * creation time, for the clock check.
 */
export async function checkPostgres(
  url: string,
): Promise<{ findings: Finding[]; newest: number | null; mail: Finding }> {
  const { pgClient, pgReason, schemaVersion } = await import('../db/postgres')
  const { PG_SCHEMA_VERSION } = await import('../db/postgres/migrations')
  const { probePostgresWrite } = await import('../db/postgres/health')
  const shown = redactDatabaseUrl(url) ?? 'database.url'
  const sql = pgClient(url, { max: 1, connectionTimeout: 5 })
  const findings: Finding[] = []
  let newest: number | null = null
  // Mail lives in the database on this engine (the data directory holds none): counted there.
  let mail: Finding = { verdict: 'skip', what: 'mail store', detail: 'the database cannot be read' }
  try {
    let server: { num: number; version: string; standby: boolean }
    try {
      const [row] =
        await sql`SELECT current_setting('server_version_num')::int AS num, current_setting('server_version') AS version, pg_is_in_recovery() AS standby`
      server = { num: row.num, version: String(row.version).split(' ')[0]!, standby: row.standby }
    } catch (err) {
      return {
        findings: [
          { verdict: 'FAIL', what: 'database', detail: `${shown}: ${pgReason(err)}` },
          { verdict: 'skip', what: 'database server', detail: 'no connection' },
          { verdict: 'skip', what: 'database schema', detail: 'no connection' },
          { verdict: 'skip', what: 'database write', detail: 'no connection' },
        ],
        newest,
        mail,
      }
    }
    findings.push({ verdict: 'ok', what: 'database', detail: `${shown}: connected` })
    const judged = judgePostgresVersion(server.num, server.version)
    findings.push(
      judged.verdict === 'ok' && server.standby
        ? {
            verdict: 'FAIL',
            what: 'database server',
            detail: `PostgreSQL ${server.version} is a read-only standby: point database.url at the primary`,
          }
        : judged,
    )
    try {
      const version = await schemaVersion(sql)
      if (version === null)
        findings.push({
          verdict: 'FAIL',
          what: 'database schema',
          detail:
            "tables named like linkbox's (links, accounts) but no linkbox_schema: not a linkbox database; give linkbox an empty one",
        })
      else if (version === 0) {
        findings.push({
          verdict: 'ok',
          what: 'database schema',
          detail: `empty, will be created at the first start (schema ${PG_SCHEMA_VERSION})`,
        })
        mail = { verdict: 'ok', what: 'mail store', detail: 'in the database: empty (no mail received yet)' }
      } else if (version > PG_SCHEMA_VERSION)
        findings.push({
          verdict: 'FAIL',
          what: 'database schema',
          detail: `schema ${version} is newer than this linkbox knows (${PG_SCHEMA_VERSION}): upgrade linkbox on this node`,
        })
      else {
        findings.push(
          version < PG_SCHEMA_VERSION
            ? {
                verdict: 'ok',
                what: 'database schema',
                detail: `schema ${version}/${PG_SCHEMA_VERSION}: upgraded at the next start`,
              }
            : { verdict: 'ok', what: 'database schema', detail: `schema ${version}/${PG_SCHEMA_VERSION}` },
        )
        const [row] =
          await sql`SELECT greatest((SELECT max(created) FROM accounts), (SELECT max(created) FROM links), (SELECT max(created) FROM webhook_events)) AS newest`
        newest = row.newest === null ? null : Number(row.newest)
        // The mailboxes' own counters (kept by triggers): one read however much mail there is.
        const [m] =
          await sql`SELECT count(*) AS mailboxes, coalesce(sum(messages), 0) AS messages, coalesce(sum(bytes), 0) AS bytes FROM mailboxes`
        mail = {
          verdict: 'ok',
          what: 'mail store',
          detail: `in the database: ${size(Number(m.bytes))} in ${Number(m.messages)} messages, ${Number(m.mailboxes)} mailboxes`,
        }
      }
    } catch (err) {
      findings.push({ verdict: 'FAIL', what: 'database schema', detail: `cannot be read: ${pgReason(err)}` })
    }
    // A write that is rolled back (the schema's row, or on an empty database the CREATE TABLE the first start needs).
    try {
      await probePostgresWrite(sql, 5_000)
      findings.push({ verdict: 'ok', what: 'database write', detail: 'writable (a write tried and rolled back)' })
    } catch (err) {
      findings.push({ verdict: 'FAIL', what: 'database write', detail: `not writable: ${pgReason(err)}` })
    }
    return { findings, newest, mail }
  } finally {
    await sql.close().catch(() => {})
  }
}

/** A write in a transaction that is rolled back, and the free space left for the ones that are kept (judged by checkDisk). */
function checkWritable(db: Db, dir: string): Finding {
  const problem = probeWrite(db)
  if (problem) return { verdict: 'FAIL', what: 'database write', detail: `not writable: ${problem}` }
  const free = freeBytes(dir)
  return { verdict: 'ok', what: 'database write', detail: free === null ? 'writable' : `writable, ${size(free)} free` }
}

function freeBytes(dir: string): number | null {
  try {
    const fs = statfsSync(dir)
    return fs.bavail * fs.bsize
  } catch {
    return null
  }
}

export const DISK_WARN = 2 ** 30
export const DISK_FAIL = 100 * 2 ** 20

/** Free space for data_dir: under 1 GiB a warning (mail and the media cache fill it fast), under 100 MiB a FAIL. */
export function checkDisk(dir: string, free: number | null = freeBytes(dir)): Finding {
  if (free === null) return { verdict: 'warn', what: 'free disk', detail: `${dir}: the free space cannot be read` }
  const where = `${size(free)} free for ${dir}`
  if (free < DISK_FAIL)
    return {
      verdict: 'FAIL',
      what: 'free disk',
      detail: `only ${where}: links, clicks and mail stop being stored when it is full; free some space`,
    }
  if (free < DISK_WARN)
    return {
      verdict: 'warn',
      what: 'free disk',
      detail: `only ${where}: under 1 GiB, mail and the media cache can fill it`,
    }
  return { verdict: 'ok', what: 'free disk', detail: where }
}

/**
 * The clock: signed links, expiries and mailbox lifetimes all read it. A clock behind the time this program
 * file was written, or behind the newest row in the database, has been reset (a board without a battery).
 */
export function checkClock(now: number, built: number | null, newestRow: number | null): Finding {
  const at = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z'
  if (built !== null && now < built)
    return {
      verdict: 'warn',
      what: 'clock',
      detail: `${at(now)} is before this linkbox was built (${at(built)}): set the time (timedatectl set-ntp true); links and mail expire wrongly`,
    }
  if (newestRow !== null && now < newestRow)
    return {
      verdict: 'warn',
      what: 'clock',
      detail: `${at(now)} is before the newest row in the database (${at(newestRow)}): the clock went back; set the time (timedatectl set-ntp true)`,
    }
  return { verdict: 'ok', what: 'clock', detail: at(now) }
}

/** The newest creation time in the database: one row by the primary key of each table that grows, cheap. */
export function newestRow(dataDir: string): number | null {
  const path = join(dataDir, 'linkbox.db')
  if (!existsSync(path)) return null
  let db: Db | undefined
  try {
    db = openDatabase(path)
    let newest: number | null = null
    for (const table of ['accounts', 'links', 'webhook_events']) {
      const row = db.query(`SELECT created FROM ${table} ORDER BY id DESC LIMIT 1`).get() as { created: number } | null
      if (row && (newest === null || row.created > newest)) newest = row.created
    }
    return newest
  } catch {
    return null // the database check says what is wrong with it
  } finally {
    db?.close()
  }
}

/** When this program was built: the compiled binary's file time (run from source: unknown). */
export const buildTime = (): number | null => {
  if (!Bun.isStandaloneExecutable) return null
  try {
    return statSync(process.execPath).mtimeMs
  } catch {
    return null
  }
}
