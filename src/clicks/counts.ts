// Click counts behind one async interface, on either engine (issue 22): the pattern every store follows on
// its way to PostgreSQL. The SQLite implementation wraps the synchronous store (store.ts) as it is; the
// PostgreSQL one is counts-postgres.ts. One test suite (test/click-counts.test.ts) runs against both.
//
// What both promise: every count is an increment, never read and written back, so writers on several nodes
// add up exactly; a batch is written in parts of LINKS_PER_COMMIT links, each part in one transaction, and a
// part that fails is thrown with the rest as PartialWrite.unwritten (what was committed before stays counted
// once); clicks of a link deleted before the write are dropped.
//
// Not here yet: the link.clicked events that travel with an encoded batch (store.ts writes them with the last
// part); the names read for a window (store.names). Both follow this shape.
import type { Db } from '../db'
import { createClickStore, type ClickBatch } from './store'

export interface ClickCounts {
  /** Adds a batch (link id → day number → counts and names); throws PartialWrite with what was not written. */
  add(batch: ClickBatch): Promise<void>
  /** Human clicks and new-visitor sums per day of the window [from, to] (YYYY-MM-DD), oldest first, days without clicks left out. */
  days(linkId: number, from: string, to: string): Promise<{ day: string; clicks: number; visitors: number }[]>
}

/** The SQLite store as it is, behind the async interface. */
export function sqliteClickCounts(db: Db): ClickCounts {
  const store = createClickStore(db)
  return {
    add: async (batch) => store.write(batch),
    days: async (linkId, from, to) => store.days(linkId, from, to),
  }
}
