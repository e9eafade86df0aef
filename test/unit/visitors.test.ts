// The distinct-visitor counter (src/clicks/visitors.ts) on its own: the HyperLogLog's accuracy, the exact
// count up to EXACT_MAX, increments only, the day's key, and the memory bound with its drops.
import { describe, expect, test } from 'bun:test'
import { createVisitorCounter, EXACT_MAX, HyperLogLog } from '../../src/clicks/visitors'

const DAY = 20_000
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const address = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`

/** Adds n distinct visitors (from `first`) to one link-day; returns the sum of the increments answered. */
function addMany(c: ReturnType<typeof createVisitorCounter>, linkDay: number, n: number, first = 0, day = DAY): number {
  let sum = 0
  for (let i = first; i < first + n; i++) sum += c.add(linkDay, day, address(i), UA)
  return sum
}

describe('HyperLogLog', () => {
  test('10,000 and 100,000 distinct hashes are estimated within 5%; repeats change nothing', () => {
    for (const [n, seed] of [
      [10_000, 1],
      [10_000, 7],
      [100_000, 3],
    ] as const) {
      const h = new HyperLogLog()
      let x = seed * 0x9e3779b9
      const hashes: number[] = []
      for (let i = 0; i < n; i++) {
        // A 53-bit pseudo-random hash (xorshift), as visitors.ts makes from an HMAC.
        x ^= x << 13
        x ^= x >>> 17
        x ^= x << 5
        const hi = (x >>> 0) & 0x1fffff
        x ^= x << 13
        x ^= x >>> 17
        x ^= x << 5
        const hash = hi * 2 ** 32 + (x >>> 0)
        hashes.push(hash)
        h.add(hash)
      }
      const estimate = h.estimate()
      expect(Math.abs(estimate - n) / n).toBeLessThan(0.05)
      for (const hash of hashes.slice(0, 1000)) expect(h.add(hash)).toBe(false)
      expect(h.estimate()).toBe(estimate)
    }
  })
})

describe('the counter', () => {
  test('exact up to EXACT_MAX: each new visitor is an increment of 1, a repeat 0', () => {
    const c = createVisitorCounter()
    expect(c.add(1, DAY, '8.8.8.8', UA)).toBe(1)
    expect(c.add(1, DAY, '8.8.8.8', UA)).toBe(0)
    expect(c.add(1, DAY, '8.8.8.8', `${UA} other`)).toBe(1) // another user agent: another visitor
    expect(c.add(2, DAY, '8.8.8.8', UA)).toBe(1) // another link-day
    expect(addMany(c, 3, EXACT_MAX)).toBe(EXACT_MAX)
    expect(addMany(c, 3, EXACT_MAX)).toBe(0) // the same ones again
  })

  test('10,000 distinct visitors of a link-day (HMAC hashes, exact then a sketch) sum to within 5%', () => {
    const c = createVisitorCounter()
    const sum = addMany(c, 1, 10_000)
    expect(Math.abs(sum - 10_000) / 10_000).toBeLessThan(0.05)
    // Increments only: seeing them all again adds nothing.
    expect(addMany(c, 1, 10_000)).toBe(0)
  })

  test("a new UTC day has a new key and forgets the days before: yesterday's visitor is new today", () => {
    const keys: Buffer[] = []
    const c = createVisitorCounter({ newKey: () => keys[keys.push(Buffer.alloc(16, keys.length + 1)) - 1]! })
    expect(c.add(10, DAY, '8.8.8.8', UA)).toBe(1)
    expect(keys).toHaveLength(1)
    expect(c.tracked).toBe(1)
    expect(c.add(11, DAY + 1, '8.8.8.8', UA)).toBe(1)
    expect(keys).toHaveLength(2)
    expect(c.tracked).toBe(1) // the day before's tracker is gone with its key
  })

  test('the memory bound: past it the link-days least recently touched (a generation) are dropped, counted, and their later visitors count again', () => {
    const c = createVisitorCounter({ maxBytes: 20_000 })
    for (let link = 0; link < 1000; link++) c.add(link, DAY, '8.8.8.8', UA)
    expect(c.bytes).toBeLessThanOrEqual(20_000)
    expect(c.tracked + c.dropped).toBe(1000)
    expect(c.dropped).toBeGreaterThanOrEqual(1000 - Math.floor(20_000 / 48)) // one visitor: 48 bytes
    // Link 999 is the most recent: kept, a repeat adds nothing; link 0 was dropped: the same visitor counts again.
    expect(c.add(999, DAY, '8.8.8.8', UA)).toBe(0)
    expect(c.add(0, DAY, '8.8.8.8', UA)).toBe(1)
    // A link-day touched again is kept when the others of its generation go.
    const before = c.dropped
    for (let link = 2000; link < 2400; link++) {
      c.add(link, DAY, '8.8.8.8', UA)
      expect(c.add(999, DAY, '8.8.8.8', UA)).toBe(0)
    }
    expect(c.dropped).toBeGreaterThan(before)
    // Sketches (past EXACT_MAX, ~4 KB each) are charged as such: three push out a generation.
    const beforeSketches = c.dropped
    for (const link of [5000, 5001, 5002]) addMany(c, link, EXACT_MAX + 1)
    expect(c.bytes).toBeLessThanOrEqual(20_000)
    expect(c.dropped).toBeGreaterThan(beforeSketches)
  })
})
