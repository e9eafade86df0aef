// Issue 38 item 5 in real Chromium: a webhook delivery opened from the log shows the request as the receiver got it
// (headers, the signature among them, and the body), the answer (status, headers, the first 4 KiB of a long body),
// timing and the attempt number; "Send again" goes through Post/Redirect/Get (a reload sends nothing); the live
// log keeps its links when app.js draws it again; "New secret" says until when the old one is valid. Every page
// state through axe (both themes, 1280 and 390 px); a delivery's detail and the rotation shot to test-results/screenshots/phone.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp, phoneShots } from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { startReceiver, until, type Receiver } from '../support/webhooks'

const PW = 'correct horse battery'
/** The failing receiver's body: 6,000 bytes, of which the page keeps the first 4 KiB. */
const LONG = `BEGIN-${'0123456789abcdef'.repeat(374)}-END`
let failing = true
let browser: Browser
let app: RunningApp
let receiver: Receiver
let context: BrowserContext
let page: Page
let key = ''
let hook = 0
/** Every request that is not a GET, as "POST /path", since the last clear. */
const posts: string[] = []

beforeAll(async () => {
  receiver = startReceiver(() =>
    failing
      ? new Response(LONG, { status: 500, headers: { 'x-request-id': 'req-42', 'content-type': 'text/plain' } })
      : new Response('thanks', { status: 200 }),
  )
  // One retry 100 ms after a failed attempt; the second failure is final.
  app = startApp({}, { webhookSchedule: [100] })
  key = (await app.accounts.createAccount({ name: 'alice', password: PW })).key.key
  browser = await launchBrowser()
  context = await browser.newContext()
  page = await context.newPage()
  page.setDefaultTimeout(10_000)
  page.on('request', (r) => {
    if (r.method() !== 'GET') posts.push(`${r.method()} ${new URL(r.url()).pathname}`)
  })
})
afterAll(async () => {
  await context?.close().catch(() => {})
  await browser?.close()
  await app?.stop()
  receiver?.stop()
})

const caller = async () => (await app.accounts.authenticate(key))!
const deliveryState = (eventId: number) =>
  app.db
    .query('SELECT state, attempts FROM webhook_deliveries WHERE event_id = ? AND endpoint_id = ?')
    .get(eventId, hook) as { state: string; attempts: number } | null
const navigate = (action: Promise<unknown>) => Promise.all([page.waitForNavigation(), action])

/** The name/value pairs of a headers list on the page. */
const headersOf = (id: string) =>
  page.$$eval(`#${id} dt`, (dts) =>
    Object.fromEntries(dts.map((dt) => [dt.textContent ?? '', dt.nextElementSibling?.textContent ?? ''])),
  )

