// Issue 25 in real Chromium: an administrator manages accounts (a new password, a refused short one, delete
// after the confirmation page, disable) and reads the audit log (filters in a GET form, pages); after every
// POST the page is reloaded and the browser goes back, and nothing is done twice; a non-admin meets the 403.
// Every page is checked with axe-core in both themes and at 390 px, and screenshotted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { CLI } from '../../src/audit'
import { checkPage, launchBrowser, startApp, type RunningApp, closeAll } from '../support/browser'
import { signInBrowser } from '../support/dashboard'

const PW = 'correct horse battery'
let browser: Browser
let page: Page
let app: RunningApp

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'root', password: PW, admin: true }, CLI)
  const { key } = await app.accounts.createAccount({ name: 'alice', password: PW }, CLI)
  await app.accounts.createAccount({ name: 'bob', password: PW }, CLI)
  await app.accounts.createAccount({ name: 'marketplace-bot' }, CLI)
  for (let i = 0; i < 55; i++)
    await app.accounts.createKey({ account: 'marketplace-bot', scopes: ['qr'], label: `batch ${i}` }, CLI)
  await fetch(`${app.url}/api/getLink.json`, {
    method: 'POST',
    headers: { 'x-api-key': key.key },
    body: new URLSearchParams({ url: 'https://example.com/a' }),
  })
  browser = await launchBrowser()
  page = await (await browser.newContext()).newPage()
  page.setDefaultTimeout(10_000)
  // A failed sign-in first, then the admin's own.
  await page.goto(`${app.url}/login`)
  await page.fill('#name', 'root')
  await page.fill('#password', 'not the password')
  await Promise.all([page.waitForURL(/\/login\?/), page.click('button[type=submit]')])
  await signInBrowser(page, app.url, 'root', PW)
})
afterAll(() => closeAll(browser, app))

const count = (action: string) =>
  (app.db.query('SELECT count(*) AS n FROM audit_log WHERE action = ?').get(action) as { n: number }).n
const row = (name: string) =>
  page.locator('table.accounts tbody tr', { has: page.locator('.acc-name', { hasText: new RegExp(`^${name}$`) }) })

describe('managing accounts', () => {
  test('the list, with the last sign-in and the links to a new password and to delete', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    expect(await page.locator('table.accounts thead th').allTextContents()).toContain('Last sign-in')
    // Signed in a moment ago: with the script the time reads relative, its exact instant in datetime (issue 38).
    const signIn = row('root').locator('td').nth(2).locator('time')
    expect(await signIn.textContent()).toMatch(/^(just now|\d+ minutes? ago)$/)
    expect(await signIn.getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(await row('alice').locator('td').nth(2).textContent()).toBe('never')
    expect(await row('root').locator('a', { hasText: 'Delete' }).count()).toBe(0)
    expect(await checkPage(page, 'audit-admin-accounts')).toBeLessThanOrEqual(390)
  })

  test('a new password: a short one is refused at its field; then set; reload and back do not set it again', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await Promise.all([
      page.waitForURL(/\/account\/\d+\/password$/),
      row('alice').getByRole('link', { name: 'Set password alice' }).click(),
    ])
    expect(await checkPage(page, 'audit-admin-password')).toBeLessThanOrEqual(390)
    await page.fill('#new-password', 'short')
    await Promise.all([
      page.waitForURL(/\/password\?form=[\w-]{22}$/),
      page.click('button:has-text("Set the password")'),
    ])
    expect(await page.getAttribute('#new-password', 'aria-invalid')).toBe('true')
    expect(await page.locator('#new-password-error').textContent()).toBe(
      'The dashboard password must be 8 to 128 characters.',
    )
    expect(await page.inputValue('#new-password')).toBe('')
    expect(await checkPage(page, 'audit-admin-password-error')).toBeLessThanOrEqual(390)
    await page.fill('#new-password', 'a brand new password')
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/admin`),
      page.click('button:has-text("Set the password")'),
    ])
    expect(await page.locator('.notice.ok').textContent()).toBe('alice has a new password; 0 sessions ended.')
    expect(count('account.password')).toBe(1)
    await page.reload()
    expect(page.url()).toBe(`${app.url}/dashboard/admin`)
    expect(await page.locator('.notice').count()).toBe(0)
    await page.goBack()
    expect(page.url()).toMatch(/\/password\?form=[\w-]{22}$/)
    await page.goForward()
    expect(count('account.password')).toBe(1)
  })

  test('delete: the confirmation page (no script needed), the links chosen to go; reload and back do not delete twice', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await Promise.all([
      page.waitForURL(/\/account\/\d+\/delete$/),
      row('bob').getByRole('link', { name: 'Delete bob' }).click(),
    ])
    const confirmUrl = page.url()
    expect(await page.locator('h2#delete-h').textContent()).toBe('Delete the account bob?')
    expect(await page.isChecked('#links-keep')).toBe(true)
    expect(await checkPage(page, 'audit-admin-delete')).toBeLessThanOrEqual(390)
    await page.check('#links-delete')
    await Promise.all([page.waitForURL(`${app.url}/dashboard/admin`), page.click('button:has-text("Delete bob")')])
    expect(await page.locator('.notice.ok').textContent()).toContain('bob is deleted')
    expect(await row('bob').count()).toBe(0)
    await page.reload()
    expect(await page.locator('.notice').count()).toBe(0)
    await page.goBack()
    expect(page.url()).toBe(confirmUrl)
    expect(await page.locator('main').textContent()).toContain('There is no such account')
    expect(count('account.delete')).toBe(1)
    expect(await checkPage(page, 'audit-admin-delete-gone')).toBeLessThanOrEqual(390)
  })

  test('disable: reload and back leave one row', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/admin?page=1`),
      row('alice').getByRole('button', { name: 'Disable alice' }).click(),
    ])
    expect(await page.locator('.notice.ok').textContent()).toContain('alice is disabled')
    await page.reload()
    await page.goBack()
    await page.goForward()
    expect(count('account.disable')).toBe(1)
  })
})

