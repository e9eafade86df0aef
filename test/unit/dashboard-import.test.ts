// The dashboard's import page through the real app and SQLite file, for what a browser test does not reach: the
// upload refused without its CSRF token or from another site, an empty or non-UTF-8 file, a file not of the
// format chosen; another account's import neither shown nor confirmed; an import refused because another of the
// account's imports runs (it waits to be confirmed again); the skipped rows of a YOURLS table without its header
// and of Kutt's JSON; a Kutt link that had a password.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parseCsv } from '../../src/links/csv'
import { makeBox, type TestBox } from '../support/app'
import { cookiesSet, signIn, type SignedIn, dashboardCaller } from '../support/dashboard'
import { importFixture } from '../support/import'

let box: TestBox
let alice: SignedIn
let bob: SignedIn
beforeAll(async () => {
  box = await makeBox()
  await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  await box.accounts.createAccount({ name: 'bob', password: 'battery staple' })
  alice = await signIn(box, 'alice', 'correct horse')
  bob = await signIn(box, 'bob', 'battery staple')
})
afterAll(() => box.cleanup())

async function upload(
  who: SignedIn,
  body: string | Uint8Array<ArrayBuffer>,
  format = 'auto',
  opts: { csrf?: string; headers?: Record<string, string> } = {},
) {
  const form = new FormData()
  form.set('_csrf', opts.csrf ?? who.csrf)
  form.set('format', format)
  form.set('file', new Blob([body], { type: 'text/csv' }), 'links.csv')
  return box.request('/dashboard/import', {
    method: 'POST',
    headers: { cookie: who.cookie, ...opts.headers },
    body: form,
  })
}
const get = async (who: SignedIn, path: string) => box.request(path, { headers: { cookie: who.cookie } })
const confirm = (who: SignedIn, path: string) =>
  box.request(path, {
    method: 'POST',
    headers: { cookie: who.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: who.csrf }).toString(),
  })
/** The error the upload form shows beside the file after a refused upload. */
async function fileError(res: Response, who: SignedIn) {
  expect(res.status).toBe(303)
  const html = await (await get(who, res.headers.get('location')!)).text()
  return html.match(/<span class="error" id="import-file-error">([^<]*)<\/span>/)?.[1] ?? null
}
const pending = () => (box.db.query('SELECT count(*) AS n FROM pending_imports').get() as { n: number }).n
const linkCount = () => (box.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n

describe('the upload', () => {
  test('refused without the session’s token, or from another site (403), storing nothing', async () => {
    const before = pending()
    expect((await upload(alice, 'long_url\r\nhttps://example.com/\r\n', 'auto', { csrf: 'wrong' })).status).toBe(403)
    const cross = await upload(alice, 'long_url\r\nhttps://example.com/\r\n', 'auto', {
      headers: { 'sec-fetch-site': 'cross-site' },
    })
    expect(cross.status).toBe(403)
    expect(pending()).toBe(before)
  })

  test('an empty file, a file that is not UTF-8, one not of the format chosen: each said beside the file', async () => {
    const before = pending()
    expect(await fileError(await upload(alice, ''), alice)).toBe('Choose a file to import: this one is empty.')
    expect(await fileError(await upload(alice, new Uint8Array([0x6c, 0xff, 0xfe, 0x0a])), alice)).toBe(
      'The file is not UTF-8 text: save it as UTF-8 CSV.',
    )
    const wrong = await fileError(await upload(alice, importFixture('bitly.csv'), 'shlink'), alice)
    expect(wrong).toContain('The file is not a Shlink export file: it has no &quot;longurl&quot; column')
    expect(pending()).toBe(before)
  })
})

describe('an import', () => {
  test('is another account’s business only: not shown, not confirmed, its skipped rows not given', async () => {
    const res = await upload(alice, 'code,long_url\r\nown-1,https://example.com/1\r\n')
    const path = res.headers.get('location')!
    expect((await (await get(alice, path)).text()).includes('Preview of links.csv')).toBe(true)
    const seen = await get(bob, path)
    expect([seen.status, seen.headers.get('location')]).toEqual([303, '/dashboard/import'])
    const before = linkCount()
    expect((await confirm(bob, path)).status).toBe(303)
    expect(linkCount()).toBe(before)
    expect((await get(bob, `${path}/skipped.csv`)).headers.get('location')).toBe('/dashboard/import')
    // Still alice's to confirm.
    expect((await confirm(alice, path)).status).toBe(303)
    expect(linkCount()).toBe(before + 1)
  })

  test('refused while another import of the account runs: said so, and confirmed again later it imports', async () => {
    const res = await upload(alice, 'code,long_url\r\nheld-1,https://example.com/held\r\n')
    const path = res.headers.get('location')!
    const caller = dashboardCaller(box.db, 'alice')
    await box.links.claimImport(caller, 'someone-else', 60_000)
    const held = await confirm(alice, path)
    expect([held.status, held.headers.get('location')]).toEqual([303, path])
    // The page it leads to, with the notice the answer carries (a cookie).
    const cookie = [alice.cookie, ...cookiesSet(held)].join('; ')
    const page = await (await box.request(path, { headers: { cookie } })).text()
    expect(page).toContain('Another import of this account is under way')
    expect(page).toContain('Import 1 row') // back to its preview, to confirm again
    await box.links.finishImport(caller, 'someone-else', null)
    await confirm(alice, path)
    expect(await (await get(alice, path)).text()).toContain('<strong>1</strong> link created')
    expect(box.db.query("SELECT code FROM links WHERE code = 'held-1'").get()).toEqual({ code: 'held-1' })
  })
})

describe('the skipped rows as CSV', () => {
  async function importAndDownload(who: SignedIn, body: string) {
    const path = (await upload(who, body)).headers.get('location')!
    await confirm(who, path)
    const res = await get(who, `${path}/skipped.csv`)
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="skipped-rows.csv"')
    return { rows: parseCsv(await res.text()).map((r) => r.fields), html: await (await get(who, path)).text() }
  }

  test('a YOURLS table without its header: the table’s columns named', async () => {
    const headless = importFixture('yourls.csv').split('\n').slice(1).join('\n')
    const { rows } = await importAndDownload(bob, headless)
    expect(rows[0]).toEqual([
      'keyword',
      'url',
      'title',
      'timestamp',
      'ip',
      'clicks',
      'skipped_line',
      'skipped_reason',
      'skipped_message',
    ])
    // Line 1 is a link here (no header): the skipped rows keep their own lines, formula cells neutralised.
    expect(rows.slice(1).map((r) => [r[0], r[6], r[7]])).toEqual([
      ['y', '3', 'invalid_alias'],
      ["'=cmd", '4', 'invalid_alias'],
    ])
  })

  test('Kutt’s JSON: the code and why; a link that had a password in Kutt is made without one, and said so', async () => {
    const doc = JSON.parse(importFixture('kutt.json'))
    doc.data[0].password = true
    const { rows, html } = await importAndDownload(alice, JSON.stringify(doc))
    expect(rows[0]).toEqual(['code', 'skipped_line', 'skipped_reason', 'skipped_message'])
    expect(rows.slice(1).map((r) => [r[1], r[2]])).toEqual([['3', 'invalid_url']])
    expect(html).toContain('1 link was protected by a password in the file.')
    expect(box.db.query("SELECT password_hash FROM links WHERE code = 'kutt-news'").get()).toEqual({
      password_hash: null,
    })
  })
})
