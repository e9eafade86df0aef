// Media download tickets behind one async interface, on either engine (issue 22, SPEC §11): a ticket made by
// one node's extraction is redeemed through any node. The SQLite implementation wraps the synchronous store
// (store.ts) as it is; the PostgreSQL one is tickets-postgres.ts. One test suite (test/db/link-storage.test.ts,
// "media tickets on …") runs against both.
//
// What both promise: the tickets of one extraction are stored in one transaction, their ids in the order
// given and never reused (a ticket id is signed into a download link: a reused one would open another
// ticket); a ticket reads back field for field (headers: its JSON text byte for byte); the sweep deletes
// expired tickets a bounded batch at a time. The media cache and yt-dlp stay per node.
//
// The service (service.ts) is handed the engine's TicketStorage by the composition root (feature.ts).
import type { Db } from '../db/sqlite'
import { createMediaStore, type TicketInput, type TicketRow } from './store'

export type { TicketInput, TicketRow } from './store'

/** The most tickets one sweep deletes (it runs every minute). */
export const SWEEP_BATCH = 5000

export interface TicketStorage {
  /** Stores the tickets of one extraction in one transaction; their ids, in order. */
  insertAll(tickets: TicketInput[]): Promise<number[]>
  ticket(id: number): Promise<TicketRow | null>
  /** Deletes tickets expired at `now`, at most SWEEP_BATCH; how many. */
  sweep(now: number): Promise<number>
  count(): Promise<number>
}

export function sqliteTicketStorage(db: Db): TicketStorage {
  const store = createMediaStore(db)
  return {
    insertAll: async (tickets) => store.insertAll(tickets),
    ticket: async (id) => store.ticket(id),
    sweep: async (now) => store.sweep(now),
    count: async () => store.count(),
  }
}
