// The writes a `within` makes in its transaction, for both engines: on SQLite each is done (or has thrown) when
// its call returns, so their values come back at once (SQLite refuses a `within` that returns a promise); on
// PostgreSQL they are still running, so one promise of them all comes back, for the transaction to await.
const thenable = (p: unknown): p is PromiseLike<unknown> => !!p && typeof (p as { then?: unknown }).then === 'function'

export function written(...parts: unknown[]): unknown[] | Promise<unknown[]> {
  // A thenable that is not a native promise (a query object) cannot be read at once: it is still running.
  const pending = parts.some((p) => thenable(p) && (!(p instanceof Promise) || Bun.peek.status(p) === 'pending'))
  if (pending) return Promise.all(parts)
  return parts.map((p) => {
    if (!(p instanceof Promise)) return p
    if (Bun.peek.status(p) === 'rejected') {
      p.catch(() => {})
      throw Bun.peek(p)
    }
    return Bun.peek(p)
  })
}
