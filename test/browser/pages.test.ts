// The public pages in real Chromium, as a visitor meets them: the password flow (wrong, then right, on
// to the destination), frame links (a destination redirecting to another origin; one refusing to be
// framed), the preview, the statistics page, 404 and 410, and the API docs on a phone. Every page is
// checked with axe-core (no serious or critical violations) and screenshotted at 1280 and 390 px into
// test-results/screenshots/. One browser and one tab for the whole file.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import {
  htmlPage,
  launchBrowser,
  screenshots,
  seriousViolations,
  startApp,
  startFixture,
  type Fixture,
  type RunningApp,
} from '../support/browser'
import { CHROME_UA } from '../support/server'

let browser: Browser
let page: Page
let app: RunningApp
let dest: Fixture
let other: Fixture // another origin (another port)
let now = Date.now()

beforeAll(async () => {
  other = startFixture((_req, url) => htmlPage(`Other origin ${url.pathname}`))
  dest = startFixture((_req, url) => {
    if (url.pathname === '/to-other') return Response.redirect(`${other.url}/landed`, 302)
    if (url.pathname === '/deny') return htmlPage('Never framed', { 'x-frame-options': 'DENY' })
    return htmlPage(`Destination ${url.pathname}`)
  })
  app = startApp({}, { clock: () => now })
  browser = await launchBrowser()
  // A desktop Chrome's user agent: headless Chromium's own is (rightly) counted as a bot.
  page = await browser.newPage({ userAgent: CHROME_UA })
  // A missing element fails its test within 10 s, well inside the test's own time limit.
  page.setDefaultTimeout(10_000)
})
afterAll(async () => {
  await browser?.close()
  await app?.stop()
  dest?.stop()
  other?.stop()
})

async function link(fields: { url: string; [k: string]: string }): Promise<string> {
  const r = await app.links.create(fields, null)
  return r.hex
}

/** axe (no serious/critical) and the two screenshots; returns the scroll width at 390 px. */
async function check(name: string): Promise<number> {
  expect(await seriousViolations(page)).toEqual([])
  const widths = await screenshots(page, name)
  await page.setViewportSize({ width: 1280, height: 800 })
  return widths[390]!
}

describe('password link, redirect mode', () => {
  test('a wrong password keeps its message (tied to the field); the right one lands on the destination', async () => {
    const code = await link({ url: `${dest.url}/secret?x=1&y=2`, password: 'open sesame' })
    await page.goto(`${app.url}/${code}`)
    expect(await page.locator('h1').textContent()).toBe('This link is protected')
    await check('password-form')

    await page.fill('#pw', 'wrong')
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
    expect(await page.locator('#pw-error').textContent()).toBe('That password is not right.')
    expect(await page.getAttribute('#pw', 'aria-describedby')).toBe('pw-error')
    expect(await page.getAttribute('#pw-error', 'aria-live')).toBe('polite')
    expect(await check('password-wrong')).toBeLessThanOrEqual(390)

    await page.fill('#pw', 'open sesame')
    await Promise.all([page.waitForURL(`${dest.url}/secret?x=1&y=2`, { timeout: 10_000 }), page.click('button[type=submit]', { noWaitAfter: true })])
    expect(await page.locator('h1').textContent()).toBe('Destination /secret')
    await app.recorder.flush()
    expect((app.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks).toBe(1)
  })
})

describe('frame links', () => {
  test('a destination that redirects to another origin is shown in the frame', async () => {
    const code = await link({ url: `${dest.url}/to-other`, mode: 'frame' })
    await page.goto(`${app.url}/${code}`)
    const inner = page.frameLocator('iframe').locator('h1')
    expect(await inner.textContent({ timeout: 10_000 })).toBe('Other origin /landed')
    expect(page.frames().map((f) => f.url())).toContain(`${other.url}/landed`)
    expect(await page.locator('main iframe').count()).toBe(1)
    expect(await page.locator('h1').first().textContent()).toContain(`/${code}`)
    await check('frame')
  })

  test('a destination that refuses framing: a clear message and a prominent "Open directly"', async () => {
    const code = await link({ url: `${dest.url}/deny`, mode: 'frame' })
    await page.goto(`${app.url}/${code}`)
    expect(await page.locator('iframe').count()).toBe(0)
    expect(await page.locator('main').textContent()).toContain('does not allow other sites to show its pages in a frame')
    const open = page.getByRole('link', { name: 'Open directly' })
    expect(await open.getAttribute('href')).toBe(`${dest.url}/deny`)
    expect(await check('frame-refused')).toBeLessThanOrEqual(390)
    await Promise.all([page.waitForURL(`${dest.url}/deny`), open.click()])
    expect(await page.locator('h1').textContent()).toBe('Never framed')
  })
})

describe('preview, statistics, 404, 410, docs', () => {
  test('the preview shows the host and continues to the destination', async () => {
    const code = await link({ url: `${dest.url}/previewed/path?q=a-rather-long-query-string-that-has-to-wrap-on-a-phone`, mode: 'preview' })
    await page.goto(`${app.url}/${code}`)
    expect(await page.locator('.dest strong').textContent()).toBe(new URL(dest.url).host)
    expect(await check('preview')).toBeLessThanOrEqual(390)
    await Promise.all([page.waitForURL(/\/previewed\/path/), page.getByRole('link', { name: /^Continue to/ }).click()])
    expect(await page.locator('h1').textContent()).toBe('Destination /previewed/path')
  })

  test('the statistics page: chart, tables with right-aligned Clicks headers', async () => {
    const code = await link({ url: `${dest.url}/popular` })
    for (let i = 0; i < 3; i++) await page.goto(`${app.url}/${code}`)
    await app.recorder.flush()
    await page.goto(`${app.url}/${code}+`)
    expect(await page.locator('main p strong').first().textContent()).toBe('3')
    const aligns = await page.$$eval('section table', (tables) =>
      tables.map((t) => [getComputedStyle(t.querySelector('th.n')!).textAlign, getComputedStyle(t.querySelector('td.n')!).textAlign]),
    )
    expect(aligns.length).toBeGreaterThan(0)
    for (const pair of aligns) expect(pair).toEqual(['right', 'right'])
    expect(await check('stats')).toBeLessThanOrEqual(390)
  })

  test('an unknown code: the 404 page', async () => {
    const r = await page.goto(`${app.url}/NoSuchCode`)
    expect(r!.status()).toBe(404)
    expect(await page.locator('h1').textContent()).toBe('Link not found')
    await check('not-found')
  })

  test('an expired link: the 410 page', async () => {
    const code = await link({ url: `${dest.url}/short-lived`, expire: '60' })
    now += 61_000
    const r = await page.goto(`${app.url}/${code}`)
    expect(r!.status()).toBe(410)
    expect(await page.locator('h1').textContent()).toBe('This link has expired')
    await check('expired')
  })

  test('/api/docs fits a 390 px screen', async () => {
    await page.goto(`${app.url}/api/docs`)
    expect(await check('docs')).toBeLessThanOrEqual(390)
  })
})
