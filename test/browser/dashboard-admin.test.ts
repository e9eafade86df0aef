// The Admin section in real Chromium, as an administrator uses it: the accounts list, creating an account
// (its key shown once, with a working copy button), a typing mistake, disabling one, and the health page;
// a non-admin meets a 403. Every page is checked with axe-core and screenshotted at 1280 and 390 px in
// both themes, and no request may leave the app's origin.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp, closeAll } from '../support/browser'
import { signInBrowser } from '../support/dashboard'

const PW = 'correct horse battery'
let browser: Browser
let context: BrowserContext
let page: Page
let app: RunningApp
const requests: string[] = []

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'root', password: PW, admin: true })
  const { key } = await app.accounts.createAccount({ name: 'alice', password: PW })
  await app.accounts.createAccount({ name: 'newsletter-bot' })
  await app.accounts.createAccount({ name: 'ops@example.org', password: PW, admin: true })
  await app.accounts.createAccount({ name: 'old-intern', password: PW })
  await app.accounts.setDisabled('old-intern', true)
  // Something to count and draw: links, visits of several outcomes, API answers of several classes.
  const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${app.url}${path}`, { method: 'POST', body: new URLSearchParams(fields), headers })
  const codes: string[] = []
  for (let i = 0; i < 4; i++)
    codes.push(
      (await (await post('/api/getLink.json', { url: `https://example.com/${i}` }, { 'x-api-key': key.key })).json())
        .return.hex,
    )
  for (let i = 0; i < 9; i++) await fetch(`${app.url}/${codes[i % 4]}`, { redirect: 'manual' })
  await fetch(`${app.url}/nosuch1`)
  await fetch(`${app.url}/${codes[0]}+`)
  await post('/api/links.json', {})
  await fetch(`${app.url}/api/mailbox.json`, { headers: { 'x-api-key': key.key } })
  await app.recorder.flush()

  browser = await launchBrowser()
  context = await browser.newContext()
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url })
  page = await context.newPage()
  page.setDefaultTimeout(10_000)
  page.on('request', (r) => void requests.push(r.url()))
})
afterAll(() => closeAll(browser, app))

/** axe (no serious/critical, light and dark) and the screenshots; returns the scroll width at 390 px. */
const check = (name: string) => checkPage(page, name)

const accountRow = (name: string) =>
  page.locator('table.accounts tbody tr', {
    has: page.locator('.acc-name', { hasText: new RegExp(`^${name.replace(/[.@]/g, '\\$&')}$`) }),
  })

