// Issue 38 item 2, beneath the dashboard's import page: linkbox's CSV export carries rules, split, title, tags and
// whether a password is set (never the hash), and an import into a fresh app reads them back; the format of a
// file is recognised from its header row (detectFormat, and import.json's format=auto); the preview judges each
// row as the import does, without writing (through the real app and the real SQLite file).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { detectFormat, previewImport } from '../../src/links'
import { parseCsv } from '../../src/links/csv'
import { makeBox, type TestBox } from '../support/app'
import { exportCsv, importFile, importFixture } from '../support/import'

const as = (key: string) => ({ 'x-api-key': key })

/** Every link of an account as stored, with what a round trip must keep (and whether a password is set). */
const linksOf = (b: TestBox, account: string) =>
  b.db
    .query(
      `SELECT l.code, l.long_url, l.mode, l.created, l.expires, l.max_visits, l.title, l.rules, l.split,
         l.password_hash IS NOT NULL AS has_password,
         (SELECT group_concat(tag, ',') FROM (SELECT tag FROM link_tags WHERE link_id = l.id ORDER BY tag)) AS tags
       FROM links l JOIN accounts a ON a.id = l.account_id WHERE a.name = ? ORDER BY l.code`,
    )
    .all(account) as Record<string, unknown>[]

let box: TestBox
beforeAll(async () => {
  box = await makeBox()
})
afterAll(() => box.cleanup())

const RULES = JSON.stringify([
  { url: 'https://example.com/de', country: ['DE', 'AT'] },
  { url: 'https://example.com/phone', device: ['mobile'], language: ['fr'] },
])
const SPLIT = JSON.stringify([
  { url: 'https://example.com/a', weight: 70 },
  { url: 'https://example.com/b', weight: 30 },
])

describe('the export round trip', () => {
  test('rules, split, title, tags and the rest come back exactly; a password is only said to be set, and comes back unset', async () => {
    const key = await box.account('origin')
    const made: Record<string, string>[] = [
      {
        url: 'https://example.com/routed',
        alias: 'rt-rules',
        rules: RULES,
        title: 'By country, "quoted"',
        tags: 'geo,ab',
      },
      { url: 'https://example.com/ab', alias: 'rt-split', split: SPLIT, mode: 'preview', max_visits: '9' },
      { url: 'https://example.com/both', alias: 'rt-both', rules: RULES, split: SPLIT, expire: '86400' },
      { url: 'https://example.com/locked', alias: 'rt-locked', password: 'hunter22', title: 'Locked' },
      { url: 'https://example.com/plain', alias: 'rt-plain' },
    ]
    for (const f of made) expect((await box.post('/api/getLink.json', f, as(key))).status).toBe(200)
    const first = await exportCsv(box, key)
    const rows = parseCsv(first).map((r) => r.fields)
    expect(rows[0]!.slice(-6)).toEqual(['title', 'rules', 'split', 'has_password', 'domain', 'expired_url'])
    const byCode = new Map(rows.slice(1).map((r) => [r[0], r]))
    // The API's JSON, in cells; whether a password is set, as yes or no, and nothing of its hash.
    expect(JSON.parse(byCode.get('rt-rules')![10]!)).toEqual(JSON.parse(RULES))
    expect(JSON.parse(byCode.get('rt-split')![11]!)).toEqual(JSON.parse(SPLIT))
    expect(byCode.get('rt-plain')!.slice(10)).toEqual(['', '', 'no', 'localhost', ''])
    expect(byCode.get('rt-locked')![12]).toBe('yes')
    expect(first).not.toMatch(/argon2|\$v=19/)

    const fresh = await makeBox()
    try {
      const dora = await fresh.account('dora')
      const r = await importFile(fresh, dora, first)
      expect(r.body.return).toEqual({ created: 5, skipped: [], skipped_total: 0, without_password: 1 })
      const before = linksOf(box, 'origin')
      const after = linksOf(fresh, 'dora')
      // Everything the format can carry is equal; the one password is not (it never left the first app).
      const open = (l: Record<string, unknown>) => ({ ...l, has_password: 0 })
      expect(after).toEqual(before.map(open))
      expect(before.find((l) => l.code === 'rt-locked')!.has_password).toBe(1)
      expect(after.find((l) => l.code === 'rt-both')).toMatchObject({
        rules: expect.any(String),
        split: expect.any(String),
      })
      // The second export is the first, but for the password now unset.
      expect(await exportCsv(fresh, dora)).toBe(
        first.replace(/,Locked,,,yes,localhost,\r\n/, ',Locked,,,no,localhost,\r\n'),
      )
    } finally {
      await fresh.cleanup()
    }
  })

  test('rules or a split that are not valid skip their row naming them, like the API would refuse them', async () => {
    const key = await box.account('badrules')
    const csv =
      'code,long_url,rules,split\r\n' +
      'br-1,https://example.com/1,"[{""url"":""https://example.com/x"",""device"":[""fridge""]}]",\r\n' +
      'br-2,https://example.com/2,,"[{""url"":""https://example.com/x"",""weight"":50}]"\r\n' +
      'br-3,https://example.com/3,,\r\n'
    const r = await importFile(box, key, csv)
    expect(r.body.return.created).toBe(1)
    expect(r.body.return.skipped.map((s: { code: string }) => s.code)).toEqual(['br-1', 'br-2'])
    expect(r.body.return.skipped[0].message).toContain('rules[0].device[0]')
    expect(r.body.return.skipped[1].message).toContain('split')
  })
})

