// The database's availability as this node sees it (contract: ../health.ts): a connection error marks it down
// (writes answer 503 at once), a probe every probeMs marks it up again; no timer runs while up.
import type { SQL } from 'bun'
import {
  DATABASE_OK,
  type DatabaseCheck,
  type DatabaseHealth,
  type DatabaseStatus,
  type WriteFailures,
} from '../health'

export const PROBE_MS = 1_000
export const PROBE_TIMEOUT_MS = 1_000

/**
 * Bun.SQL's codes (err.code) for a server that cannot be reached or that dropped the connection, as Bun 1.4.4
 * throws them (measured against a real server: a stopped server gives ERR_POSTGRES_CONNECTION_REFUSED at once).
 */
const CONNECTION_CODES = new Set([
  'ERR_POSTGRES_CONNECTION_REFUSED',
  'ERR_POSTGRES_CONNECTION_CLOSED',
  'ERR_POSTGRES_CONNECTION_TIMEOUT',
  'ERR_POSTGRES_CONNECTION_FAILED',
  'ERR_POSTGRES_IDLE_TIMEOUT',
  'ERR_POSTGRES_LIFETIME_TIMEOUT',
  'ERR_POSTGRES_TLS_UPGRADE_FAILED',
  // A socket error that Bun passes through as it is.
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
])

/**
 * SQLSTATEs (err.errno, with err.code ERR_POSTGRES_SERVER_ERROR) that say the server is going away or not
 * taking sessions: class 08 (connection exception), 57P01 admin_shutdown (pg_ctl stop -m fast, and
 * pg_terminate_backend of the session), 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, shutting
 * down, in recovery), 53300 too_many_connections. And any error of severity FATAL or PANIC: the server ends the
 * session with it (a database that does not accept connections, 55000; one dropped, 3D000; a refused login,
 * 28P01): no write can succeed until that changes, and the probe sees when it has. Never counted: an error
 * about the statement itself (constraints 23xxx, syntax 42xxx, serialization 40001, deadlock 40P01, a too
 * long NOTIFY payload 22023), whose severity is ERROR: the server is there and answered.
 */
const CONNECTION_STATES = new Set(['57P01', '57P02', '57P03', '53300'])

export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: unknown; errno?: unknown; severity?: unknown } | null
  if (typeof e?.code === 'string' && CONNECTION_CODES.has(e.code)) return true
  if (e?.severity === 'FATAL' || e?.severity === 'PANIC') return true
  const state = typeof e?.errno === 'string' ? e.errno : ''
  return state.startsWith('08') || CONNECTION_STATES.has(state)
}

export interface PostgresHealthOptions {
  probeMs?: number
  probeTimeoutMs?: number
}

