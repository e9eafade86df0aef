// Reports and bans in real Chromium (issue 26): a visitor reports a link from its preview page (the form,
// a mistake, the thank-you page, reload and back send nothing twice); the admin finds the report in the
// dashboard with the link, its owner, its clicks and its destination, closes it by disabling the link (the
// visitor now meets the 451 page, the owner sees "disabled" in the list), bans a host and lifts the ban.
// Pages are checked with axe in both themes and on a phone.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp, closeAll } from '../support/browser'
import { signInBrowser } from '../support/dashboard'

const PW = 'correct horse battery'
let browser: Browser
let context: BrowserContext
let page: Page
let app: RunningApp
let code: string

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'root', password: PW, admin: true })
  const { key } = await app.accounts.createAccount({ name: 'alice', password: PW })
  const made = await fetch(`${app.url}/api/getLink.json`, {
    method: 'POST',
    headers: { 'x-api-key': key.key },
    body: new URLSearchParams({ url: 'https://login.phish.example/bank', mode: 'preview' }),
  })
  code = (await made.json()).return.hex
  browser = await launchBrowser()
  context = await browser.newContext()
  page = await context.newPage()
  page.setDefaultTimeout(10_000)
})
afterAll(() => closeAll(browser, app))

const reports = () => (app.db.query('SELECT count(*) AS n FROM link_reports').get() as { n: number }).n

test('a visitor reports a link from its preview page; a mistake comes back with what was typed; reload and back send nothing again', async () => {
  await page.goto(`${app.url}/${code}`)
  await page.getByRole('link', { name: 'Report this link' }).click()
  await page.waitForURL(`${app.url}/${code}/report`)
  await checkPage(page, 'report-form')
  await page.getByLabel('What you saw').fill('It asks for my bank password.')
  await page.getByRole('button', { name: 'Send the report' }).click()
  await page.waitForURL(/error=reason/)
  expect(await page.getByText('Choose what is wrong with the link.').isVisible()).toBe(true)
  expect(await page.getByLabel('What you saw').inputValue()).toBe('It asks for my bank password.')
  expect(reports()).toBe(0)

  await page.getByLabel(/^Phishing/).check()
  await page.getByRole('button', { name: 'Send the report' }).click()
  await page.waitForURL(`${app.url}/${code}/report?sent=1`)
  expect(await page.locator('h1').textContent()).toContain('your report was sent')
  await checkPage(page, 'report-sent')
  await page.reload()
  await page.goBack()
  await page.goForward()
  expect(reports()).toBe(1)
})

test('the admin finds it with the link, owner, clicks and destination, disables the link by closing it; the visitor gets 451 and the owner sees it', async () => {
  await app.recorder.flush()
  await signInBrowser(page, app.url, 'root', PW)
  await page.goto(`${app.url}/dashboard/admin`)
  await page.getByRole('link', { name: 'Reports and bans' }).click()
  await page.waitForURL(`${app.url}/dashboard/admin/reports`)
  const row = page.locator('table.reports tbody tr')
  expect(await row.count()).toBe(1)
  const text = await row.textContent()
  for (const part of [code, 'https://login.phish.example/bank', 'alice', 'Phishing', 'It asks for my bank password.'])
    expect(text).toContain(part)
  await checkPage(page, 'admin-reports')

  await row.getByLabel(/What to do about report/).selectOption('link_disabled')
  await row.getByRole('button', { name: 'Close report' }).click()
  await page.waitForURL(`${app.url}/dashboard/admin/reports`)
  expect(await page.getByText(`${code} is disabled.`).isVisible()).toBe(true)
  expect(await page.locator('table.reports').count()).toBe(0)
  await page.reload()
  expect((app.db.query('SELECT action FROM link_reports').get() as { action: string }).action).toBe('link_disabled')

  const visit = await fetch(`${app.url}/${code}`, { redirect: 'manual' })
  expect(visit.status).toBe(451)
  expect(await visit.text()).not.toContain('phish.example')

  const owner = await browser.newContext()
  const ownerPage = await owner.newPage()
  await signInBrowser(ownerPage, app.url, 'alice', PW)
  expect(await ownerPage.locator('.tag.off').first().textContent()).toBe('disabled')
  await owner.close()
})

test('the admin bans a host (its links stop, new ones are refused) and lifts the ban', async () => {
  await page.goto(`${app.url}/dashboard/admin/reports`)
  await page.getByLabel('Host', { exact: true }).fill('phish.example')
  await page.locator('#ban-reason').fill('phishing kit')
  await page.getByRole('button', { name: 'Ban the host' }).click()
  await page.waitForURL(`${app.url}/dashboard/admin/reports`)
  expect(await page.getByText('phish.example is banned').isVisible()).toBe(true)
  const refused = await fetch(`${app.url}/api/getLink.json`, {
    method: 'POST',
    body: new URLSearchParams({ url: 'https://x.phish.example/' }),
  })
  expect(refused.status).toBe(400)
  await checkPage(page, 'admin-bans')
  await page.getByRole('button', { name: 'Lift the ban on phish.example' }).click()
  await page.waitForURL(`${app.url}/dashboard/admin/reports`)
  expect(await page.getByText('The ban on phish.example is lifted').isVisible()).toBe(true)
  const allowed = await fetch(`${app.url}/api/getLink.json`, {
    method: 'POST',
    body: new URLSearchParams({ url: 'https://x.phish.example/' }),
  })
  expect(allowed.status).toBe(200)
})

test('links.anonymous = false: a visitor to the home page is asked to sign in (axe, both themes, a phone); the link goes to the sign-in page', async () => {
  const closed = startApp({ links: { anonymous: false } })
  try {
    const visitor = await browser.newContext()
    const p = await visitor.newPage()
    await p.goto(`${closed.url}/`)
    expect(await p.locator('h1').textContent()).toBe('Sign in to shorten a link')
    expect(await p.locator('input[name="url"]').count()).toBe(0)
    await checkPage(p, 'home-closed')
    await p.locator('main').getByRole('link', { name: 'Sign in' }).click()
    await p.waitForURL(/\/login/)
    await p.goBack()
    expect(await p.locator('h1').textContent()).toBe('Sign in to shorten a link')
    await visitor.close()
  } finally {
    await closed.stop()
  }
})
