// Issue 24 in real Chromium: editing instead of deleting and adding again, and pages that keep themselves up
// to date. A webhook endpoint's URL and events are edited, it is disabled and enabled, it gets a new secret
// (shown once), its failed deliveries are sent again; an API key's scopes and label are edited. After each
// POST a reload is a GET of the same address that sends nothing (post → redirect → get: no "resubmit?"),
// and back sends nothing either. The delivery log shows a test delivery arrive without a reload, and the
// admin's health page changes its figures while it is open. Every changed page goes through axe (both
// themes, 390 px) and is screenshotted. Deliveries go to real receivers on 127.0.0.1, checked with the
// `standardwebhooks` package.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { checkPage, launchBrowser, startApp, type RunningApp } from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { startReceiver, until, type Receiver } from '../support/webhooks'

const PW = 'correct horse battery'
let browser: Browser
let app: RunningApp
let receiver: Receiver
let second: Receiver
let failing = true
let flaky: Receiver
let aliceKey = ''
const contexts: BrowserContext[] = []

beforeAll(async () => {
  receiver = startReceiver()
  second = startReceiver()
  flaky = startReceiver(() => new Response('', { status: failing ? 503 : 200 }))
  // One retry 100 ms after a failed attempt, then the delivery has failed.
  app = startApp({}, { webhookSchedule: [100] })
  aliceKey = (await app.accounts.createAccount({ name: 'alice', password: PW })).key.key
  await app.accounts.createAccount({ name: 'root', password: PW, admin: true })
  browser = await launchBrowser()
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
  for (const r of [receiver, second, flaky]) r?.stop()
})

interface Tab {
  page: Page
  /** Every request that is not a GET, as "POST /path", since the last clear. */
  posts: string[]
  /** Documents loaded in the tab (navigations of the main frame), since the last clear. */
  loads: string[]
}

async function tab(opts: { javaScriptEnabled?: boolean } = {}): Promise<Tab> {
  const context = await browser.newContext({ javaScriptEnabled: opts.javaScriptEnabled ?? true })
  contexts.push(context)
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const t: Tab = { page, posts: [], loads: [] }
  page.on('request', (r) => {
    if (r.method() !== 'GET') t.posts.push(`${r.method()} ${new URL(r.url()).pathname}`)
    if (r.isNavigationRequest() && r.frame() === page.mainFrame())
      t.loads.push(`${r.method()} ${new URL(r.url()).pathname}`)
  })
  return t
}

const click = async (page: Page, selector: string) => {
  await Promise.all([page.waitForNavigation(), page.click(selector)])
}
const clickRole = async (page: Page, role: 'button' | 'link', name: string | RegExp) => {
  await Promise.all([page.waitForNavigation(), page.getByRole(role, { name, exact: typeof name === 'string' }).click()])
}

/** Reload, then back: each a GET that sends nothing (no form sent again). */
async function reloadAndBack(t: Tab) {
  const here = t.page.url()
  t.posts.length = 0
  const reloaded = await t.page.reload()
  expect(reloaded!.request().method()).toBe('GET')
  expect(t.page.url()).toBe(here)
  expect(t.posts).toEqual([])
  const back = await t.page.goBack()
  expect(back === null || back.request().method() === 'GET').toBe(true)
  expect(t.posts).toEqual([])
  await t.page.goForward()
  expect(t.posts).toEqual([])
}

const endpointRow = (id: number) =>
  app.db.query('SELECT url, events, enabled, disabled_reason, secret FROM webhook_endpoints WHERE id = ?').get(id) as {
    url: string
    events: string
    enabled: number
    disabled_reason: string | null
    secret: string
  }
const caller = async () => (await app.accounts.authenticate(aliceKey))!

