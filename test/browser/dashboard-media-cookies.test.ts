// Issue 41, item 4, in real Chromium: Admin › Media cookies — an admin adds a cookies file for a site (multipart,
// Post/Redirect/Get), sees it listed (site, count, earliest expiry, last use) and removes it; a refused file names
// its field and line; no page ever shows a cookie's value; reload and back send nothing again; a non-admin gets
// no page. axe in both themes at 1280 and 390 px (checkPage).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { CLI } from '../../src/audit'
import { checkPage, closeAll, launchBrowser, startApp, type RunningApp } from '../support/browser'
import { signInBrowser } from '../support/dashboard'

const PW = 'correct horse battery'
const VALUE = 'browser-cookie-value-41'
const FUTURE = 2_000_000_000 // 2033-05-18T03:33:20Z
const FILE = [
  '# Netscape HTTP Cookie File',
  ['.example.com', 'TRUE', '/', 'TRUE', String(FUTURE), 'sid', VALUE].join('\t'),
  ['#HttpOnly_.example.com', 'TRUE', '/', 'FALSE', '0', 'pref', VALUE].join('\t'),
  ['.tracker.net', 'TRUE', '/', 'FALSE', '0', 't', VALUE].join('\t'),
  '',
].join('\n')
let app: RunningApp
let browser: Browser
let page: Page

const notice = () => page.locator('.notice').first().textContent()
const siteRows = () => page.locator('table tbody tr')

async function add(site: string, body: string) {
  await page.fill('#ck-site', site)
  await page.setInputFiles('#ck-file', { name: 'cookies.txt', mimeType: 'text/plain', buffer: Buffer.from(body) })
  await page.getByRole('button', { name: 'Add cookies' }).click()
  await page.waitForURL(`${app.url}/dashboard/admin/cookies`)
}

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'root', password: PW, admin: true }, CLI)
  await app.accounts.createAccount({ name: 'alice', password: PW }, CLI)
  browser = await launchBrowser()
  page = await (await browser.newContext()).newPage()
  page.setDefaultTimeout(10_000)
  await signInBrowser(page, app.url, 'root', PW)
})
afterAll(() => closeAll(browser, app))

describe('Admin › Media cookies', () => {
  test('empty, then a file added: listed with its count and earliest expiry, never its values; reload and back', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Media cookies' }).click()
    await page.waitForURL(`${app.url}/dashboard/admin/cookies`)
    expect(await page.locator('.empty').textContent()).toContain('No site has cookies')
    expect(await checkPage(page, 'admin-cookies-empty')).toBeLessThanOrEqual(390)

    await add('Example.com', FILE)
    expect(await notice()).toBe('example.com: 2 cookies stored (1 for other domains and 0 expired left out).')
    expect(await siteRows().count()).toBe(1)
    const row = siteRows().first()
    expect(await row.locator('td[data-label="Site"]').textContent()).toBe('example.com')
    expect(await row.locator('td[data-label="Cookies"]').textContent()).toBe('2')
    expect(await row.locator('td[data-label="Earliest expiry"] time').getAttribute('datetime')).toBe(
      '2033-05-18T03:33:20.000Z',
    )
    expect(await row.locator('td[data-label="Last used"]').textContent()).toBe('never')
    expect(await page.content()).not.toContain(VALUE)
    expect(await checkPage(page, 'admin-cookies')).toBeLessThanOrEqual(390)

    // Reload shows the page again (a GET), back goes to the Admin page: nothing is sent twice.
    const before = app.db.query('SELECT created FROM media_cookies').get()
    await page.reload()
    expect(await siteRows().count()).toBe(1)
    await page.goBack()
    await page.goForward()
    expect(app.db.query('SELECT created FROM media_cookies').get()).toEqual(before)
  })

  test('a refused file names its field and line; a wrong site names the site; nothing stored', async () => {
    await page.goto(`${app.url}/dashboard/admin/cookies`)
    await add('example.org', `${FILE}example.org\tTRUE\t/\n`)
    expect(await notice()).toBe(
      'Cookies file: line 5 of the cookies file has 3 fields separated by tabs, not 7 (domain, subdomains, path, secure, expiry, name, value): is it a Netscape cookies file?; nothing was stored.',
    )
    expect(await page.locator('.notice').first().getAttribute('role')).toBe('alert')
    await add('https://example.org/', FILE)
    expect(await notice()).toStartWith('Site: the site "https://example.org/" is not a domain')
    await add('example.org', FILE)
    expect(await notice()).toBe(
      'Cookies file: the cookies file holds no cookie for example.org (3 for other domains, 0 expired); nothing was stored.',
    )
    expect(await siteRows().count()).toBe(1)
    expect(await checkPage(page, null)).toBeLessThanOrEqual(390)
  })

  test('removed from its row; a second removal (another tab) says it is gone', async () => {
    await page.goto(`${app.url}/dashboard/admin/cookies`)
    const stale = await (await browser.newContext({ storageState: await page.context().storageState() })).newPage()
    await stale.goto(`${app.url}/dashboard/admin/cookies`)
    await page.getByRole('button', { name: 'Remove the cookies of example.com' }).click()
    await page.waitForURL(`${app.url}/dashboard/admin/cookies`)
    expect(await notice()).toBe('The cookies of example.com are removed: media download no longer uses them.')
    expect(await page.locator('.empty').count()).toBe(1)
    await stale.getByRole('button', { name: 'Remove the cookies of example.com' }).click()
    await stale.waitForURL(`${app.url}/dashboard/admin/cookies`)
    expect(await stale.locator('.notice').first().textContent()).toContain('example.com had no cookies')
    await stale.context().close()
    expect(app.db.query('SELECT count(*) AS n FROM media_cookies').get()).toEqual({ n: 0 })
    // The admin's add and removal are in the audit log under the admin's name.
    expect(
      app.db.query("SELECT action, actor_name, target FROM audit_log WHERE action LIKE 'cookies.%' ORDER BY id").all(),
    ).toEqual([
      { action: 'cookies.add', actor_name: 'root', target: 'site example.com' },
      { action: 'cookies.remove', actor_name: 'root', target: 'site example.com' },
    ])
  })

  test('not for an account that is not admin', async () => {
    const ctx = await browser.newContext()
    const other = await ctx.newPage()
    await signInBrowser(other, app.url, 'alice', PW)
    const r = await other.goto(`${app.url}/dashboard/admin/cookies`)
    expect(r?.status()).toBe(403)
    await ctx.close()
  })
})
