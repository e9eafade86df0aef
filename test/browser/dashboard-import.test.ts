// The dashboard's import page (issue 38 item 2) in real Chromium, as a person uses it: from the links list's
// "Import", a Shlink export and a YOURLS table are chosen, their format recognised from the header row, the
// preview shows the rows with what is skipped and why, the import is confirmed, the summary shows and the
// skipped rows download as CSV; reload and back never import twice, nor does a second confirmation from a
// stale tab. Each new page state is checked with axe in both themes at 1280 and 390 px; the preview is
// screenshotted at 390 px, light and dark, into test-results/screenshots/phone.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import type { Caller } from '../../src/kernel/caller'
import { parseCsv } from '../../src/links/csv'
import { checkPage, launchBrowser, startApp, type RunningApp, phoneShots, closeAll } from '../support/browser'
import { signInBrowser, dashboardCaller } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

// The Shlink web client's export: a BOM, quoted cells, | between tags; one code taken here, one destination refused.
const SHLINK =
  '\uFEFF"createdAt","domain","shortCode","shortUrl","longUrl","title","tags","visits"\r\n' +
  '"2025-03-02T10:15:00+01:00","s.example.org","spring25","https://s.example.org/spring25","https://shop.example.com/sale?season=spring","Spring sale, 2025","Marketing|Sale 2025",127\r\n' +
  '"2025-04-11T08:00:00+02:00","s.example.org","taken","https://s.example.org/taken","https://docs.example.com/guide/","Docs","docs",4\r\n' +
  '"2025-05-20T18:30:12+02:00","s.example.org","bad-url","https://s.example.org/bad-url","javascript:alert(1)","Bad","",0\r\n' +
  '"2025-05-21T18:30:12+02:00","s.example.org","blog","https://s.example.org/blog","https://blog.example.net/a/post","A post","",0\r\n'
// The yourls_url table as a database tool exports it; "y" is too short for a linkbox code.
const YOURLS =
  'keyword,url,title,timestamp,ip,clicks\n' +
  '"yl-home","https://www.example.com/","Example home page","2024-11-05 14:22:01","203.0.113.9",58\n' +
  '"y","https://example.org/too-short","One letter","2024-11-07 10:00:00","198.51.100.4",0\n'

let browser: Browser
let page: Page
let app: RunningApp
let alice: Caller

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  alice = dashboardCaller(app.db, 'alice')
  await app.links.create({ url: 'https://example.com/mine', alias: 'taken' }, alice)
  browser = await launchBrowser()
  // A context of its own: a second tab of the same session opens in it.
  page = await (await browser.newContext({ userAgent: CHROME_UA, acceptDownloads: true })).newPage()
  page.setDefaultTimeout(10_000)
  await signInBrowser(page, app.url, 'alice', 'correct horse')
})
afterAll(() => closeAll(browser, app))

