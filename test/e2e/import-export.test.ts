// Links out and in (SPEC §2a): links.json?format=csv streams every link as RFC 4180 CSV; import.json and
// `linkbox import` read it back, and read Shlink's, Kutt's, YOURLS' and Bitly's own export files
// (test/fixtures/import), through the real app, the real SQLite file and the real CLI.
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseCsv } from '../../src/links/csv'
import { EXPORT_PAGE } from '../../src/links/listing'
import { makeBox, readAnswer, type TestBox } from '../support/app'
import { createAccount, removeDir, runCli, writeConfig } from '../support/server'

const FIXTURES = join(import.meta.dir, '..', 'fixtures', 'import')
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8')
const as = (key: string) => ({ 'x-api-key': key })

let box: TestBox
let alice: string
let bob: string
beforeAll(async () => {
  box = await makeBox()
  alice = await box.account('alice')
  bob = await box.account('bob')
})
afterAll(() => box.cleanup())

/** links.json?format=csv for a key: the answer and its text. */
async function exportCsv(b: TestBox, key: string) {
  const res = await b.request('/api/links.json?format=csv', { method: 'POST', headers: as(key) })
  return { res, text: await res.text() }
}

/** import.json with the file as a multipart field (or, with `raw`, as the text/csv body). */
async function importFile(b: TestBox, key: string, text: string, format?: string, opts: { raw?: boolean } = {}) {
  if (opts.raw) {
    const qs = format ? `?format=${format}` : ''
    return readAnswer(
      await b.request(`/api/import.json${qs}`, {
        method: 'POST',
        headers: { ...as(key), 'content-type': 'text/csv' },
        body: text,
      }),
    )
  }
  const form = new FormData()
  form.set('file', new Blob([text], { type: 'text/csv' }), 'links.csv')
  if (format) form.set('format', format)
  return readAnswer(await b.request('/api/import.json', { method: 'POST', headers: as(key), body: form }))
}

const linksOf = (b: TestBox, account: string) =>
  b.db
    .query(
      `SELECT l.code, l.long_url, l.mode, l.expires, l.max_visits, (SELECT group_concat(tag, ',') FROM (SELECT tag FROM link_tags WHERE link_id = l.id ORDER BY tag)) AS tags
       FROM links l JOIN accounts a ON a.id = l.account_id WHERE a.name = ? ORDER BY l.code`,
    )
    .all(account) as {
    code: string
    long_url: string
    mode: string
    expires: number | null
    max_visits: number | null
    tags: string | null
  }[]

