// Durable commits without blocking the event loop: commit at synchronous=NORMAL, then fsync the WAL file from
// the thread pool; one fsync covers every commit made before it started.
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
