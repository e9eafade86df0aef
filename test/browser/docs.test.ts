// /api/docs in real Chromium (issue 24): the page opens with the site's header, every entry of its contents
// jumps to its anchor (the target's heading on screen, the address saying where), back returns to where the
// reader was, a reload keeps the place, the brand leads home; no backtick in the text a reader sees; axe in
// both themes and at 390 px, screenshots; no request leaves the app's origin. Issue 38: the contents name each
// method with its HTTP method, the page follows the theme chosen elsewhere and offers the switch, and every
// example has a copy button (test/browser/docs-theme.test.ts).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { join } from 'node:path'
import { checkPage, launchBrowser, SCREENSHOTS, startApp, type RunningApp, shoot, closeAll } from '../support/browser'

let browser: Browser
let app: RunningApp
let page: Page
const requests: string[] = []

beforeAll(async () => {
  app = startApp()
  browser = await launchBrowser()
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
  page.setDefaultTimeout(10_000)
  page.on('request', (r) => requests.push(r.url()))
})
afterAll(() => closeAll(browser, app))

/** The top of the element with this id, relative to the viewport. */
const topOf = (id: string) => page.evaluate((i) => document.getElementById(i)!.getBoundingClientRect().top, id)

test('the page opens with the site header and its contents; nothing in it shows Markdown', async () => {
  const res = await page.goto(`${app.url}/api/docs`)
  expect(res!.status()).toBe(200)
  expect(await page.locator('h1').textContent()).toBe('linkbox API')
  expect(
    await page.getByRole('navigation', { name: 'Site' }).getByRole('link', { name: 'API' }).getAttribute('href'),
  ).toBe('/api/docs')
  expect(await page.getByRole('link', { name: 'linkbox' }).getAttribute('href')).toBe('/')
  const contents = page.getByRole('navigation', { name: 'Contents' })
  expect(await contents.getByRole('link').count()).toBeGreaterThan(20)
  expect(await page.evaluate(() => document.body.innerText)).not.toContain('`')
  // Every entry names an element of the page.
  const targets = await contents
    .getByRole('link')
    .evaluateAll((links) => links.map((a) => (a as HTMLAnchorElement).hash.slice(1)))
  for (const t of targets) expect(await page.evaluate((i) => document.getElementById(i) !== null, t), t).toBe(true)
})

test('entries of the contents jump to their anchors; back returns to the contents; a reload keeps the place', async () => {
  await page.goto(`${app.url}/api/docs`)
  for (const [name, id] of [
    ['POST getLink.json', 'getLink.json'],
    ['POST webhooks.json', 'webhooks.json'],
    ['mail.received', 'event-mail.received'],
    ['Verifying a signature', 'verify-signatures'],
  ] as const) {
    await page.getByRole('navigation', { name: 'Contents' }).getByRole('link', { name, exact: true }).click()
    await page.waitForURL(`${app.url}/api/docs#${id}`)
    // The target is at the top of the screen (its scroll margin above it).
    const top = await topOf(id)
    expect(top, id).toBeGreaterThanOrEqual(0)
    expect(top, id).toBeLessThan(40)
    await page.goBack()
    await page.waitForURL(`${app.url}/api/docs`)
    // Back where the reader was: the contents on screen.
    expect(await topOf('toc-h')).toBeLessThan(800)
    expect(await topOf('toc-h')).toBeGreaterThanOrEqual(0)
  }
  // Opened at an anchor (a shared link), and reloaded: the same method on screen.
  await page.goto(`${app.url}/api/docs#message.json`)
  expect(Math.abs(await topOf('message.json'))).toBeLessThan(40)
  await page.reload()
  expect(Math.abs(await topOf('message.json'))).toBeLessThan(40)
  expect(await page.locator('[id="message.json"] pre.curl').textContent()).toContain(
    'curl -s -G "$LINKBOX/api/message.json"',
  )
})

test('the brand leads home, and back returns to the docs', async () => {
  await page.goto(`${app.url}/api/docs`)
  await page.getByRole('link', { name: 'linkbox', exact: true }).click()
  await page.waitForURL(`${app.url}/`)
  await page.goBack()
  await page.waitForURL(`${app.url}/api/docs`)
  expect(await page.locator('h1').textContent()).toBe('linkbox API')
})

test('axe in both themes and at 390 px; no sideways scrolling on a phone; screenshots', async () => {
  await page.goto(`${app.url}/api/docs`)
  expect(await checkPage(page, 'api-docs')).toBeLessThanOrEqual(390)
  await page.setViewportSize({ width: 390, height: 844 })
  await page.goto(`${app.url}/api/docs#webhooks.json`)
  await shoot(page, { path: join(SCREENSHOTS, 'api-docs-webhooks-390.png') })
  await page.goto(`${app.url}/api/docs#verify-signatures`)
  await shoot(page, { path: join(SCREENSHOTS, 'api-docs-verify-390.png') })
  await page.setViewportSize({ width: 1280, height: 800 })
  const away = requests.filter((u) => !u.startsWith(`${app.url}/`) && !u.startsWith('data:') && !u.startsWith('about:'))
  expect(away).toEqual([])
}, 120_000) // a long page: full-page screenshots at two widths and two themes
