// A write in a change's transaction answers at once on SQLite (a value) and later on PostgreSQL (a promise).
export type Written<T> = T | Promise<T>

const thenable = (v: unknown): v is PromiseLike<unknown> => !!v && typeof (v as { then?: unknown }).then === 'function'

/**
 * The writes of one `within`, joined: a promise only when one of them is still pending (PostgreSQL), so that
 * SQLite's `within` stays synchronous. A write that answered with a settled promise (Promise.resolve) is peeked.
 */
export function allWritten(values: readonly unknown[]): Written<unknown[]> {
  const now = values.map((v) => {
    if (!thenable(v) || !(v instanceof Promise)) return v
    const status = Bun.peek.status(v)
    if (status === 'pending') return v
    const settled = Bun.peek(v)
    if (status === 'rejected') {
      for (const other of values) if (thenable(other)) Promise.resolve(other).catch(() => {})
      throw settled
    }
    return settled
  })
  return now.some(thenable) ? Promise.all(now) : now
}

/** Tells `seen` what one write answered: at once when it is there (SQLite), once it settles otherwise. */
export function onWritten<T>(value: Written<T>, seen: (v: T) => void): Written<T> {
  const joined = allWritten([value])
  if (!(joined instanceof Promise)) {
    seen(joined[0] as T)
    return joined[0] as T
  }
  return joined.then(([v]) => {
    seen(v as T)
    return v as T
  })
}
