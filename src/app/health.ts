// The database's state as /healthz names it and /readyz judges it (SPEC §10, issue 36): 'ok'; 'down' (PostgreSQL
// cannot be reached: the node keeps redirecting from its cache); 'unwritable' (reachable or a local file, but a
// write fails: a full disk, a read-only file or server). The reason is shown to the admin's health page too.
//
// SQLite: failing click writes (retried by the recorder) and a change that could not be stored (until a write
// succeeds again) are known at once; otherwise a write is tried and rolled back — at most once per PROBE_MS,
// since /healthz and /readyz are public and polled. PostgreSQL's is in db/postgres/health.ts.
import { lastWriteFailure, probeWrite, type Db } from '../db/sqlite'
import { DATABASE_OK, type DatabaseCheck, type DatabaseStatus, type WriteFailures } from '../db/health'

const PROBE_MS = 5_000

export function createDatabaseCheck(db: Db, recorder: WriteFailures): DatabaseCheck {
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
