// db/lazy.ts: the stores' statements are prepared at their first use (serve's start makes the webhook, mail
// and account stores but runs few of their statements). A lazy statement answers as the connection's own.
import { Database } from 'bun:sqlite'
import { expect, test } from 'bun:test'
import { lazyStatements } from '../../src/db/sqlite/lazy'

test('nothing is prepared until the first use: a statement made before its table exists works once it does', () => {
  const db = new Database(':memory:')
  const q = lazyStatements(db)
  const insert = q.query<{ id: number }, [string]>('INSERT INTO t (name) VALUES (?) RETURNING id')
  const byName = q.prepare<{ id: number; name: string }, { $name: string }>('SELECT * FROM t WHERE name = $name')
  const all = q.query<{ name: string }, []>('SELECT name FROM t ORDER BY id')
  const names = q.query<[string], []>('SELECT name FROM t ORDER BY id')
  const remove = q.query<unknown, [number]>('DELETE FROM t WHERE id = ?')
  // Prepared now (db.query), these would have thrown: no such table.
  expect(() => db.query('SELECT * FROM t')).toThrow(/no such table/)
  db.run('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)')
  expect(insert.get('a')).toEqual({ id: 1 })
  expect(insert.get('b')).toEqual({ id: 2 })
  expect(byName.get({ $name: 'b' })).toEqual({ id: 2, name: 'b' })
  expect(all.all()).toEqual([{ name: 'a' }, { name: 'b' }])
  expect(names.values()).toEqual([['a'], ['b']])
  expect(remove.run(1).changes).toBe(1)
  expect(remove.run(1).changes).toBe(0)
  expect(all.all()).toEqual([{ name: 'b' }])
  db.close()
})

test("SQL the schema refuses throws at the first use, every use, with SQLite's message", () => {
  const db = new Database(':memory:')
  const bad = lazyStatements(db).query('SELECT nope FROM missing')
  expect(() => bad.all()).toThrow(/no such table: missing/)
  expect(() => bad.get()).toThrow(/no such table: missing/)
  db.close()
})
