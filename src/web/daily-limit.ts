// Per-caller allowances per UTC day: in this process (bounded at MAX_KEYS keys a day), or in the database across
// nodes (rate.anon_per_day: createSharedDailyLimiter, its rows in db/sqlite/daily-counts.ts and db/postgres/).
import { createHmac } from 'node:crypto'
import type { DailyCountRows } from '../db/daily-counts'

export type { DailyCountRows }

export const MAX_KEYS = 100_000
const DAY_MS = 86_400_000

export interface DailyDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Seconds until the allowance is back (the next UTC midnight). */
  reset: number
}

export function createDailyLimiter(clock: () => number = Date.now, maxKeys = MAX_KEYS) {
  let day = -1
  const counts = new Map<string, number>()
  return {
    /** Counts one use of `key` against `limit` a day (0 = unlimited); a refused use is not counted. */
    hit(key: string, limit: number): DailyDecision {
      const now = clock()
      const today = Math.floor(now / DAY_MS)
      if (today !== day) {
        day = today
        counts.clear()
      }
      const reset = Math.max(1, Math.ceil(((today + 1) * DAY_MS - now) / 1000))
      if (limit <= 0) return { allowed: true, limit: 0, remaining: 0, reset }
      const used = counts.get(key) ?? 0
      if (used >= limit) return { allowed: false, limit, remaining: 0, reset }
      if (used === 0 && counts.size >= maxKeys) counts.delete(counts.keys().next().value!)
      counts.set(key, used + 1)
      return { allowed: true, limit, remaining: limit - used - 1, reset }
    },
    get size() {
      return counts.size
    },
  }
}
export type DailyLimiter = ReturnType<typeof createDailyLimiter>

/** rate.anon_per_day across nodes: the allowance of a caller (its rate key) in daily_counts. */
export function createSharedDailyLimiter(deps: {
  rows: DailyCountRows
  /** The HMAC key of a UTC day (day-keys.ts `counts`). */
  keyOf: (day: number) => Promise<Buffer>
  scope: string
  clock?: () => number
}) {
  const clock = deps.clock ?? Date.now
  let swept = -1
  return {
    /** Counts one use of `key` against `limit` a day (0 = unlimited); a refused use is not counted. */
    async hit(key: string, limit: number): Promise<DailyDecision> {
      const now = clock()
      const today = Math.floor(now / DAY_MS)
      const reset = Math.max(1, Math.ceil(((today + 1) * DAY_MS - now) / 1000))
      if (limit <= 0) return { allowed: true, limit: 0, remaining: 0, reset }
      if (swept !== today) {
        swept = today
        void deps.rows.sweep(today - 1).catch(() => {}) // best effort; the next day tries again
      }
      const who = createHmac('sha256', await deps.keyOf(today))
        .update(key)
        .digest('base64url')
        .slice(0, 32)
      const used = await deps.rows.hit(deps.scope, who, today, limit)
      if (used === null) return { allowed: false, limit, remaining: 0, reset }
      return { allowed: true, limit, remaining: limit - used, reset }
    },
  }
}
export type SharedDailyLimiter = ReturnType<typeof createSharedDailyLimiter>
