// What an import keeps (issue 36 item 5, SPEC §2a): each file's own creation date and title (Shlink createdAt
// and title, Kutt created_at and description, YOURLS timestamp and title, Bitly Date created and Title,
// linkbox's created and title), tags folded to ASCII only where that is faithful, and linkbox's own export
// coming back exactly. And the link title itself: create, update, record, q= search (through the real app and
// the real SQLite file; both engines' storage in test/link-storage.test.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parseCsv } from '../../src/links/csv'
import { makeBox, type TestBox } from '../support/app'
import { exportCsv, importFile, importFixture } from '../support/import'

const as = (key: string) => ({ 'x-api-key': key })

interface Stored {
  code: string
  long_url: string
  mode: string
  created: number
  expires: number | null
  max_visits: number | null
  title: string
  tags: string | null
}
const linksOf = (b: TestBox, account: string) =>
  b.db
    .query(
      `SELECT l.code, l.long_url, l.mode, l.created, l.expires, l.max_visits, l.title,
         (SELECT group_concat(tag, ',') FROM (SELECT tag FROM link_tags WHERE link_id = l.id ORDER BY tag)) AS tags
       FROM links l JOIN accounts a ON a.id = l.account_id WHERE a.name = ? ORDER BY l.code`,
    )
    .all(account) as Stored[]
const one = (b: TestBox, account: string, code: string) => linksOf(b, account).find((l) => l.code === code)

let box: TestBox
beforeAll(async () => {
  box = await makeBox()
})
afterAll(() => box.cleanup())

describe("other tools' files keep each link's creation date and title", () => {
  test('shlink: createdAt (with its offset) and title, a title over two lines too', async () => {
    const key = await box.account('shl')
    const r = await importFile(box, key, importFixture('shlink.csv'), 'shlink')
    expect(r.body.return.created).toBe(2)
    expect(one(box, 'shl', 'spring25')).toMatchObject({
      created: Date.parse('2025-03-02T09:15:00Z'),
      title: 'Spring sale, 2025',
    })
    expect(one(box, 'shl', 'x7Kp2')).toMatchObject({
      created: Date.parse('2025-05-20T16:30:12Z'),
      title: 'A post\nover two lines',
    })
  })

  test('kutt: created_at and description (null is no title)', async () => {
    const key = await box.account('kut')
    expect((await importFile(box, key, importFixture('kutt.json'), 'kutt')).body.return.created).toBe(2)
    expect(one(box, 'kut', 'kutt-news')).toMatchObject({
      created: Date.parse('2025-02-14T09:12:44Z'),
      title: 'A story',
    })
    expect(one(box, 'kut', 'Ab3xY')).toMatchObject({ created: Date.parse('2025-03-01T12:00:00Z'), title: '' })
  })

  test('yourls: timestamp (UTC) and title, with and without the header row', async () => {
    const key = await box.account('yrl')
    expect((await importFile(box, key, importFixture('yourls.csv'), 'yourls')).body.return.created).toBe(2)
    expect(one(box, 'yrl', 'yl-home')).toMatchObject({
      created: Date.parse('2024-11-05T14:22:01Z'),
      title: 'Example home page',
    })
    expect(one(box, 'yrl', 'ozh')).toMatchObject({
      created: Date.parse('2024-11-06T09:00:00Z'),
      title: 'Ozh, "the" author',
    })
    const other = await box.account('yrl2')
    const headless = importFixture('yourls.csv').split('\n').slice(1).join('\n')
    await box.db.query("DELETE FROM links WHERE code IN ('yl-home', 'ozh')").run()
    expect((await importFile(box, other, headless, 'yourls')).body.return.created).toBe(2)
    expect(one(box, 'yrl2', 'ozh')).toMatchObject({
      created: Date.parse('2024-11-06T09:00:00Z'),
      title: 'Ozh, "the" author',
    })
  })

  test('bitly: Date created and Title', async () => {
    const key = await box.account('btl')
    expect((await importFile(box, key, importFixture('bitly.csv'), 'bitly')).body.return.created).toBe(3)
    expect(one(box, 'btl', 'LaunchDay')).toMatchObject({
      created: Date.parse('2025-06-01T08:30:00Z'),
      title: 'Launch, "day one"',
    })
    expect(one(box, 'btl', 'OldOne1')).toMatchObject({
      created: Date.parse('2024-01-15T12:00:00Z'),
      title: 'Archived one',
    })
  })
})

