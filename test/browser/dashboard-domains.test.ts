// Several short domains in the dashboard (issue 40, SPEC §13) in real Chromium: the create form's domain picker,
// the list's domain filter, a link on another domain edited and deleted through its code@host page, with reload
// and back; each page checked with axe in both themes and at 390 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import type { Caller } from '../../src/kernel/caller'
import { checkPage, chromePage, closeAll, launchBrowser, type RunningApp, startApp } from '../support/browser'
import { dashboardCaller, signInBrowser } from '../support/dashboard'

let browser: Browser
let page: Page
let app: RunningApp
let alice: Caller

beforeAll(async () => {
  app = startApp({ server: { host: '127.0.0.1', port: 0, base_url: 'http://s.test', domains: ['go.test'] } })
  await app.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  alice = dashboardCaller(app.db, 'alice')
  await app.links.create({ url: 'https://example.com/home', alias: 'same' }, alice)
  browser = await launchBrowser()
  page = await chromePage(browser)
})
afterAll(() => closeAll(browser, app))

const click = (selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)])
const shorts = () => page.$$eval('a.short', (as) => as.map((a) => a.textContent))
const row = (domain: string, code: string) =>
  app.db.query('SELECT long_url FROM links WHERE domain = ? AND code = ?').get(domain, code) as {
    long_url: string
  } | null

describe('short domains in the dashboard', () => {
  test('the create form offers the domains; the same alias on the other domain is a second link', async () => {
    await signInBrowser(page, app.url, 'alice', 'correct horse')
    const options = await page.$$eval('#domain option', (os) => os.map((o) => [o.getAttribute('value'), o.textContent]))
    expect(options).toEqual([
      ['', 's.test'],
      ['go.test', 'go.test'],
    ])
    await page.fill('#url', 'https://example.com/away')
    await page.selectOption('#domain', 'go.test')
    await page.click('details.more summary')
    await page.fill('#alias', 'same')
    await click('button:has-text("Shorten")')
    expect(page.url()).toBe(`${app.url}/dashboard?new=same%40go.test`)
    expect(row('go.test', 'same')?.long_url).toBe('https://example.com/away')
    expect(row('', 'same')?.long_url).toBe('https://example.com/home')
    expect(await page.textContent('.notice, [role="status"]')).toContain('http://go.test/same')
    expect((await shorts()).sort()).toEqual(['http://go.test/same', 'http://s.test/same'])
    expect(await checkPage(page, 'dash-domains-list')).toBeLessThanOrEqual(390)
  })

  test('the filter shows one domain’s links; reload and back keep it', async () => {
    await page.selectOption('#domain-filter', 'go.test')
    await click('.link-search button')
    expect(page.url()).toContain('domain=go.test')
    expect(await shorts()).toEqual(['http://go.test/same'])
    await page.reload()
    expect(await shorts()).toEqual(['http://go.test/same'])
    expect(await page.inputValue('#domain-filter')).toBe('go.test')
    await page.goBack()
    expect((await shorts()).sort()).toEqual(['http://go.test/same', 'http://s.test/same'])
    await page.goForward()
    expect(await shorts()).toEqual(['http://go.test/same'])
    expect(await checkPage(page, 'dash-domains-filter')).toBeLessThanOrEqual(390)
  })

  test('a link on the other domain is edited and deleted through its own page; the default one stays', async () => {
    await click('a[href="/dashboard/links/same@go.test"]')
    expect(await page.inputValue('#url')).toBe('https://example.com/away')
    await page.fill('#url', 'https://example.com/changed')
    await click('button:has-text("Save changes")')
    expect(page.url()).toBe(`${app.url}/dashboard/links/same@go.test`)
    expect(row('go.test', 'same')?.long_url).toBe('https://example.com/changed')
    expect(row('', 'same')?.long_url).toBe('https://example.com/home')
    await page.reload()
    expect(await page.inputValue('#url')).toBe('https://example.com/changed')
    expect(await checkPage(page, 'dash-domains-edit')).toBeLessThanOrEqual(390)
    await page.goto(`${app.url}/dashboard/links/same@go.test/delete`)
    await click('button:has-text("Delete")')
    expect(row('go.test', 'same')).toBeNull()
    expect(row('', 'same')?.long_url).toBe('https://example.com/home')
    // Back to the deleted link's page: it is gone, said plainly.
    await page.goBack()
    await page.reload()
    expect(await page.textContent('h1')).toContain('Link not found')
  })
})
