// Signing in and the CSRF defences in real Chromium: the sign-in form (a wrong password, then the right one,
// then signing out), a dashboard form sent without its token, a page of another origin that posts to the
// dashboard by itself, and the limit on sign-in attempts. Each "refused" is checked where it matters: the
// database rows are as they were. axe-core on the sign-in page in both themes; screenshots of it.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import {
  checkPage,
  launchBrowser,
  screenshots,
  seriousViolations,
  startApp,
  startFixture,
  type Fixture,
  type RunningApp,
} from '../support/browser'
import { signInBrowser } from '../support/dashboard'

const PW = 'correct horse battery'
let browser: Browser
let app: RunningApp
let now = Date.now()
const fixtures: Fixture[] = []
const contexts: BrowserContext[] = []
/** Every URL the app's pages asked for (fixture pages are the test's own other origin, not counted). */
const requests: string[] = []

beforeAll(async () => {
  app = startApp({}, { clock: () => now })
  await app.accounts.createAccount({ name: 'root', password: PW, admin: true })
  await app.accounts.createAccount({ name: 'alice', password: PW })
  await app.accounts.createAccount({ name: 'bob', password: PW })
  browser = await launchBrowser()
})
// Each test starts in a new minute: the sign-in limits (per client, per client and name) count per minute.
beforeEach(() => {
  now += 61_000
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
  for (const f of fixtures) f.stop()
})

async function newPage(): Promise<Page> {
  const context = await browser.newContext()
  contexts.push(context)
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  page.on('request', (r) => {
    if (
      !fixtures.some((f) =>
        [f.url, f.url.replace('127.0.0.1', 'localhost')].some((origin) => r.url().startsWith(`${origin}/`)),
      )
    )
      requests.push(r.url())
  })
  return page
}

const sessionsOf = (name: string) =>
  (
    app.db
      .query('SELECT count(*) AS n FROM web_sessions s JOIN accounts a ON a.id = s.account_id WHERE a.name = ?')
      .get(name) as { n: number }
  ).n
const disabled = (name: string) =>
  (app.db.query('SELECT disabled FROM accounts WHERE name = ?').get(name) as { disabled: number | null }).disabled
const accountCount = () => (app.db.query('SELECT count(*) AS n FROM accounts').get() as { n: number }).n
const REFUSED = 'This form has expired or was sent from another site.'

