// randomBase62 (accounts/service.ts): API keys and short codes. Every character of the 62 equally likely
// (bytes from the CSPRNG, those that would favour some characters dropped), across refills of its pool.
import { expect, test } from 'bun:test'
import { randomBase62 } from '../../src/accounts'

test('codes of any length are base62, distinct, and every character is about equally frequent', () => {
  for (const length of [1, 6, 12, 40]) expect(randomBase62(length)).toMatch(new RegExp(`^[A-Za-z0-9]{${length}}$`))
  expect(randomBase62(0)).toBe('')
  // 120,000 characters (12 a code): many times the pool's 4 KiB, so its refills are crossed.
  const codes = Array.from({ length: 10_000 }, () => randomBase62(6) + randomBase62(1) + randomBase62(5))
  expect(new Set(codes).size).toBe(codes.length)
  const counts = new Map<string, number>()
  for (const c of codes.join('')) counts.set(c, (counts.get(c) ?? 0) + 1)
  expect(counts.size).toBe(62)
  // About 1,935 each; a bias of the `b % 62` kind (256 = 4 × 62 + 8) would put 8 characters near 2,400.
  // Chi-square with 61 degrees of freedom: above 120 happens with a chance below 1e-5.
  const expected = (codes.length * 12) / 62
  let chi = 0
  for (const n of counts.values()) chi += (n - expected) ** 2 / expected
  expect(chi).toBeLessThan(120)
})
