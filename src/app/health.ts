// SQLite's database check for /healthz and /readyz (contract: db/health.ts): failing writes are known at once,
// otherwise a write is tried and rolled back at most once per PROBE_MS. PostgreSQL's is db/postgres/health.ts.
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
