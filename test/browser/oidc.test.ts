// "Sign in with <provider>" in real Chromium (issue 25): the button, the provider's own sign-in and consent
// pages (a real oidc-provider in this process, test/support/oidc-provider.ts), the dashboard as a new
// account; admin from the groups claim at each sign-in; the same account at the next sign-in; a replayed
// callback and a cancelled sign-in landing on the sign-in page with a sentence; sign-out, and the provider's
// sign-out offered after it. axe-core and screenshots of the sign-in page with the button.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp } from '../support/browser'
import { startWithProvider, type TestProvider } from '../support/oidc-provider'

let browser: Browser
let provider: TestProvider
let app: RunningApp
let appUrl: string
const contexts: BrowserContext[] = []
/** Callback URLs the provider sent browsers back to, in order. */
const callbacks: string[] = []
/** Requests to other hosts than the two of the test (the pages must make none). */
const foreign: string[] = []

beforeAll(async () => {
  ;({ provider, app, appUrl } = await startWithProvider())
  browser = await launchBrowser()
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
  await provider?.stop()
})

/** A new browser (its own cookies: a person who has not signed in anywhere yet). */
async function newPage(): Promise<Page> {
  const context = await browser.newContext()
  contexts.push(context)
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  page.on('request', (r) => {
    if (r.url().startsWith(`${appUrl}/login/oidc/callback`)) callbacks.push(r.url())
    if (!r.url().startsWith('http://127.0.0.1:') && !r.url().startsWith('data:')) foreign.push(r.url())
  })
  return page
}

const accountRows = () =>
  app.db.query('SELECT name, admin FROM accounts ORDER BY id').all() as { name: string; admin: number }[]
const sessionCookie = async (page: Page) =>
  (await page.context().cookies(appUrl)).find((c) => c.name === 'lb_session') ?? null

/**
 * From linkbox's sign-in page through the provider: its sign-in page (when it does not know this browser
 * yet) and its consent page (when not given before); ends when the browser is back on linkbox.
 */
async function signInWithProvider(page: Page, user: string) {
  await page.goto(`${appUrl}/login`)
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
  await page.waitForURL((u) => u.href.startsWith(provider.issuer) || u.href.startsWith(`${appUrl}/dashboard`))
  for (let step = 0; step < 3 && page.url().startsWith(provider.issuer); step++) {
    const before = page.url()
    const heading = await page.locator('h1').textContent()
    if (heading === 'Test provider: sign in') {
      await page.getByLabel('User name').fill(user)
      await page.getByRole('button', { name: 'Sign in' }).click()
    } else if (heading === 'Test provider: allow access') {
      expect(await page.locator('main p').first().textContent()).toContain('openid profile email groups')
      await page.getByRole('button', { name: 'Continue' }).click()
    } else throw new Error(`unexpected provider page: ${heading}`)
    await page.waitForURL((u) => u.href !== before)
  }
  await page.waitForURL((u) => u.href.startsWith(appUrl))
}

