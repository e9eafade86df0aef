// Issue 20, item 8, in real Chromium: revoking a key goes through a confirmation page (Cancel leaves it
// alone); the links table's QR opens in a new tab and the dashboard stays; the empty webhooks page points
// down to its form, which is there; an endpoint whose delivery failed shows Failing in the list, and its
// counts fit their cell on a phone. Every page: axe in both themes and on a phone, screenshots; no request
// off the app's origin.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp } from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { dashboardHttp } from '../support/dashboard-http'
import { startReceiver, until, type Receiver } from '../support/webhooks'

const PW = 'correct horse battery'
let browser: Browser
let app: RunningApp
const contexts: BrowserContext[] = []
const receivers: Receiver[] = []
/** Every URL the app's pages asked for. */
const requests: string[] = []

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'bob', password: PW })
  browser = await launchBrowser()
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
  for (const r of receivers) r.stop()
})

const { callerOf } = dashboardHttp(() => app)

async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext()
  contexts.push(context)
  context.on('request', (r) => void requests.push(r.url()))
  return context
}
async function newPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  return page
}

const check = async (page: Page, name: string) => expect(await checkPage(page, name)).toBeLessThanOrEqual(390)

describe('small dashboard faults', () => {
  let page: Page
  beforeAll(async () => {
    page = await newPage(await newContext())
    await signInBrowser(page, app.url, 'bob', PW)
  })

  test('revoking a key asks first: Cancel leaves it alone; Revoke the key revokes it', async () => {
    const key = app.db
      .query("SELECT k.id, k.prefix FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE a.name = 'bob'")
      .get() as { id: number; prefix: string }
    const revoked = () =>
      (app.db.query('SELECT revoked FROM api_keys WHERE id = ?').get(key.id) as { revoked: number | null }).revoked
    await page.goto(`${app.url}/dashboard/keys`)
    const revoke = page.getByRole('link', { name: `Revoke the key ${key.prefix}…` })
    await Promise.all([page.waitForURL(`${app.url}/dashboard/keys/${key.id}/revoke`), revoke.click()])
    expect(await page.locator('h1').textContent()).toBe('Revoke this key?')
    expect(await page.locator('.confirm').textContent()).toContain(`${key.prefix}…`)
    expect(revoked()).toBeNull()
    await check(page, 'dash-key-revoke-confirm')

    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/keys`),
      page.getByRole('link', { name: 'Cancel' }).click(),
    ])
    expect(revoked()).toBeNull()
    await Promise.all([page.waitForURL(`${app.url}/dashboard/keys/${key.id}/revoke`), revoke.click()])
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/keys`),
      page.getByRole('button', { name: 'Revoke the key' }).click(),
    ])
    expect(await page.locator('.notice.ok').textContent()).toContain(`Revoked the key ${key.prefix}…`)
    expect(revoked()).not.toBeNull()
    // Reload (a GET after the 303) sends nothing again; back to the question: the key is revoked already.
    await page.reload()
    await page.goBack()
    expect(await page.locator('h1').textContent()).toBe('Key not found')
  })

  test("the links table's QR opens the image in a new tab; the dashboard stays where it was", async () => {
    await app.links.create({ url: 'https://example.com/qr-in-a-tab', alias: 'qr-tab' }, callerOf('bob'))
    await page.goto(`${app.url}/dashboard`)
    const qr = page.getByRole('link', { name: 'QR qr-tab (opens in a new tab)' })
    const [popup] = await Promise.all([page.waitForEvent('popup'), qr.click()])
    await popup.waitForLoadState()
    expect(popup.url()).toBe(`${app.url}/qr/qr-tab.png`)
    expect(await popup.evaluate(() => window.opener)).toBeNull()
    expect(page.url()).toBe(`${app.url}/dashboard`)
    await popup.close()
    await check(page, 'dash-links-qr')
  })

  test('the empty webhooks page points down to its form, which is below', async () => {
    await page.goto(`${app.url}/dashboard/webhooks`)
    const empty = page.locator('p.empty')
    expect(await empty.textContent()).toBe(
      'No endpoints yet. Add one below to be told when links change or mail arrives.',
    )
    const said = (await empty.boundingBox())!
    const form = (await page.locator('form.wh-form').boundingBox())!
    expect(form.y).toBeGreaterThan(said.y + said.height)
    await empty.getByRole('link', { name: 'Add one below' }).click()
    expect(new URL(page.url()).hash).toBe('#new-webhook')
    expect(await page.locator('#new-webhook').isVisible()).toBe(true)
    await check(page, 'dash-webhooks-empty-below')
  })

  test('an endpoint whose delivery failed shows Failing with its pending retry; a healthy one Active', async () => {
    const broken = startReceiver(() => new Response('down', { status: 503 }))
    const healthy = startReceiver()
    receivers.push(broken, healthy)
    const bob = callerOf('bob')
    const bad = await app.webhooks.create(bob, { url: broken.url })
    const good = await app.webhooks.create(bob, { url: healthy.url })
    await app.webhooks.testOwned(bob, { id: bad.id })
    await app.webhooks.testOwned(bob, { id: good.id })
    const row = (id: number) =>
      app.db.query('SELECT state, attempts FROM webhook_deliveries WHERE endpoint_id = ?').get(id) as {
        state: string
        attempts: number
      }
    await until(() => row(bad.id).attempts >= 1 && row(good.id).state === 'ok', 'one failed attempt and one delivery')

    await page.goto(`${app.url}/dashboard/webhooks`)
    const badRow = page.locator('table.wh-list tbody tr', { hasText: broken.url })
    const goodRow = page.locator('table.wh-list tbody tr', { hasText: healthy.url })
    expect(await badRow.locator('td[data-label="Status"]').innerText()).toBe('Failing\n1 pending retry')
    expect(await goodRow.locator('td[data-label="Status"]').innerText()).toBe('Active')
    await check(page, 'dash-webhooks-failing')
    // On a phone the counts wrap inside their cell instead of being cut off at its edge.
    await page.setViewportSize({ width: 390, height: 844 })
    const counts = badRow.locator('.wh-counts')
    const cell = (await badRow.locator('td[data-label="Deliveries"]').boundingBox())!
    const box = (await counts.boundingBox())!
    expect(box.x + box.width).toBeLessThanOrEqual(cell.x + cell.width + 0.5)
    expect(await counts.evaluate((el) => el.scrollWidth <= el.clientWidth + 0.5)).toBe(true)
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  test('no request left the origin', () => {
    expect(requests.length).toBeGreaterThan(10)
    expect(
      requests.filter((u) => !u.startsWith(`${app.url}/`) && !u.startsWith('data:') && !u.startsWith('about:')),
    ).toEqual([])
  })
})
