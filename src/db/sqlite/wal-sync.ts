// Durable commits without blocking the event loop: commit at synchronous=NORMAL, then fsync the WAL file from
// the thread pool; one fsync covers every commit made before it started.
import { open } from 'node:fs/promises'

export interface WalSync {
  /** Resolves once everything committed before the call is on disk. */
  (): Promise<void>
  /**
   * Calls `fn` when no fsync is under way: on the next turn, or as the one under way ends, just before the
   * next one begins. A write group closed so commits once per fsync, into the fsync its writes wait for anyway.
   */
  afterSync(fn: () => void): void
}

/** The WAL's fsync; `commits` counts the commits to cover (a sync begun at a count covers those before it). */
export function createWalSync(
  dbPath: string,
  commits: () => number,
  fsync: (path: string) => Promise<void> = fsyncIfThere,
): WalSync {
  const wal = `${dbPath}-wal`
  let running: { done: Promise<void>; covers: number } | null = null
  // The sync that begins when the running one ends, shared by every caller until then.
  let next: PromiseWithResolvers<void> | null = null
  const waiting: (() => void)[] = []

  function begin(): Promise<void> {
    const done = fsync(wal)
    running = { done, covers: commits() }
    const end = () => {
      running = null
      // What waited for this sync's end commits now, so that the next sync covers it.
      for (const fn of waiting.splice(0)) fn()
      const following = next
      next = null
      if (following) begin().then(following.resolve, following.reject)
    }
    done.then(end, end)
    return done
  }

  const sync = (): Promise<void> => {
    if (!running) return begin()
    if (running.covers >= commits()) return running.done
    next ??= Promise.withResolvers<void>()
    return next.promise
  }
  sync.afterSync = (fn: () => void) => {
    if (running) waiting.push(fn)
    else setImmediate(fn)
  }
  return sync
}

async function fsyncIfThere(path: string): Promise<void> {
  let handle
  try {
    handle = await open(path, 'r')
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
