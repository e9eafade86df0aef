// Transactions of a connection from openDatabase (db/sqlite/index.ts) take the write lock as they begin: another
// connection (the click writer's) cannot commit between their first read and their first write, which made a
// deferred one fail with SQLITE_BUSY_SNAPSHOT (an account created while clicks were written, in CI).
import { Database } from 'bun:sqlite'
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/sqlite'
import { tempDir } from '../support/app'

test('a transaction that reads first still writes when another connection wants to commit meanwhile; nested ones are savepoints', () => {
  const path = join(tempDir('linkbox-tx-'), 'linkbox.db')
  const main = openDatabase(path)
  const other = new Database(path)
  other.exec('PRAGMA busy_timeout = 0')
  main.exec('CREATE TABLE t (n INTEGER)')
  const counted = main.transaction(() => {
    const before = (main.query('SELECT count(*) AS n FROM t').get() as { n: number }).n
    // The other connection waits for this one (here: refused at once, its busy timeout being 0).
    expect(() => other.exec('INSERT INTO t VALUES (1)')).toThrow(/locked/)
    main.exec('INSERT INTO t VALUES (2)')
    main.transaction(() => main.exec('INSERT INTO t VALUES (3)'))()
    return before
  })()
  expect(counted).toBe(0)
  expect(main.query('SELECT n FROM t ORDER BY n').all()).toEqual([{ n: 2 }, { n: 3 }])
  // The other variants are still there, deferred for a transaction that only reads.
  expect(main.transaction(() => (main.query('SELECT count(*) AS n FROM t').get() as { n: number }).n).deferred()).toBe(
    2,
  )
  other.close()
  main.close()
})
