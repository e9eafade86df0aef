// The webhook event of a link's change, written in the change's transaction: the link service's creations,
// changes and deletions, tag changes (tags.ts) and the title fetch (metadata.ts) write theirs through it.
import { onWritten } from '../db/written'
import type { EventType, EventWriter, Outbox } from '../kernel/outbox'

export interface LinkEventWriter<Tx> {
  write(tx: Tx, type: EventType, accountId: number | null, data: () => Record<string, unknown>, at: number): unknown
  /** After the commit: the deliverer is woken when an event was written. */
  wake(): void
}

/**
 * A writer per change: the event is written by the storage call's `within` in its transaction when anyone of
 * the account listens for it (a promise of the write, joined by allWritten); `heard` says one was.
 */
export function linkEventWriters<Tx>(
  outbox: Pick<Outbox, 'wanted' | 'wake'> | undefined,
  queue: EventWriter<Tx>,
  clock: () => number,
): () => LinkEventWriter<Tx> {
  return () => {
    let heard = false
    return {
      write(tx, type, accountId, data, at) {
        if (accountId === null || !outbox?.wanted(type, accountId)) return undefined
        // Heard when deliveries were written (on PostgreSQL `wanted` may say yes to an account nobody listens for).
        // `data` read only when written: on PostgreSQL most creations find nobody subscribed first.
        const event = {
          type,
          accountId,
          at,
          get data() {
            return data()
          },
        }
        return onWritten(queue.enqueue(tx, event, clock()), (n) => {
          if (n > 0) heard = true
        })
      },
      wake() {
        if (heard) outbox?.wake()
      },
    }
  }
}
