// Cookies per site (issue 41 item 4) end to end: the real yt-dlp reads the fixture pages under a host name
// (media.test, mapped to 127.0.0.1 by the guard's resolve hook: domain cookies need a name), and the fixture
// server's request log shows which Cookie header each request carried. A site's cookies reach that site (yt-dlp's
// page and segment requests, and our own stream of a direct format), never another site; the file yt-dlp was
// given is private while it runs and gone after; no answer and no stored byte shows a cookie's value.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { CLI } from '../../src/audit'
import { makeBox, type TestBox } from '../support/app'
import { startMediaFixtures, type MediaFixtures } from '../support/media-fixtures'

const LONG = 60_000
const SECRET = 'sEcReT-cookie-value-41'
const OTHER_SECRET = 'other-site-value-41'
const FUTURE = Math.floor(Date.now() / 1000) + 86_400
let fx: MediaFixtures
let box: TestBox
let key: string
let port: string

const cookiesFile = (...lines: string[][]) =>
  `# Netscape HTTP Cookie File\n# exported for the test\n\n${lines.map((l) => l.join('\t')).join('\n')}\n`

beforeAll(async () => {
  fx = await startMediaFixtures()
  port = new URL(fx.origin).port
  box = await makeBox(
    { media: { allow_private_networks: true } },
    { resolve: async (host) => (host.endsWith('.test') ? ['127.0.0.1'] : []) },
  )
  key = await box.account('media')
  const added = await box.cookies.add(
    'media.test',
    cookiesFile(
      ['.media.test', 'TRUE', '/', 'FALSE', String(FUTURE), 'sid', SECRET],
      ['#HttpOnly_media.test', 'FALSE', '/', 'FALSE', '0', 'session', 'yes'],
      ['.other.test', 'TRUE', '/', 'FALSE', String(FUTURE), 'stray', 'not-for-media'],
    ),
    CLI,
  )
  expect(added).toEqual({ site: 'media.test', cookies: 2, otherSites: 1, expired: 0, expires: FUTURE * 1000 })
  await box.cookies.add(
    'other.test',
    cookiesFile(['.other.test', 'TRUE', '/', 'FALSE', '0', 'other', OTHER_SECRET]),
    CLI,
  )
})
afterAll(async () => {
  await box?.cleanup()
  await fx?.stop()
})

let unique = 0
const on = (host: string, path: string) => `http://${host}:${port}${path}${path.includes('?') ? '&' : '?'}c=${++unique}`
const download = (url: string) => box.get('/api/download.json', { url }, { 'x-api-key': key })
const local = (link: string) => {
  const u = new URL(link)
  return u.pathname + u.search
}
const seen = (path: string) => fx.requests.filter((q) => q.path === path)
const runDir = () => join(box.config.data_dir, 'media', 'cookies')
const runFiles = () => (existsSync(runDir()) ? readdirSync(runDir()) : [])