describe('accounts', () => {
  test('the list: every account, with its role, status and counts', async () => {
    await signInBrowser(page, app.url, 'root', PW)
    await page.getByRole('link', { name: 'Admin' }).click()
    await page.waitForURL(`${app.url}/dashboard/admin`)
    expect(await page.locator('h1').textContent()).toBe('Admin')
    expect(await page.locator('.admin-tabs a[aria-current="page"]').textContent()).toBe('Accounts')
    expect(await page.locator('table.accounts tbody tr').count()).toBe(5)
    expect(await accountRow('alice').locator('td.n').allTextContents()).toEqual(['4', '1', '1'])
    expect(await accountRow('old-intern').locator('.badge.off').textContent()).toBe('Disabled')
    expect(await accountRow('root').textContent()).toContain('Cannot disable yourself')
    expect(await check('admin-accounts')).toBeLessThanOrEqual(390)
  })

  test('a mistake is shown at its field, with what was typed kept', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await page.fill('#acc-name', 'has space')
    await page.check('#acc-admin')
    // Refused with a redirect back to the form: the address bar is on a GET page.
    await Promise.all([
      page.waitForURL(/\/dashboard\/admin\?form=[A-Za-z0-9_-]{22}$/),
      page.click('button:has-text("Create account")'),
    ])
    expect(await page.getAttribute('#acc-name', 'aria-invalid')).toBe('true')
    expect(await page.getAttribute('#acc-name', 'aria-describedby')).toBe('acc-name-hint acc-name-error')
    expect(await page.locator('#acc-name-error').textContent()).toContain('Account names are 1-64 characters')
    expect(await page.inputValue('#acc-name')).toBe('has space')
    expect(await page.isChecked('#acc-admin')).toBe(true)
    expect(await check('admin-create-error')).toBeLessThanOrEqual(390)
  })

  test('create: the key is shown once, the copy button copies it, and the key works', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await page.fill('#acc-name', 'bob')
    await page.fill('#acc-password', 'bobs password')
    await Promise.all([
      page.waitForURL(/\/dashboard\/admin\?page=1&created=[A-Za-z0-9_-]{22}$/),
      page.click('button:has-text("Create account")'),
    ])
    expect(await page.locator('#created-h').textContent()).toBe('Account bob created')
    const key = await page.inputValue('#new-key')
    expect(key).toMatch(/^lbk_[A-Za-z0-9]{40}$/)
    const copy = page.locator('button.copy[data-copy="new-key"]')
    expect(await copy.isVisible()).toBe(true) // app.js shows it
    expect(await page.locator('.shown-once').textContent()).toContain('Shown once.')
    expect(await check('admin-account-created')).toBeLessThanOrEqual(390)
    await copy.click()
    await page.waitForFunction(() => document.querySelector('button.copy')?.textContent === 'Copied')
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key)
    expect((await fetch(`${app.url}/api/qr.json?data=x`, { headers: { 'x-api-key': key } })).status).toBe(200)
    // Reloading does not show it again (nor send the form again), and says it was shown once.
    await page.reload()
    expect(await page.content()).not.toContain(key)
    expect(await page.locator('.notice').textContent()).toContain('key was shown once')
    await page.goto(`${app.url}/dashboard/admin`)
    expect(await page.content()).not.toContain(key)
    expect(await accountRow('bob').count()).toBe(1)
  })

  test('disable and enable from the list', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/admin?page=1`),
      accountRow('alice').getByRole('button', { name: 'Disable alice' }).click(),
    ])
    expect(await page.locator('.notice.ok').textContent()).toContain('alice is disabled')
    expect(await accountRow('alice').locator('.badge.off').textContent()).toBe('Disabled')
    expect(
      (app.db.query('SELECT disabled FROM accounts WHERE name = ?').get('alice') as { disabled: number | null })
        .disabled,
    ).toBeNumber()
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/admin?page=1`),
      accountRow('alice').getByRole('button', { name: 'Enable alice' }).click(),
    ])
    expect(await accountRow('alice').locator('.badge.on').textContent()).toBe('Active')
    expect(
      (app.db.query('SELECT disabled FROM accounts WHERE name = ?').get('alice') as { disabled: number | null })
        .disabled,
    ).toBeNull()
  })
})

describe('health', () => {
  test('the numbers drawn: status, cards and bars', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/admin/health`),
      page.locator('.admin-tabs').getByRole('link', { name: 'Health' }).click(),
    ])
    expect(await page.locator('#status-h').textContent()).toBe('Working')
    expect(
      await page.locator('.big-numbers .stat', { hasText: 'Clicks written' }).locator('.stat-value').textContent(),
    ).toBe('9')
    const visits = page.locator('table.metric-bars', { has: page.locator('caption', { hasText: 'Visits by outcome' }) })
    expect(await visits.locator('tbody th').allTextContents()).toEqual(['Redirected', 'Not found', 'Statistics page'])
    expect(await visits.locator('td.n').allTextContents()).toEqual(['9', '1', '1'])
    // The bars are drawn (not just numbers): the widest fills its track.
    const box = await visits.locator('rect.fill').first().boundingBox()
    const track = await visits.locator('rect.track').first().boundingBox()
    expect(box!.width).toBeGreaterThan(0)
    expect(Math.round(box!.width)).toBe(Math.round(track!.width))
    expect(await check('admin-health')).toBeLessThanOrEqual(390)
  })
})

describe('who gets in', () => {
  test('a non-admin: no Admin link, and a 403 page at its address', async () => {
    const other = await browser.newContext()
    try {
      const p = await other.newPage()
      p.on('request', (r) => void requests.push(r.url()))
      await signInBrowser(p, app.url, 'alice', PW)
      expect(await p.locator('.dash-nav a', { hasText: 'Admin' }).count()).toBe(0)
      const res = await p.goto(`${app.url}/dashboard/admin`)
      expect(res!.status()).toBe(403)
      expect(await p.locator('body').textContent()).toContain('This page is for administrator accounts.')
    } finally {
      await other.close()
    }
  })
})

test('no request left the origin', () => {
  expect(requests.length).toBeGreaterThan(10)
  expect(
    requests.filter((u) => !u.startsWith(`${app.url}/`) && !u.startsWith('data:') && !u.startsWith('about:')),
  ).toEqual([])
})
