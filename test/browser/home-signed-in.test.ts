// Issue 20, item 6: the home page knows a signed-in person. In real Chromium, with a dashboard session the
// header says who is signed in (the dashboard and a sign-out button instead of "Sign in"), and a link
// shortened there — with JavaScript and without — is the account's: listed in the dashboard, where it can
// be changed and deleted. Over a real socket: the home form's CSRF token and same-site rule hold for a
// session, and the public API keeps its key semantics (a session cookie makes no anonymous call an account's).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp } from '../support/browser'
import { overSocket, signIn, signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

const PW = 'correct horse battery'
let browser: Browser
let app: RunningApp
let aliceId = 0
const contexts: BrowserContext[] = []

beforeAll(async () => {
  app = startApp()
  aliceId = (await app.accounts.createAccount({ name: 'alice', password: PW })).account.id
  browser = await launchBrowser()
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
})

async function signedInTab(opts: { javaScriptEnabled?: boolean } = {}): Promise<Page> {
  const context = await browser.newContext({ userAgent: CHROME_UA, javaScriptEnabled: opts.javaScriptEnabled ?? true })
  contexts.push(context)
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  await signInBrowser(page, app.url, 'alice', PW)
  return page
}

const click = (page: Page, selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)])
const ownerOf = (code: string) =>
  (app.db.query('SELECT account_id FROM links WHERE code = ?').get(code) as { account_id: number | null } | null)
    ?.account_id
const codeOf = (short: string) => short.slice(short.lastIndexOf('/') + 1)

describe('signed in, on the home page', () => {
  test('the header says who is signed in, with the dashboard and sign-out instead of "Sign in"', async () => {
    const page = await signedInTab()
    await page.goto(`${app.url}/`)
    expect(await page.locator('header.site').textContent()).toContain('Signed in as alice')
    expect(await page.locator('header.site').getByRole('link', { name: 'Sign in' }).count()).toBe(0)
    expect(await page.locator('header.site').getByRole('link', { name: 'Dashboard' }).getAttribute('href')).toBe(
      '/dashboard',
    )
    expect(await page.locator('header.site').getByRole('button', { name: 'Sign out' }).count()).toBe(1)
    expect(await page.getByRole('link', { name: 'Your links in the dashboard' }).getAttribute('href')).toBe(
      '/dashboard',
    )
    expect(await page.locator('.account-line').textContent()).toContain("alice's")
    expect(await checkPage(page, 'home-signed-in')).toBeLessThanOrEqual(390)

    // Signing out from there: the header offers "Sign in" again.
    await click(page, 'header.site button:has-text("Sign out")')
    await page.goto(`${app.url}/`)
    expect(await page.locator('header.site').getByRole('link', { name: 'Sign in' }).count()).toBe(1)
    expect(await page.locator('header.site').textContent()).not.toContain('Signed in as')
  })

  test('with JavaScript: the link is the account’s, listed in the dashboard, changed and deleted there', async () => {
    const page = await signedInTab()
    await page.goto(`${app.url}/`)
    await page.evaluate(() => ((window as any).sameDocument = true))
    await page.fill('#url', 'https://example.com/mine-with-script')
    await page.click('#shorten-submit')
    await page.locator('#short').waitFor()
    expect(await page.evaluate(() => (window as any).sameDocument)).toBe(true) // answered in place
    const code = codeOf(await page.inputValue('#short'))
    expect(ownerOf(code)).toBe(aliceId)
    expect(await page.locator('.result .owned').textContent()).toContain('It is in your dashboard')

    // A second one from the same page: a new one-time token came with the answer.
    await page.fill('#url', 'https://example.com/mine-again')
    await page.click('#shorten-submit')
    await page.waitForFunction(
      (first) => !(document.querySelector('#short') as HTMLInputElement).value.endsWith(`/${first}`),
      code,
    )
    const second = codeOf(await page.inputValue('#short'))
    expect(ownerOf(second)).toBe(aliceId)

    await click(page, '.result .owned a:has-text("your dashboard")')
    expect(await page.locator(`#short-${code}`).count()).toBe(1)
    expect(await page.locator(`#short-${second}`).count()).toBe(1)

    await page.goto(`${app.url}/dashboard/links/${code}`)
    await page.selectOption('#mode', 'preview')
    await click(page, 'button:has-text("Save changes")')
    expect((app.db.query('SELECT mode FROM links WHERE code = ?').get(code) as { mode: string }).mode).toBe('preview')
    await page.goto(`${app.url}/dashboard/links/${code}/delete`)
    await click(page, 'button.danger')
    expect(ownerOf(code)).toBeUndefined()
  })

  test('without JavaScript: the link is the account’s; the reload says where it is', async () => {
    const page = await signedInTab({ javaScriptEnabled: false })
    await page.goto(`${app.url}/`)
    await page.fill('#url', 'https://example.com/mine-without-script')
    await click(page, '#shorten-submit')
    const code = codeOf(await page.inputValue('#short'))
    expect(ownerOf(code)).toBe(aliceId)
    expect(await page.locator('.result .owned').textContent()).toContain('It is in your dashboard')
    await page.reload()
    expect(await page.locator('.notice').textContent()).toContain('your dashboard lists it')
    await page.goto(`${app.url}/dashboard`)
    expect(await page.locator(`#short-${code}`).count()).toBe(1)
    await page.goto(`${app.url}/dashboard/links/${code}`)
    expect(await page.locator('h1').textContent()).toBe(`Edit ${code}`)
  })
})