describe('a failed delivery, opened', () => {
  let eventId = 0

  test('opened from the log: the request as the receiver got it, the answer cut at 4 KiB, timing and attempt 2', async () => {
    const made = await app.webhooks.create(await caller(), { url: receiver.url, events: 'link.created' })
    hook = made.id
    receiver.secret = made.secret
    await app.links.create({ url: 'https://example.com/detail' }, await caller())
    await until(() => receiver.got.length === 2, 'the attempt and its retry')
    eventId = (app.db.query('SELECT id FROM webhook_events ORDER BY id DESC LIMIT 1').get() as { id: number }).id
    await until(() => deliveryState(eventId)?.state === 'failed', 'the delivery failed')

    await signInBrowser(page, app.url, 'alice', PW)
    await page.goto(`${app.url}/dashboard/webhooks/${hook}`)
    // By keyboard: the event's link in the log, focused and followed with Enter.
    await page.getByRole('link', { name: `Event ${eventId}: its delivery in detail` }).focus()
    await navigate(page.keyboard.press('Enter'))
    expect(new URL(page.url()).pathname).toBe(`/dashboard/webhooks/${hook}/deliveries/${eventId}`)
    expect(await page.locator('h1').textContent()).toBe(`Delivery of event ${eventId}`)
    expect(await page.locator('#wh-attempt').textContent()).toBe('2 of at most 8')
    expect(await page.locator('#wh-delivery-state').textContent()).toContain('Failed')

    // The request: what the second attempt (the last) carried, header for header, and the body byte for byte.
    const sent = receiver.got[1]!
    expect(await page.locator('#wh-request-url').textContent()).toBe(receiver.url)
    const request = await headersOf('wh-request-headers')
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type', 'user-agent'])
      expect({ name, value: request[name] }).toEqual({ name, value: sent.headers[name] })
    expect(request['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/)
    expect(await page.locator('pre.wh-body').first().textContent()).toBe(sent.body)
    // The answer: its status, its headers, its first 4,096 bytes and no more.
    expect(await page.locator('#wh-response-status').textContent()).toBe('500')
    expect(await headersOf('wh-response-headers')).toMatchObject({ 'x-request-id': 'req-42' })
    const shown = (await page.locator('pre.wh-body').nth(1).textContent())!
    expect(shown).toBe(LONG.slice(0, 4096))
    expect(shown).not.toContain('-END')
    expect(await page.locator('#response-h ~ h3').first().textContent()).toBe('Headers')
    expect(await page.textContent('main')).toContain('(the first 4 KiB)')
    // The secret itself is never on the page.
    expect(await page.content()).not.toContain(made.secret.slice(6))
    await checkPage(page, null)
    await phoneShots(page, 'hooks-delivery-failed')
  })

  test('"Send again" posts once and lands on the same page (PRG): reload and back send nothing; the new attempt shows', async () => {
    failing = false
    posts.length = 0
    await navigate(page.getByRole('button', { name: 'Send again' }).click())
    expect(posts).toEqual([`POST /dashboard/webhooks/${hook}/deliveries/${eventId}/redeliver`])
    expect(new URL(page.url()).pathname).toBe(`/dashboard/webhooks/${hook}/deliveries/${eventId}`)
    expect(await page.locator('.notice.ok').textContent()).toContain(`Event ${eventId}`)
    await until(() => receiver.got.length === 3 && deliveryState(eventId)?.state === 'ok', 'the redelivery')
    expect(receiver.got[2]!.id).toBe(receiver.got[0]!.id) // the same webhook-id

    posts.length = 0
    const reloaded = await page.reload()
    expect(reloaded!.request().method()).toBe('GET')
    expect(await page.locator('#wh-attempt').textContent()).toBe('1 of at most 8')
    expect(await page.locator('#wh-response-status').textContent()).toBe('200')
    expect(await page.locator('pre.wh-body').nth(1).textContent()).toBe('thanks')
    expect(await page.locator('#wh-delivery-state').textContent()).toContain('Delivered')
    await checkPage(page, null)
    await phoneShots(page, 'hooks-delivery-ok')
    await page.goBack()
    await page.goForward()
    await Bun.sleep(300)
    expect(posts).toEqual([])
    expect(receiver.got.length).toBe(3)
  })

  test('the live log, drawn again by the script, keeps each event linked to its delivery', async () => {
    await page.goto(`${app.url}/dashboard/webhooks/${hook}`)
    const rows = await page.locator('#wh-log tbody tr').count()
    await app.links.create({ url: 'https://example.com/live' }, await caller())
    await page.waitForFunction((n) => document.querySelectorAll('#wh-log tbody tr').length > n, rows)
    const newest = (app.db.query('SELECT max(id) AS id FROM webhook_events').get() as { id: number }).id
    await navigate(page.getByRole('link', { name: `Event ${newest}: its delivery in detail` }).click())
    expect(await page.locator('h1').textContent()).toBe(`Delivery of event ${newest}`)
  })

  test('a delivery not sent yet (its endpoint disabled): the body it will carry, no attempt, no "Send again"', async () => {
    const quiet = await app.webhooks.create(await caller(), { url: receiver.url, events: 'link.created' })
    await app.webhooks.update(await caller(), { id: quiet.id, enabled: false })
    const t = await app.webhooks.testOwned(await caller(), { id: quiet.id })
    await page.goto(`${app.url}/dashboard/webhooks/${quiet.id}/deliveries/${t.event_id}`)
    expect(await page.locator('#wh-attempt').textContent()).toBe('none yet')
    expect(await page.textContent('main')).toContain('Not sent yet')
    expect(await page.locator('pre.wh-body').textContent()).toContain('"type":"webhook.test"')
    expect(await page.getByRole('button', { name: 'Send again' }).count()).toBe(0)
    await checkPage(page, null)
  })

  test('a delivery of another endpoint, or none, is the 404 page', async () => {
    const r = await page.goto(`${app.url}/dashboard/webhooks/${hook}/deliveries/999999`)
    expect(r!.status()).toBe(404)
    const other = await app.accounts.createAccount({ name: 'bob', password: PW })
    const bobs = await app.webhooks.create((await app.accounts.authenticate(other.key.key))!, {
      url: receiver.url,
      events: 'link.created',
    })
    expect((await page.goto(`${app.url}/dashboard/webhooks/${bobs.id}/deliveries/${eventId}`))!.status()).toBe(404)
  })
})

describe('a new secret', () => {
  test('the rotation says until when the old secret is valid; the endpoint page keeps saying so after a reload', async () => {
    await page.goto(`${app.url}/dashboard/webhooks/${hook}`)
    await navigate(page.getByRole('link', { name: 'New secret…' }).click())
    expect(await page.textContent('main')).toContain('stays valid for 24 hours more')
    await checkPage(page, null)
    posts.length = 0
    const before = Date.now()
    await navigate(page.getByRole('button', { name: 'Make a new secret' }).click())
    expect(posts).toEqual([`POST /dashboard/webhooks/${hook}/rotate`])
    const note = (await page.locator('#wh-overlap').textContent())!
    const until24h = new Date(before + 24 * 3_600_000).toISOString().slice(0, 13) // to the hour
    expect(note).toContain('The old secret stays valid until')
    // The moment is a <time datetime> (shown relative, "tomorrow", by the script; the exact time in its title).
    expect(await page.locator('#wh-overlap time').getAttribute('datetime')).toStartWith(until24h)
    await checkPage(page, null)
    await phoneShots(page, 'hooks-rotated')

    posts.length = 0
    await page.reload()
    expect(await page.locator('#wh-secret').count()).toBe(0)
    expect(await page.locator('#wh-old-secret').textContent()).toContain('Still valid until')
    expect(await page.locator('.notice.ok').textContent()).toContain('The old secret stays valid until')
    await checkPage(page, null)
    await page.goBack()
    await page.goForward()
    expect(posts).toEqual([])

    // A second rotation within the overlap: the page asks first, naming what is dropped, and says so after.
    await page.goto(`${app.url}/dashboard/webhooks/${hook}/rotate`)
    expect(await page.textContent('main')).toContain('stops verifying at once')
    await checkPage(page, null)
    await navigate(page.getByRole('button', { name: 'Make a new secret' }).click())
    expect(await page.locator('#wh-overlap').textContent()).toContain('The secret before the old one')
    await checkPage(page, null)
  })
})
