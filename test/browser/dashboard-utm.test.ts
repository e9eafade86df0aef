// The link forms' UTM builder and expiry destination (issue 40) in real Chromium: a link made with the builder,
// its edit page reading the values back from the destination, one changed and one emptied, the URL saved as the
// live line said; the same without JavaScript (the server merges). axe in both themes, at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import {
  checkPage,
  chromePage,
  closeAll,
  launchBrowser,
  phoneShots,
  startApp,
  type RunningApp,
} from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

let browser: Browser
let page: Page
let app: RunningApp

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'ulla', password: 'correct horse' })
  browser = await launchBrowser()
  page = await chromePage(browser)
})
afterAll(() => closeAll(browser, app))

const click = (p: Page, selector: string) => Promise.all([p.waitForNavigation(), p.click(selector)])
const stored = (code: string) =>
  app.db.query('SELECT long_url, expired_url FROM links WHERE code = ?').get(code) as {
    long_url: string
    expired_url: string | null
  }

describe('the UTM builder', () => {
  test('create with the builder: the resulting URL shown live, then saved as shown', async () => {
    await signInBrowser(page, app.url, 'ulla', 'correct horse')
    await page.click('details.more summary')
    // Fields not typed in follow the URL: its own utm_ values are read back into them.
    await page.fill('#url', 'example.com/shop?id=7&utm_source=old#top')
    expect(await page.inputValue('#utm_source')).toBe('old')
    await page.fill('#utm_source', 'newsletter')
    await page.fill('#utm_medium', 'email')
    await page.fill('#utm_campaign', 'spring sale')
    const live = 'https://example.com/shop?id=7&utm_source=newsletter&utm_medium=email&utm_campaign=spring%20sale#top'
    expect(await page.textContent('#utm-result')).toBe(live)
    await page.fill('#expired_url', 'https://example.com/sale-over')
    await page.fill('#alias', 'utm-rt')
    expect(await checkPage(page, 'dash-utm-create')).toBeLessThanOrEqual(390)
    await phoneShots(page, 'utm-create', { height: 1400 })
    await click(page, 'button:has-text("Shorten")')
    expect(page.url()).toBe(`${app.url}/dashboard?new=utm-rt`)
    expect(stored('utm-rt')).toEqual({ long_url: live, expired_url: 'https://example.com/sale-over' })
  })

  test('the edit page reads the values back; one changed, one emptied: the URL saved as the live line says', async () => {
    await page.goto(`${app.url}/dashboard/links/utm-rt`)
    const values = await page.$$eval('[data-utm]', (els) => els.map((el) => (el as HTMLInputElement).value))
    expect(values).toEqual(['newsletter', 'email', 'spring sale', '', ''])
    expect(await page.inputValue('#expired_url')).toBe('https://example.com/sale-over')
    expect(await checkPage(page, 'dash-utm-edit')).toBeLessThanOrEqual(390)
    await phoneShots(page, 'utm-edit', { height: 1600 })
    await page.fill('#utm_medium', 'social')
    await page.fill('#utm_campaign', '')
    await page.fill('#utm_content', 'header button')
    const live = 'https://example.com/shop?id=7&utm_source=newsletter&utm_medium=social&utm_content=header%20button#top'
    expect(await page.textContent('#utm-result')).toBe(live)
    await page.fill('#expired_url', '')
    await click(page, 'button:has-text("Save changes")')
    expect(await page.textContent('.notice.ok')).toContain('Saved the changes')
    expect(stored('utm-rt')).toEqual({ long_url: live, expired_url: null })
    expect(await page.inputValue('#utm_content')).toBe('header button')
    expect(await page.inputValue('#url')).toBe(live)
  })

  test('a refused value comes back beside its field, named in plain words', async () => {
    await page.$eval('#utm_term', (el) => el.removeAttribute('maxlength'))
    await page.fill('#utm_term', 't'.repeat(201))
    await page.fill('#expired_url', 'ftp://example.com/x')
    await click(page, 'button:has-text("Save changes")')
    expect(await page.getAttribute('#utm_term', 'aria-invalid')).toBe('true')
    expect(await page.textContent('#utm_term-error')).toContain('The UTM term')
    expect(await page.textContent('#expired_url-error')).toContain('The expiry destination')
    expect(await checkPage(page, null)).toBeLessThanOrEqual(390)
  })
})

describe('without JavaScript', () => {
  test('the fields still work: the server sets a changed value in the destination', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, userAgent: CHROME_UA })
    const p = await context.newPage()
    p.setDefaultTimeout(10_000)
    try {
      await signInBrowser(p, app.url, 'ulla', 'correct horse')
      await p.goto(`${app.url}/dashboard/links/utm-rt`)
      expect(await p.inputValue('#utm_medium')).toBe('social')
      await p.fill('#utm_term', 'shoes')
      await p.fill('#utm_source', '')
      await click(p, 'button:has-text("Save changes")')
      expect(stored('utm-rt').long_url).toBe(
        'https://example.com/shop?id=7&utm_medium=social&utm_content=header%20button&utm_term=shoes#top',
      )
      // A URL typed with its own utm_ value keeps it: the builder's field was left as the page showed it.
      await p.fill('#url', 'https://example.org/?utm_medium=print')
      await click(p, 'button:has-text("Save changes")')
      expect(stored('utm-rt').long_url).toBe('https://example.org/?utm_medium=print')
      expect(await p.inputValue('#utm_medium')).toBe('print')
      // A value over the builder's 200 characters, typed in the URL, is shown in its field and never blocks a save.
      const long = `https://example.org/?utm_source=${'s'.repeat(250)}`
      await p.fill('#url', long)
      await click(p, 'button:has-text("Save changes")')
      expect(await p.inputValue('#utm_source')).toBe('s'.repeat(250))
      await p.fill('#title', 'Long source')
      await click(p, 'button:has-text("Save changes")')
      expect(await p.textContent('.notice.ok')).toContain('Saved the changes')
      expect(stored('utm-rt').long_url).toBe(long)
    } finally {
      await context.close()
    }
  })
})
