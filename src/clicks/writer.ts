// Where click batches are written: a worker thread with its own connection (storage/sqlite-thread.ts), so a long write
// and the WAL checkpoints never hold up redirects; the main thread as the fallback (ARCHITECTURE, clicks).
import type { Db } from '../db/sqlite'
import { autocheckpoint, dataVersion } from '../db/sqlite/wal'
import type { EncodedBatch } from './batch'
import { PartialWrite, type ClickCounts, type SqliteClickEvents } from './storage/contract'
import { sqliteClickWriter } from './storage/sqlite'
import type { WriterReply, WriterRequest } from './storage/sqlite-thread'

export type WriteOutcome = 'written' | 'uncertain'

export interface BatchWriter {
  /**
   * Resolves once the batch is committed; rejects with a PartialWrite whose `unwritten` is what was not
   * committed (all of it, or the parts after the one that failed).
   */
  write(batch: EncodedBatch): Promise<WriteOutcome>
  /** Finishes the thread's work, checkpoints and closes its connection; later writes run on the main thread. */
  close(): Promise<void>
}

/**
 * Batches into click counts behind the async interface (storage/contract.ts): on PostgreSQL the write is awaited on
 * the pool's connection, so no thread of its own is needed; each node adds increments to the same rows.
 */
export function countsWriter(counts: ClickCounts): BatchWriter {
  return {
    write: async (batch) => {
      await counts.addEncoded(batch)
      return 'written'
    },
    close: async () => {},
  }
}

export function mainThreadWriter(db: Db, eventRows?: SqliteClickEvents): BatchWriter {
  const store = sqliteClickWriter(db, eventRows)
  return {
    write: async (batch) => {
      store.writeEncoded(batch)
      return 'written'
    },
    close: async () => {},
  }
}

// Bun's Worker can stop keeping the process alive; the DOM typings do not know it.
const hold = (w: Worker, on: boolean) => void (w as Worker & { ref?(): void; unref?(): void })[on ? 'ref' : 'unref']?.()

/** How long close() waits for the thread to checkpoint and close before it is terminated. */
const CLOSE_WAIT_MS = 10_000

export interface WorkerWriterOptions {
  log: (line: string) => void
  /** Starts the thread (the root's app/click-write-worker.ts; tests substitute one that dies). */
  spawn: () => Worker
  /** How the main thread writes link.clicked rows once the thread is gone. */
  eventRows?: SqliteClickEvents
  /** How often the thread checkpoints when no click commit does (link creations also fill the WAL). */
  checkpointMs?: number
}

export function workerWriter(db: Db, opts: WorkerWriterOptions): BatchWriter {
  const { log, spawn, checkpointMs = 5_000 } = opts
  const onMain = mainThreadWriter(db, opts.eventRows)
  let worker: Worker | null = null
  let dead = false
  let closed = false
  let lastId = 0
  let held: {
    id: number
    batch: EncodedBatch
    version: number
    resolve: (o: WriteOutcome) => void
    reject: (e: Error) => void
  } | null = null
  let closedReply: (() => void) | null = null

  // The main connection never checkpoints: a commit there (a new link) would otherwise copy up to a
  // thousand pages inside a request. The thread does it (storage/sqlite-thread.ts).
  autocheckpoint(db, 0)

  function start(): Worker | null {
    if (worker || dead) return worker
    try {
      worker = spawn()
    } catch (err) {
      died(`it could not start: ${(err as Error).message}`)
      return null
    }
    const w = worker
    w.addEventListener('message', ({ data }: MessageEvent<WriterReply>) => answer(data))
    w.addEventListener('error', (e: Event) => {
      // Bun's message carries a source excerpt and a stack: the log gets the line that says the error.
      const { error, message } = e as ErrorEvent
      const lines = String(message ?? '').split('\n')
      const said = lines.map((l) => l.match(/^\s*(?:\w*Error|error): (.+)$/)?.[1]).find(Boolean)
      const reason = error instanceof Error ? error.message : (said ?? lines.find((l) => l.trim()) ?? 'an error')
      if (w === worker) died(reason.slice(0, 200))
    })
    w.addEventListener('close', () => {
      if (w === worker) died('it exited')
    })
    w.postMessage({ type: 'open', path: db.filename, checkpointMs } satisfies WriterRequest)
    // Idle, the thread does not keep the process alive; a write in flight does (ref() in write()).
    hold(w, false)
    return w
  }

  function answer(reply: WriterReply) {
    if (reply.type === 'closed') return closedReply?.()
    if (!held || reply.id !== held.id) return
    const h = held
    held = null
    if (worker) hold(worker, false)
    if (reply.type === 'written') h.resolve('written')
    else {
      const err = Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {})
      h.reject(reply.error.unwritten ? new PartialWrite(err, reply.error.unwritten, reply.error.events ?? []) : err)
    }
  }

  function died(reason: string) {
    if (dead || closed) return
    dead = true
    worker?.terminate()
    worker = null
    // Back to SQLite's default, now that no thread checkpoints.
    autocheckpoint(db, 1000)
    log(`click writer thread stopped (${reason}); clicks are written on the main thread from now on`)
    settleHeld()
  }

  /** The batch of a thread that is gone: written here if it certainly was not committed there. */
  function settleHeld() {
    const h = held
    held = null
    if (!h) return
    if (dataVersion(db) === h.version) onMain.write(h.batch).then(h.resolve, h.reject)
    else h.resolve('uncertain')
  }

  start()
  return {
    write(batch) {
      if (closed || dead) return onMain.write(batch)
      const w = start()
      if (!w) return onMain.write(batch)
      if (held) return Promise.reject(new Error('click writer: one batch at a time'))
      return new Promise<WriteOutcome>((resolve, reject) => {
        held = { id: ++lastId, batch, version: dataVersion(db), resolve, reject }
        hold(w, true)
        w.postMessage({ type: 'write', id: held.id, batch } satisfies WriterRequest)
      })
    },
    async close() {
      if (closed) return
      closed = true
      const w = worker
      worker = null
      if (!w) return
      hold(w, true)
      let timer: ReturnType<typeof setTimeout> | undefined
      await new Promise<void>((done) => {
        closedReply = done
        timer = setTimeout(done, CLOSE_WAIT_MS) // a stuck thread must not hold the shutdown forever
        w.postMessage({ type: 'close' } satisfies WriterRequest)
      })
      clearTimeout(timer)
      w.terminate()
      settleHeld()
    },
  }
}
