// The click-writing thread (see writer.ts): batches in, "committed" or the SQLite error out, on its own connection.
// Its entry is the root's (app/click-write-worker.ts), which hands in how link.clicked rows are written.
import type { Database } from 'bun:sqlite'
import { checkpoint, openWriterConnection } from '../../db/sqlite/wal'
import { decodeBatch, type ClickBatch, type ClickEvent, type EncodedBatch } from '../batch'
import { PartialWrite, type SqliteClickEvents } from './contract'
import { sqliteClickWriter } from './sqlite'

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
export type WriterReply =
  | { type: 'written'; id: number }
  | { type: 'failed'; id: number; error: WriterFailure }
  | { type: 'closed' }

/** Serves the thread's requests; called once by the worker entry. */
export function serveClickWrites(eventRows: SqliteClickEvents) {
  let path = ''
  let db: Database | null = null
  let write: ((batch: EncodedBatch) => void) | null = null
  let checkpoints: ReturnType<typeof setInterval> | undefined

  // Opened on the first write, and again after a failure to open (a file that is read-only for a while).
  function connect() {
    if (db) return write!
    const opened = openWriterConnection(path)
    try {
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
          checkpoint(db!, 'PASSIVE')
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
        if (db) checkpoint(db, 'TRUNCATE')
      } catch {}
      db?.close()
      db = null
      self.postMessage({ type: 'closed' } satisfies WriterReply)
    }
  }
}
