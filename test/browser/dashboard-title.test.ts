// A link's title in the dashboard (issue 36, SPEC §2a) in real Chromium: set in the create form, shown in the
// list above the short link, found by the search box, changed in the edit form, and the last column of
// "Export CSV". Each page is checked with axe in both themes and at 390 px, and screenshotted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import type { Caller } from '../../src/kernel/caller'
import { parseCsv } from '../../src/links/csv'
import { checkPage, launchBrowser, startApp, type RunningApp, chromePage, closeAll } from '../support/browser'
import { signInBrowser, dashboardCaller } from '../support/dashboard'

let browser: Browser
let page: Page
let app: RunningApp
let alice: Caller

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  alice = dashboardCaller(app.db, 'alice')
  await app.links.create({ url: 'https://example.com/plain', alias: 'plain' }, alice)
  browser = await launchBrowser()
  page = await chromePage(browser, { acceptDownloads: true })
})
afterAll(() => closeAll(browser, app))

const rowCodes = () => page.$$eval('a.short', (as) => as.map((a) => a.id.replace(/^short-/, '')))
const click = (selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)])
const titleOf = (code: string) =>
  (app.db.query('SELECT title FROM links WHERE code = ?').get(code) as { title: string }).title

describe('titles in the dashboard', () => {
  test('the create form sets a title; the list shows it; the search box finds it', async () => {
    await signInBrowser(page, app.url, 'alice', 'correct horse')
    await page.fill('#url', 'https://example.com/promo/spring')
    await page.click('details.more summary')
    await page.fill('#alias', 'promo')
    await page.fill('#title', 'Spring <sale> 2026')
    await click('button:has-text("Shorten")')
    expect(page.url()).toBe(`${app.url}/dashboard?new=promo`)
    expect(titleOf('promo')).toBe('Spring <sale> 2026')
    expect(await page.textContent('tr:has(#short-promo) .link-title')).toBe('Spring <sale> 2026')
    expect(await page.$('tr:has(#short-plain) .link-title')).toBeNull()
    expect(await checkPage(page, 'dash-title-list')).toBeLessThanOrEqual(390)
    await page.fill('#search', 'SALE')
    await click('.link-search button')
    expect(await rowCodes()).toEqual(['promo'])
  })

  test('the edit form changes the title, and a refused one is shown at the field', async () => {
    await page.goto(`${app.url}/dashboard/links/promo`)
    expect(await page.inputValue('#title')).toBe('Spring <sale> 2026')
    await page.fill('#title', 'Summer')
    await click('button:has-text("Save changes")')
    expect(titleOf('promo')).toBe('Summer')
    expect(await page.inputValue('#title')).toBe('Summer')
    expect(await checkPage(page, 'dash-title-edit')).toBeLessThanOrEqual(390)
    // The field's maxlength stops a person at 200; a longer one sent anyway comes back at the field.
    await page.$eval('#title', (el) => el.removeAttribute('maxlength'))
    await page.fill('#title', 'x'.repeat(201))
    await click('button:has-text("Save changes")')
    expect(await page.getAttribute('#title', 'aria-invalid')).toBe('true')
    expect(await page.textContent('#title-error')).toContain('The title')
    expect(titleOf('promo')).toBe('Summer')
  })

  test('"Export CSV" carries the title after the older nine columns (rules, split and has_password follow it)', async () => {
    await page.goto(`${app.url}/dashboard`)
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('a:has-text("Export CSV")')])
    const rows = parseCsv(readFileSync((await download.path())!, 'utf8'))
    expect(rows[0]!.fields.slice(9)).toEqual(['title', 'rules', 'split', 'has_password', 'domain', 'expired_url'])
    expect(rows.slice(1).map((r) => [r.fields[0], r.fields[9]])).toEqual([
      ['plain', ''],
      ['promo', 'Summer'],
    ])
  })
})