describe('links.json?format=csv', () => {
  beforeAll(async () => {
    const made: Record<string, string>[] = [
      { url: 'https://example.com/plain', alias: 'plain' },
      { url: 'https://example.com/q?a=1,2&b="x"', alias: 'quoted', mode: 'preview', tags: 'news,spring' },
      {
        url: 'https://example.com/framed',
        alias: 'framed',
        mode: 'frame',
        expire: '86400',
        password: 'secret',
        max_visits: '5',
      },
      // A code and a tag that a spreadsheet would take for a formula (they start with "-").
      { url: 'https://example.com/formula', alias: '-cmd', tags: '-sum,ok' },
    ]
    for (const f of made) expect((await box.post('/api/getLink.json', f, as(alice))).status).toBe(200)
  })

  test('every link of the caller as RFC 4180 CSV with a header row, an attachment named by the day; formula cells neutralised', async () => {
    const { res, text } = await exportCsv(box, alice)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="links-${new Date().toISOString().slice(0, 10)}.csv"`,
    )
    expect(res.headers.get('cache-control')).toBe('no-store')
    const lines = text.split('\r\n')
    // title came last (issue 36), then rules, split and has_password (issue 38), then domain (issue 40): readers
    // of the older columns keep working.
    expect(lines[0]).toBe(
      'code,short_url,long_url,mode,created,expires,clicks,tags,max_visits,title,rules,split,has_password,domain,expired_url',
    )
    expect(text.endsWith('\r\n')).toBe(true)
    const rows = parseCsv(text)
      .slice(1)
      .map((r) => r.fields)
    expect(rows.map((r) => r[0])).toEqual(['plain', 'quoted', 'framed', "'-cmd"])
    const quoted = rows[1]!
    expect(quoted).toEqual([
      'quoted',
      `${box.config.server.base_url}/quoted`,
      'https://example.com/q?a=1,2&b=%22x%22',
      'preview',
      expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      '',
      '0',
      'news,spring',
      '',
      '',
      '',
      '',
      'no',
      new URL(box.config.server.base_url).hostname,
      '',
    ])
    // The raw line: a field with a comma or a quote is quoted, its quotes doubled.
    expect(lines[2]).toContain(',"https://example.com/q?a=1,2&b=%22x%22",')
    expect(lines[2]).toContain(',"news,spring",')
    expect(rows[2]![5]).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/)
    expect(rows[2]![8]).toBe('5') // the visit limit
    // Whether a password is set, never more: the hash is nowhere in the file.
    expect(rows[2]![12]).toBe('yes')
    expect(text).not.toContain('argon2')
    // Formula cells get a ' in front; the clicks column (a number linkbox writes) never does.
    expect(rows[3]![0]).toBe("'-cmd")
    expect(rows[3]![7]).toBe("'-sum,ok")
    // Bob's export holds none of alice's links.
    expect((await exportCsv(box, bob)).text).toBe(
      'code,short_url,long_url,mode,created,expires,clicks,tags,max_visits,title,rules,split,has_password,domain,expired_url\r\n',
    )
  })

  test('streams more links than a page, each once, in order', async () => {
    const carol = await box.account('carol')
    const caller = (await box.accounts.authenticate(carol))!
    const n = EXPORT_PAGE * 2 + 7
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        box.links.create({ url: `https://example.com/many/${i}`, tags: i % 2 ? 'odd' : '' }, caller),
      ),
    )
    const { res, text } = await exportCsv(box, carol)
    expect(res.status).toBe(200)
    const rows = parseCsv(text).slice(1)
    expect(rows.length).toBe(n)
    expect(new Set(rows.map((r) => r.fields[2])).size).toBe(n)
  })
})

