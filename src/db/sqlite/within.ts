// SQLite's `within` runs inside a synchronous transaction: a callback that returns a promise would write after the commit.
export function syncWithin<T>(value: T): T {
  if (value && typeof (value as { then?: unknown }).then === 'function') {
    ;(value as unknown as Promise<unknown>).catch?.(() => {})
    throw new Error('within must be synchronous on SQLite: its callback returned a promise')
  }
  return value
}