describe("linkbox's own export", () => {
  test('round-trips exactly: code, long_url, mode, created, expires, tags, max_visits and title', async () => {
    const key = await box.account('origin')
    const made: Record<string, string>[] = [
      { url: 'https://example.com/plain', alias: 'rt-plain' },
      {
        url: 'https://example.com/q?a=1,2',
        alias: 'rt-full',
        mode: 'preview',
        tags: 'news,spring',
        expire: '86400',
        max_visits: '5',
        title: 'Ünïcode, "quoted",\nover two lines',
      },
      { url: 'https://example.com/f', alias: 'rt-formula', mode: 'frame', title: '=SUM(A1)', tags: '-minus' },
      { url: 'https://example.com/g', alias: 'rt-quote', title: "'=already quoted" },
      { url: 'https://example.com/h', alias: 'rt-space', title: ' spaces around ' },
    ]
    for (const f of made) expect((await box.post('/api/getLink.json', f, as(key))).status).toBe(200)
    // An old link (made by an import of another tool's file): its date is not the export's.
    const old =
      'code,long_url,created,expires,title\r\nrt-old,https://example.com/old,2019-02-03T04:05:06.789Z,2020-01-01T00:00:00.000Z,Old\r\n'
    expect((await importFile(box, key, old)).body.return).toEqual({ created: 1, skipped: [], skipped_total: 0 })
    const first = await exportCsv(box, key)

    const fresh = await makeBox()
    try {
      const dora = await fresh.account('dora')
      expect((await importFile(fresh, dora, first)).body.return).toEqual({ created: 6, skipped: [], skipped_total: 0 })
      expect(linksOf(fresh, 'dora')).toEqual(linksOf(box, 'origin'))
      expect(one(fresh, 'dora', 'rt-old')).toMatchObject({
        created: Date.parse('2019-02-03T04:05:06.789Z'),
        expires: Date.parse('2020-01-01T00:00:00Z'),
      })
      // The second export is the first, byte for byte, but for the clicks (all 0 here).
      expect(await exportCsv(fresh, dora)).toBe(first)
      const header = parseCsv(first)[0]!.fields
      expect(header).toEqual([
        'code',
        'short_url',
        'long_url',
        'mode',
        'created',
        'expires',
        'clicks',
        'tags',
        'max_visits',
        'title',
        'rules',
        'split',
        'has_password',
        'domain',
        'expired_url',
      ])
    } finally {
      await fresh.cleanup()
    }
  })

  test('a file of the older nine columns (no title) still imports', async () => {
    const key = await box.account('nine')
    const csv =
      'code,short_url,long_url,mode,created,expires,clicks,tags,max_visits\r\nnine-1,http://x/nine-1,https://example.com/9,redirect,2024-05-06T07:08:09.000Z,,3,a,\r\n'
    expect((await importFile(box, key, csv)).body.return.created).toBe(1)
    expect(one(box, 'nine', 'nine-1')).toMatchObject({
      created: Date.parse('2024-05-06T07:08:09Z'),
      title: '',
      tags: 'a',
    })
  })
})