describe('recognising the format from the header row', () => {
  test('each tool’s export file, linkbox’s own, a YOURLS table without its header; anything else is not recognised', async () => {
    expect(detectFormat(importFixture('shlink.csv'))).toBe('shlink')
    expect(detectFormat(importFixture('kutt.json'))).toBe('kutt')
    expect(detectFormat(importFixture('yourls.csv'))).toBe('yourls')
    expect(detectFormat(importFixture('bitly.csv'))).toBe('bitly')
    expect(detectFormat(importFixture('yourls.csv').split('\n').slice(1).join('\n'))).toBe('yourls')
    const key = await box.account('detect')
    expect((await box.post('/api/getLink.json', { url: 'https://example.com/d', alias: 'det' }, as(key))).status).toBe(
      200,
    )
    expect(detectFormat(await exportCsv(box, key))).toBe('csv')
    // linkbox's minimal file (only long_url), Shlink's importer headers, Kutt's field names as CSV.
    expect(detectFormat('long_url\r\nhttps://example.com/\r\n')).toBe('csv')
    expect(detectFormat('Long URL,Short code,Tags\r\nhttps://example.com/,abc,\r\n')).toBe('shlink')
    expect(detectFormat('Short code,Long URL,Created at\r\nabc,https://example.com/,\r\n')).toBe('shlink')
    expect(detectFormat('address,target,description\r\nabc,https://example.com/,x\r\n')).toBe('kutt')
    expect(detectFormat('name,email\r\nann,ann@example.com\r\n')).toBeNull()
    expect(detectFormat('')).toBeNull()
    expect(detectFormat('"never closed\r\n')).toBeNull()
  })

  test('import.json with format=auto imports what it recognises and refuses, naming "file", what it does not', async () => {
    const key = await box.account('autoformat')
    const ok = await importFile(box, key, importFixture('bitly.csv'), 'auto')
    expect(ok.status).toBe(200)
    expect(ok.body.return.created).toBe(3)
    const no = await importFile(box, key, 'name,email\r\nann,ann@example.com\r\n', 'auto')
    expect(no.status).toBe(400)
    expect(no.body.message).toContain('The parameter "file" is not recognised from its header row')
  })
})

describe('the preview', () => {
  test('judges each row as the import then does, and writes nothing', async () => {
    const key = await box.account('previewer')
    expect(
      (await box.post('/api/getLink.json', { url: 'https://example.com/t', alias: 'pv-taken' }, as(key))).status,
    ).toBe(200)
    const csv =
      'code,long_url,tags,expires\r\n' +
      'pv-ok,https://example.com/ok,news,\r\n' +
      'pv-taken,https://example.com/again,,\r\n' +
      'pv-bad,javascript:alert(1),,\r\n' +
      'pv-tag,https://example.com/tag,a/b,\r\n' +
      'pv-exp,https://example.com/exp,,2999-01-01T00:00:00Z\r\n' +
      'pv-ok,https://example.com/twice,,\r\n' +
      ',https://example.com/random,,\r\n'
    const count = () => (box.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n
    const before = count()
    const preview = await previewImport(box.links, csv, 'csv', { maxRows: 100, first: 20 })
    expect(count()).toBe(before)
    expect(preview.total).toBe(7)
    const skipped = preview.rows.filter((r) => r.skip).map((r) => [r.line, r.skip!.reason])
    const r = await importFile(box, key, csv)
    expect(r.body.return.created).toBe(2)
    expect(r.body.return.skipped.map((s: { line: number; reason: string }) => [s.line, s.reason])).toEqual(skipped)
    expect(skipped).toEqual([
      [3, 'alias_taken'],
      [4, 'invalid_url'],
      [5, 'invalid_tag'],
      [6, 'invalid_expire'],
      [7, 'alias_taken'],
    ])
    // first: only that many rows are judged; the count is the whole file's.
    const two = await previewImport(box.links, csv, 'csv', { maxRows: 100, first: 2 })
    expect([two.total, two.rows.length]).toEqual([7, 2])
    // Refused whole as the import refuses it: too many rows.
    await expect(previewImport(box.links, csv, 'csv', { maxRows: 3, first: 2 })).rejects.toThrow('more than 3 rows')
  })
})
