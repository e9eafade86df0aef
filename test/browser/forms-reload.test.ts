// Issue 20, item 2, in real Chromium: every form is answered with a redirect (post → 303 → get). After
// making an API key, a webhook endpoint, a link on the home page (JavaScript off) or in the dashboard, a
// reload sends nothing again — no POST, no second row — and the secret shown once is not shown on the
// reload, which says it was; back and forward change nothing either. A refused form leaves the address bar
// on a GET page, and its reload sends nothing. Rows are counted in the database and through the service
// (what `linkbox key list` prints).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, startFixture, type Fixture, type RunningApp } from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

const PW = 'correct horse battery'
let browser: Browser
let app: RunningApp
let receiver: Fixture
let aliceKey = ''
const contexts: BrowserContext[] = []

beforeAll(async () => {
  receiver = startFixture(() => new Response('ok'))
  app = startApp()
  aliceKey = (await app.accounts.createAccount({ name: 'alice', password: PW })).key.key
  browser = await launchBrowser()
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
  receiver?.stop()
})

interface Tab {
  page: Page
  /** Every POST the page sent since the last clear, as "POST <path>". */
  posts: string[]
}

async function tab(opts: { javaScriptEnabled?: boolean } = {}): Promise<Tab> {
  const context = await browser.newContext({ userAgent: CHROME_UA, javaScriptEnabled: opts.javaScriptEnabled ?? true })
  contexts.push(context)
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const posts: string[] = []
  page.on('request', (r) => {
    if (r.method() !== 'GET') posts.push(`${r.method()} ${new URL(r.url()).pathname}`)
  })
  return { page, posts }
}

const click = (page: Page, selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)])
const count = (sql: string, ...args: (string | number)[]) => (app.db.query(sql).get(...args) as { n: number }).n
const keysOfAlice = async () => (await app.accounts.listKeys({ account: 'alice' })).length

/**
 * Reloads. Returns a check for after the rows are counted (so that a reload that sent the form again
 * fails on the second row first): it must have been a GET of the same address that sent nothing.
 */
async function reload(t: Tab): Promise<() => void> {
  const before = t.page.url()
  t.posts.length = 0
  const res = await t.page.reload()
  const method = res!.request().method()
  const after = t.page.url()
  const posts = [...t.posts]
  return () => {
    expect(posts).toEqual([])
    expect(method).toBe('GET')
    expect(after).toBe(before)
  }
}

