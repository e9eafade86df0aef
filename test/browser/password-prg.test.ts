// A wrong password on a password link in real Chromium (issue 36 item 9): the form post is answered with
// 303 to a GET page that says so, so that reload, Back and Forward send nothing again (no "Confirm Form
// Resubmission"); the right password then still lands on the destination.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import {
  checkPage,
  htmlPage,
  launchBrowser,
  startApp,
  startFixture,
  type Fixture,
  type RunningApp,
  chromePage,
} from '../support/browser'

let browser: Browser
let app: RunningApp
let dest: Fixture
let page: Page
/** Every request the tab sent that was not a GET, as "POST <path>". */
const sent: string[] = []

beforeAll(async () => {
  dest = startFixture((_req, url) => htmlPage(`Destination ${url.pathname}`))
  app = startApp()
  browser = await launchBrowser()
  page = await chromePage(browser)
  page.on('request', (r) => {
    if (r.method() !== 'GET') sent.push(`${r.method()} ${new URL(r.url()).pathname}`)
  })
})
afterAll(async () => {
  await browser?.close()
  await app?.stop()
  dest?.stop()
})

test('wrong password: a GET page says so; reload, Back and Forward send nothing; the right one then works', async () => {
  const code = (await app.links.create({ url: `${dest.url}/secret`, password: 'open sesame' }, null)).hex
  await page.goto(`${app.url}/${code}`)
  await page.fill('#pw', 'wrong')
  sent.length = 0
  const [answer] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
  expect(sent).toEqual([`POST /${code}`])
  // The page shown is the answer to a GET (the 303's target), with the message at its field.
  expect(answer!.request().method()).toBe('GET')
  expect(answer!.request().redirectedFrom()?.method()).toBe('POST')
  expect(answer!.status()).toBe(200)
  const errorUrl = page.url()
  expect(new URL(errorUrl).pathname).toBe(`/${code}`)
  expect(new URL(errorUrl).searchParams.get('wrong')).toBe('1')
  expect(await page.locator('#pw-error').textContent()).toBe('That password is not right.')
  expect(await page.getAttribute('#pw', 'aria-invalid')).toBe('true')
  expect(await checkPage(page, 'password-wrong-get')).toBeLessThanOrEqual(390)

  // Reload: a GET of the same address, nothing sent again.
  sent.length = 0
  const reloaded = await page.reload()
  expect(reloaded!.request().method()).toBe('GET')
  expect(page.url()).toBe(errorUrl)
  expect(await page.locator('#pw-error').textContent()).toBe('That password is not right.')
  // Back: the form as first fetched; Forward: the error page again. Neither sends the password.
  await page.goBack()
  expect(page.url()).toBe(`${app.url}/${code}`)
  expect(await page.locator('#pw-error').textContent()).toBe('')
  await page.goForward()
  expect(page.url()).toBe(errorUrl)
  // The history entry is the GET's: the browser's own record of how the current document was fetched.
  expect(
    await page.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).type),
  ).toBe('back_forward')
  expect(sent).toEqual([])

  // The right password, from the error page: on to the destination, one click.
  await page.fill('#pw', 'open sesame')
  await Promise.all([
    page.waitForURL(`${dest.url}/secret`, { timeout: 10_000 }),
    page.click('button[type=submit]', { noWaitAfter: true }),
  ])
  expect(await page.locator('h1').textContent()).toBe('Destination /secret')
  await app.recorder.flush()
  expect((app.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks).toBe(1)
}, 60_000)
