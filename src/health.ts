// Why the database cannot be written, or null: what /healthz answers with (and the admin's health page
// shows). Failing click writes (retried by the recorder) and a change that could not be stored (until a
// write succeeds again) are known at once; otherwise a write is tried and rolled back — at most once per
// PROBE_MS, since /healthz is public and polled.
import type { ClickRecorder } from './clicks/recorder'
import { lastWriteFailure, probeWrite, type Db } from './db'

const PROBE_MS = 5_000

export function createDatabaseCheck(db: Db, recorder: ClickRecorder): () => string | null {
  let probed = { at: -Infinity, problem: null as string | null }
  return () => {
    if (recorder.failing) return recorder.lastError
    const failed = lastWriteFailure(db)
    if (failed !== null) return failed
    if (Date.now() - probed.at >= PROBE_MS) probed = { at: Date.now(), problem: probeWrite(db) }
    return probed.problem
  }
}
