// The cache of visited links (links/service.ts resolve): two generations, so that eviction costs nothing;
// a change or a deletion must reach a row in either generation.
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Caller } from '../../src/kernel/caller'
import { createClickRecorder } from '../../src/clicks/recorder'
import { openDatabase } from '../../src/db/sqlite'
import { createEvents } from '../../src/kernel/events'
import { localChangeFeed } from '../../src/db/changes'
import { createLinkService } from '../../src/links/service'
import { LINK_CACHE_TTL_MS } from '../../src/links/cache'
import { tempDir, testConfig } from '../support/app'
import { sqliteLinkDeps } from '../support/links'

const dir = tempDir()
const db = openDatabase(join(dir, 'linkbox.db'))
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})
const admin: Caller = { accountId: 0, accountName: 'admin', admin: true, scopes: new Set(), keyId: null, via: 'key' }
// Two rows per generation: the third visited code turns the first two into the old generation.
const links = createLinkService({
  ...sqliteLinkDeps(db),
  config: testConfig(dir),
  recorder: createClickRecorder(db, { writeOn: 'main' }),
  events: createEvents(),
  hotGeneration: 2,
})

test('a row in the old generation is dropped when its link changes or goes, and served again after', async () => {
  const codes: string[] = []
  for (let i = 0; i < 5; i++) codes.push((await links.create({ url: `https://example.com/${i}` }, null)).hex)
  const [a, b, c, d] = codes as [string, string, string, string]
  for (const code of [a, b, c]) expect((await links.resolve(code))?.long_url).toStartWith('https://example.com/')
  // a and b are in the old generation now, c in the young one.
  await links.update({ code: a, url: 'https://example.org/changed' }, admin)
  expect((await links.resolve(a))?.long_url).toBe('https://example.org/changed')
  await links.delete({ code: b }, admin)
  expect(await links.resolve(b)).toBeNull()
  // Visited again and again across many swaps, a row keeps its latest state.
  for (let round = 0; round < 5; round++)
    for (const code of [a, c, d, codes[4]!]) expect(await links.resolve(code)).not.toBeNull()
  await links.update({ code: d, url: 'https://example.org/d' }, admin)
  expect((await links.resolve(d))?.long_url).toBe('https://example.org/d')
  expect((await links.resolve(a))?.long_url).toBe('https://example.org/changed')
})

// Two processes on one database file, as `serve` and a second linkbox process or node: each has its own
// cache; what one changes it publishes on the change feed (db/changes.ts; here one local feed stands for the
// channel between them), and the other drops its row at once. A change nobody published is served for
// LINK_CACHE_TTL_MS at most.
test('a link changed by another process is dropped from the cache at once when published, and after the TTL when not', async () => {
  let now = Date.UTC(2026, 10, 26, 12)
  const clock = () => now
  const feed = localChangeFeed()
  const other = openDatabase(join(dir, 'linkbox.db'))
  const service = (on: typeof db) =>
    createLinkService({
      ...sqliteLinkDeps(on),
      config: testConfig(dir),
      recorder: createClickRecorder(on, { writeOn: 'main' }),
      events: createEvents(),
      clock,
      changes: feed,
    })
  const a = service(db)
  const b = service(other)
  try {
    const code = (await a.create({ url: 'https://example.com/feed' }, null)).hex
    expect((await a.resolve(code))?.long_url).toBe('https://example.com/feed')
    // B changes it: published after its commit, A's next visit reads the new row.
    await b.update({ code, url: 'https://example.org/feed-changed' }, admin)
    expect((await a.resolve(code))?.long_url).toBe('https://example.org/feed-changed')
    await b.delete({ code }, admin)
    expect(await a.resolve(code)).toBeNull()

    // A change made behind the services (nothing published): the cached row until the TTL runs out.
    const quiet = (await a.create({ url: 'https://example.com/quiet' }, null)).hex
    expect((await a.resolve(quiet))?.long_url).toBe('https://example.com/quiet')
    other.run('UPDATE links SET long_url = ? WHERE code = ?', ['https://example.org/quiet-changed', quiet])
    now += LINK_CACHE_TTL_MS - 1
    expect((await a.resolve(quiet))?.long_url).toBe('https://example.com/quiet')
    now += 1
    expect((await a.resolve(quiet))?.long_url).toBe('https://example.org/quiet-changed')
    // Also for a row that went to the old generation meanwhile, and for a link deleted behind the service.
    other.run('DELETE FROM links WHERE code = ?', [quiet])
    now += LINK_CACHE_TTL_MS
    expect(await a.resolve(quiet)).toBeNull()
  } finally {
    a.close()
    b.close()
    other.close()
  }
})

