// Creations in groups (issue 7): the links created in one event-loop turn are committed in one
// transaction, each answered only after that commit, and each still fails or succeeds on its own —
// a taken alias, a code collision, a row too large for a full disk concern that request alone.
import { Database } from 'bun:sqlite'
import { afterAll, afterEach, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { createLinkService } from '../../src/links/service'
import { makeBox, type TestBox } from '../support/app'
import { sqliteLinkDeps } from '../support/links'
import {
  apiPost,
  CHROME_UA,
  createAccount,
  killAllServers,
  removeDir,
  startServer,
  tempDir,
  writeConfig,
} from '../support/server'

setDefaultTimeout(30_000)

const boxes: TestBox[] = []
const dirs: string[] = []
afterEach(async () => {
  for (const b of boxes.splice(0)) await b.cleanup()
})
afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
})

async function box() {
  const b = await makeBox({}, { clicks: { intervalMs: 3_600_000 } })
  boxes.push(b)
  return b
}

test('concurrent creations share commits, get distinct codes, and each is answered after its commit', async () => {
  const b = await box()
  const key = await b.account('alice')
  // Another connection to the same file sees only what is committed.
  const reader = new Database(join(b.dir, 'linkbox.db'), { readonly: true })
  const seenAtEvent: (string | null)[] = []
  b.events.on('link.created', ({ link }) => {
    const row = reader.query('SELECT code FROM links WHERE code = ?').get(link.hex as string) as { code: string } | null
    seenAtEvent.push(row?.code ?? null)
  })
  const before = b.links.creationCommits
  const N = 100
  const answers = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      b.post('/api/getLink.json', { url: `https://example.com/${i}` }, { 'x-api-key': key }),
    ),
  )
  try {
    expect(answers.map((a) => a.status)).toEqual(Array(N).fill(200))
    const codes = answers.map((a) => a.body.return.hex as string)
    expect(new Set(codes).size).toBe(N)
    // Every answered code is committed, with its own URL.
    for (const [i, code] of codes.entries())
      expect(reader.query('SELECT long_url FROM links WHERE code = ?').get(code)).toEqual({
        long_url: `https://example.com/${i}`,
      })
    expect(seenAtEvent).toHaveLength(N)
    expect(seenAtEvent.every((c) => c !== null)).toBe(true)
    const after = b.links.creationCommits
    expect(after.links - before.links).toBe(N)
    expect(after.commits - before.commits).toBeLessThan(N / 4)
  } finally {
    reader.close()
  }
})

test('a group with a taken alias answers 409 to that request and 200 to the others', async () => {
  const b = await box()
  const key = await b.account('bob')
  const post = (fields: Record<string, string>) => b.post('/api/getLink.json', fields, { 'x-api-key': key })
  expect((await post({ url: 'https://example.com/old', alias: 'taken' })).status).toBe(200)
  const before = b.links.creationCommits.commits
  const [a, taken, twin1, twin2, c, badUrl] = await Promise.all([
    post({ url: 'https://example.com/a' }),
    post({ url: 'https://example.com/taken-again', alias: 'taken' }),
    post({ url: 'https://example.com/twin1', alias: 'twin' }),
    post({ url: 'https://example.com/twin2', alias: 'twin' }),
    post({ url: 'https://example.com/c' }),
    post({ url: 'ftp://example.com/' }),
  ])
  // One transaction for the whole group.
  expect(b.links.creationCommits.commits - before).toBe(1)
  expect(a!.status).toBe(200)
  expect(c!.status).toBe(200)
  expect(taken!.status).toBe(409)
  expect(taken!.body).toEqual({ status: 'error', code: 'alias_taken', message: 'The alias "taken" is already in use.' })
  expect(badUrl!.status).toBe(400)
  // The first of two requests for the same new alias gets it; the second is told it is taken.
  expect([twin1!.status, twin2!.status]).toEqual([200, 409])
  expect(twin2!.body.code).toBe('alias_taken')
  const urls = (code: string) =>
    (b.db.query('SELECT long_url FROM links WHERE code = ?').get(code) as { long_url: string } | null)?.long_url
  expect(urls('taken')).toBe('https://example.com/old')
  expect(urls('twin')).toBe('https://example.com/twin1')
  expect(urls(a!.body.return.hex)).toBe('https://example.com/a')
  expect(urls(c!.body.return.hex)).toBe('https://example.com/c')
  expect(b.db.query('SELECT count(*) AS n FROM links').get()).toEqual({ n: 4 })
})

