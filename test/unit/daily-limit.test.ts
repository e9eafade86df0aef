// The per-day allowance (rate.anon_per_day, reports): a count per key, back at UTC midnight, bounded.
import { expect, test } from 'bun:test'
import { createDailyLimiter } from '../../src/web/daily-limit'

test('limit a day per key; refused uses do not count; back at the next UTC midnight', () => {
  let now = Date.parse('2026-11-25T23:59:00Z')
  const day = createDailyLimiter(() => now)
  expect([1, 2, 3].map(() => day.hit('a', 2).allowed)).toEqual([true, true, false])
  expect(day.hit('a', 2)).toEqual({ allowed: false, limit: 2, remaining: 0, reset: 60 })
  expect(day.hit('b', 2).allowed).toBe(true)
  now = Date.parse('2026-11-26T00:00:00Z')
  expect(day.hit('a', 2)).toEqual({ allowed: true, limit: 2, remaining: 1, reset: 86_400 })
})

test('0 is unlimited; past the bound the oldest key is dropped, never more kept', () => {
  const day = createDailyLimiter(() => 0, 3)
  for (let i = 0; i < 10; i++) expect(day.hit('x', 0).allowed).toBe(true)
  for (const k of ['a', 'b', 'c', 'd']) day.hit(k, 1)
  expect(day.size).toBe(3)
  expect(day.hit('a', 1).allowed).toBe(true) // dropped: starts again
  expect(day.hit('d', 1).allowed).toBe(false)
})