describe('import.json', () => {
  test('export, then import into another account of the same box: every code is taken, so every row is skipped and reported', async () => {
    const { text } = await exportCsv(box, alice)
    const r = await importFile(box, bob, text)
    expect(r.status).toBe(200)
    expect(r.body.return.created).toBe(0)
    expect(r.body.return.skipped_total).toBe(4)
    expect(r.body.return.skipped.map((s: any) => [s.line, s.code, s.reason])).toEqual([
      [2, 'plain', 'alias_taken'],
      [3, 'quoted', 'alias_taken'],
      [4, 'framed', 'alias_taken'],
      [5, '-cmd', 'alias_taken'],
    ])
    // Alice's links are as they were; bob has none.
    expect(linksOf(box, 'bob')).toEqual([])
    expect(linksOf(box, 'alice').find((l) => l.code === 'plain')!.long_url).toBe('https://example.com/plain')
  })

  test('into a fresh box, the export comes back whole: code, destination, mode, tags, expiry and visit limit', async () => {
    const fresh = await makeBox()
    try {
      const dora = await fresh.account('dora')
      const { text } = await exportCsv(box, alice)
      const r = await importFile(fresh, dora, text)
      expect(r.status).toBe(200)
      // "framed" had a password: it comes back without one, and the answer says how many did.
      expect(r.body.return).toEqual({ created: 4, skipped: [], skipped_total: 0, without_password: 1 })
      expect(linksOf(fresh, 'dora')).toEqual(linksOf(box, 'alice'))
      // And its own export reads the same but for the times and counts.
      const again = (await exportCsv(fresh, dora)).text
      const strip = (csv: string) =>
        parseCsv(csv).map((r) => [r.fields[0], r.fields[2], r.fields[3], r.fields[5], r.fields[7]])
      expect(strip(again)).toEqual(strip(text))
    } finally {
      await fresh.cleanup()
    }
  })

  test('only long_url is required; the body may be the file itself (text/csv); a BOM, CRLF and quoted newlines are read', async () => {
    const csv =
      '\uFEFFlong_url,tags,mode\r\n"https://example.com/only,url",,\r\nhttps://example.com/two,"a, b",preview\r\n"https://example.com/three",,"redirect"\n'
    const r = await importFile(box, bob, csv, undefined, { raw: true })
    expect(r.status).toBe(200)
    expect(r.body.return.created).toBe(3)
    const mine = linksOf(box, 'bob').sort((a, b) => a.long_url.localeCompare(b.long_url))
    expect(mine.map((l) => [l.long_url, l.mode, l.tags])).toEqual([
      ['https://example.com/only,url', 'redirect', null],
      ['https://example.com/three', 'redirect', null],
      ['https://example.com/two', 'preview', 'a,b'],
    ])
    for (const l of mine) expect(l.code).toMatch(/^[A-Za-z0-9]{6}$/)
  })

  test('each row passes the rules of a new link: bad URLs, the service itself, bad modes and reserved codes are skipped', async () => {
    const csv = [
      'code,long_url,mode,expires',
      'ok-row,https://example.com/fine,redirect,',
      'selfish,http://localhost:8080/loop,,',
      'ftp-row,ftp://example.com/file,,',
      'modal,https://example.com/m,popup,',
      'admin,https://example.com/reserved,,',
      'late,https://example.com/late,,not a date',
      ',,,',
    ].join('\n')
    const r = await importFile(box, bob, csv)
    expect(r.body.return.created).toBe(1)
    expect(r.body.return.skipped.map((s: any) => [s.line, s.code, s.reason])).toEqual([
      [3, 'selfish', 'invalid_url'],
      [4, 'ftp-row', 'invalid_url'],
      [5, 'modal', 'invalid_mode'],
      [6, 'admin', 'alias_reserved'],
      [7, 'late', 'invalid_expire'],
      [8, '', 'missing_url'],
    ])
    expect(linksOf(box, 'bob').map((l) => l.code)).toContain('ok-row')
  })

  test('a file of 10 MiB is taken; 10 MiB + 1 byte is refused with 413 naming "file", as a file and as the body', async () => {
    // A column the import does not read (a title is at most 200 characters).
    const head = 'long_url,note\r\nhttps://example.com/big,'
    const exact = head + 'x'.repeat(10 * 1024 * 1024 - head.length)
    expect(Buffer.byteLength(exact)).toBe(10 * 1024 * 1024)
    const ok = await importFile(box, bob, exact)
    expect([ok.status, ok.body.return?.created]).toEqual([200, 1])
    const over = exact + 'x'
    for (const raw of [false, true]) {
      const r = await importFile(box, bob, over, undefined, { raw })
      expect([r.status, r.body.code]).toEqual([413, 'too_large'])
      expect(r.body.message).toContain('"file"')
    }
  })

  test('a file that is not of its format is refused whole, naming "file"; so is one that is not CSV', async () => {
    for (const [text, format] of [
      ['url,title\nhttps://example.com/,x\n', 'csv'],
      [fixture('yourls.csv'), 'bitly'],
      ['long_url\n"https://example.com/unclosed\n', 'csv'],
      ['long_url\n', 'csv'],
      ['{"not":"kutt"}', 'kutt'],
    ] as const) {
      const r = await importFile(box, bob, text, format)
      expect([text.slice(0, 20), r.status, r.body.code]).toEqual([text.slice(0, 20), 400, 'invalid_parameter'])
      expect(r.body.message).toContain('"file"')
    }
    const missing = await box.post('/api/import.json', {}, as(bob))
    expect([missing.status, missing.body.code]).toEqual([400, 'missing_parameter'])
    const badFormat = await importFile(box, bob, 'long_url\nhttps://example.com/\n', 'tinyurl')
    expect(badFormat.status).toBe(400)
    expect(badFormat.body.message).toContain('"format"')
  })

  test('needs a key with the links scope', async () => {
    const form = new FormData()
    form.set('file', 'long_url\nhttps://example.com/\n')
    expect((await box.request('/api/import.json', { method: 'POST', body: form })).status).toBe(401)
    const qrOnly = (await box.accounts.createKey({ account: 'bob', scopes: ['qr'] })).key
    expect((await box.request('/api/import.json', { method: 'POST', body: form, headers: as(qrOnly) })).status).toBe(
      403,
    )
  })
})