test("code collisions inside one group are retried: the second creation never gets the first one's code", async () => {
  const b = await box()
  // The second creation's first draw is the code the first one has just inserted, uncommitted, in the
  // same transaction: it must see it and draw again.
  const draws: string[] = []
  const sequence = ['Same01', 'Same01', 'Same02']
  const links = createLinkService({
    ...sqliteLinkDeps(b.db),
    config: b.config,
    recorder: b.recorder,
    events: b.events,
    randomCode: () => {
      const code = sequence[draws.length] ?? 'Later9'
      draws.push(code)
      return code
    },
  })
  const made = await Promise.all([
    links.create({ url: 'https://example.com/1' }, null),
    links.create({ url: 'https://example.com/2' }, null),
  ])
  expect(made.map((r) => [r.hex, r.long_url])).toEqual([
    ['Same01', 'https://example.com/1'],
    ['Same02', 'https://example.com/2'],
  ])
  expect(draws).toEqual(sequence)
  expect(links.creationCommits.commits).toBe(1)
})

test('on a full disk a row too large fails alone (503); the small creations of its group are stored', async () => {
  const b = await box()
  b.db.exec('VACUUM')
  const pages = (b.db.query('PRAGMA page_count').get() as { page_count: number }).page_count
  b.db.exec(`PRAGMA max_page_count = ${pages}`) // writes that need a new page fail with SQLITE_FULL
  const [small1, large, small2] = await Promise.all([
    b.post('/api/getLink.json', { url: 'https://example.com/s1' }),
    b.post('/api/getLink.json', { url: `https://example.com/${'a'.repeat(4070)}` }),
    b.post('/api/getLink.json', { url: 'https://example.com/s2' }),
  ])
  expect(large.status).toBe(503)
  expect(large.body.code).toBe('storage_unavailable')
  expect([small1.status, small2.status]).toEqual([200, 200])
  expect(b.db.query('SELECT long_url FROM links ORDER BY id').all()).toEqual([
    { long_url: 'https://example.com/s1' },
    { long_url: 'https://example.com/s2' },
  ])
})

test('the real server: 300 concurrent creations are grouped, and every acknowledged one survives kill -9', async () => {
  const config = writeConfig(tempDir('linkbox-groups-'))
  dirs.push(config.dir)
  const key = await createAccount(config.configPath, 'carol')
  let server = await startServer({ config })
  const N = 300
  const answers = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      apiPost(server.url, 'getLink.json', { url: `https://example.com/k/${i}` }, { 'x-api-key': key }),
    ),
  )
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  await server.kill() // no shutdown handler, no checkpoint
  expect(answers.map((a) => a.status)).toEqual(Array(N).fill(200))
  const metric = (name: string) => Number(metrics.match(new RegExp(`^${name} (\\d+)$`, 'm'))?.[1])
  expect(metric('linkbox_links_created_total')).toBe(N)
  expect(metric('linkbox_link_creation_commits_total')).toBeLessThan(N)

  server = await startServer({ config })
  try {
    for (const [i, a] of answers.entries()) {
      const r = await fetch(`${server.url}/${a.body.return.hex}`, {
        redirect: 'manual',
        headers: { 'user-agent': CHROME_UA },
      })
      expect({ i, status: r.status, location: r.headers.get('location') }).toEqual({
        i,
        status: 302,
        location: `https://example.com/k/${i}`,
      })
    }
    expect((await apiPost(server.url, 'links.json', { limit: '1' }, { 'x-api-key': key })).body.return.count).toBe(N)
  } finally {
    expect(await server.stop()).toBe(0)
  }
})
