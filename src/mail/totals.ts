// The mail gauges' totals as last read (/metrics reads them synchronously). A scrape reads them again first when
// this process changed something since, or when the last read is over a second old (what other nodes changed):
// a delivery only marks them changed, so a busy intake does not count every mailbox once per message.
import type { MessageStore } from './storage/contract'

/** The gauges' totals are read again at most this often when nothing here changed. */
const TOTALS_EVERY_MS = 1000

export function createTotals(messages: Pick<MessageStore, 'totals'>) {
  let totalsKnown = { mailboxes: 0, messages: 0, bytes: 0 }
  let totalsAt = -Infinity
  let totalsReading: Promise<void> | null = null
  let totalsAgain = false
  let changed = false
  function refreshTotals(): Promise<void> {
    if (totalsReading) {
      totalsAgain = true
      return totalsReading
    }
    totalsAt = Date.now()
    changed = false
    totalsReading = messages
      .totals()
      .then((t) => void (totalsKnown = t))
      .catch(() => {}) // the last value stays; the next scrape reads again
      .finally(() => {
        totalsReading = null
        if (totalsAgain) {
          totalsAgain = false
          void refreshTotals()
        }
      })
    return totalsReading
  }
  const ready = refreshTotals()
  return {
    /** Resolves once the totals have been read the first time. */
    ready,
    /** After a change of this process: the next scrape reads them again. */
    changed: () => void (changed = true),
    /** Before a scrape: a new read when something changed here since the last, or when it is over a second old. */
    refresh(): Promise<void> {
      return changed || Date.now() - totalsAt > TOTALS_EVERY_MS ? refreshTotals() : (totalsReading ?? Promise.resolve())
    },
    /** The totals as last read. */
    known: () => totalsKnown,
    /** The read in progress, if any (shutdown waits for it). */
    reading: () => totalsReading,
  }
}