describe('reload after a form', () => {
  test('an API key: the reload shows no key and makes none (one row, as `key list` shows); back and forward neither', async () => {
    const t = await tab()
    await signInBrowser(t.page, app.url, 'alice', PW)
    await t.page.goto(`${app.url}/dashboard/keys`)
    const before = await keysOfAlice()
    await t.page.fill('#label', 'made once')
    t.posts.length = 0
    await click(t.page, 'button:has-text("Create key")')
    expect(t.posts).toEqual(['POST /dashboard/keys'])
    const key = await t.page.inputValue('#new-key')
    expect(key).toMatch(/^lbk_[A-Za-z0-9]{40}$/)
    expect(await keysOfAlice()).toBe(before + 1)
    const url = new URL(t.page.url())

    const reloaded = await reload(t)
    expect(await keysOfAlice()).toBe(before + 1)
    reloaded()
    expect(url.pathname).toBe('/dashboard/keys')
    expect(url.searchParams.get('created')).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(await t.page.locator('#new-key').count()).toBe(0)
    expect(await t.page.content()).not.toContain(key)
    expect(await t.page.textContent('.notice')).toContain('Your new key was shown once, and is not shown again')
    expect(await checkPage(t.page, 'dash-key-shown-once')).toBeLessThanOrEqual(390)

    // Back: the form's page, fetched again; forward: the shown-once page. Nothing is sent, nothing is made.
    t.posts.length = 0
    await t.page.goBack()
    expect(t.page.url()).toBe(`${app.url}/dashboard/keys`)
    await t.page.goForward()
    expect(new URL(t.page.url()).searchParams.get('created')).toBe(url.searchParams.get('created'))
    expect(await t.page.content()).not.toContain(key)
    expect(t.posts).toEqual([])
    expect(await keysOfAlice()).toBe(before + 1)
    expect((await app.accounts.listKeys({ account: 'alice' })).filter((k) => k.label === 'made once')).toHaveLength(1)

    // The one key made works.
    expect((await fetch(`${app.url}/api/qr.json?data=x`, { headers: { 'x-api-key': key } })).status).toBe(200)
  })

  test('a webhook endpoint: the reload shows no secret and adds no endpoint; a new event is delivered once', async () => {
    const t = await tab()
    await signInBrowser(t.page, app.url, 'alice', PW)
    await t.page.goto(`${app.url}/dashboard/webhooks`)
    await t.page.fill('#wh-url', `${receiver.url}/hook`)
    await click(t.page, 'button:has-text("Add endpoint")')
    const secret = await t.page.inputValue('#wh-secret')
    expect(secret).toMatch(/^whsec_/)
    expect(count('SELECT count(*) AS n FROM webhook_endpoints')).toBe(1)
    const url = new URL(t.page.url())

    const reloaded = await reload(t)
    expect(count('SELECT count(*) AS n FROM webhook_endpoints')).toBe(1)
    reloaded()
    expect(url.pathname).toMatch(/^\/dashboard\/webhooks\/\d+$/)
    expect(await t.page.locator('#wh-secret').count()).toBe(0)
    expect(await t.page.content()).not.toContain(secret)
    expect(await t.page.textContent('.notice')).toContain('signing secret was shown once')
    t.posts.length = 0
    await t.page.goBack()
    await t.page.goForward()
    expect(t.posts).toEqual([])
    expect(count('SELECT count(*) AS n FROM webhook_endpoints')).toBe(1)

    // One endpoint: one delivery of the next event.
    const made = await fetch(`${app.url}/api/getLink.json`, {
      method: 'POST',
      headers: { 'x-api-key': aliceKey },
      body: new URLSearchParams({ url: 'https://example.com/once' }),
    })
    expect(made.status).toBe(200)
    expect(
      count(
        "SELECT count(*) AS n FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.type = 'link.created'",
      ),
    ).toBe(1)
  })

  test('the home form without JavaScript: the result once, then a reload makes no second link', async () => {
    const t = await tab({ javaScriptEnabled: false })
    const links = () => count('SELECT count(*) AS n FROM links')
    const before = links()
    await t.page.goto(`${app.url}/`)
    await t.page.fill('#url', 'https://example.com/from-the-home-page')
    t.posts.length = 0
    await click(t.page, '#shorten-submit')
    expect(t.posts).toEqual(['POST /'])
    const short = await t.page.inputValue('#short')
    expect(links()).toBe(before + 1)
    const url = new URL(t.page.url())

    const reloaded = await reload(t)
    expect(links()).toBe(before + 1)
    reloaded()
    expect(url.searchParams.get('made')).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(await t.page.locator('#short').count()).toBe(0)
    expect(await t.page.textContent('.notice')).toContain('Your short link was shown here once')
    // The same page in a tab with JavaScript (axe runs as a script): no serious violation, both themes.
    const js = await tab()
    await js.page.goto(t.page.url())
    expect(await js.page.textContent('.notice')).toContain('Your short link was shown here once')
    expect(await checkPage(js.page, 'home-result-shown-once')).toBeLessThanOrEqual(390)
    t.posts.length = 0
    await t.page.goBack()
    expect(t.page.url()).toBe(`${app.url}/`)
    await t.page.goForward()
    expect(t.posts).toEqual([])
    expect(links()).toBe(before + 1)
    expect(
      app.db.query('SELECT long_url FROM links WHERE code = ?').get(short.slice(short.lastIndexOf('/') + 1)),
    ).toEqual({
      long_url: 'https://example.com/from-the-home-page',
    })
  })

  test('a refused form (dashboard, home, sign-in) leaves the address bar on a GET page; its reload sends nothing', async () => {
    const t = await tab({ javaScriptEnabled: false })
    const links = () => count('SELECT count(*) AS n FROM links')
    const before = links()

    // The home form: the error at its field, what was typed kept.
    await t.page.goto(`${app.url}/`)
    await t.page.fill('#url', 'ftp://files.example/x')
    await click(t.page, '#shorten-submit')
    expect(await t.page.textContent('#url-error')).toBe(
      'The URL must be an absolute URL with the scheme http or https.',
    )
    expect(await t.page.inputValue('#url')).toBe('ftp://files.example/x')
    const homeUrl = new URL(t.page.url())
    ;(await reload(t))()
    expect(homeUrl.searchParams.get('form')).toMatch(/^[A-Za-z0-9_-]{22}$/)

    // Signing in with a wrong password: a reload does not send the password again.
    await t.page.goto(`${app.url}/login`)
    await t.page.fill('#name', 'alice')
    await t.page.fill('#password', 'wrong password')
    await click(t.page, 'button[type=submit]')
    expect(new URL(t.page.url()).pathname).toBe('/login')
    expect(await t.page.textContent('#auth-error')).toBe('That account name and password do not match.')
    expect(await t.page.inputValue('#name')).toBe('alice')
    ;(await reload(t))()

    // The dashboard's link form, with an alias that is taken.
    await signInBrowser(t.page, app.url, 'alice', PW)
    await app.links.create({ url: 'https://example.com/taken', alias: 'taken-alias' }, null)
    await t.page.goto(`${app.url}/dashboard`)
    await t.page.fill('#url', 'https://example.com/second')
    await t.page.click('details.more summary')
    await t.page.fill('#alias', 'taken-alias')
    await click(t.page, 'button:has-text("Shorten")')
    const url = new URL(t.page.url())
    expect(await t.page.textContent('#alias-error')).toBe('The alias "taken-alias" is already in use.')
    expect(await t.page.inputValue('#url')).toBe('https://example.com/second')
    ;(await reload(t))()
    expect(links()).toBe(before + 1) // the taken alias only
    expect(url.pathname).toBe('/dashboard')
    expect(url.searchParams.get('form')).toMatch(/^[A-Za-z0-9_-]{22}$/)
  })
})