describe('signing in and out', () => {
  test('the sign-in page: no serious axe violation in the light or the dark theme', async () => {
    const page = await newPage()
    const res = await page.goto(`${app.url}/login`)
    expect(res!.status()).toBe(200)
    expect(await page.locator('h1').textContent()).toBe('Sign in to linkbox')
    expect(await seriousViolations(page)).toEqual([])
    await page.emulateMedia({ colorScheme: 'dark' })
    expect(await seriousViolations(page)).toEqual([])
    await page.emulateMedia({ colorScheme: 'light' })
    const widths = await screenshots(page, 'signin')
    expect(widths[390]).toBeLessThanOrEqual(390)
  })

  test('a wrong password: the message tied to the fields, the name kept; the right one: the dashboard; then sign out', async () => {
    const page = await newPage()
    await page.goto(`${app.url}/dashboard/keys`)
    expect(page.url()).toBe(`${app.url}/login?next=%2Fdashboard%2Fkeys`)
    await page.fill('#name', 'alice')
    await page.fill('#password', 'not the password')
    const [wrong] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${app.url}/login` && r.request().method() === 'POST'),
      page.waitForURL(/\/login\?next=%2Fdashboard%2Fkeys&form=[A-Za-z0-9_-]{22}$/),
      page.click('button[type=submit]'),
    ])
    // Refused with a redirect back to the form (a reload does not send the password again).
    expect(wrong.status()).toBe(303)
    expect(await page.locator('#auth-error').textContent()).toBe('That account name and password do not match.')
    expect(await page.getAttribute('#auth-error', 'role')).toBe('alert')
    for (const field of ['#name', '#password']) {
      expect(await page.getAttribute(field, 'aria-describedby')).toBe('auth-error')
      expect(await page.getAttribute(field, 'aria-invalid')).toBe('true')
    }
    expect(await page.inputValue('#name')).toBe('alice')
    expect(await page.inputValue('#password')).toBe('')
    expect(sessionsOf('alice')).toBe(0)
    expect(await seriousViolations(page)).toEqual([])
    await page.emulateMedia({ colorScheme: 'dark' })
    expect(await seriousViolations(page)).toEqual([])
    await page.emulateMedia({ colorScheme: 'light' })
    expect((await screenshots(page, 'signin-error'))[390]).toBeLessThanOrEqual(390)
    await page.setViewportSize({ width: 1280, height: 800 })

    await page.fill('#password', PW)
    await Promise.all([page.waitForURL(`${app.url}/dashboard/keys`), page.click('button[type=submit]')])
    expect(await page.locator('.dash-user').textContent()).toContain('Signed in as alice')
    expect(sessionsOf('alice')).toBe(1)
    const cookie = (await page.context().cookies()).find((c) => c.name === 'lb_session')!
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' })
    expect(await page.evaluate(() => document.cookie)).not.toContain('lb_session')

    await Promise.all([page.waitForURL(`${app.url}/login`), page.getByRole('button', { name: 'Sign out' }).click()])
    expect(await page.locator('.notice.ok').textContent()).toBe('You are signed out.')
    expect(sessionsOf('alice')).toBe(0)
    await page.goto(`${app.url}/dashboard`)
    expect(page.url()).toBe(`${app.url}/login?next=%2Fdashboard`)
  })
})

describe('open sign-up ([web] signup = true)', () => {
  test('the form (axe in both themes and on a phone), a mistake at its fields, then an account signed in at once', async () => {
    const open = startApp({ web: { signup: true } })
    const context = await browser.newContext()
    contexts.push(context)
    const page = await context.newPage()
    page.setDefaultTimeout(10_000)
    const asked: string[] = []
    page.on('request', (r) => void asked.push(r.url()))
    try {
      await page.goto(`${open.url}/login`)
      await Promise.all([page.waitForURL(`${open.url}/signup`), page.getByRole('link', { name: 'Create one' }).click()])
      expect(await page.locator('h1').textContent()).toBe('Create an account')
      expect(await checkPage(page, 'signup')).toBeLessThanOrEqual(390)
      await page.fill('#name', 'newcomer')
      await page.fill('#password', 'short')
      await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
      expect(await page.locator('#auth-error').textContent()).toContain('8 to 128 characters')
      expect(await page.getAttribute('#password', 'aria-invalid')).toBe('true')
      expect(await page.inputValue('#name')).toBe('newcomer')
      await page.fill('#password', 'long enough now')
      await Promise.all([page.waitForURL(`${open.url}/dashboard/keys`), page.click('button[type=submit]')])
      expect(await page.locator('.notice.ok').textContent()).toContain('Welcome, newcomer.')
      expect(open.db.query('SELECT admin, disabled FROM accounts WHERE name = ?').get('newcomer')).toEqual({
        admin: 0,
        disabled: null,
      })
      expect(asked.length).toBeGreaterThan(5)
      expect(
        asked.filter((u) => !u.startsWith(`${open.url}/`) && !u.startsWith('data:') && !u.startsWith('about:')),
      ).toEqual([])
    } finally {
      await open.stop()
    }
  })
})

describe('CSRF', () => {
  test('a dashboard form sent without its _csrf field: the 403 page, and nothing changed', async () => {
    const page = await newPage()
    await signInBrowser(page, app.url, 'root', PW)
    expect(sessionsOf('root')).toBe(1)

    // Sign out without the token: still signed in.
    await page.evaluate(() => document.querySelector('form[action="/logout"] input[name="_csrf"]')!.remove())
    const [out] = await Promise.all([
      page.waitForResponse(`${app.url}/logout`),
      page.getByRole('button', { name: 'Sign out' }).click(),
    ])
    expect(out.status()).toBe(403)
    await page.waitForLoadState()
    expect(await page.locator('body').textContent()).toContain(REFUSED)
    expect(sessionsOf('root')).toBe(1)

    // Disable an account without it: still enabled.
    await page.goto(`${app.url}/dashboard/admin`)
    const row = page.locator('table.accounts tbody tr', { hasText: 'alice' })
    await row.locator('input[name="_csrf"]').evaluate((input) => input.remove())
    const [dis] = await Promise.all([
      page.waitForResponse(`${app.url}/dashboard/admin/accounts/disable`),
      row.getByRole('button', { name: 'Disable alice' }).click(),
    ])
    expect(dis.status()).toBe(403)
    await page.waitForLoadState()
    expect(await page.locator('body').textContent()).toContain(REFUSED)
    expect(disabled('alice')).toBeNull()

    // Create one with a token of the wrong value: not created.
    await page.goto(`${app.url}/dashboard/admin`)
    await page.evaluate(
      () => ((document.querySelector('form.admin-create input[name="_csrf"]') as HTMLInputElement).value = 'guessed'),
    )
    await page.fill('#acc-name', 'mallory')
    const [create] = await Promise.all([
      page.waitForResponse(`${app.url}/dashboard/admin/accounts`),
      page.getByRole('button', { name: 'Create account' }).click(),
    ])
    expect(create.status()).toBe(403)
    expect(accountCount()).toBe(3)

    // The page as it is, with its token: it works (the refusals were the token's doing).
    await page.goto(`${app.url}/dashboard/admin`)
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/admin?page=1`),
      page
        .locator('table.accounts tbody tr', { hasText: 'alice' })
        .getByRole('button', { name: 'Disable alice' })
        .click(),
    ])
    expect(disabled('alice')).toBeNumber()
    await app.accounts.setDisabled('alice', false)
  })

  test('a page of another origin that posts to the dashboard by itself: refused, nothing changed', async () => {
    const page = await newPage()
    await signInBrowser(page, app.url, 'root', PW)
    const sessions = sessionsOf('root')
    // The attacker's page: a form to the dashboard and a script that sends it at once (its own page, its
    // own headers: the inline script is the attacker's, not ours). It cannot know the session's token.
    const target = (path: string, fields: Record<string, string>) =>
      `<!doctype html><html lang="en"><head><title>Win a prize</title></head><body><h1>Loading your prize…</h1>
<form method="post" action="${app.url}${path}">${Object.entries(fields)
        .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
        .join('')}</form>
<script>document.forms[0].submit()</script></body></html>`
    const evil = startFixture((_req, url) => {
      const pages: Record<string, string> = {
        '/disable': target('/dashboard/admin/accounts/disable', { account: 'alice', _csrf: 'unknown' }),
        '/create': target('/dashboard/admin/accounts', { name: 'mallory', password: 'mallory password', admin: '1' }),
        '/logout': target('/logout', {}),
      }
      const html = pages[url.pathname]
      return html
        ? new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } })
        : new Response('no', { status: 404 })
    })
    fixtures.push(evil)
    // 127.0.0.1 on another port: another origin, but the same site, so the SameSite=Lax cookie IS sent;
    // only the Origin check stops these.
    for (const path of ['/disable', '/create', '/logout']) {
      const [res] = await Promise.all([
        page.waitForResponse((r) => r.url().startsWith(app.url) && r.request().method() === 'POST'),
        page.goto(`${evil.url}${path}`),
      ])
      expect(res.request().headers().origin).toBe(evil.url)
      expect(res.status()).toBe(403)
      await page.waitForLoadState()
      expect(await page.locator('body').textContent()).toContain(REFUSED)
    }
    expect(disabled('alice')).toBeNull()
    expect(accountCount()).toBe(3)
    expect(sessionsOf('root')).toBe(sessions)
    // Still signed in.
    expect((await page.goto(`${app.url}/dashboard/admin`))!.status()).toBe(200)

    // The same attack from another site (localhost is not 127.0.0.1): the cookie is not even sent, so the
    // dashboard sees a visitor who is signed out.
    const crossSite = evil.url.replace('127.0.0.1', 'localhost')
    const [res] = await Promise.all([
      page.waitForResponse((r) => r.url().startsWith(app.url) && r.request().method() === 'POST'),
      page.goto(`${crossSite}/disable`),
    ])
    expect([303, 403]).toContain(res.status())
    expect(disabled('alice')).toBeNull()
  })
})

