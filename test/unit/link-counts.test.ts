// The per-account link counter (issue 7): links.json and /metrics read a row kept by triggers instead of
// counting the account's links on every page. It must stay exact through every way a link comes or goes,
// and start exact on a database that already holds links when it is migrated.
import { Database } from 'bun:sqlite'
import { afterEach, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase, type Db } from '../../src/db/sqlite'
import { migrations, type Migration } from '../../src/db/sqlite/migrations'
import { makeBox, tempDir, type TestBox } from '../support/app'

const boxes: TestBox[] = []
const dirs: string[] = []
afterEach(async () => {
  for (const b of boxes.splice(0)) await b.cleanup()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** The counters as stored, against a real count of the rows: owner → links (0 = links without an account). */
function counters(db: Database) {
  const stored = db.query('SELECT owner, links FROM link_counts WHERE links <> 0 ORDER BY owner').all()
  const counted = db
    .query('SELECT coalesce(account_id, 0) AS owner, count(*) AS links FROM links GROUP BY 1 ORDER BY 1')
    .all()
  return { stored, counted }
}
const expectExact = (db: Database) => {
  const { stored, counted } = counters(db)
  expect(stored).toEqual(counted)
}

const listedCount = async (box: TestBox, key: string) => {
  const r = await box.post('/api/links.json', { limit: '1' }, { 'x-api-key': key })
  expect(r.status).toBe(200)
  return r.body.return.count as number
}
const metricLinks = async (box: TestBox) =>
  Number((await (await box.readMetrics()).text()).match(/^linkbox_links (\d+)$/m)?.[1])

test('the counter stays exact through creation, deletion, a change of owner and the deletion of an account', async () => {
  const box = await makeBox()
  boxes.push(box)
  const alice = await box.account('alice')
  const bob = await box.account('bob')
  const create = async (key: string | null, n: number) => {
    const codes: string[] = []
    for (let i = 0; i < n; i++) {
      const r = await box.post(
        '/api/getLink.json',
        { url: `https://example.com/${i}` },
        key ? { 'x-api-key': key } : {},
      )
      expect(r.status).toBe(200)
      codes.push(r.body.return.hex)
    }
    return codes
  }
  const aliceCodes = await create(alice, 7)
  await create(bob, 3)
  await create(null, 2)
  expectExact(box.db)
  expect(await listedCount(box, alice)).toBe(7)
  expect(await listedCount(box, bob)).toBe(3)
  expect(await metricLinks(box)).toBe(12)

  for (const code of aliceCodes.slice(0, 2))
    expect((await box.post('/api/delete.json', { code }, { 'x-api-key': alice })).status).toBe(200)
  // A refused delete (another account's link) changes nothing.
  expect((await box.post('/api/delete.json', { code: aliceCodes[2]! }, { 'x-api-key': bob })).status).toBe(403)
  expectExact(box.db)
  expect(await listedCount(box, alice)).toBe(5)
  expect(await metricLinks(box)).toBe(10)

  // No method moves a link to another account, but the counter must not depend on that.
  const ids = box.db.query('SELECT id, name FROM accounts ORDER BY id').all() as { id: number; name: string }[]
  const [aliceId, bobId] = [ids.find((a) => a.name === 'alice')!.id, ids.find((a) => a.name === 'bob')!.id]
  box.db.query('UPDATE links SET account_id = ? WHERE code = ?').run(bobId, aliceCodes[3]!)
  box.db.query('UPDATE links SET mode = ? WHERE code = ?').run('preview', aliceCodes[4]!) // not the owner: no change
  expectExact(box.db)
  expect(await listedCount(box, alice)).toBe(4)
  expect(await listedCount(box, bob)).toBe(4)

  // Deleting an account keeps its links (ON DELETE SET NULL): they become links without an account.
  box.db.query('DELETE FROM accounts WHERE id = ?').run(aliceId)
  expectExact(box.db)
  expect(box.db.query('SELECT owner FROM link_counts WHERE owner = ?').get(aliceId)).toBeNull()
  expect(box.db.query('SELECT links FROM link_counts WHERE owner = 0').get()).toEqual({ links: 6 })
  expect(await listedCount(box, bob)).toBe(4)
  expect(await metricLinks(box)).toBe(10)

  // An account without links counts 0 (it has no row).
  const carol = await box.account('carol')
  expect(await listedCount(box, carol)).toBe(0)
})

test('links.json reads the counter: the page does not count the rows', async () => {
  const box = await makeBox()
  boxes.push(box)
  const key = await box.account('dave')
  expect((await box.post('/api/getLink.json', { url: 'https://example.com/' }, { 'x-api-key': key })).status).toBe(200)
  // Only a page that reads the stored number can show one that differs from the rows.
  box.db.exec('UPDATE link_counts SET links = 100000 WHERE owner <> 0')
  expect(await listedCount(box, key)).toBe(100000)
  expect(await metricLinks(box)).toBe(100000)
})

const sqlOf = (m: Migration) => (typeof m === 'string' ? m : m.sql)

test('a database of the previous schema with links gets exact counters when it is migrated', () => {
  const counterMigration = migrations.findIndex((m) => sqlOf(m).includes('CREATE TABLE link_counts'))
  expect(counterMigration).toBeGreaterThan(0)
  const dir = tempDir('linkbox-counts-')
  dirs.push(dir)
  const path = join(dir, 'linkbox.db')
  // The schema exactly as the migrations before the counter left it, with accounts and links in it.
  const old = new Database(path, { create: true, strict: true })
  old.exec('PRAGMA journal_mode = WAL')
  for (let v = 0; v < counterMigration; v++) old.exec(sqlOf(migrations[v]!))
  old.exec(`PRAGMA user_version = ${counterMigration}`)
  old.exec("INSERT INTO accounts (id, name, created) VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 1)")
  const ins = old.query('INSERT INTO links (code, long_url, account_id, created, updated) VALUES (?, ?, ?, 1, 1)')
  old.transaction(() => {
    for (let i = 0; i < 250; i++) ins.run(`a${i}`, 'https://example.com/', 1)
    for (let i = 0; i < 40; i++) ins.run(`b${i}`, 'https://example.com/', 2)
    for (let i = 0; i < 9; i++) ins.run(`n${i}`, 'https://example.com/', null)
  })()
  old.close()

  const db: Db = openDatabase(path)
  try {
    expect((db.query('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(migrations.length)
    expect(db.query('SELECT owner, links FROM link_counts ORDER BY owner').all()).toEqual([
      { owner: 0, links: 9 },
      { owner: 1, links: 250 },
      { owner: 2, links: 40 },
    ])
    // And the triggers keep them from here on.
    db.exec(
      "INSERT INTO links (code, long_url, account_id, created, updated) VALUES ('c0', 'https://example.com/', 3, 1, 1)",
    )
    db.exec("DELETE FROM links WHERE code IN ('a0', 'a1', 'n0')")
    db.exec('DELETE FROM accounts WHERE id = 2')
    expectExact(db)
    expect(db.query('SELECT owner, links FROM link_counts ORDER BY owner').all()).toEqual([
      { owner: 0, links: 48 },
      { owner: 1, links: 248 },
      { owner: 3, links: 1 },
    ])
  } finally {
    db.close()
  }
})
