// The mail gauges' totals as last read (/metrics is read synchronously): after each change of this process, and
// when scraped at most once a second (what other nodes changed). One read at a time; a change during one asks again.
import type { MessageStore } from './storage/contract'

/** The gauges' totals are read again at most this often when scraped. */
const TOTALS_EVERY_MS = 1000

export function createTotals(messages: Pick<MessageStore, 'totals'>) {
  let totalsKnown = { mailboxes: 0, messages: 0, bytes: 0 }
  let totalsAt = -Infinity
  let totalsReading: Promise<void> | null = null
  let totalsAgain = false
  function refreshTotals(): Promise<void> {
    if (totalsReading) {
      totalsAgain = true
      return totalsReading
    }
    totalsAt = Date.now()
    totalsReading = messages
      .totals()
      .then((t) => void (totalsKnown = t))
      .catch(() => {}) // the last value stays; the next change or scrape reads again
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
    /** After a change of this process: read them again. */
    changed: () => void refreshTotals(),
    /** The totals as last read; a new read is asked for when they are over a second old. */
    known(): { mailboxes: number; messages: number; bytes: number } {
      if (Date.now() - totalsAt > TOTALS_EVERY_MS) void refreshTotals()
      return totalsKnown
    },
    /** The read in progress, if any (shutdown waits for it). */
    reading: () => totalsReading,
  }
}