describe('sign-in attempts', () => {
  test('limited per client and name: the 11th in a minute is refused with Retry-After, even with the right password', async () => {
    const page = await newPage()
    await page.goto(`${app.url}/login`)
    const attempt = async (password: string) => {
      await page.fill('#name', 'bob')
      await page.fill('#password', password)
      const [res] = await Promise.all([
        page.waitForResponse((r) => r.url() === `${app.url}/login` && r.request().method() === 'POST'),
        page.waitForNavigation(),
        page.click('button[type=submit]'),
      ])
      return { status: res.status(), retryAfter: Number(res.headers()['retry-after'] ?? 0) }
    }
    for (let i = 0; i < 10; i++) expect(await attempt(`wrong ${i}`)).toEqual({ status: 303, retryAfter: 0 })
    const limited = await attempt(PW)
    expect(limited.status).toBe(303)
    expect(limited.retryAfter).toBeGreaterThan(0)
    expect(await page.locator('#auth-error').textContent()).toMatch(
      /^Too many sign-in attempts: wait \d+ s and try again\.$/,
    )
    expect(sessionsOf('bob')).toBe(0)
    expect(await seriousViolations(page)).toEqual([])
    // A minute later the right password works.
    now += 61_000
    await page.fill('#password', PW)
    await Promise.all([page.waitForURL(`${app.url}/dashboard`), page.click('button[type=submit]')])
    expect(sessionsOf('bob')).toBe(1)
  })
})

test("no request from the app's pages left its origin", () => {
  expect(requests.length).toBeGreaterThan(10)
  expect(
    requests.filter((u) => !u.startsWith(`${app.url}/`) && !u.startsWith('data:') && !u.startsWith('about:')),
  ).toEqual([])
})