describe('a webhook endpoint', () => {
  let id = 0
  let t: Tab

  test('the delivery log shows a test delivery arrive without a reload; reload and back send nothing', async () => {
    const made = await app.webhooks.create(await caller(), { url: receiver.url, events: 'link.created' })
    receiver.secret = made.secret
    id = made.id
    t = await tab()
    await signInBrowser(t.page, app.url, 'alice', PW)
    await t.page.goto(`${app.url}/dashboard/webhooks/${id}`)
    expect(await t.page.locator('#wh-log').textContent()).toContain('Nothing sent yet')
    await checkPage(t.page, 'wh-endpoint-empty')

    t.loads.length = 0
    await clickRole(t.page, 'button', 'Send a test event')
    expect(await t.page.locator('.notice.ok').textContent()).toContain('it shows in the log below')
    // The page loaded once (the POST and the GET it redirects to); the delivery turns up without another load.
    const loadsAfterPost = [...t.loads]
    expect(loadsAfterPost).toEqual([`POST /dashboard/webhooks/${id}/test`, `GET /dashboard/webhooks/${id}`])
    await until(() => receiver.got.length === 1, 'the test delivery')
    expect(receiver.got[0]!.verifyError).toBeNull()
    await t.page.locator('#wh-log td[data-label="State"] .state.good', { hasText: 'ok' }).waitFor()
    expect(await t.page.locator('#wh-log td[data-label="Status"]').textContent()).toBe('200')
    expect(await t.page.locator('#wh-counts').textContent()).toBe('1 ok · 0 failed · 0 pending')
    expect(t.loads).toEqual(loadsAfterPost)
    expect(await t.page.locator('#wh-log code').textContent()).toBe('webhook.test')
    await checkPage(t.page, 'wh-endpoint-live')
    await reloadAndBack(t)
  })

  test('a second test while the page is open: a new row without a reload, focus kept on a Redeliver button', async () => {
    // Once the page has polled its log (what it shows is what it saw), something changes.
    await Promise.all([
      t.page.waitForResponse((r) => r.url().endsWith(`/dashboard/webhooks/${id}/log.json`)),
      t.page.goto(`${app.url}/dashboard/webhooks/${id}`),
    ])
    await t.page.locator('#wh-log button', { hasText: 'Redeliver' }).first().focus()
    t.loads.length = 0
    // Sent from elsewhere (the CLI's `webhook test`): only the polling can show it.
    await app.webhooks.test(id)
    await until(() => receiver.got.length === 2, 'the second test delivery')
    await t.page.locator('#wh-log tbody tr').nth(1).waitFor()
    await t.page.locator('#wh-log tbody tr').first().locator('.state.good').waitFor()
    expect(t.loads).toEqual([])
    expect(await t.page.locator('#wh-log-live').textContent()).toMatch(/^The log changed at \d\d:\d\d:\d\d\.$/)
    expect(await t.page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toMatch(
      /^Redeliver event \d+$/,
    )
  })

  test('edit: the URL and events change (a refused edit keeps what was typed); reload and back send nothing', async () => {
    await t.page.goto(`${app.url}/dashboard/webhooks/${id}`)
    await clickRole(t.page, 'link', 'Edit')
    expect(t.page.url()).toBe(`${app.url}/dashboard/webhooks/${id}/edit`)
    expect(await t.page.inputValue('#wh-url')).toBe(receiver.url)
    expect(await t.page.isChecked('input[value="link.created"]')).toBe(true)
    expect(await t.page.isChecked('input[value="link.deleted"]')).toBe(false)
    await checkPage(t.page, 'wh-edit')

    // Nothing ticked: back to the form with the message, what was typed kept.
    await t.page.fill('#wh-url', second.url)
    await t.page.uncheck('input[value="link.created"]')
    await click(t.page, 'main button[type=submit]')
    expect(t.page.url()).toMatch(new RegExp(`/dashboard/webhooks/${id}/edit\\?form=`))
    expect(await t.page.locator('#wh-events-error').textContent()).toBe('Choose at least one event.')
    expect(await t.page.inputValue('#wh-url')).toBe(second.url)
    await checkPage(t.page, 'wh-edit-refused')
    expect(endpointRow(id).url).toBe(receiver.url)
    t.posts.length = 0
    await t.page.reload()
    expect(t.posts).toEqual([])

    await t.page.goto(`${app.url}/dashboard/webhooks/${id}/edit`)
    await t.page.fill('#wh-url', second.url)
    await t.page.uncheck('input[value="link.created"]')
    await t.page.check('input[value="link.deleted"]')
    await click(t.page, 'main button[type=submit]')
    expect(t.page.url()).toBe(`${app.url}/dashboard/webhooks/${id}`)
    expect(await t.page.locator('.notice.ok').textContent()).toBe(`Saved: events go to ${second.url} (link.deleted).`)
    expect(endpointRow(id)).toMatchObject({ url: second.url, events: 'link.deleted' })
    await reloadAndBack(t)
    expect(endpointRow(id)).toMatchObject({ url: second.url, events: 'link.deleted' })

    // What it now receives: a deletion, at the new URL; not a creation.
    second.secret = receiver.secret
    const link = await app.links.create({ url: 'https://example.com/edited' }, await caller())
    await app.links.delete({ code: link.hex }, await caller())
    await until(() => second.got.length === 1, 'link.deleted at the new URL')
    await Bun.sleep(200)
    expect(second.got.map((g) => JSON.parse(g.body).type)).toEqual(['link.deleted'])
    expect(receiver.got.length).toBe(2)
  })

  test('disable and enable: said in words on the page and in the list; reload and back send nothing', async () => {
    await t.page.goto(`${app.url}/dashboard/webhooks/${id}`)
    await clickRole(t.page, 'button', 'Disable')
    expect(await t.page.locator('#wh-state').textContent()).toBe('Disableddisabled by its owner')
    expect(endpointRow(id)).toMatchObject({ enabled: 0, disabled_reason: 'disabled by its owner' })
    await checkPage(t.page, 'wh-endpoint-disabled')
    await reloadAndBack(t)
    await t.page.goto(`${app.url}/dashboard/webhooks`)
    const listed = t.page.locator('table.wh-list tbody tr', { hasText: second.url })
    expect(await listed.locator('td[data-label="Status"]').textContent()).toBe('Disableddisabled by its owner')
    await t.page.goto(`${app.url}/dashboard/webhooks/${id}`)
    await clickRole(t.page, 'button', 'Enable')
    expect(await t.page.locator('#wh-state').textContent()).toBe('Active')
    expect(endpointRow(id)).toMatchObject({ enabled: 1, disabled_reason: null })
    await reloadAndBack(t)
  })

  test('a new secret: asked first, shown once; the next delivery verifies with it, and with the old one during its 24 h overlap', async () => {
    const old = endpointRow(id).secret
    await t.page.goto(`${app.url}/dashboard/webhooks/${id}`)
    await clickRole(t.page, 'link', 'New secret…')
    expect(await t.page.locator('h1').textContent()).toBe('Make a new signing secret?')
    await checkPage(t.page, 'wh-rotate')
    await clickRole(t.page, 'button', 'Make a new secret')
    expect(t.page.url()).toMatch(new RegExp(`/dashboard/webhooks/${id}\\?rotated=`))
    const shown = await t.page.inputValue('#wh-secret')
    expect(shown).toMatch(/^whsec_/)
    expect(shown).not.toBe(old)
    expect(endpointRow(id).secret).toBe(shown)
    await checkPage(t.page, 'wh-rotated')

    // The reload shows it no more, and says so; back to the confirmation page and forward send nothing.
    t.posts.length = 0
    await t.page.reload()
    expect(t.posts).toEqual([])
    expect(await t.page.locator('#wh-secret').count()).toBe(0)
    expect(await t.page.locator('.notice.ok').textContent()).toContain('new signing secret was shown once')
    await t.page.goBack()
    await t.page.goForward()
    expect(t.posts).toEqual([])
    expect(endpointRow(id).secret).toBe(shown)

    const link = await app.links.create({ url: 'https://example.com/rotated' }, await caller())
    await app.links.delete({ code: link.hex }, await caller())
    await until(() => second.got.length === 2, 'a delivery after the new secret')
    const got = second.got[1]!
    expect(() => new Webhook(shown).verify(got.body, got.headers)).not.toThrow()
    // The default overlap ([webhooks] rotation_overlap, 24 h): signed with both. Its end: webhook-rotation.test.ts.
    expect(got.headers['webhook-signature']!.split(' ')).toHaveLength(2)
    expect(() => new Webhook(old).verify(got.body, got.headers)).not.toThrow()
  })

  test('redeliver all failed: they go out again once the receiver answers, under their first webhook-ids', async () => {
    const made = await app.webhooks.create(await caller(), { url: flaky.url, events: 'link.created' })
    flaky.secret = made.secret
    await app.links.create({ url: 'https://example.com/f1' }, await caller())
    await app.links.create({ url: 'https://example.com/f2' }, await caller())
    await until(
      () =>
        (
          app.db
            .query("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'failed'")
            .get(made.id) as { n: number }
        ).n === 2,
      'both failed',
    )
    const firstIds = [...new Set(flaky.got.map((g) => g.id))].sort()
    expect(firstIds.length).toBe(2)

    // The list says it in words.
    await t.page.goto(`${app.url}/dashboard/webhooks`)
    const row = t.page.locator('table.wh-list tbody tr', { hasText: flaky.url })
    expect(await row.locator('td[data-label="Status"]').textContent()).toBe('FailingA delivery used up its retries')
    await checkPage(t.page, 'wh-list-failing')

    await t.page.goto(`${app.url}/dashboard/webhooks/${made.id}`)
    failing = false
    const before = flaky.got.length
    await clickRole(t.page, 'button', 'Redeliver all failed')
    expect(await t.page.locator('.notice.ok').textContent()).toBe(
      "2 failed deliveries are sent again, each under its event's webhook-id.",
    )
    await until(() => flaky.got.length === before + 2, 'the redeliveries')
    expect(
      flaky.got
        .slice(before)
        .map((g) => g.id)
        .sort(),
    ).toEqual(firstIds)
    for (const g of flaky.got.slice(before)) expect(g.verifyError).toBeNull()
    // The page shows them delivered without a reload.
    await t.page.locator('#wh-counts', { hasText: '2 ok · 0 failed · 0 pending' }).waitFor()
    await reloadAndBack(t)
    expect(flaky.got.length).toBe(before + 2)
  })

  test('without JavaScript: the pages work, and the log is as it was when loaded until Reload', async () => {
    const plain = await tab({ javaScriptEnabled: false })
    await signInBrowser(plain.page, app.url, 'alice', PW)
    await plain.page.goto(`${app.url}/dashboard/webhooks/${id}`)
    const rows = await plain.page.locator('#wh-log tbody tr').count()
    await clickRole(plain.page, 'button', 'Send a test event')
    await until(() => second.got.length === 3, 'the test delivery')
    await clickRole(plain.page, 'link', 'Reload')
    expect(await plain.page.locator('#wh-log tbody tr').count()).toBe(rows + 1)
    await clickRole(plain.page, 'link', 'Edit')
    await plain.page.check('input[value="link.created"]')
    await click(plain.page, 'main button[type=submit]')
    expect(endpointRow(id).events).toBe('link.created,link.deleted')
  })
})

describe('an API key', () => {
  test('its scopes and label edited: the API refuses the scope taken away; reload and back send nothing', async () => {
    const t = await tab()
    await signInBrowser(t.page, app.url, 'alice', PW)
    const accountId = (await await caller()).accountId
    const k = await app.accounts.createKeyForAccount({ accountId, scopes: ['links', 'qr'], label: 'nightly job' })
    await t.page.goto(`${app.url}/dashboard/keys`)
    await clickRole(t.page, 'link', `Edit the key ${k.prefix}…`)
    expect(await t.page.locator('h1').textContent()).toBe(`Edit the key ${k.prefix}…`)
    expect(await t.page.inputValue('#label')).toBe('nightly job')
    await checkPage(t.page, 'key-edit')
    await t.page.uncheck('input[value="links"]')
    await t.page.fill('#label', 'nightly QR job')
    await click(t.page, 'main button[type=submit]')
    expect(t.page.url()).toBe(`${app.url}/dashboard/keys`)
    expect(await t.page.locator('.notice.ok').textContent()).toBe(`The key ${k.prefix}… is changed: its scopes are qr.`)
    const row = t.page.locator('table.keys-table tbody tr', { hasText: k.prefix })
    expect(await row.locator('td[data-label="Label"]').textContent()).toBe('nightly QR job')
    await checkPage(t.page, 'keys-after-edit')
    await reloadAndBack(t)
    const refused = await fetch(`${app.url}/api/getLink.json`, {
      method: 'POST',
      headers: { 'x-api-key': k.key },
      body: new URLSearchParams({ url: 'https://example.com/k' }),
    })
    expect(refused.status).toBe(403)
    expect((await refused.json()).code).toBe('scope_denied')
    expect((await fetch(`${app.url}/api/qr.json?data=x`, { headers: { 'x-api-key': k.key } })).status).toBe(200)
  })
})

describe('the admin health page', () => {
  test('its figures change while it is open, without a reload', async () => {
    const t = await tab()
    await signInBrowser(t.page, app.url, 'root', PW)
    await t.page.goto(`${app.url}/dashboard/admin/health`)
    expect(await t.page.locator('#health-read').textContent()).toContain(
      'updated every few seconds while this page is open',
    )
    const answers = () => t.page.locator('[data-stat="api-answers"] .stat-value').textContent()
    const links = () => t.page.locator('[data-stat="links"] .stat-value').textContent()
    const before = Number((await answers())!.replace(/,/g, ''))
    const linksBefore = Number((await links())!.replace(/,/g, ''))
    t.loads.length = 0
    for (let i = 0; i < 3; i++)
      await fetch(`${app.url}/api/getLink.json`, {
        method: 'POST',
        headers: { 'x-api-key': aliceKey },
        body: new URLSearchParams({ url: `https://example.com/h${i}` }),
      })
    await t.page.waitForFunction(
      (n) =>
        Number(document.querySelector('[data-stat="api-answers"] .stat-value')!.textContent!.replace(/,/g, '')) >= n,
      before + 3,
      { timeout: 15_000 },
    )
    expect(Number((await links())!.replace(/,/g, ''))).toBe(linksBefore + 3)
    // The bars were drawn again from the JSON: a row for 2xx with its count.
    expect(
      await t.page.locator('[data-bars="api"] table.metric-bars tbody tr').first().locator('th').textContent(),
    ).toBe('2xx')
    expect(t.loads).toEqual([])
    await checkPage(t.page, 'admin-health-live')
    // A non-admin's session gets no figures.
    const res = await fetch(`${app.url}/dashboard/admin/health.json`)
    expect(res.status).toBe(401)
  })
})
