// The request limiter with an injected clock: a burst, then requests coming back as old ones leave the
// window; never more than `limit` in any 60 s (the fixed window of before let 10 through in 2.5 s under
// 5/min); Retry-After that is right; and a bounded number of buckets.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createRateLimiter } from '../../src/web/rate-limit'

function clocked(start = 1_700_000_000_000, maxBuckets?: number) {
  let now = start
  const limiter = createRateLimiter(() => now, maxBuckets)
  return {
    limiter,
    at: (ms: number) => (now = start + ms),
    get now() {
      return now
    },
  }
}

describe('the window', () => {
  test('a burst of `limit`, then refused with the seconds until the oldest leaves the window', () => {
    const c = clocked()
    const got = Array.from({ length: 5 }, () => c.limiter.hit('a', 5))
    expect(got.map((d) => d.allowed)).toEqual([true, true, true, true, true])
    expect(got.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0])
    const refused = c.limiter.hit('a', 5)
    expect(refused).toMatchObject({ allowed: false, remaining: 0, limit: 5 })
    expect(refused.reset).toBe(61)
    c.at(30_000)
    expect(c.limiter.hit('a', 5)).toMatchObject({ allowed: false, reset: 31 })
    c.at(60_999)
    expect(c.limiter.hit('a', 5).allowed).toBe(false)
    c.at(61_000)
    // All five were in the same second, so all five come back at once.
    expect(c.limiter.hit('a', 5)).toMatchObject({ allowed: true, remaining: 4 })
  })

  test('the fixed-window hole of issue 6 is closed: 5/min lets 5 through around a minute boundary, not 10', () => {
    // Just before a minute boundary, then just after it: a fixed window would reset in between.
    const c = clocked(Math.ceil(1_700_000_000_000 / 60_000) * 60_000 - 1_250)
    let allowed = 0
    for (let i = 0; i < 10; i++) {
      c.at(i * 250) // 10 requests over 2.5 s
      if (c.limiter.hit('ip:192.0.2.1', 5).allowed) allowed++
    }
    expect(allowed).toBe(5)
  })

  test('requests come back one by one as their seconds leave the window', () => {
    const c = clocked()
    for (let s = 0; s < 3; s++) {
      c.at(s * 1000)
      expect(c.limiter.hit('a', 3).allowed).toBe(true)
    }
    c.at(10_000)
    expect(c.limiter.hit('a', 3)).toMatchObject({ allowed: false, reset: 51 })
    c.at(61_000)
    expect(c.limiter.hit('a', 3).allowed).toBe(true)
    expect(c.limiter.hit('a', 3)).toMatchObject({ allowed: false, reset: 1 })
    c.at(62_000)
    expect(c.limiter.hit('a', 3).allowed).toBe(true)
  })

  test('reset on an allowed request is the time until the whole allowance is back', () => {
    const c = clocked()
    expect(c.limiter.hit('a', 10).reset).toBe(61)
    c.at(20_500)
    expect(c.limiter.hit('a', 10)).toMatchObject({ remaining: 8, reset: 61 })
  })

  test('refused requests do not count: waiting out reset is enough', () => {
    const c = clocked()
    c.limiter.hit('a', 1)
    let reset = 0
    for (let i = 0; i < 100; i++) reset = c.limiter.hit('a', 1).reset
    c.at(reset * 1000)
    expect(c.limiter.hit('a', 1).allowed).toBe(true)
  })

  test('buckets are separate; limit 0 is unlimited and keeps nothing', () => {
    const c = clocked()
    expect(c.limiter.hit('a', 1).allowed).toBe(true)
    expect(c.limiter.hit('b', 1).allowed).toBe(true)
    expect(c.limiter.hit('a', 1).allowed).toBe(false)
    for (let i = 0; i < 1000; i++) expect(c.limiter.hit('u', 0).allowed).toBe(true)
    expect(c.limiter.size).toBe(2)
  })

  test('property: in no 60 s span are more than `limit` requests allowed, and a steady caller gets `limit` a minute', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 300 }),
        (limit, gaps) => {
          const c = clocked(1_700_000_000_123)
          const allowedAt: number[] = []
          let t = 0
          for (const gap of gaps) {
            t += gap
            c.at(t)
            if (c.limiter.hit('x', limit).allowed) allowedAt.push(t)
          }
          for (let i = limit; i < allowedAt.length; i++)
            expect(allowedAt[i]! - allowedAt[i - limit]!).toBeGreaterThanOrEqual(60_000)
        },
      ),
      { numRuns: 300 },
    )
    // Asking once a second for 10 minutes at 30/min: 30 in each minute but the first couple of seconds' worth.
    const c = clocked()
    let allowed = 0
    for (let s = 0; s < 600; s++) {
      c.at(s * 1000)
      if (c.limiter.hit('steady', 30).allowed) allowed++
    }
    expect(allowed).toBeGreaterThanOrEqual(290)
    expect(allowed).toBeLessThanOrEqual(300)
  })
})

