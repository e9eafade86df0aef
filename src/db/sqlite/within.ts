// SQLite's `within` runs inside a synchronous transaction: a callback that returns a promise would write after the commit.
export function syncWithin<T>(value: T): T {
  if (value && typeof (value as { then?: unknown }).then === 'function') {
    // A promise already settled is work done in the transaction (SQLite's writers answer Promise.resolve(…)).
    if (value instanceof Promise && Bun.peek.status(value) === 'fulfilled') return value
    if (value instanceof Promise && Bun.peek.status(value) === 'rejected') {
      value.catch(() => {})
      throw Bun.peek(value)
    }
    ;(value as unknown as Promise<unknown>).catch?.(() => {})
    throw new Error('within must be synchronous on SQLite: its callback returned a promise')
  }
  return value
}

/** The writes a `within` started, as one value: a promise only while one of them is pending (PostgreSQL's). */
export function allWrites(parts: readonly unknown[]): unknown {
  let pending = false
  let failed: unknown
  for (const part of parts) {
    if (!(part instanceof Promise)) continue
    const status = Bun.peek.status(part)
    if (status === 'rejected') failed ??= part
    if (status === 'pending') pending = true
  }
  return pending ? Promise.all(parts) : failed
}