describe('the checks hold', () => {
  test('a wrong CSRF token: 403; no token with a session (a page from before signing in): back to the form; nothing made', async () => {
    const http = overSocket(app.url)
    const alice = await signIn(http, 'alice', PW)
    const links = () => (app.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n
    const before = links()
    const send = (body: string, headers: Record<string, string> = {}) =>
      http.request('/', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice.cookie, ...headers },
        body,
      })
    expect((await send(`_csrf=wrong&url=https%3A%2F%2Fexample.com%2Fx`)).status).toBe(403)
    expect(
      (await send(`_csrf=${alice.csrf}&url=https%3A%2F%2Fexample.com%2Fx`, { origin: 'http://evil.example' })).status,
    ).toBe(403)
    const stale = await send(`url=https%3A%2F%2Fexample.com%2Fx`)
    expect(stale.status).toBe(303)
    const page = await (
      await http.request(stale.headers.get('location')!, { headers: { cookie: alice.cookie } })
    ).text()
    expect(page).toContain('You are signed in as alice now: send the form again to make the link in your account.')
    expect(page).toContain(`name="_csrf" value="${alice.csrf}"`)
    expect(links()).toBe(before)

    // The JSON answer for app.js refuses a wrong token the same way.
    const json = await send(`_csrf=wrong&url=https%3A%2F%2Fexample.com%2Fx`, { accept: 'application/json' })
    expect(json.status).toBe(403)
    expect(((await json.json()) as { code: string }).code).toBe('csrf')
    expect(links()).toBe(before)

    // The public API is unchanged: without a key a link is anonymous, whatever cookie comes with it.
    const api = await http.request('/api/getLink.json', {
      method: 'POST',
      headers: { cookie: alice.cookie },
      body: new URLSearchParams({ url: 'https://example.com/api' }),
    })
    const code = ((await api.json()) as { return: { hex: string } }).return.hex
    expect(ownerOf(code)).toBeNull()

    // Signed out meanwhile: the form (with its token) is refused, nothing made, and shown again without it.
    await http.request('/logout', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice.cookie },
      body: `_csrf=${alice.csrf}`,
    })
    const out = await send(`_csrf=${alice.csrf}&url=https%3A%2F%2Fexample.com%2Fy`)
    expect(out.status).toBe(303)
    const outPage = await (
      await http.request(out.headers.get('location')!, {
        headers: {
          cookie: out.headers
            .getSetCookie()
            .map((c) => c.split(';')[0])
            .join('; '),
        },
      })
    ).text()
    expect(outPage).toContain('You are signed out, so the link was not made')
    expect(outPage).not.toContain('name="_csrf"')
    expect(links()).toBe(before + 1) // the API's only
  })
})