describe("other tools' export files", () => {
  let peers: TestBox
  let erin: string
  beforeAll(async () => {
    peers = await makeBox()
    erin = await peers.account('erin')
  })
  afterAll(() => peers.cleanup())

  test('shlink: the web client export (quoted, a BOM, | between tags, a title over two lines); reserved codes skipped', async () => {
    const r = await importFile(peers, erin, fixture('shlink.csv'), 'shlink')
    expect(r.status).toBe(200)
    expect(r.body.return.created).toBe(2)
    expect(r.body.return.skipped.map((s: any) => [s.line, s.code, s.reason])).toEqual([
      [3, 'docs', 'alias_reserved'],
      [6, 'api', 'alias_reserved'],
    ])
    const mine = linksOf(peers, 'erin')
    expect(mine.find((l) => l.code === 'spring25')).toEqual({
      code: 'spring25',
      long_url: 'https://shop.example.com/sale?season=spring&utm_source=shlink',
      mode: 'redirect',
      expires: null,
      max_visits: null,
      tags: 'marketing,sale-2025',
    })
    expect(mine.find((l) => l.code === 'x7Kp2')!.long_url).toBe('https://blog.example.net/a/post/with-a-long-title')
  })

  test('kutt: the answer of GET /api/v2/links, with its expiry; a javascript: target skipped', async () => {
    const r = await importFile(peers, erin, fixture('kutt.json'), 'kutt')
    expect(r.body.return.created).toBe(2)
    expect(r.body.return.skipped.map((s: any) => [s.line, s.code, s.reason])).toEqual([[3, 'bad', 'invalid_url']])
    const mine = linksOf(peers, 'erin')
    expect(mine.find((l) => l.code === 'kutt-news')!.long_url).toBe('https://news.example.org/2025/02/14/story')
    expect(mine.find((l) => l.code === 'Ab3xY')!.expires).toBe(Date.parse('2030-01-01T00:00:00.000Z'))
  })

  test('yourls: the yourls_url table; keywords linkbox cannot take are skipped', async () => {
    const r = await importFile(peers, erin, fixture('yourls.csv'), 'yourls')
    expect(r.body.return.created).toBe(2)
    expect(r.body.return.skipped.map((s: any) => [s.line, s.code, s.reason])).toEqual([
      [4, 'y', 'invalid_alias'],
      [5, '=cmd', 'invalid_alias'],
    ])
    const mine = linksOf(peers, 'erin')
    expect(mine.find((l) => l.code === 'ozh')!.long_url).toBe('https://example.org/~ozh/?a=1&b=2')
    expect(mine.find((l) => l.code === 'yl-home')!.long_url).toBe('https://www.example.com/')
    // The same table dumped without its header row reads the same (the codes are now taken).
    const headless = fixture('yourls.csv').split('\n').slice(1).join('\n')
    const again = await importFile(peers, erin, headless, 'yourls')
    expect(again.body.return.skipped.map((s: any) => [s.line, s.code, s.reason]).slice(0, 2)).toEqual([
      [1, 'yl-home', 'alias_taken'],
      [2, 'ozh', 'alias_taken'],
    ])
  })

  test('bitly: the links export; the custom back-half is the code when there is one', async () => {
    const r = await importFile(peers, erin, fixture('bitly.csv'), 'bitly')
    expect(r.body.return).toEqual({ created: 3, skipped: [], skipped_total: 0 })
    const mine = linksOf(peers, 'erin')
    expect(mine.find((l) => l.code === 'LaunchDay')!.long_url).toBe(
      'https://www.example.com/products/launch?campaign=summer',
    )
    expect(mine.find((l) => l.code === '4QwErTy')!.long_url).toBe('https://example.net/plain')
    expect(mine.some((l) => l.code === '3xYzAbc')).toBe(false)
  })
})

