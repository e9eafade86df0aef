// The WAL's fsync (db/sqlite/wal-sync.ts): one fsync covers the commits before it began, and a write group closed
// by afterSync commits once per fsync, just before the fsync its writes wait for.
import { Database } from 'bun:sqlite'
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { createWalSync } from '../../src/db/sqlite/wal-sync'
import { createWriteGroup } from '../../src/db/sqlite/write-group'
import { tempDir } from '../support/app'

/** An fsync that ends when told (`end()`), logging its start and end. */
function heldFsync(log: string[]) {
  const ends: (() => void)[] = []
  return {
    fsync: () =>
      new Promise<void>((resolve) => {
        log.push('fsync begins')
        ends.push(() => {
          log.push('fsync ends')
          resolve()
        })
      }),
    end: () => ends.shift()!(),
    get waiting() {
      return ends.length
    },
  }
}

test('a sync asked for with no commit since the running one began joins it; after a commit it waits for the next', async () => {
  const log: string[] = []
  const held = heldFsync(log)
  let commits = 0
  const sync = createWalSync('/nowhere.db', () => commits, held.fsync)
  const first = sync()
  const joined = sync()
  expect(held.waiting).toBe(1)
  commits++
  let laterDone = false
  const later = sync().then(() => void (laterDone = true))
  const alsoLater = sync()
  expect(held.waiting).toBe(1) // the next one begins when the running one ends
  held.end()
  await Promise.all([first, joined])
  await Bun.sleep(0)
  expect(laterDone).toBe(false)
  expect(held.waiting).toBe(1)
  held.end()
  await Promise.all([later, alsoLater])
  expect(log).toEqual(['fsync begins', 'fsync ends', 'fsync begins', 'fsync ends'])
})

test('afterSync runs at once (next turn) with no fsync under way, else as it ends and before the next begins', async () => {
  const log: string[] = []
  const held = heldFsync(log)
  let commits = 0
  const sync = createWalSync('/nowhere.db', () => commits, held.fsync)
  await new Promise<void>((resolve) => sync.afterSync(resolve))
  const running = sync()
  commits++
  const next = sync()
  sync.afterSync(() => log.push('held writes commit'))
  await Bun.sleep(5)
  expect(log).toEqual(['fsync begins'])
  held.end()
  await running
  expect(log).toEqual(['fsync begins', 'fsync ends', 'held writes commit', 'fsync begins'])
  held.end()
  await next
})

test('a write group closed by afterSync commits the writes that came during an fsync in one transaction, covered by the next fsync', async () => {
  const dir = tempDir('linkbox-walsync-')
  const db = new Database(join(dir, 'w.db'), { strict: true })
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('CREATE TABLE t (n INTEGER)')
  const log: string[] = []
  const held = heldFsync(log)
  const sync = createWalSync(db.filename, () => group.commits, held.fsync)
  const group = createWriteGroup(db as never, (flush) => sync.afterSync(flush))
  const durable = async (n: number) => {
    await group.run(() => db.query('INSERT INTO t VALUES (?)').run(n))
    log.push(`committed ${n}`)
    await sync()
    log.push(`durable ${n}`)
  }
  const first = durable(1)
  await Bun.sleep(5)
  expect(log).toEqual(['committed 1', 'fsync begins'])
  // Three writes while the first fsync runs: held until it ends, then one commit and one fsync for them.
  const rest = [durable(2), durable(3), durable(4)]
  await Bun.sleep(5)
  expect(group.commits).toBe(1)
  held.end()
  await first
  await Bun.sleep(5)
  expect(group.commits).toBe(2)
  // One transaction for the three (commits: 2), then one fsync begun after it, covering all three.
  expect(log.slice(2, 4)).toEqual(['fsync ends', 'durable 1'])
  expect(log.slice(4).sort()).toEqual(['committed 2', 'committed 3', 'committed 4', 'fsync begins'])
  expect(held.waiting).toBe(1)
  held.end()
  await Promise.all(rest)
  expect(log.slice(8)).toEqual(['fsync ends', 'durable 2', 'durable 3', 'durable 4'])
  expect(db.query('SELECT count(*) AS n FROM t').get()).toEqual({ n: 4 })
  db.close()
})
