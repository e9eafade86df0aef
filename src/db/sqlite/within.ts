// SQLite's `within` runs inside a synchronous transaction: a callback still pending would write after the commit.
// A promise already settled is work done in the transaction (SQLite's writers answer Promise.resolve(…)).
export function syncWithin<T>(value: T): T {
  if (value && typeof (value as { then?: unknown }).then === 'function') {
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
