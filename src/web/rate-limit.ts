// Per-caller request limits in memory: a sliding window of one minute counted in one-second slots, so that any
// 60 s hold at most `limit` accepted requests; a refused request is not counted.
export interface RateDecision {
  limit: number
  remaining: number
  /** Seconds until a request would be allowed again (refused), or until the whole allowance is back. */
  reset: number
  allowed: boolean
}

const SLOT_MS = 1000
/** Slots a request counts in: the second it came in and the 60 after it. */
const SLOTS = 61
/**
 * Buckets kept at most. Buckets idle for a whole window are dropped in a sweep once a minute, and at the
 * bound (at most once a second there); if the bound is still reached, the oldest bucket is dropped, though
 * still counting: its caller starts again with a full allowance. Reaching it takes 100k callers active in
 * one minute (IPv6 clients count per /64). A bucket is a fixed 61 counters: measured, 100k buckets take
 * 45 MiB of heap, and a hit under 1 µs (test/unit/rate-limit.test.ts prints both).
 */
export const MAX_BUCKETS = 100_000

/** The place of a second in a bucket's counts (a clock before 1970 gives negative seconds). */
const at = (slot: number) => ((slot % SLOTS) + SLOTS) % SLOTS

interface Bucket {
  /** Accepted requests per second: slot s at counts[at(s)], for the SLOTS seconds up to `last`. */
  counts: Uint32Array
  total: number
  /** The newest slot this bucket has counted in. */
  last: number
}

export function createRateLimiter(clock: () => number = Date.now, maxBuckets = MAX_BUCKETS) {
  const buckets = new Map<string, Bucket>()
  let sweptAt = -Infinity // slot of the last sweep

  /** Moves the bucket on to `slot`, forgetting the seconds that have left the window. */
  function advance(b: Bucket, slot: number) {
    // A clock that steps back keeps counting in the newest slot.
    for (let s = Math.max(b.last + 1, slot - SLOTS + 1); s <= slot; s++) {
      b.total -= b.counts[at(s)]!
      b.counts[at(s)] = 0
    }
    b.last = Math.max(b.last, slot)
  }

  /** Drops the buckets with nothing left in the window: one pass, about 10 ms for 100k buckets. */
  function sweep(slot: number) {
    sweptAt = slot
    for (const [key, b] of buckets) if (b.last <= slot - SLOTS) buckets.delete(key)
  }

  function bucketFor(key: string, slot: number): Bucket {
    let b = buckets.get(key)
    if (b) return b
    if (buckets.size >= maxBuckets) {
      if (slot > sweptAt) sweep(slot)
      // Insertion order: the first is the oldest bucket.
      if (buckets.size >= maxBuckets) buckets.delete(buckets.keys().next().value!)
    }
    b = { counts: new Uint32Array(SLOTS), total: 0, last: slot }
    buckets.set(key, b)
    return b
  }

  return {
    /** Counts one request for `bucket` against `limit` per minute (0 = unlimited). */
    hit(bucket: string, limit: number): RateDecision {
      const now = clock()
      if (limit <= 0) return { limit: 0, remaining: 0, reset: 1, allowed: true }
      const slot = Math.floor(now / SLOT_MS)
      if (slot - sweptAt >= SLOTS) sweep(slot)
      const b = bucketFor(bucket, slot)
      advance(b, slot)
      const seconds = (until: number) => Math.max(1, Math.ceil((until * SLOT_MS - now) / 1000))
      if (b.total >= limit) {
        // Allowed again once enough of the oldest seconds have left the window to bring the count under the limit.
        let left = b.total
        let s = b.last - SLOTS + 1
        for (; left >= limit; s++) left -= b.counts[at(s)]!
        return { limit, remaining: 0, reset: seconds(s - 1 + SLOTS), allowed: false }
      }
      b.counts[at(b.last)]!++
      b.total++
      return { limit, remaining: limit - b.total, reset: seconds(b.last + SLOTS), allowed: true }
    },
    /** Buckets held (for tests and metrics). */
    get size() {
      return buckets.size
    },
  }
}
export type RateLimiter = ReturnType<typeof createRateLimiter>