describe('a site with cookies', () => {
  test(
    "yt-dlp's request for the page and ours for the file carry the site's cookies, not another site's",
    async () => {
      const page = on('media.test', '/pages/video.html')
      const r = await download(page)
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const path = new URL(page).pathname + new URL(page).search
      const asked = seen(path)
      expect(asked.length).toBeGreaterThan(0)
      for (const q of asked) {
        expect(q.headers.cookie).toContain(`sid=${SECRET}`)
        expect(q.headers.cookie).toContain('session=yes')
        expect(q.headers.cookie).not.toContain('not-for-media')
        expect(q.headers.cookie).not.toContain(OTHER_SECRET)
      }
      // The direct format is streamed by us: the Cookie header is the one matching its URL.
      const before = seen('/media/clip.mp4').length
      const file = await box.request(local(r.body.return.formats[0].url))
      expect(file.status).toBe(200)
      await file.arrayBuffer()
      const streamed = seen('/media/clip.mp4').slice(before)
      expect(streamed.length).toBe(1)
      expect(streamed[0]!.headers.cookie).toBe(`sid=${SECRET}; session=yes`)
      // No answer shows a value, and the ticket stored none.
      expect(JSON.stringify(r.body)).not.toContain(SECRET)
      expect(JSON.stringify(box.db.query('SELECT headers FROM media_tickets').all())).not.toContain(SECRET)
      expect(runFiles()).toEqual([])
    },
    LONG,
  )

  test(
    "playlist=1: the page request carries the cookies; no entry's ticket stores them, and a streamed entry gets them again",
    async () => {
      const page = on('media.test', '/pages/three-videos.html')
      const r = await box.get('/api/download.json', { url: page, playlist: '1' }, { 'x-api-key': key })
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body.return.entries).toHaveLength(3)
      for (const q of seen(new URL(page).pathname + new URL(page).search))
        expect(q.headers.cookie).toContain(`sid=${SECRET}`)
      expect(JSON.stringify(r.body)).not.toContain(SECRET)
      expect(JSON.stringify(box.db.query('SELECT headers FROM media_tickets').all())).not.toContain(SECRET)
      const before = fx.requests.length
      const file = await box.request(local(r.body.return.entries[1].formats[0].url))
      expect(file.status).toBe(200)
      await file.arrayBuffer()
      const streamed = fx.requests.slice(before).filter((q) => q.path.endsWith('.mp4'))
      expect(streamed.length).toBe(1)
      expect(streamed[0]!.headers.cookie).toBe(`sid=${SECRET}; session=yes`)
      expect(runFiles()).toEqual([])
    },
    LONG,
  )

  test(
    'a segmented format fetched whole by yt-dlp: every segment request carries the cookies',
    async () => {
      const r = await download(on('media.test', '/pages/hls.html'))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const hls = r.body.return.formats.find((f: { note: string; url: string }) => f)!
      const before = fx.requests.length
      const file = await box.request(local(hls.url))
      expect(file.status).toBe(200)
      expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(0)
      const segments = fx.requests.slice(before).filter((q) => q.path.startsWith('/media/hls/'))
      expect(segments.length).toBeGreaterThan(0)
      for (const q of segments) expect(q.headers.cookie, q.path).toContain(`sid=${SECRET}`)
      expect(runFiles()).toEqual([])
    },
    LONG,
  )

  test(
    'while yt-dlp runs its cookies file is 0600 in a 0700 folder under data_dir; after, it is gone',
    async () => {
      const pending = download(on('media.test', '/pages/video.html?delay=2500'))
      let found: string | null = null
      for (let i = 0; i < 200 && !found; i++) {
        const [dir] = runFiles()
        if (dir && existsSync(join(runDir(), dir, 'cookies.txt'))) found = join(runDir(), dir)
        else await Bun.sleep(10)
      }
      expect(found).not.toBeNull()
      expect(statSync(found!).mode & 0o777).toBe(0o700)
      expect(statSync(join(found!, 'cookies.txt')).mode & 0o777).toBe(0o600)
      expect((await pending).status).toBe(200)
      expect(existsSync(found!)).toBe(false)
      expect(runFiles()).toEqual([])
    },
    LONG,
  )

  test('last use is noted; the list shows site, count and earliest expiry, never a value', async () => {
    const list = await box.cookies.list()
    const media = list.find((s) => s.site === 'media.test')!
    expect(media).toMatchObject({ site: 'media.test', cookies: 2, expires: FUTURE * 1000 })
    expect(media.last_used).toBeGreaterThan(Date.now() - 60_000)
    expect(list.find((s) => s.site === 'other.test')).toMatchObject({ cookies: 1, expires: null })
    expect(JSON.stringify(list)).not.toContain(SECRET)
  })

  test('no answer shows a value: the API, its docs, health, metrics, the admin pages', async () => {
    const admin = await box.account('admin', { admin: true })
    const answers = await Promise.all(
      ['/api/docs', '/api/docs/openapi.json', '/healthz', '/readyz', '/dashboard/admin/cookies'].map((path) =>
        box.request(path, { headers: { 'x-api-key': admin } }).then((r) => r.text()),
      ),
    )
    answers.push(await (await box.readMetrics()).text())
    for (const text of answers) for (const value of [SECRET, OTHER_SECRET]) expect(text).not.toContain(value)
  })

  test('the stored row is sealed: no cookie name or value in it, read straight from the table', () => {
    const rows = box.db.query('SELECT * FROM media_cookies').all() as Record<string, unknown>[]
    expect(rows).toHaveLength(2)
    for (const row of rows) {
      const raw = Buffer.from(row.sealed as Uint8Array).toString('latin1')
      for (const text of [SECRET, OTHER_SECRET, 'sid', 'session', 'media.test\t']) expect(raw).not.toContain(text)
    }
  })
})

describe('a site without cookies', () => {
  test(
    'the same page on the IP address (another site) goes without any cookie; so does a third name',
    async () => {
      for (const host of ['127.0.0.1', 'plain.test']) {
        const page = on(host, '/pages/video.html')
        const r = await download(page)
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        const asked = seen(new URL(page).pathname + new URL(page).search)
        expect(asked.length).toBeGreaterThan(0)
        for (const q of asked) expect(q.headers.cookie, host).toBeUndefined()
        const before = seen('/media/clip.mp4').length
        const file = await box.request(local(r.body.return.formats[0].url))
        await file.arrayBuffer()
        expect(seen('/media/clip.mp4').slice(before)[0]!.headers.cookie, host).toBeUndefined()
      }
    },
    LONG,
  )

  test(
    "a site's removal takes effect at the next run",
    async () => {
      expect(await box.cookies.remove('other.test', CLI)).toBe(true)
      expect(await box.cookies.remove('other.test', CLI)).toBe(false)
      const page = on('www.other.test', '/pages/video.html')
      expect((await download(page)).status).toBe(200)
      for (const q of seen(new URL(page).pathname + new URL(page).search)) expect(q.headers.cookie).toBeUndefined()
    },
    LONG,
  )
})

test(
  'on a time limit the run is killed and its cookies file removed all the same',
  async () => {
    const quick = await makeBox(
      { media: { allow_private_networks: true, extract_timeout: 1 } },
      { resolve: async () => ['127.0.0.1'] },
    )
    try {
      await quick.cookies.add('media.test', cookiesFile(['.media.test', 'TRUE', '/', 'FALSE', '0', 'sid', SECRET]), CLI)
      const r = await quick.get(
        '/api/download.json',
        { url: on('media.test', '/pages/video.html?delay=5000') },
        {
          'x-api-key': await quick.account('q'),
        },
      )
      expect([r.status, r.body.code]).toEqual([504, 'timeout'])
      const dir = join(quick.config.data_dir, 'media', 'cookies')
      expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([])
    } finally {
      await quick.cleanup()
    }
  },
  LONG,
)