describe('linkbox import', () => {
  const config = writeConfig()
  afterAll(() => removeDir(config.dir))

  test('prints the summary and the skipped rows; the links exist; a refused file exits 1', async () => {
    await createAccount(config.configPath, 'fred')
    const run = await runCli([
      'import',
      join(FIXTURES, 'shlink.csv'),
      '--account',
      'fred',
      '--format',
      'shlink',
      '--config',
      config.configPath,
    ])
    expect(run.code).toBe(0)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines[0]).toBe('created 2 links for fred; skipped 2')
    expect(lines.slice(1).map((l) => l.split('\t').slice(0, 3))).toEqual([
      ['3', 'docs', 'alias_reserved'],
      ['6', 'api', 'alias_reserved'],
    ])
    const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
    try {
      const rows = db
        .query(
          "SELECT l.code, l.long_url FROM links l JOIN accounts a ON a.id = l.account_id WHERE a.name = 'fred' ORDER BY l.code",
        )
        .all()
      expect(rows).toEqual([
        { code: 'spring25', long_url: 'https://shop.example.com/sale?season=spring&utm_source=shlink' },
        { code: 'x7Kp2', long_url: 'https://blog.example.net/a/post/with-a-long-title' },
      ])
    } finally {
      db.close()
    }
    // --format auto: recognised from the header row (a Bitly export); a file not recognised is refused.
    const auto = await runCli([
      'import',
      join(FIXTURES, 'bitly.csv'),
      '--account',
      'fred',
      '--format',
      'auto',
      '--config',
      config.configPath,
    ])
    expect([auto.code, auto.stdout.split('\n')[0]]).toEqual([0, 'created 3 links for fred; skipped 0'])
    const people = join(config.dir, 'people.csv')
    writeFileSync(people, 'name,email\r\nann,ann@example.com\r\n')
    const unknown = await runCli([
      'import',
      people,
      '--account',
      'fred',
      '--format',
      'auto',
      '--config',
      config.configPath,
    ])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('is not recognised from its header row')
    // Not a Bitly file: refused as a whole, nothing made, exit 1.
    const refused = await runCli([
      'import',
      join(FIXTURES, 'yourls.csv'),
      '--account',
      'fred',
      '--format',
      'bitly',
      '--config',
      config.configPath,
    ])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('import refused')
    expect(refused.stderr).toContain('"file"')
    const big = join(config.dir, 'big.csv')
    writeFileSync(big, 'long_url\n' + 'x'.repeat(10 * 1024 * 1024))
    const tooBig = await runCli(['import', big, '--account', 'fred', '--config', config.configPath])
    expect(tooBig.code).toBe(1)
    expect(tooBig.stderr).toContain('over the limit')
    const noAccount = await runCli([
      'import',
      join(FIXTURES, 'shlink.csv'),
      '--account',
      'nobody',
      '--config',
      config.configPath,
    ])
    expect(noAccount.code).toBe(2)
    expect(noAccount.stderr).toContain('no account "nobody"')
    const usage = await runCli(['import', '--config', config.configPath])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('usage: linkbox import FILE --account NAME')
  })
})