describe('the audit log', () => {
  test('rows newest first, filters in a GET form, an older page; reload and back', async () => {
    await page.goto(`${app.url}/dashboard/admin`)
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/admin/audit`),
      page.locator('.admin-tabs').getByRole('link', { name: 'Audit log' }).click(),
    ])
    const actions = await page.locator('table.audit tbody td code').allTextContents()
    expect(actions.slice(0, 4)).toEqual(['account.disable', 'account.delete', 'account.password', 'signin.ok'])
    expect(actions).toHaveLength(50)
    expect(await page.locator('table.audit tbody tr', { hasText: 'signin.failed' }).first().textContent()).toContain(
      'nobody (tried "root")',
    )
    expect(await checkPage(page, 'audit-log')).toBeLessThanOrEqual(390)

    await page.selectOption('#audit-action', 'account')
    await page.fill('#audit-actor', 'root')
    await Promise.all([
      page.waitForURL(/\/dashboard\/admin\/audit\?actor=root&action=account&from=&to=$/),
      page.click('button:has-text("Filter")'),
    ])
    expect(await page.locator('table.audit tbody td code').allTextContents()).toEqual([
      'account.disable',
      'account.delete',
      'account.password',
    ])
    expect(await page.inputValue('#audit-actor')).toBe('root')
    expect(await checkPage(page, 'audit-log-filtered')).toBeLessThanOrEqual(390)
    await page.reload()
    expect(await page.locator('table.audit tbody tr').count()).toBe(3)
    await page.goBack()
    expect(page.url()).toBe(`${app.url}/dashboard/admin/audit`)
    expect(await page.locator('table.audit tbody tr').count()).toBe(50)

    await Promise.all([page.waitForURL(/\?before=\d+$/), page.getByRole('link', { name: 'Older →' }).click()])
    expect(await page.locator('table.audit tbody tr').count()).toBeGreaterThan(5)
    expect(await page.locator('table.audit tbody td code').last().textContent()).toBe('account.create')
    expect(await checkPage(page, 'audit-log-older')).toBeLessThanOrEqual(390)
  })

  test('a non-admin gets the 403 of the admin pages', async () => {
    await app.accounts.setDisabled('alice', false, CLI)
    const other = await (await browser.newContext()).newPage()
    await signInBrowser(other, app.url, 'alice', 'a brand new password')
    const res = await other.goto(`${app.url}/dashboard/admin/audit`)
    expect(res!.status()).toBe(403)
    expect(await other.locator('main').textContent()).toContain('This page is for administrator accounts.')
    expect(await checkPage(other, 'audit-log-refused')).toBeLessThanOrEqual(390)
  })
})
