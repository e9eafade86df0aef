// The database's state as /healthz names it and /readyz judges it (SPEC §10, issue 36): 'ok'; 'down' (PostgreSQL
// cannot be reached: the node keeps redirecting from its cache); 'unwritable' (reachable or a local file, but a
// write fails: a full disk, a read-only file or server). The reason is shown to the admin's health page too.
//
// SQLite: failing click writes (retried by the recorder) and a change that could not be stored (until a write
// succeeds again) are known at once; otherwise a write is tried and rolled back — at most once per PROBE_MS,
// since /healthz and /readyz are public and polled. PostgreSQL's is in db/postgres/health.ts.
import type { ClickRecorder } from '../clicks'
import { lastWriteFailure, probeWrite, type Db } from '../db/sqlite'

const PROBE_MS = 5_000

export type DatabaseState = 'ok' | 'down' | 'unwritable'
export interface DatabaseStatus {
  database: DatabaseState
  /** Why not 'ok' (null when it is). */
  reason: string | null
}

export interface DatabaseCheck {
  /** What is known now, without waiting (a stale probe is started): /healthz and the admin's page. */
  known(): DatabaseStatus
  /** The same once a due probe has answered (bounded): /readyz. */
  check(): Promise<DatabaseStatus>
}

export const DATABASE_OK: DatabaseStatus = { database: 'ok', reason: null }

export function createDatabaseCheck(db: Db, recorder: ClickRecorder): DatabaseCheck {
  let probed = { at: -Infinity, problem: null as string | null }
  const problem = () => {
    if (recorder.failing) return recorder.lastError
    const failed = lastWriteFailure(db)
    if (failed !== null) return failed
    if (Date.now() - probed.at >= PROBE_MS) probed = { at: Date.now(), problem: probeWrite(db) }
    return probed.problem
  }
  const known = (): DatabaseStatus => {
    const reason = problem()
    return reason === null ? DATABASE_OK : { database: 'unwritable', reason }
  }
  return { known, check: async () => known() }
}