describe('the bound on buckets', () => {
  test('idle buckets are dropped within a minute', () => {
    const c = clocked()
    for (let i = 0; i < 1000; i++) c.limiter.hit(`ip:${i}`, 10)
    expect(c.limiter.size).toBe(1000)
    c.at(30_000)
    c.limiter.hit('busy', 10)
    expect(c.limiter.size).toBe(1001) // still counting
    c.at(122_000)
    c.limiter.hit('busy', 10)
    expect(c.limiter.size).toBe(1)
  })

  test('at the bound idle buckets go first, then the oldest; the bound holds', () => {
    const c = clocked(1_700_000_000_000, 100)
    for (let i = 0; i < 50; i++) c.limiter.hit(`idle:${i}`, 1)
    c.at(40_000)
    expect(c.limiter.hit('old', 1).allowed).toBe(true)
    expect(c.limiter.hit('kept', 1).allowed).toBe(true)
    for (let i = 0; i < 48; i++) c.limiter.hit(`ip:${i}`, 1)
    expect(c.limiter.size).toBe(100)
    c.at(62_000) // the first 50 are idle now; the rest are counting
    c.limiter.hit('new:0', 1)
    expect(c.limiter.size).toBe(51)
    for (let i = 1; i < 1000; i++) {
      c.limiter.hit(`new:${i}`, 1)
      expect(c.limiter.size).toBeLessThanOrEqual(100)
    }
    // 'old' and 'kept' were dropped while counting: they start over with their full allowance.
    expect(c.limiter.hit('old', 1).allowed).toBe(true)
    expect(c.limiter.hit('kept', 1).allowed).toBe(true)
  })

  test('100k buckets, each busy in every second of the window: memory and time stay small', () => {
    const c = clocked()
    const key = (i: number) => `ip:2001:db8:${i.toString(16)}::/64`
    Bun.gc(true)
    const before = process.memoryUsage().heapUsed
    const started = performance.now()
    for (let s = 0; s < 61; s++) {
      c.at(s * 1000)
      for (let i = 0; i < 100_000; i++) c.limiter.hit(key(i), 600)
    }
    const ms = performance.now() - started
    Bun.gc(true)
    const mib = (process.memoryUsage().heapUsed - before) / 2 ** 20
    console.log(
      `rate limiter worst case: ${c.limiter.size} buckets, ${mib.toFixed(1)} MiB heap, ${((ms * 1e6) / 6_100_000).toFixed(0)} ns a hit`,
    )
    expect(c.limiter.size).toBe(100_000)
    c.limiter.hit('one more', 600)
    expect(c.limiter.size).toBe(100_000)
  }, 60_000)
})

test('a clock near zero (or before it) counts like any other', () => {
  for (const start of [0, -30_500]) {
    const c = clocked(start)
    for (let i = 0; i < 3; i++) expect(c.limiter.hit('a', 3).allowed).toBe(true)
    expect(c.limiter.hit('a', 3)).toMatchObject({ allowed: false, remaining: 0 })
    expect(Number.isInteger(c.limiter.hit('a', 3).reset)).toBe(true)
    c.at(61_000)
    expect(c.limiter.hit('a', 3)).toMatchObject({ allowed: true, remaining: 2 })
  }
})