describe('signing in with the provider', () => {
  test('the sign-in page with the button: axe in both themes and at 390 px; screenshots', async () => {
    const page = await newPage()
    await page.goto(`${appUrl}/login`)
    const button = page.getByRole('link', { name: 'Sign in with Test IdP' })
    expect(await button.isVisible()).toBe(true)
    expect(await page.getByLabel('Password').isVisible()).toBe(true)
    expect(await checkPage(page, 'oidc-sign-in')).toBeLessThanOrEqual(390)
    // The button is as wide as the password form's and reachable first from the keyboard after the header.
    const [b, submit] = [await button.boundingBox(), await page.locator('.auth-submit').boundingBox()]
    expect(Math.abs(b!.width - submit!.width)).toBeLessThan(2)
  })

  test('alice: the button, the provider’s sign-in and consent pages, the dashboard as a new account with the admin section; reload keeps her there', async () => {
    const page = await newPage()
    await signInWithProvider(page, 'alice')
    expect(new URL(page.url()).pathname).toBe('/dashboard')
    expect(await page.locator('.dash-user').textContent()).toContain('Signed in as alice (admin)')
    expect(await page.getByRole('link', { name: 'Admin' }).isVisible()).toBe(true)
    expect(await page.locator('.notice.ok').textContent()).toContain('Welcome, alice.')
    expect(accountRows()).toEqual([{ name: 'alice', admin: 1 }])
    const cookie = (await sessionCookie(page))!
    expect({ httpOnly: cookie.httpOnly, sameSite: cookie.sameSite, path: cookie.path }).toEqual({
      httpOnly: true,
      sameSite: 'Lax',
      path: '/',
    })
    await page.reload()
    expect(await page.locator('.dash-user').textContent()).toContain('Signed in as alice (admin)')
    expect(await page.locator('.notice.ok').count()).toBe(0) // the welcome was said once
    await page.getByRole('link', { name: 'Admin' }).click()
    await page.waitForURL(`${appUrl}/dashboard/admin`)
    expect(await page.locator('h1').first().textContent()).toContain('Admin')
  })

  test('bob, in no admin group, does not see the admin section', async () => {
    const page = await newPage()
    await signInWithProvider(page, 'bob')
    expect(await page.locator('.dash-user').textContent()).toContain('Signed in as bob')
    expect(await page.locator('.dash-user').textContent()).not.toContain('(admin)')
    expect(await page.getByRole('link', { name: 'Admin' }).count()).toBe(0)
    const res = await page.goto(`${appUrl}/dashboard/admin`)
    expect(res!.status()).toBe(403)
    expect(accountRows()).toEqual([
      { name: 'alice', admin: 1 },
      { name: 'bob', admin: 0 },
    ])
  })

  test('a second sign-in of alice finds the same account (no alice-2); out of the admin group at the provider, her next sign-in has no admin section', async () => {
    const again = await newPage()
    await signInWithProvider(again, 'alice')
    expect(await again.locator('.dash-user').textContent()).toContain('Signed in as alice (admin)')
    expect(accountRows().map((r) => r.name)).toEqual(['alice', 'bob'])

    provider.users.get('sub-alice-7f3a')!.groups = ['staff']
    const later = await newPage()
    await signInWithProvider(later, 'alice')
    expect(await later.locator('.dash-user').textContent()).toContain('Signed in as alice')
    expect(await later.locator('.dash-user').textContent()).not.toContain('(admin)')
    expect(await later.getByRole('link', { name: 'Admin' }).count()).toBe(0)
    expect(accountRows()).toEqual([
      { name: 'alice', admin: 0 },
      { name: 'bob', admin: 0 },
    ])
    provider.users.get('sub-alice-7f3a')!.groups = ['linkbox-admins']
  })

  test('the callback URL of a finished sign-in, opened again (here or in another browser), lands on the sign-in page with a sentence and no session', async () => {
    const used = callbacks.at(-1)!
    expect(used).toContain('code=')
    const page = await newPage()
    await page.goto(used)
    expect(new URL(page.url()).pathname).toBe('/login')
    expect(await page.getByRole('alert').textContent()).toBe(
      'That sign-in was used already or has expired. Start again with “Sign in with Test IdP”.',
    )
    expect(await sessionCookie(page)).toBeNull()
    const tampered = new URL(used)
    tampered.searchParams.set('state', 'made-up-state-0123456789abcdefghijklmnop')
    await page.goto(tampered.href)
    expect(await page.getByRole('alert').textContent()).toContain('That sign-in was used already or has expired.')
    expect(await sessionCookie(page)).toBeNull()
    expect(await page.content()).not.toMatch(/Error:|at .*\.ts:\d+/)
  })

  test('cancelled at the provider (error=access_denied): the sign-in page says so; reload does not repeat it; axe and screenshots', async () => {
    const page = await newPage()
    await page.goto(`${appUrl}/login`)
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
    await page.waitForURL((u) => u.href.includes('/interaction/'))
    await page.getByRole('link', { name: 'Cancel' }).click()
    await page.waitForURL(`${appUrl}/login`)
    expect(await page.getByRole('alert').textContent()).toBe(
      'Signing in with Test IdP was cancelled or not allowed. Start again with “Sign in with Test IdP”.',
    )
    expect(await sessionCookie(page)).toBeNull()
    await checkPage(page, 'oidc-sign-in-refused')
    await page.reload()
    expect(await page.getByRole('alert').count()).toBe(0)
  })

  test('sign-out ends the session (the old cookie opens nothing) and offers the provider’s sign-out, which comes back to linkbox', async () => {
    const page = await newPage()
    await signInWithProvider(page, 'bob')
    const old = (await sessionCookie(page))!.value
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(`${appUrl}/login?signed_out=provider`)
    expect(await page.locator('.notice.ok').textContent()).toBe('You are signed out.')
    expect(await sessionCookie(page)).toBeNull()
    const res = await fetch(`${appUrl}/dashboard`, { headers: { cookie: `lb_session=${old}` }, redirect: 'manual' })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toStartWith('/login?')
    await checkPage(page, 'oidc-signed-out')
    await page.getByRole('link', { name: 'Also sign out of Test IdP' }).click()
    await page.waitForURL((u) => u.href.startsWith(`${provider.issuer}/session/end`))
    await page.getByRole('button', { name: 'Yes, sign me out' }).click()
    await page.waitForURL(`${appUrl}/`)
    // Signed out there too: the next sign-in asks for the name again.
    await page.goto(`${appUrl}/login`)
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
    await page.waitForURL((u) => u.href.includes('/interaction/'))
    expect(await page.locator('h1').textContent()).toBe('Test provider: sign in')
  })

  test('the pages asked nothing of another host', () => {
    expect(foreign).toEqual([])
  })
})

describe('oidc.only = true', () => {
  test('the sign-in page has the button and no password form: axe in both themes and at 390 px; screenshots', async () => {
    const only = startApp({
      oidc: {
        issuer: provider.issuer,
        client_id: provider.clientId,
        client_secret: provider.clientSecret,
        only: true,
        name: 'Test IdP',
      },
    })
    try {
      const page = await newPage()
      await page.goto(`${only.url}/login`)
      expect(await page.getByRole('link', { name: 'Sign in with Test IdP' }).isVisible()).toBe(true)
      expect(await page.locator('input[type=password]').count()).toBe(0)
      expect(await page.locator('form[action="/login"]').count()).toBe(0)
      expect(await checkPage(page, 'oidc-sign-in-only')).toBeLessThanOrEqual(390)
    } finally {
      await only.stop()
    }
  })
})
