// Reads of one missed code at once share one promise (PostgreSQL: the caches' misses). A code dropped while its
// read is under way (a change) leaves the read "overtaken": its answer is given, never kept.

/**
 * The read of `code` under way in `reading`, or a new one from `start` (shared while `reading` holds fewer than
 * `max`); `settle` makes the answer, told whether the read is still the shared one (kept) or was overtaken.
 */
export function sharedRead<T, R>(
  reading: Map<string, Promise<R>>,
  max: number,
  code: string,
  start: () => Promise<T>,
  settle: (value: T, kept: boolean) => R,
): Promise<R> {
  const under = reading.get(code)
  if (under !== undefined) return under
  const read: Promise<R> = start().then(
    (value) => {
      const kept = reading.get(code) === read
      if (kept) reading.delete(code)
      return settle(value, kept)
    },
    (err) => {
      if (reading.get(code) === read) reading.delete(code)
      throw err
    },
  )
  if (reading.size < max) reading.set(code, read)
  // Whoever awaits it hears of a failure; a read left with nobody awaiting it must not be an unhandled rejection.
  read.catch(() => {})
  return read
}
