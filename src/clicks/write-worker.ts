// The click-writing thread (see writer.ts): batches in, "committed" or the SQLite error out, on its own connection.
// Its entry is the root's (app/click-write-worker.ts), which hands in how link.clicked rows are written.
import { Database } from 'bun:sqlite'
import { decodeBatch, type ClickBatch, type ClickEvent, type EncodedBatch } from './batch'
import { PartialWrite, type SqliteClickEvents } from './storage/contract'
import { sqliteClickWriter } from './storage/sqlite'

declare var self: Worker

export type WriterRequest =
  | { type: 'open'; path: string; checkpointMs: number }
  | { type: 'write'; id: number; batch: EncodedBatch }
  | { type: 'close' }
/** An error crosses the thread as its message and SQLite code (storageReason and isStorageFailure read both). */
export interface WriterFailure {
  message: string
  code?: string
  /** What was not committed: all of the batch, or the parts after the one that failed. */
  unwritten?: ClickBatch
  /** The batch's link.clicked events, not written either (they go with the last part). */
  events?: ClickEvent[]
}
export type WriterReply = { type: 'written'; id: number } | { type: 'failed'; id: number; error: WriterFailure } | { type: 'closed' }

/** Serves the thread's requests; called once by the worker entry. */
export function serveClickWrites(eventRows: SqliteClickEvents) {
  let path = ''
  let db: Database | null = null
  let write: ((batch: EncodedBatch) => void) | null = null
  let checkpoints: ReturnType<typeof setInterval> | undefined

  // Opened on the first write, and again after a failure to open (a file that is read-only for a while).
  function connect() {
    if (db) return write!
    const opened = new Database(path, { readwrite: true, strict: true })
    try {
      opened.exec('PRAGMA busy_timeout = 5000')
      opened.exec('PRAGMA synchronous = NORMAL')
      opened.exec('PRAGMA foreign_keys = ON')
      // The main connection runs no checkpoints (wal_autocheckpoint = 0, see writer.ts); this one does, after
      // a commit that leaves the WAL over 10,000 pages (40 MB), not SQLite's 1,000: a batch over 100,000
      // codes is ~30 commits of 500 links, each ~1,500 pages, and a checkpoint (with its fsync) after each
      // one doubled the time of a batch (2.5 s → 1.1 s for 14,000 links on a 1M-link database). A 16 MiB
      // page cache keeps the pages of busy links between commits (the default 2 MiB re-read them).
      opened.exec('PRAGMA wal_autocheckpoint = 10000')
      opened.exec('PRAGMA cache_size = -16384')
      write = sqliteClickWriter(opened, eventRows).writeEncoded
    } catch (err) {
      opened.close()
      throw err
    }
    db = opened
    return write
  }

  const failure = (err: unknown): WriterFailure => {
    const code = (err as { code?: unknown } | null)?.code
    return {
      message: err instanceof Error ? err.message : String(err),
      ...(typeof code === 'string' ? { code } : {}),
      ...(err instanceof PartialWrite ? { unwritten: err.unwritten, events: err.events } : {}),
    }
  }

  self.onmessage = ({ data }: MessageEvent<WriterRequest>) => {
    if (data.type === 'open') {
      path = data.path
      // Link creations on the main connection grow the WAL too, with no click commit to checkpoint after
      // them: a PASSIVE checkpoint now and then keeps it bounded (cheap when there is nothing to copy).
      checkpoints = setInterval(() => {
        try {
          connect()
          db!.exec('PRAGMA wal_checkpoint(PASSIVE)')
        } catch {
          // A full disk or a busy lock: the next one tries again; the writes report storage problems.
        }
      }, data.checkpointMs)
    } else if (data.type === 'write') {
      try {
        connect()(data.batch)
        self.postMessage({ type: 'written', id: data.id } satisfies WriterReply)
      } catch (err) {
        // What was not committed goes back: the rest of a batch written in part, or all of it.
        const error = failure(err)
        const unwritten = error.unwritten ?? decodeBatch(data.batch)
        const events = error.events ?? data.batch.events ?? []
        self.postMessage({ type: 'failed', id: data.id, error: { ...error, unwritten, events } } satisfies WriterReply)
      }
    } else {
      clearInterval(checkpoints)
      try {
        // At close the WAL is emptied and cut to nothing. Without waiting: a reader on the main connection
        // would hold it for the whole busy timeout, and the main connection checkpoints as it closes anyway.
        db?.exec('PRAGMA busy_timeout = 0')
        db?.exec('PRAGMA wal_checkpoint(TRUNCATE)')
      } catch {}
      db?.close()
      db = null
      self.postMessage({ type: 'closed' } satisfies WriterReply)
    }
  }
}
