// The key of each UTC day that hashes visitors, one for every node (SPEC §11): a row of day_keys, read ahead of
// need so that the redirect never waits (ARCHITECTURE, clicks).
import { createHmac, randomBytes } from 'node:crypto'
import type { DayKeyRows } from './storage/contract'

export const DAY_MS = 86_400_000
/** Tomorrow's key is made and read when midnight is this close. */
export const AHEAD_MS = 30 * 60_000
/** After a failed read, the next attempt waits this long. */
const RETRY_MS = 5_000

/** What each user derives from a day's key, so that none of them can be matched with another's. */
export interface DayKey {
  day: number
  /** The A/B split's HMAC key (destinations.ts). */
  split: Uint8Array
  /** The distinct visitors' HMAC key (visitors.ts). */
  visitors: Buffer
  /** The daily counts' HMAC key (anonymous creations per address). */
  counts: Buffer
}

const derive = (day: number, key: Uint8Array): DayKey => {
  const sub = (what: string) => createHmac('sha256', key).update(what).digest()
  return {
    day,
    split: new Uint8Array(sub('split')),
    visitors: sub('visitors').subarray(0, 16),
    counts: sub('daily counts'),
  }
}

export function createDayKeys(deps: { rows: DayKeyRows; clock?: () => number; log?: (line: string) => void }) {
  const clock = deps.clock ?? Date.now
  // At most today's, yesterday's and tomorrow's (older ones are dropped as new ones come).
  const known = new Map<number, DayKey>()
  const loading = new Map<number, Promise<DayKey>>()
  let retryAt = 0
  let failing = false
  let last: DayKey | null = null

  function keep(day: number, key: Uint8Array): DayKey {
    const made = derive(day, key)
    const today = Math.floor(clock() / DAY_MS)
    known.set(day, made)
    for (const d of known.keys()) if (d < today - 1) known.delete(d)
    if (failing) deps.log?.('the day key could be read again')
    failing = false
    return made
  }

  function failed(err: unknown) {
    retryAt = clock() + RETRY_MS
    if (!failing)
      deps.log?.(
        `the day key could not be read (visitors are hashed with this node's own key meanwhile): ${err instanceof Error ? err.message : String(err)}`,
      )
    failing = true
  }

  function load(day: number): Promise<DayKey> {
    const held = known.get(day)
    if (held) return Promise.resolve(held)
    let p = loading.get(day)
    if (p) return p
    const today = Math.floor(clock() / DAY_MS)
    p = deps.rows
      .ensure(day, randomBytes(32), today - 1)
      .then((key) => keep(day, key))
      .catch((err) => {
        failed(err)
        throw err
      })
      .finally(() => loading.delete(day))
    loading.set(day, p)
    return p
  }

  return {
    /**
     * The key of `day` when this node has it; else null, and a read starts in the background (at most one
     * at a time a day, none for RETRY_MS after a failure). O(1), no allocation when it is known.
     */
    current(day: number): DayKey | null {
      if (last !== null && last.day === day) return last
      const held = known.get(day)
      if (held) return (last = held)
      // SQLite: read (or made) at once, once a day, so that no visit of the day is hashed with another key.
      if (deps.rows.ensureNow && clock() >= retryAt) {
        try {
          return (last = keep(day, deps.rows.ensureNow(day, randomBytes(32), Math.floor(clock() / DAY_MS) - 1)))
        } catch (err) {
          failed(err)
          return null
        }
      }
      if (!loading.has(day) && clock() >= retryAt) load(day).catch(() => {})
      return null
    },
    /** The key of `day`, read (or made) when this node does not have it yet. */
    keyFor: load,
    /** Reads today's key, and tomorrow's when midnight is near (a periodic job): the redirect never waits at midnight. */
    async refresh(): Promise<void> {
      const now = clock()
      const today = Math.floor(now / DAY_MS)
      await load(today)
      if ((today + 1) * DAY_MS - now <= AHEAD_MS) await load(today + 1)
    },
  }
}
export type DayKeys = ReturnType<typeof createDayKeys>