export function postgresHealth(sql: SQL, opts: PostgresHealthOptions = {}): DatabaseHealth {
  const probeMs = opts.probeMs ?? PROBE_MS
  const probeTimeoutMs = opts.probeTimeoutMs ?? PROBE_TIMEOUT_MS
  const listeners = new Set<(up: boolean) => void>()
  let up = true
  let reason: string | null = null
  let timer: ReturnType<typeof setInterval> | null = null
  let closed = false

  const set = (value: boolean, why: string | null) => {
    reason = why
    if (up === value) return
    up = value
    for (const listener of [...listeners]) {
      try {
        listener(up)
      } catch (err) {
        console.error('database health: a listener failed:', err)
      }
    }
  }
  // One probe at a time, until its query settles: one that has no answer within probeTimeoutMs says so
  // (reason) but keeps its place, so probes never pile up against a hung server; a late answer still counts.
  let probing: Promise<void> | null = null
  const probe = () => {
    if (probing || closed) return
    const wait = setTimeout(() => {
      if (!closed && !up) reason = `the probe (SELECT 1) had no answer within ${probeTimeoutMs} ms`
    }, probeTimeoutMs)
    wait.unref()
    probing = (async () => void (await sql`SELECT 1`))()
      .then(
        () => {
          if (closed) return
          stop()
          set(true, null)
        },
        (err) => {
          if (!closed && !up) reason = describe(err)
        },
      )
      .finally(() => {
        clearTimeout(wait)
        probing = null
      })
  }
  const stop = () => {
    if (timer) clearInterval(timer)
    timer = null
  }

  return {
    isUp: () => up,
    reason: () => reason,
    observe(err) {
      if (closed || !isConnectionError(err)) return false
      if (up) set(false, describe(err))
      if (!timer) {
        timer = setInterval(probe, probeMs)
        timer.unref()
      }
      return true
    },
    onChange(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    close() {
      closed = true
      stop()
      listeners.clear()
    },
  }
}

const describe = (err: unknown) => {
  const e = err as { code?: unknown; errno?: unknown; message?: unknown } | null
  const what = [e?.code, e?.errno].filter((v) => typeof v === 'string').join(' ')
  const message = typeof e?.message === 'string' ? e.message : String(err)
  return `${message}${what ? ` (${what})` : ''}`.slice(0, 300)
}

/**
 * A real write that is not kept (issue 36: doctor and /readyz): in a transaction that is rolled back, a no-op
 * UPDATE of linkbox_schema's one row (a row version written, a lock taken), or on a database without linkbox's
 * tables yet the CREATE TABLE that serve's first start needs. Finds a read-only server or database
 * (default_transaction_read_only, a standby), missing privileges, and a lock held too long; like SQLite's
 * probe, not a disk that fills up only when a write is kept. Throws what the server said; waits at most timeoutMs.
 */
export async function probePostgresWrite(sql: SQL, timeoutMs = 2_000): Promise<void> {
  const rollback = new Error('rollback')
  try {
    await sql.begin(async (tx) => {
      await tx`SELECT set_config('statement_timeout', ${String(timeoutMs)}, true), set_config('lock_timeout', ${String(timeoutMs)}, true)`
      const [found] = await tx`SELECT to_regclass('linkbox_schema') IS NOT NULL AS has`
      if (found.has) await tx`UPDATE linkbox_schema SET migrated = migrated`
      else await tx`CREATE TABLE linkbox_write_probe (x integer)`
      throw rollback
    })
  } catch (err) {
    if (err !== rollback) throw err
  }
}

/**
 * PostgreSQL's DatabaseCheck (../health.ts): 'down' while health says so; else what the last write probe
 * found (one at most every PROBE_EVERY_MS, started by a poll, so that a node nobody writes through still
 * learns that the server went away or turned read-only); else the click writes' failure.
 */
export const PROBE_EVERY_MS = 5_000

export function createPostgresCheck(
  sql: SQL,
  health: DatabaseHealth,
  recorder: WriteFailures,
  opts: { everyMs?: number; timeoutMs?: number } = {},
): DatabaseCheck {
  const everyMs = opts.everyMs ?? PROBE_EVERY_MS
  const timeoutMs = opts.timeoutMs ?? 2_000
  let probed = { at: -Infinity, status: DATABASE_OK }
  let probing: Promise<void> | null = null
  // A probe past its time keeps its connection until the server answers: no second one meanwhile.
  let unsettled = false

  const probe = (): Promise<void> => {
    if (probing) return probing
    // Failing click writes may mean the server is gone: probed sooner, so that it is named 'down', not 'unwritable'.
    const due = recorder.failing ? Math.min(everyMs, 1_000) : everyMs
    if (unsettled || !health.isUp() || Date.now() - probed.at < due) return Promise.resolve()
    unsettled = true
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<DatabaseStatus>((resolve) => {
      timer = setTimeout(
        () => resolve({ database: 'down', reason: `the write probe had no answer within ${timeoutMs} ms` }),
        timeoutMs + 500,
      )
      timer.unref?.()
    })
    const written = probePostgresWrite(sql, timeoutMs)
      .then(
        (): DatabaseStatus => DATABASE_OK,
        // A connection error marks the database down (health then probes until it is back): said by health.
        (err): DatabaseStatus =>
          health.observe(err) ? DATABASE_OK : { database: 'unwritable', reason: describe(err) },
      )
      .finally(() => (unsettled = false))
    probing = Promise.race([written, late]).then((status) => {
      clearTimeout(timer)
      probed = { at: Date.now(), status }
      probing = null
    })
    return probing
  }

  const known = (): DatabaseStatus => {
    if (!health.isUp())
      return { database: 'down', reason: `the database cannot be reached (${health.reason() ?? 'connection lost'})` }
    void probe()
    if (probed.status.database !== 'ok') return probed.status
    if (recorder.failing) return { database: 'unwritable', reason: recorder.lastError }
    return DATABASE_OK
  }
  return {
    known,
    async check() {
      await probe()
      return known()
    },
  }
}