describe('what cannot be kept as written is reported, never changed', () => {
  test('tags are folded to ASCII where faithful (ünïcode: unicode); a tag that cannot be is named in skipped', async () => {
    const key = await box.account('tagger')
    const csv = [
      '"createdAt","shortCode","longUrl","title","tags"',
      '"","fold-1","https://example.com/1","","ünïcode|Crème Brûlée|ＦＵＬＬ"',
      '"","greek","https://example.com/2","","ok|Ελλάδα"',
      '"","slash","https://example.com/3","","a/b"',
      `"","long-tag","https://example.com/4","","${'x'.repeat(33)}"`,
      `"","many","https://example.com/5","","${Array.from({ length: 11 }, (_, i) => `t${i}`).join('|')}"`,
    ].join('\n')
    const r = await importFile(box, key, csv, 'shlink')
    expect(r.body.return.created).toBe(1)
    expect(one(box, 'tagger', 'fold-1')!.tags).toBe('creme-brulee,full,unicode')
    expect(r.body.return.skipped.map((s: any) => [s.line, s.code, s.reason])).toEqual([
      [3, 'greek', 'invalid_tag'],
      [4, 'slash', 'invalid_tag'],
      [5, 'long-tag', 'invalid_tag'],
      [6, 'many', 'invalid_tag'],
    ])
    expect(r.body.return.skipped[0].message).toBe(
      'The tag "Ελλάδα" in the column "tags" is not made of letters, digits, _ and - (not even without accents).',
    )
    expect(r.body.return.skipped[3].message).toContain('at most 10')
    expect(one(box, 'tagger', 'greek')).toBeUndefined()
  })

  test('a creation date that is not a real date, or in the future, and a title over 200 characters skip the row naming the column', async () => {
    const key = await box.account('dates')
    const soon = new Date(Date.now() + 60_000).toISOString()
    const later = new Date(Date.now() + 86_400_000).toISOString()
    const csv = [
      'Link,Custom Link,Date created,Title,Destination URL',
      `https://bit.ly/feb30,,2025-02-30 10:00:00,x,https://example.com/1`,
      `https://bit.ly/words,,yesterday,x,https://example.com/2`,
      `https://bit.ly/future,,${later},x,https://example.com/3`,
      `https://bit.ly/skew,,${soon},x,https://example.com/4`,
      `https://bit.ly/titled,,2025-01-01,${'t'.repeat(201)},https://example.com/5`,
      `https://bit.ly/fine200,,2025-01-01T00:00:00+02:00,${'é'.repeat(200)},https://example.com/6`,
    ].join('\n')
    const r = await importFile(box, key, csv, 'bitly')
    expect(r.body.return.skipped.map((s: any) => [s.code, s.reason])).toEqual([
      ['feb30', 'invalid_created'],
      ['words', 'invalid_created'],
      ['future', 'invalid_created'],
      ['titled', 'invalid_title'],
    ])
    for (const s of r.body.return.skipped.slice(0, 3)) expect(s.message).toContain('"Date created"')
    expect(r.body.return.skipped[3].message).toContain('"Title"')
    expect(one(box, 'dates', 'skew')!.created).toBe(Date.parse(soon)) // a clock a minute ahead is taken
    expect(one(box, 'dates', 'fine200')).toMatchObject({
      created: Date.parse('2024-12-31T22:00:00Z'),
      title: 'é'.repeat(200),
    })
  })
})

describe('the link title (SPEC §2a)', () => {
  test('create, record, update, q= search; over 200 characters or with control characters is a 400 naming "title"', async () => {
    const key = await box.account('titles')
    const made = await box.post(
      '/api/getLink.json',
      { url: 'https://example.com/t', alias: 'titled-1', title: 'Spring Sale 2026' },
      as(key),
    )
    expect([made.status, made.body.return.title]).toEqual([200, 'Spring Sale 2026'])
    const plain = await box.post('/api/getLink.json', { url: 'https://example.com/u', alias: 'titled-2' }, as(key))
    expect(plain.body.return.title).toBe('')
    const found = await box.post('/api/links.json', { q: 'sale 20' }, as(key))
    expect(found.body.return.links.map((l: any) => l.hex)).toEqual(['titled-1'])
    const changed = await box.post('/api/update.json', { code: 'titled-1', title: 'Summer' }, as(key))
    expect(changed.body.return).toMatchObject({ title: 'Summer', long_url: 'https://example.com/t' })
    expect((await box.post('/api/update.json', { code: 'titled-1', mode: 'preview' }, as(key))).body.return.title).toBe(
      'Summer',
    )
    expect((await box.post('/api/update.json', { code: 'titled-1', title: '' }, as(key))).body.return.title).toBe('')
    for (const title of ['x'.repeat(201), 'bell\u0007']) {
      const bad = await box.post('/api/getLink.json', { url: 'https://example.com/v', title }, as(key))
      expect([bad.status, bad.body.code]).toEqual([400, 'invalid_parameter'])
      expect(bad.body.message).toContain('"title"')
      const badUpdate = await box.post('/api/update.json', { code: 'titled-2', title }, as(key))
      expect([badUpdate.status, badUpdate.body.message.includes('"title"')]).toEqual([400, true])
    }
  })
})