test('a lost channel to the other processes (a resync) drops every cached row', async () => {
  let onResync = () => {}
  const feed = {
    ...localChangeFeed(),
    subscribe: (_topic: string, _onKeys: unknown, resync: () => void) => ((onResync = resync), () => {}),
  }
  const c = createLinkService({
    ...sqliteLinkDeps(db),
    config: testConfig(dir),
    recorder: createClickRecorder(db, { writeOn: 'main' }),
    events: createEvents(),
    changes: feed,
  })
  const code = (await c.create({ url: 'https://example.com/resync' }, null)).hex
  expect((await c.resolve(code))?.long_url).toBe('https://example.com/resync')
  db.run('UPDATE links SET long_url = ? WHERE code = ?', ['https://example.org/resync-changed', code])
  expect((await c.resolve(code))?.long_url).toBe('https://example.com/resync')
  onResync()
  expect((await c.resolve(code))?.long_url).toBe('https://example.org/resync-changed')
})

test('a miss is one read shared by the visits of that code at once, and a read under way when its code changes is not kept', async () => {
  // The storage as PostgreSQL's is: reads only with a promise.
  const deps = sqliteLinkDeps(db)
  const { byCodeNow, ...readsLater } = deps.links
  expect(byCodeNow).toBeFunction()
  const c = createLinkService({
    ...deps,
    links: readsLater,
    config: testConfig(dir),
    recorder: createClickRecorder(db, { writeOn: 'main' }),
    events: createEvents(),
  })
  const code = (await c.create({ url: 'https://example.com/shared' }, null)).hex
  const first = c.resolve(code)
  expect(first).toBeInstanceOf(Promise)
  expect(c.resolve(code)).toBe(first)
  // Its link changes (published) while the read is under way: the row read is answered, never kept.
  c.forget([{ code, domain: '' }])
  expect((await first)?.long_url).toBe('https://example.com/shared')
  const again = c.resolve(code)
  expect(again).toBeInstanceOf(Promise)
  expect(again).not.toBe(first)
  // This read was not overtaken by a change: the next lookup is the cached row itself, synchronously.
  const row = await again
  expect(c.resolve(code)).toBe(row)
  // An unknown code is a read each time (nothing is cached for it), answered null.
  expect(c.resolve('nosuch9')).toBeInstanceOf(Promise)
  expect(await c.resolve('nosuch9')).toBeNull()
})

test('on SQLite a miss is read at once, without a promise; a reserved name is no read at all', async () => {
  const deps = sqliteLinkDeps(db)
  const reads: string[] = []
  const counted = { ...deps.links, byCodeNow: (code: string) => (reads.push(code), deps.links.byCodeNow!(code)) }
  const c = createLinkService({
    ...deps,
    links: counted,
    config: testConfig(dir),
    recorder: createClickRecorder(db, { writeOn: 'main' }),
    events: createEvents(),
  })
  const code = (await c.create({ url: 'https://example.com/at-once' }, null)).hex
  const row = c.resolve(code)
  expect(row).not.toBeInstanceOf(Promise)
  expect((row as { long_url: string }).long_url).toBe('https://example.com/at-once')
  // Kept: the next visit is the cached row itself, no read.
  expect(c.resolve(code)).toBe(row)
  expect(reads).toEqual([code])
  // An unknown code is read each time, answered null at once.
  expect(c.resolve('nosuch8')).toBeNull()
  expect(c.resolve('nosuch8')).toBeNull()
  // /healthz, /Dashboard: names no link can have are never read.
  expect(c.resolve('healthz')).toBeNull()
  expect(c.resolve('Dashboard')).toBeNull()
  expect(reads).toEqual([code, 'nosuch8', 'nosuch8'])
  // A link changed behind the cache is read again once forgotten.
  c.forget([{ code, domain: '' }])
  expect(c.resolve(code)).not.toBe(row)
  expect(reads).toEqual([code, 'nosuch8', 'nosuch8', code])
})

test('a row read again after its TTL is held once: its stale copy in the old generation goes', () => {
  let now = Date.parse('2026-06-01T12:00:00Z')
  const c = createLinkService({
    ...sqliteLinkDeps(db),
    config: testConfig(dir),
    recorder: createClickRecorder(db, { writeOn: 'main' }),
    events: createEvents(),
    hotGeneration: 3,
    clock: () => now,
  })
  const made = db.query('SELECT code FROM links ORDER BY id LIMIT 4').all() as { code: string }[]
  const [a, b, x, y] = made.map((r) => r.code) as [string, string, string, string]
  for (const code of [a, b, x, y]) expect(c.resolve(code)).not.toBeNull()
  // a, b and x filled the first generation, which became the old one when y came: 4 rows.
  expect(c.cachedRows).toBe(4)
  now += LINK_CACHE_TTL_MS + 1
  // Past the TTL a and b are read again: each is kept once, in the young generation, not twice.
  expect(c.resolve(a)).not.toBeNull()
  expect(c.resolve(b)).not.toBeNull()
  expect(c.cachedRows).toBe(4)
})
