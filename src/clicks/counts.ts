// Click counts behind one async interface, on either engine (issue 22): the pattern every store follows on
// its way to PostgreSQL. The SQLite implementation wraps the synchronous store (store.ts) as it is; the
// PostgreSQL one is counts-postgres.ts. One test suite (test/db/click-counts.test.ts) runs against both.
//
// What both promise: every count is an increment, never read and written back, so writers on several nodes
// add up exactly; a batch is written in parts of LINKS_PER_COMMIT links, each part in one transaction, and a
// part that fails is thrown with the rest as PartialWrite.unwritten (what was committed before stays counted
// once); clicks of a link deleted before the write are dropped.
//
// Names: a day's names are placed (placeNames: at most MAX_NAMES and OTHER) against what the day holds as
// its writer's transaction sees it under a lock no other writer of that day can share, so two nodes adding
// names to one link-day at once still sum, per dimension, to exactly the day's clicks; the month rollups
// (placeByVolume) likewise. names() reads a window as store.ts does (whole months from click_months, the
// edge days from click_days): the same batches written on either engine give the same names.
//
// link.clicked events (addEncoded): the events an encoded batch carries are enqueued in the transaction of
// its LAST part; a part that fails throws PartialWrite with the events, none of them written, for the retry.
import type { Db } from '../db/sqlite'
import { createClickStore, type ClickBatch, type DimNames, type EncodedBatch } from './store'

export interface ClickCounts {
  /** Adds a batch (link id → day number → counts and names); throws PartialWrite with what was not written. */
  add(batch: ClickBatch): Promise<void>
  /**
   * Adds a batch as the recorder encodes it, decoded a part at a time; its link.clicked events (timestamp
   * and due time: the event's `at`) go in the last part's transaction. Throws PartialWrite with the parts
   * not committed and every event (a batch with events and no counts writes the events alone).
   */
  addEncoded(batch: EncodedBatch): Promise<void>
  /** Human clicks and new-visitor sums per day of the window [from, to] (YYYY-MM-DD), oldest first, days without clicks left out. */
  days(linkId: number, from: string, to: string): Promise<{ day: string; clicks: number; visitors: number }[]>
  /** Every name counted in the window [from, to] (YYYY-MM-DD), per dimension: whole months from their rollups, the edge days from their rows. */
  names(linkId: number, from: string, to: string): Promise<DimNames>
}

/** The SQLite store as it is, behind the async interface. */
export function sqliteClickCounts(db: Db): ClickCounts {
  const store = createClickStore(db)
  return {
    add: async (batch) => store.write(batch),
    addEncoded: async (batch) => store.writeEncoded(batch),
    days: async (linkId, from, to) => store.days(linkId, from, to),
    names: async (linkId, from, to) => store.names(linkId, from, to),
  }
}
