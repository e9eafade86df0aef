// Names of a message's bytes in the database (mail/storage/contract.ts): unique, and in the order of their times.
import { expect, test } from 'bun:test'
import { newBlobName } from '../../src/mail/storage/contract'

test('blob names are 32 hex digits, sort by their time, and differ within one millisecond', () => {
  const at = Date.UTC(2026, 11, 7)
  const names = [newBlobName(at), newBlobName(at + 1), newBlobName(at + 1_000), newBlobName(at + 86_400_000)]
  for (const n of names) expect(n).toMatch(/^[0-9a-f]{32}$/)
  expect([...names].sort()).toEqual(names)
  const same = new Set(Array.from({ length: 1_000 }, () => newBlobName(at)))
  expect(same.size).toBe(1_000)
})
