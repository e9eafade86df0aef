// Durable commits without blocking the event loop. At synchronous=FULL SQLite fsyncs the WAL inside COMMIT,
// on the thread that commits: 1-2 ms during which no socket is served. Committing at NORMAL (the frames are
// written to the WAL file, not yet forced to disk) and then fsyncing the WAL file from libuv's thread pool
// gives the same guarantee once the fsync returns — fsync is per file, whichever descriptor asks — and one
// fsync covers every commit made before it started, so a busy moment costs one fsync, not one per commit.
// If a checkpoint has meanwhile copied the frames into the database file, SQLite synced that file first.
import { open } from 'node:fs/promises'

export type WalSync = () => Promise<void>

export function createWalSync(dbPath: string): WalSync {
  const wal = `${dbPath}-wal`
  let running: Promise<void> | null = null
  let queued: Promise<void> | null = null

  async function syncOnce() {
    let handle
    try {
      handle = await open(wal, 'r')
    } catch (err) {
      // No WAL file: every frame is in the database file, which the checkpoint that removed it synced.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw err
    }
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  }

  /** Resolves once everything committed before the call is on disk. */
  return function sync(): Promise<void> {
    if (!running) {
      running = syncOnce().finally(() => {
        running = null
      })
      return running
    }
    // A sync in progress may have started before our commit: the next one, shared by every caller until it
    // starts, is the one that covers it.
    queued ??= running
      .catch(() => {})
      .then(() => {
        queued = null
        return sync()
      })
    return queued
  }
}
