// The writes of one `within` (db/written.ts) and SQLite's refusal of an async `within` (db/sqlite/within.ts).
import { expect, test } from 'bun:test'
import { syncWithin } from '../../src/db/sqlite/within'
import { allWritten } from '../../src/db/written'

test('allWritten stays synchronous for values and settled promises, and is a promise while one write is pending', async () => {
  expect(allWritten([1, undefined, 'x'])).toEqual([1, undefined, 'x'])
  expect(allWritten([1, Promise.resolve(2)])).toEqual([1, 2])
  const pending = allWritten([1, Bun.sleep(1).then(() => 3)])
  expect(pending).toBeInstanceOf(Promise)
  expect(await pending).toEqual([1, 3])
  expect(() => allWritten([1, Promise.reject(new Error('the row could not be written'))])).toThrow(
    'could not be written',
  )
  // A query object (thenable, not a native promise) is still running.
  const query = { then: (ok: (v: number) => void) => ok(3) }
  expect(await allWritten([query])).toEqual([3])
})

test('syncWithin passes values and settled work through, and refuses a pending promise (without leaving it unhandled)', async () => {
  expect(syncWithin(5)).toBe(5)
  expect(syncWithin(undefined)).toBeUndefined()
  const done = Promise.resolve(1)
  expect(syncWithin(done)).toBe(done)
  expect(() => syncWithin(Bun.sleep(1).then(() => 1))).toThrow('within must be synchronous on SQLite')
  expect(() => syncWithin(Bun.sleep(1).then(() => Promise.reject(new Error('late'))))).toThrow(
    'within must be synchronous on SQLite',
  )
  expect(() => syncWithin(Promise.reject(new Error('the row could not be written')))).toThrow('could not be written')
  await Bun.sleep(1)
})