const linkCount = () => (app.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n
const click = (p: Page, selector: string) => Promise.all([p.waitForNavigation(), p.click(selector)])
const text = async (selector: string) => ((await page.textContent(selector)) ?? '').replace(/\s+/g, ' ').trim()

/** The upload form: the file chosen, the format left to the header row (or `format`), sent. */
async function upload(name: string, body: string, format?: string) {
  await page.setInputFiles('#import-file', { name, mimeType: 'text/csv', buffer: Buffer.from(body) })
  if (format) await page.selectOption('#import-format', format)
  // A file of 10 MiB takes a while to send on a busy machine.
  await Promise.all([page.waitForNavigation({ timeout: 30_000 }), page.click('button:has-text("Show a preview")')])
}

describe('the import page', () => {
  test('from the links list; a file not recognised comes back with the reason beside the file field', async () => {
    await page.goto(`${app.url}/dashboard`)
    await click(page, 'a.import-link')
    expect(page.url()).toBe(`${app.url}/dashboard/import`)
    expect(await page.$eval('#import-format', (s) => (s as HTMLSelectElement).value)).toBe('auto')
    await checkPage(page, 'dash-import-upload')
    await upload('people.csv', 'name,email\r\nann,ann@example.com\r\n')
    expect(page.url()).toMatch(/\/dashboard\/import\?form=/)
    expect(await text('#import-file-error')).toContain('The file is not recognised from its header row')
    expect(await page.getAttribute('#import-file', 'aria-invalid')).toBe('true')
    expect(await page.getAttribute('#import-file', 'aria-describedby')).toContain('import-file-error')
    await checkPage(page, 'dash-import-refused')
    await phoneShots(page, 'import-upload-refused')
  })

  test('Shlink: recognised, previewed with each skip and its reason, confirmed once, summarised; the skipped rows download', async () => {
    await page.goto(`${app.url}/dashboard/import`)
    const before = linkCount()
    await upload('shlink-export.csv', SHLINK)
    expect(page.url()).toMatch(/\/dashboard\/import\/[A-Za-z0-9_-]{22}$/)
    const previewUrl = page.url()
    expect(await text('#preview-heading')).toBe('Preview of shlink-export.csv')
    expect(await text('.import-page .card p')).toContain('Format: Shlink (recognised from its header row). 4 rows')
    expect(await text('.import-counts')).toBe('All 4 rows: 2 will be created, 2 skipped.')
    const rows = await page.$$eval('table.import-preview tbody tr', (trs) =>
      trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => td.textContent!.replace(/\s+/g, ' ').trim())),
    )
    expect(rows.map((r) => [r[0], r[1], r[4]!.split(' ')[0]])).toEqual([
      ['2', 'spring25', 'Will'],
      ['3', 'taken', 'Skipped'],
      ['4', 'bad-url', 'Skipped'],
      ['5', 'blog', 'Will'],
    ])
    expect(rows[1]![4]).toContain('The alias "taken" is already in use.')
    expect(rows[1]![4]).toContain('alias_taken')
    expect(rows[2]![4]).toContain('The destination must be an absolute URL')
    expect(rows[2]![4]).toContain('invalid_url')
    expect(rows[0]![3]).toContain('tags: marketing,sale-2025')
    // Nothing is made by a preview, nor by its reload.
    await page.reload()
    expect(linkCount()).toBe(before)
    expect(await checkPage(page, 'dash-import-preview')).toBeLessThanOrEqual(390)
    await phoneShots(page, 'import-preview')

    // A second tab left on the preview: its confirmation later must not import again.
    const stale = await page.context().newPage()
    await stale.goto(previewUrl)

    await click(page, 'button:has-text("Import 4 rows")')
    expect(page.url()).toBe(previewUrl)
    expect(await text('.notice.ok')).toBe('Imported: 2 created, 2 skipped.')
    expect(await text('#summary-heading')).toBe('Imported shlink-export.csv')
    expect(await text('.import-counts')).toBe('2 links created, 2 rows skipped.')
    expect(linkCount()).toBe(before + 2)
    const made = app.db.query("SELECT code, title FROM links WHERE code IN ('spring25', 'blog') ORDER BY code").all()
    expect(made).toEqual([
      { code: 'blog', title: 'A post' },
      { code: 'spring25', title: 'Spring sale, 2025' },
    ])
    expect(
      await page.$$eval('table.import-skipped tbody tr', (trs) => trs.map((tr) => tr.textContent!.trim().slice(0, 2))),
    ).toEqual(['3t', '4b'])
    expect(await checkPage(page, 'dash-import-summary')).toBeLessThanOrEqual(390)
    await phoneShots(page, 'import-summary')

    // The skipped rows: the file's own columns, then why.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('a:has-text("Download the skipped rows")'),
    ])
    expect(download.suggestedFilename()).toBe('skipped-rows.csv')
    const csv = parseCsv(readFileSync((await download.path())!, 'utf8')).map((r) => r.fields)
    expect(csv[0]).toEqual([
      'createdAt',
      'domain',
      'shortCode',
      'shortUrl',
      'longUrl',
      'title',
      'tags',
      'visits',
      'skipped_line',
      'skipped_reason',
      'skipped_message',
    ])
    expect(csv.slice(1).map((r) => [r[2], r[4], r[8], r[9]])).toEqual([
      ['taken', 'https://docs.example.com/guide/', '3', 'alias_taken'],
      ['bad-url', 'javascript:alert(1)', '4', 'invalid_url'],
    ])
    expect(csv[1]![10]).toBe('The alias "taken" is already in use.')

    // Reload on the summary: the summary again, nothing imported twice.
    await page.reload()
    expect(await text('#summary-heading')).toBe('Imported shlink-export.csv')
    expect(linkCount()).toBe(before + 2)

    // The stale tab's confirmation: no second import, and it is told so on the summary.
    await click(stale, 'button:has-text("Import 4 rows")')
    expect(stale.url()).toBe(previewUrl)
    expect(await stale.textContent('.notice.ok')).toBe('This file was imported already: here is what happened.')
    expect(await stale.textContent('#summary-heading')).toBe('Imported shlink-export.csv')
    expect(linkCount()).toBe(before + 2)
    await stale.close()

    // Back: the preview's address shows what became of it (no confirm button); back again, the upload form.
    await page.goBack()
    expect(page.url()).toBe(previewUrl)
    expect(await text('#summary-heading')).toBe('Imported shlink-export.csv')
    expect(await page.$('form.import-confirm')).toBeNull()
    await page.goBack()
    expect(page.url()).toBe(`${app.url}/dashboard/import`)
    expect(await page.$('#import-file')).not.toBeNull()
    expect(linkCount()).toBe(before + 2)
  })

  test('YOURLS: recognised from its header row; the keyword linkbox cannot take is skipped with its reason; confirmed by keyboard', async () => {
    await page.goto(`${app.url}/dashboard/import`)
    const before = linkCount()
    await upload('yourls_url.csv', YOURLS)
    expect(await text('.import-page .card p')).toContain('Format: YOURLS (recognised from its header row). 2 rows')
    expect(await text('.import-counts')).toBe('All 2 rows: 1 will be created, 1 skipped.')
    expect(await text('table.import-preview tbody tr.skipped')).toContain('invalid_alias')
    await checkPage(page, 'dash-import-preview-yourls')
    await page.focus('form.import-confirm button')
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')])
    expect(await text('.import-counts')).toBe('1 link created, 1 row skipped.')
    expect(linkCount()).toBe(before + 1)
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('a:has-text("Download the skipped rows")'),
    ])
    const csv = parseCsv(readFileSync((await download.path())!, 'utf8')).map((r) => r.fields)
    expect(csv.map((r) => [r[0], r[7]])).toEqual([
      ['keyword', 'skipped_reason'],
      ['y', 'invalid_alias'],
    ])
  })

  test('linkbox’s own export: a link that had a password is said to come back without one, in the preview and the summary', async () => {
    await page.goto(`${app.url}/dashboard/import`)
    const csv =
      'code,short_url,long_url,mode,created,expires,clicks,tags,max_visits,title,rules,split,has_password\r\n' +
      'pw-locked,http://x/pw-locked,https://example.com/locked,redirect,2025-01-02T03:04:05.000Z,,0,,,,,,yes\r\n' +
      'pw-open,http://x/pw-open,https://example.com/open,redirect,2025-01-02T03:04:05.000Z,,0,,,,,,no\r\n'
    await upload('links-2026-01-01.csv', csv)
    expect(await text('.import-page .card p')).toContain('Format: linkbox CSV (recognised from its header row)')
    expect(await text('.notice.warn')).toContain('Passwords are never exported')
    expect(await text('table.import-preview tbody tr:first-child')).toContain('without its password')
    expect(await text('table.import-preview tbody tr:last-child')).not.toContain('password')
    await click(page, 'form.import-confirm button')
    expect(await text('.notice.warn')).toContain('1 link was protected by a password in the file.')
    const locked = app.db.query("SELECT password_hash FROM links WHERE code = 'pw-locked'").get() as {
      password_hash: string | null
    }
    expect(locked).toEqual({ password_hash: null })
  })

  test('a file over the API’s 10 MiB is refused beside the file field, and nothing waits for it', async () => {
    await page.goto(`${app.url}/dashboard/import`)
    const pending = () => (app.db.query('SELECT count(*) AS n FROM pending_imports').get() as { n: number }).n
    const before = pending()
    // One byte over (inside the body's slack for the form's other fields), and far over (past the body's bound).
    const over = `long_url\r\n${'x'.repeat(10 * 1024 * 1024 - 9)}`
    expect(Buffer.byteLength(over)).toBe(10 * 1024 * 1024 + 1)
    for (const big of [over, over + 'x'.repeat(100 * 1024)]) {
      await upload('big.csv', big)
      expect(await text('#import-file-error')).toBe('The file is larger than 10 MiB: split it into several files.')
    }
    expect(pending()).toBe(before)
  })

  test('an import under way, and one that stopped: each says so (and a confirmation meanwhile imports nothing)', async () => {
    await page.goto(`${app.url}/dashboard/import`)
    await upload('later.csv', 'code,long_url\r\nlater-1,https://example.com/later\r\n')
    const here = page.url()
    // As if another tab's confirmation were importing it right now.
    app.db.query("UPDATE pending_imports SET state = 'running' WHERE state = 'pending'").run()
    const before = linkCount()
    await click(page, 'form.import-confirm button')
    expect(page.url()).toBe(here)
    expect(await text('.notice.ok')).toContain('This file is being imported already')
    expect(await text('#running-heading')).toBe('The import is under way')
    expect(linkCount()).toBe(before)
    await checkPage(page, 'dash-import-running')
    app.db.query("UPDATE pending_imports SET state = 'done', result = ? WHERE state = 'running'").run(
      JSON.stringify({
        error: 'The import lost its lock (it ran longer than its lease): the rows made so far stay.',
      }),
    )
    await page.reload()
    expect(await text('#summary-heading')).toBe('The import of later.csv stopped')
    expect(await text('.card .notice.error')).toContain('The import lost its lock')
    await checkPage(page, 'dash-import-stopped')
  })

  test('an unknown or another account’s import id leads back to the upload form, saying so', async () => {
    await page.goto(`${app.url}/dashboard/import/AAAAAAAAAAAAAAAAAAAAAA`)
    expect(page.url()).toBe(`${app.url}/dashboard/import`)
    expect(await text('.notice.warn')).toContain('That import is no longer here')
  })
})
