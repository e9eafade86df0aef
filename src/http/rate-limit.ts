// Fixed one-minute windows per caller, in memory. Cheap enough for every request; the map is swept
// as windows roll over so it never grows past the callers of the last minute.
export interface RateDecision {
  limit: number
  remaining: number
  reset: number // seconds until the window resets
  allowed: boolean
}

export function createRateLimiter(clock: () => number = Date.now, windowMs = 60_000) {
  let windowStart = Math.floor(clock() / windowMs) * windowMs
  let counts = new Map<string, number>()

  return {
    /** Counts one request for `bucket` against `limit` per window (0 = unlimited). */
    hit(bucket: string, limit: number): RateDecision {
      const now = clock()
      if (now - windowStart >= windowMs) {
        windowStart = Math.floor(now / windowMs) * windowMs
        counts = new Map()
      }
      const reset = Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000))
      if (limit <= 0) return { limit: 0, remaining: 0, reset, allowed: true }
      const used = (counts.get(bucket) ?? 0) + 1
      counts.set(bucket, used)
      return { limit, remaining: Math.max(0, limit - used), reset, allowed: used <= limit }
    },
  }
}
export type RateLimiter = ReturnType<typeof createRateLimiter>
