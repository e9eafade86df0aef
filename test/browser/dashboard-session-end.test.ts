// Issue 20, item 7, in real Chromium: two tabs of one browser; signing out in one, then sending a form in the
// other, leads to the sign-in page, which says the session ended; signing in comes back to the form's page
// with what was typed (not the password) and a word that it was not sent; reload and back neither bring
// the draft back nor send anything. A link followed in the other tab comes back to its page the same way.
// Every page: axe in both themes and on a phone, screenshots; no request off the app's origin.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp } from '../support/browser'
import { signInBrowser } from '../support/dashboard'

/** What the sign-in page says after a session ended (the words are the test). */
const SESSION_ENDED = 'Your session ended — sign in again to continue where you were.'
const PW = 'correct horse battery'
let browser: Browser
let app: RunningApp
const contexts: BrowserContext[] = []
/** Every URL the app's pages asked for. */
const requests: string[] = []

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: PW })
  browser = await launchBrowser()
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
})

async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext()
  contexts.push(context)
  context.on('request', (r) => void requests.push(r.url()))
  return context
}
/** A tab; the test brings the one it uses to the front, as a person switching tabs does (Chromium draws no frames
 * for a tab behind, so Playwright's wait for a still element before a click took up to 2 s there). */
async function newPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  return page
}

const check = async (page: Page, name: string) => expect(await checkPage(page, name)).toBeLessThanOrEqual(390)
const linksOf = (name: string) =>
  (
    app.db
      .query('SELECT count(*) AS n FROM links l JOIN accounts a ON a.id = l.account_id WHERE a.name = ?')
      .get(name) as { n: number }
  ).n

describe('a session that ended in another tab', () => {
  test('a form sent in the other tab: the sign-in page says why, and signing in comes back to the form with what was typed', async () => {
    const context = await newContext()
    const one = await newPage(context)
    const two = await newPage(context)
    await one.bringToFront()
    await signInBrowser(one, app.url, 'alice', PW)
    await two.bringToFront()
    await two.goto(`${app.url}/dashboard/keys`)
    expect(two.url()).toBe(`${app.url}/dashboard/keys`) // the same browser: signed in there too

    // Tab one: a link typed in the form, with a password.
    await one.bringToFront()
    await one.fill('#url', 'https://example.com/typed/in/tab/one')
    await one.click('details.more summary')
    await one.fill('#alias', 'tab-one')
    await one.selectOption('#mode', 'preview')
    await one.fill('#password', 'link password')
    // Tab two: sign out.
    await two.bringToFront()
    await Promise.all([two.waitForURL(`${app.url}/login`), two.getByRole('button', { name: 'Sign out' }).click()])

    // Tab one sends its form: not sent, the sign-in page says the session ended.
    await one.bringToFront()
    await Promise.all([one.waitForURL(/\/login\?/), one.getByRole('button', { name: 'Shorten' }).click()])
    expect(one.url()).toBe(`${app.url}/login?next=%2Fdashboard&reason=session_ended`)
    expect(await one.locator('.notice.warn').textContent()).toBe(SESSION_ENDED)
    expect(await one.locator('.notice.warn').getAttribute('role')).toBe('status')
    expect(linksOf('alice')).toBe(0)
    await check(one, 'session-ended-signin')

    await one.fill('#name', 'alice')
    await one.fill('#password', PW)
    await Promise.all([one.waitForURL(`${app.url}/dashboard`), one.click('button[type=submit]')])
    expect(await one.locator('.notice.warn').textContent()).toBe(
      'Your session had ended, so the form was not sent. What you typed is back in it: check it and send it again. Passwords are never kept: type yours again.',
    )
    expect(await one.inputValue('#url')).toBe('https://example.com/typed/in/tab/one')
    expect(await one.inputValue('#alias')).toBe('tab-one')
    expect(await one.inputValue('#mode')).toBe('preview')
    expect(await one.inputValue('#password')).toBe('')
    expect(await one.locator('details.more').getAttribute('open')).toBe('')
    expect(linksOf('alice')).toBe(0)
    expect((await context.cookies()).map((c) => c.name)).not.toContain('lb_draft')
    await check(one, 'session-ended-back')

    // Reload: shown once. Back: the sign-in page sends a signed-in browser on, nothing is sent again.
    await one.reload()
    expect(await one.locator('.notice.warn').count()).toBe(0)
    expect(await one.inputValue('#url')).toBe('')
    await one.goBack()
    await one.waitForLoadState()
    expect(new URL(one.url()).pathname).toBe('/dashboard')
    expect(await one.locator('.notice.warn').count()).toBe(0)
    expect(linksOf('alice')).toBe(0)
  })

  test('a link followed in the other tab: the sign-in page says the session ended and comes back to that page', async () => {
    const context = await newContext()
    const one = await newPage(context)
    const two = await newPage(context)
    await one.bringToFront()
    await signInBrowser(one, app.url, 'alice', PW)
    await two.bringToFront()
    await two.goto(`${app.url}/dashboard`)
    await Promise.all([two.waitForURL(`${app.url}/login`), two.getByRole('button', { name: 'Sign out' }).click()])
    await one.bringToFront()
    await Promise.all([one.waitForURL(/\/login\?/), one.getByRole('link', { name: 'Webhooks' }).click()])
    expect(one.url()).toBe(`${app.url}/login?next=%2Fdashboard%2Fwebhooks&reason=session_ended`)
    expect(await one.locator('.notice.warn').textContent()).toBe(SESSION_ENDED)
    await one.fill('#name', 'alice')
    await one.fill('#password', PW)
    await Promise.all([one.waitForURL(`${app.url}/dashboard/webhooks`), one.click('button[type=submit]')])
    expect(await one.locator('h1').textContent()).toBe('Webhooks')
    expect(await one.locator('.notice').count()).toBe(0)
  })
})

test('no request left the origin', () => {
  expect(requests.length).toBeGreaterThan(10)
  expect(
    requests.filter((u) => !u.startsWith(`${app.url}/`) && !u.startsWith('data:') && !u.startsWith('about:')),
  ).toEqual([])
})
