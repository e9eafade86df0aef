// The public statistics page in real Chromium with countries, visitors and destinations (issue 23): the
// countries as a table with flags (regional indicator letters, no image) and names; the day's visitors in
// the chart, its table and a card; the destinations of a link whose visits rules or a split sent apart.
// Checked with axe in both themes and at 390 px, screenshotted, reloaded and come back to; nothing is
// requested from another origin.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp, chromePage, closeAll } from '../support/browser'
import { CHROME_UA } from '../support/server'

const FIREFOX_UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'

let browser: Browser
let page: Page
let app: RunningApp
const requests: string[] = []

beforeAll(async () => {
  app = startApp({ server: { host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1/32'] } })
  browser = await launchBrowser()
  page = await chromePage(browser)
  page.on('request', (r) => requests.push(r.url()))
})
afterAll(() => closeAll(browser, app))

const visit = (code: string, ua: string, forwarded: string) =>
  fetch(`${app.url}/${code}`, { redirect: 'manual', headers: { 'user-agent': ua, 'x-forwarded-for': forwarded } })

describe('the public statistics page', () => {
  test('countries with flags and names, visitors by day, destinations; axe, phone, reload and back', async () => {
    const r = await app.links.create({ url: 'https://example.com/spring-sale' }, null)
    const code = r.hex
    const id = (app.db.query('SELECT id FROM links WHERE code = ?').get(code) as { id: number }).id
    // 3 from the US (two people: one came twice), 2 from Brazil, 1 each from the Netherlands and Japan, 1 unlocated.
    await visit(code, CHROME_UA, '8.8.8.8')
    await visit(code, CHROME_UA, '8.8.8.8')
    await visit(code, FIREFOX_UA, '8.8.8.8')
    await visit(code, CHROME_UA, '200.160.2.3')
    await visit(code, CHROME_UA, '200.160.2.4')
    await visit(code, CHROME_UA, '193.0.6.139')
    await visit(code, CHROME_UA, '133.11.0.1')
    await visit(code, CHROME_UA, '10.9.8.7')
    // What a split records (the other helper's visits pass the chosen URL): A twice, B once.
    const now = Date.now()
    app.recorder.record(id, now, CHROME_UA, '', -1, code, '10.0.0.1', 'https://example.com/spring-sale?variant=a')
    app.recorder.record(id, now, CHROME_UA, '', -1, code, '10.0.0.2', 'https://example.com/spring-sale?variant=a')
    app.recorder.record(
      id,
      now,
      CHROME_UA,
      '',
      -1,
      code,
      '10.0.0.3',
      'https://example.com/spring-sale?variant=b-with-a-rather-long-campaign-name-for-phones',
    )
    await app.recorder.flush()

    await page.goto(`${app.url}/${code}+`)
    requests.length = 0
    await page.reload()
    const countries = page.locator('section[aria-labelledby=h-countries] tbody tr')
    // Most clicks first, ties by code: the unlocated one and the three recorded from private addresses.
    expect(await countries.allTextContents()).toEqual([
      'Unknown436%',
      '🇺🇸United StatesUS327%',
      '🇧🇷BrazilBR218%',
      '🇯🇵JapanJP19%',
      '🇳🇱NetherlandsNL19%',
    ])
    // The flag is decoration: a screen reader reads the name.
    expect(await countries.nth(1).locator('.flag').getAttribute('aria-hidden')).toBe('true')
    const today = new Date(now).toISOString().slice(0, 10)
    expect(await page.locator(`svg.chart g title`).last().textContent()).toBe(`${today}: 11 clicks, 10 visitors`)
    expect(await page.locator('.card').allTextContents()).toContain('Visitors, busiest day10distinct people a day')
    await page.locator('details summary', { hasText: 'Every day as a table' }).click()
    expect(await page.locator('details tbody tr').last().textContent()).toBe(`${today}1110`)
    const destinations = page.locator('section[aria-labelledby=h-destinations] tbody tr')
    expect(await destinations.allTextContents()).toEqual([
      'https://example.com/spring-sale?variant=a267%',
      'https://example.com/spring-sale?variant=b-with-a-rather-long-campaign-name-for-phones133%',
    ])
    expect(await check(page, 'stats-countries')).toBeLessThanOrEqual(390)
    // Back from elsewhere: the same page, the same numbers.
    await page.goto(`${app.url}/api/docs`)
    await page.goBack()
    expect(await countries.count()).toBe(5)
    expect(requests.filter((u) => !u.startsWith(app.url))).toEqual([])
  })

  test('a link without rules or split has no destinations panel; without clicks the countries say so', async () => {
    const r = await app.links.create({ url: 'https://example.com/quiet' }, null)
    await page.goto(`${app.url}/${r.hex}+?days=7`)
    expect(await page.locator('#h-destinations').count()).toBe(0)
    expect(await page.locator('section[aria-labelledby=h-countries] .empty').textContent()).toBe(
      'No clicks in the last 7 days.',
    )
    expect(await check(page, 'stats-countries-empty')).toBeLessThanOrEqual(390)
  })
})

const check = (p: Page, name: string) => checkPage(p, name)
