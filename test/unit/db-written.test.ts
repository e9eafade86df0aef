// db/written.ts: a within's writes come back at once when each is done (SQLite), as one promise when one runs.
import { expect, test } from 'bun:test'
import { syncWithin } from '../../src/db/sqlite/within'
import { written } from '../../src/db/written'

test('done writes come back at once; a failed one throws at once; a running one gives one promise', async () => {
  expect(written(1, Promise.resolve(2), undefined)).toEqual([1, 2, undefined])
  expect(() => written(Promise.resolve(1), Promise.reject(new Error('the row could not be written')))).toThrow('the row could not be written')
  const later = written(1, Bun.sleep(1).then(() => 2))
  expect(later).toBeInstanceOf(Promise)
  expect(await later).toEqual([1, 2])
  // A query object (thenable, not a native promise) is still running.
  const query = { then: (ok: (v: number) => void) => ok(3) }
  expect(await written(query)).toEqual([3])
})

test('syncWithin refuses a promise, even a settled one, and passes anything else through', () => {
  expect(syncWithin([1, 2])).toEqual([1, 2])
  expect(syncWithin(undefined)).toBeUndefined()
  expect(() => syncWithin(Promise.resolve(1))).toThrow('within must be synchronous on SQLite')
  expect(() => syncWithin(Promise.reject(new Error('x')))).toThrow('within must be synchronous on SQLite')
})
