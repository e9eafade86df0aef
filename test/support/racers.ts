// Two writers racing inside their transactions (the accounts and single sign-on contracts): each notes what it did,
// then, on PostgreSQL, holds its transaction open until the other arrives, so only the row locks keep them apart.

/** How long a racer's transaction stays open waiting for the other racer (which, with the locks, never comes). */
export const HOLD_MS = 400

/** A meeting point for `n` racers: each waits there until all have arrived, or `ms` has passed. */
export function meeting(n: number, ms = HOLD_MS) {
  let arrived = 0
  let open!: () => void
  const all = new Promise<void>((r) => (open = r))
  return () => {
    if (++arrived >= n) open()
    return Promise.race([all, Bun.sleep(ms)])
  }
}

/** What a racer's engine offers: which engine it is, and a note written in the racer's transaction. */
export interface RacingEngine {
  sqlite: boolean
  note(tx: unknown, text: string): unknown
}

/**
 * A racer's `within`: its note, then (PostgreSQL) its transaction held open until the other racer arrives. On
 * SQLite `within` must be synchronous, and nothing can run between its read and its write anyway: the note only.
 */
export function holding<A extends unknown[]>(
  e: RacingEngine,
  meet: () => Promise<unknown>,
  text: (...args: A) => string,
) {
  return (tx: unknown, ...args: A): unknown => {
    if (!e.sqlite) return Promise.resolve(e.note(tx, text(...args))).then(meet)
    e.note(tx, text(...args))
    void meet()
  }
}
