// A click-writer thread that dies holding a batch (test/clicks.test.ts): before it commits anything, or,
// with DIE_AFTER_COMMIT set, right after its commit and before it can say so.
import { Database } from 'bun:sqlite'
import { sqliteClickWriter } from '../../src/clicks/storage/sqlite'
import { eventInserts } from '../../src/webhooks/storage/sqlite'
import type { WriterRequest } from '../../src/clicks/storage/sqlite-thread'

declare var self: Worker
let path = ''

self.onmessage = ({ data }: MessageEvent<WriterRequest>) => {
  if (data.type === 'open') path = data.path
  if (data.type !== 'write') return
  if (process.env.DIE_AFTER_COMMIT) {
    const db = new Database(path, { strict: true })
    db.exec('PRAGMA busy_timeout = 5000')
    sqliteClickWriter(db, eventInserts).writeEncoded(data.batch)
    db.close()
    throw new Error('the writer died after its commit')
  }
  throw new Error('the writer died before its commit')
}
