// The Mailboxes and Webhooks sections in real Chromium, as their owner uses them. Mail: get an address in
// the page, send it a real message over SMTP whose HTML tries everything that would leave a trace (a script
// calling a local "fixture" server and retitling the dashboard, an onerror handler, a remote image, remote
// CSS, a meta refresh), read it in the dashboard, and see that none of it ran or was fetched. Webhooks:
// add an endpoint to a local receiver, read the secret shown once, send a test event and see it delivered
// (signed with that secret) in the log. Every page: axe-core (no serious or critical violation), no
// request off the app's origin, screenshots at 1280 and 390 px in both themes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import nodemailer from 'nodemailer'
import type { Browser, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import {
  checkPage,
  launchBrowser,
  startApp,
  startFixture,
  type Fixture,
  type RunningApp,
  chromePage,
} from '../support/browser'
import { signInBrowser } from '../support/dashboard'

const DOMAIN = 'mail.test'

let browser: Browser
let page: Page
let app: RunningApp
let smtpPort: number
/** Anything the mail's HTML manages to reach lands here: it must stay empty. */
let tracker: Fixture
const trackerHits: string[] = []
/** The webhook receiver: every request it gets. */
let receiver: Fixture
const received: { headers: Record<string, string>; body: string }[] = []
/** Every URL the page asked for, and those its CSP refused before they were sent. */
const requests: string[] = []
const blockedByCsp = new Set<string>()

beforeAll(async () => {
  tracker = startFixture((_req, url) => {
    trackerHits.push(url.pathname)
    return new Response('', { status: 404 })
  })
  receiver = startFixture(async (req) => {
    const headers: Record<string, string> = {}
    req.headers.forEach((value, name) => (headers[name] = value))
    received.push({ headers, body: await req.text() })
    return new Response('ok')
  })
  app = startApp({ mail: { domains: [DOMAIN], smtp_host: '127.0.0.1' } }, { smtpPort: 0 })
  smtpPort = (await app.startSmtp())!.port
  await app.accounts.createAccount({ name: 'alice', password: 'alice password' })
  browser = await launchBrowser()
  page = await chromePage(browser)
  page.on('request', (r) => requests.push(r.url()))
  // Chromium reports a request its CSP refused as a request that failed with "csp": it never left the
  // browser (the tracker's own log below is the proof), so it is not one that left the origin.
  page.on('requestfailed', (r) => {
    if (r.failure()?.errorText === 'csp') blockedByCsp.add(r.url())
  })
  await signInBrowser(page, app.url, 'alice', 'alice password')
})
afterAll(async () => {
  await browser?.close()
  await app?.stop()
  tracker?.stop()
  receiver?.stop()
})

/** axe (no serious/critical violation), no request off the origin so far, and the screenshots (no sideways scroll at 390 px). */
async function check(name: string) {
  expect(await checkPage(page, name)).toBeLessThanOrEqual(390)
  const offOrigin = requests.filter(
    (u) => !u.startsWith(`${app.url}/`) && !u.startsWith('data:') && !u.startsWith('about:'),
  )
  expect(offOrigin.filter((u) => !blockedByCsp.has(u))).toEqual([])
}

/** Waits for something another party does (a delivery, a retry); never a timing check. */
async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 20_000) {
  const deadline = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

describe('mailboxes', () => {
  test('no mailboxes yet: the form and an empty list', async () => {
    await page.goto(`${app.url}/dashboard/mail`)
    expect(await page.locator('h1').textContent()).toBe('Mailboxes')
    expect(await page.locator('main').textContent()).toContain('No mailboxes yet')
    await check('dash-mail-empty')
  })

  test('a mail whose HTML tries to run scripts and fetch remote content: read, and nothing ran or was fetched', async () => {
    await page.fill('#mail-local', 'reader')
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/mail/reader@${DOMAIN}`),
      page.click('form.mail-new button[type=submit]'),
    ])
    expect(await page.locator('.notice.ok').textContent()).toContain(`reader@${DOMAIN} is ready until`)
    expect(await page.locator('main').textContent()).toContain('No mail yet')

    const t = tracker.url
    const html = `<!doctype html><html><head><title>In the mail</title>
<meta http-equiv="refresh" content="0;url=${t}/refresh">
<link rel="stylesheet" href="${t}/link.css">
<style>@import url("${t}/import.css"); body { font-family: Georgia, serif; color: #234; background: #fff url("${t}/bg.png"); } .lead { color: #0a5; }</style>
</head><body>
<h1 id="mail-h1">Your account is ready</h1>
<p class="lead">Welcome aboard. <a href="https://example.com/start?from=mail&amp;x=1">Get started</a></p>
<img src="${t}/pixel.png" alt="" width="1" height="1" onerror="fetch('${t}/onerror'); parent.document.title = 'pwned by onerror'">
<script>fetch('${t}/script-ran'); new Image().src = '${t}/script-img'; parent.document.title = 'pwned by script'; document.body.dataset.ran = 'yes'</script>
</body></html>`
    const send = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      ignoreTLS: true,
    } as any)
    try {
      await send.sendMail({
        from: '"Example Service" <hello@service.example>',
        to: `reader@${DOMAIN}`,
        subject: 'Your account is ready',
        text: 'Welcome aboard.\n\nGet started: https://example.com/start?from=mail&x=1\n\n-- \nThe Example team',
        html,
        attachments: [{ filename: 'welcome.txt', content: 'Thanks for signing up.\n', contentType: 'text/plain' }],
      })
      // A second one, so the list has a read and an unread row.
      await send.sendMail({
        from: 'news@service.example',
        to: `reader@${DOMAIN}`,
        subject: 'Weekly digest',
        text: 'Nothing new this week.',
      })
    } finally {
      send.close()
    }

    await page.reload()
    const rows = page.locator('table.mail-messages tbody tr')
    expect(await rows.count()).toBe(2)
    expect(await rows.nth(0).textContent()).toContain('Weekly digest')
    expect(await rows.nth(1).textContent()).toContain('Example Service')
    await check('dash-mailbox')

    await Promise.all([
      page.waitForURL(/\/dashboard\/mail\/reader@mail\.test\/\d+$/),
      page.getByRole('link', { name: 'Your account is ready' }).click(),
    ])
    expect(await page.locator('h1').textContent()).toBe('Your account is ready')
    expect(await page.locator('.mail-meta').textContent()).toContain('hello@service.example')
    expect(await page.locator('.mail-files a').textContent()).toBe('welcome.txt')
    expect(await page.locator('.mail-links a').getAttribute('href')).toBe('https://example.com/start?from=mail&x=1')
    expect(await page.locator('.mail-note').textContent()).toContain('remote content')

    // The HTML is shown (its inline style applied) in the frame, and its script did not run.
    const frame = page.frameLocator('iframe.mail-html')
    expect(await frame.locator('#mail-h1').textContent()).toBe('Your account is ready')
    expect(await frame.locator('.lead').evaluate((el) => getComputedStyle(el).color)).toBe('rgb(0, 170, 85)')
    expect(await frame.locator('body').getAttribute('data-ran')).toBeNull()
    expect(await page.locator('iframe.mail-html').getAttribute('sandbox')).toBe('')
    await check('dash-message')

    // The text is the Text view's (a link to the same page with ?view=text); back to the HTML after.
    await Promise.all([page.waitForURL(/\?view=text$/), page.getByRole('link', { name: 'Text', exact: true }).click()])
    expect(await page.locator('pre.mail-text').textContent()).toContain('Welcome aboard.')
    await page.goBack()

    // After all that (axe, eight screenshots at two widths), nothing reached the tracker, the dashboard's title
    // is its own (the mail's script would have made it "pwned …"), and the frame is still the message (no
    // meta refresh took it away).
    expect(await page.title()).toBe('Your account is ready · linkbox')
    expect(page.frames().map((f) => f.url())).toContain(page.url() + '/html')
    expect(trackerHits).toEqual([])
    // What the mail asked for was refused by the frame's CSP in the browser (scripts never ran, so never asked).
    expect([...blockedByCsp].map((u) => new URL(u).pathname).sort()).toEqual([
      '/bg.png',
      '/import.css',
      '/link.css',
      '/pixel.png',
    ])
  })

  test('the list: the address with its copy button, counts and unread', async () => {
    await page.goto(`${app.url}/dashboard/mail`)
    const row = page.locator('table.mail-boxes tbody tr').first()
    expect(await row.locator('a').textContent()).toBe(`reader@${DOMAIN}`)
    expect(await row.locator('button.copy').isVisible()).toBe(true) // app.js shows the copy buttons
    expect(await row.locator('td').nth(3).textContent()).toBe('2')
    expect(await row.locator('.badge').textContent()).toBe('1')
    await check('dash-mail-list')
    expect(trackerHits).toEqual([])
  })
})

describe('webhooks', () => {
  let secret: string

  test('no endpoints yet', async () => {
    await page.goto(`${app.url}/dashboard/webhooks`)
    expect(await page.locator('main').textContent()).toContain('No endpoints yet')
    expect(await page.isChecked('input[value="link.clicked"]')).toBe(false)
    expect(await page.isChecked('input[value="mail.received"]')).toBe(true)
    await check('dash-webhooks-empty')
  })

  test('add an endpoint: the secret shown once; a test event delivered and signed with it; in the log', async () => {
    await page.fill('#wh-url', `${receiver.url}/hooks/linkbox`)
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/webhooks`),
      page.click('form.wh-form button[type=submit]'),
    ])
    expect(await page.locator('h1').textContent()).toBe('Endpoint added')
    secret = await page.inputValue('#wh-secret')
    expect(secret).toMatch(/^whsec_/)
    expect(await page.locator('#secret-warning').textContent()).toContain('shown only this once')
    await check('dash-webhook-created')

    await Promise.all([
      page.waitForURL(/\/dashboard\/webhooks\/\d+$/),
      page.getByRole('link', { name: 'Open its delivery log' }).click(),
    ])
    expect(await page.content()).not.toContain(secret)
    expect(await page.locator('main').textContent()).toContain('Nothing sent yet')
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Send a test event' }).click()])
    expect(await page.locator('.notice.ok').textContent()).toContain('A test event (msg_')

    // The deliverer runs (the app listens): the receiver gets it, signed with the secret the page showed.
    await until(() => received.length > 0, 'the test delivery')
    const got = received[0]!
    const payload = new Webhook(secret).verify(got.body, got.headers) as { type: string; data: { url: string } }
    expect(payload.type).toBe('webhook.test')
    expect(payload.data.url).toBe(`${receiver.url}/hooks/linkbox`)

    // The log shows it delivered (the row is written just after the answer: reload until it is).
    await until(async () => {
      await page.reload()
      return (await page
        .locator('table.wh-log tbody tr')
        .first()
        .textContent()
        .catch(() => ''))!.includes('ok')
    }, 'the delivery in the log')
    const row = page.locator('table.wh-log tbody tr').first()
    expect(await row.locator('td').nth(1).textContent()).toBe('webhook.test')
    expect(await row.locator('td').nth(2).textContent()).toBe('ok')
    expect(await row.locator('td').nth(4).textContent()).toBe('200')
    await check('dash-webhook-log')

    // Redeliver it: the same webhook-id again.
    await Promise.all([page.waitForLoadState('load'), row.getByRole('button', { name: /^Redeliver event/ }).click()])
    expect(await page.locator('.notice.ok').textContent()).toContain('will be sent again')
    await until(() => received.length > 1, 'the redelivery')
    expect(received[1]!.headers['webhook-id']).toBe(got.headers['webhook-id'])
  })

  test('the list, and deleting after a confirmation', async () => {
    await page.goto(`${app.url}/dashboard/webhooks`)
    const row = page.locator('table.wh-list tbody tr')
    expect(await row.count()).toBe(1)
    expect(await row.locator('.state').textContent()).toBe('Active')
    await check('dash-webhooks')

    await Promise.all([page.waitForURL(/\/delete$/), row.getByRole('link', { name: /^Delete the endpoint/ }).click()])
    expect(await page.locator('h1').textContent()).toBe('Delete this endpoint?')
    await check('dash-webhook-delete')
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/webhooks`),
      page.getByRole('button', { name: 'Delete endpoint' }).click(),
    ])
    expect(await page.locator('.notice.ok').textContent()).toContain('is deleted')
    expect(await page.locator('main').textContent()).toContain('No endpoints yet')
  })
})
