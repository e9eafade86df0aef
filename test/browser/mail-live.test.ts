// Temporary mail for daily use, in real Chromium: an open mailbox page shows a message sent over real SMTP
// within two seconds of its 250, without a navigation or a reload, with the unread count in the title and
// a subject full of markup shown as text; the message's views (text, HTML, headers, raw source) are links
// that survive reload and back and work from the keyboard; mark unread; delete one message, a selection,
// and the whole mailbox after its confirmation page (its files go from disk and another account may take
// the address). Without JavaScript the same page works and a reload shows new mail. Every page: axe in
// both themes and at 390 px, screenshots.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { Browser, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp, chromePage } from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

const DOMAIN = 'mail.test'
const ADDRESS = `daily@${DOMAIN}`
const HOSTILE = '<img src=x onerror=alert(1)>'

let browser: Browser
let page: Page
let app: RunningApp
let send: ReturnType<typeof nodemailer.createTransport>
let aliceKey: string
let bobKey: string
const dialogs: string[] = []

beforeAll(async () => {
  app = startApp({ mail: { domains: [DOMAIN], smtp_host: '127.0.0.1' } }, { smtpPort: 0 })
  const port = (await app.startSmtp())!.port
  send = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true } as any)
  aliceKey = (await app.accounts.createAccount({ name: 'alice', password: 'alice password' })).key.key
  bobKey = (await app.accounts.createAccount({ name: 'bob' })).key.key
  browser = await launchBrowser()
  page = await chromePage(browser)
  page.on('dialog', (d) => {
    dialogs.push(d.message())
    void d.dismiss()
  })
  await signInBrowser(page, app.url, 'alice', 'alice password')
})
afterAll(async () => {
  send?.close()
  await browser?.close()
  await app?.stop()
})

async function deliver(subject: string, opts: { html?: string; big?: boolean } = {}): Promise<number> {
  const info = await send.sendMail({
    from: '"Example Sender" <sender@example.org>',
    to: ADDRESS,
    subject,
    text: `Hello from ${subject}.\nSecond line.`,
    ...(opts.html ? { html: opts.html } : {}),
    // Past the inline limit: the message's bytes are files under <data_dir>/mail.
    ...(opts.big ? { attachments: [{ filename: 'big.bin', content: Buffer.alloc(300 * 1024, 1) }] } : {}),
  })
  return Number(/stored as (\d+)/.exec(info.response)![1])
}

async function api(method: string, fields: Record<string, string>, key = aliceKey, verb: 'GET' | 'POST' = 'GET') {
  const qs = new URLSearchParams(fields)
  const res =
    verb === 'GET'
      ? await fetch(`${app.url}/api/${method}?${qs}`, { headers: { 'x-api-key': key } })
      : await fetch(`${app.url}/api/${method}`, { method: 'POST', headers: { 'x-api-key': key }, body: qs })
  return { status: res.status, body: (await res.json()) as any }
}

const rows = () => page.locator('#mail-rows tr')
const mailDirFiles = () => {
  const dir = join(app.config.data_dir, 'mail')
  return existsSync(dir)
    ? (readdirSync(dir, { recursive: true }) as string[]).filter(
        (p) => !p.startsWith('incoming') && /\.(eml|bin|json)$/.test(p),
      )
    : []
}

describe('the live inbox', () => {
  test('an empty mailbox page; a message arrives within 2 s of its 250, without navigation; the title counts it; markup in the subject is text', async () => {
    await page.goto(`${app.url}/dashboard/mail`)
    await page.fill('#mail-local', 'daily')
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/mail/${ADDRESS}`),
      page.click('form.mail-new button[type=submit]'),
    ])
    expect(await page.locator('#mail-empty').isVisible()).toBe(true)
    expect(await page.title()).toBe(`${ADDRESS} · linkbox`)
    // A marker a reload or navigation would wipe; and the stream is open before the mail is sent.
    await page.evaluate(() => ((window as any).__stillHere = 'yes'))
    const url = page.url()
    const deadline = Date.now() + 5000
    while (app.mail.watching === 0 && Date.now() < deadline) await Bun.sleep(10)
    expect(app.mail.watching).toBe(1)

    const id = await deliver(HOSTILE)
    const heard = Date.now()
    await page.locator('#mail-rows tr').first().waitFor({ state: 'visible', timeout: 2000 })
    expect(Date.now() - heard).toBeLessThan(2000)
    expect(page.url()).toBe(url)
    expect(await page.evaluate(() => (window as any).__stillHere)).toBe('yes')
    expect(await page.locator('#mail-empty').isVisible()).toBe(false)
    const link = rows().first().locator('td.m-subject a')
    expect(await link.textContent()).toBe(HOSTILE)
    expect(await link.getAttribute('href')).toBe(`/dashboard/mail/${ADDRESS}/${id}`)
    expect(await page.locator('#mail-rows img').count()).toBe(0)
    expect(await rows().first().getAttribute('class')).toBe('unread')
    await page.waitForFunction((t) => document.title === t, `(1) ${ADDRESS} · linkbox`, { timeout: 2000 })
    expect(await page.locator('#mb-count').textContent()).toBe('1 message')
    expect(await page.locator('#mail-live-status').textContent()).toBe('A new message arrived.')

    // A second one goes on top; the count follows.
    await deliver('Your sign-in code', { html: '<p>Your code is <b>424242</b>.</p>' })
    await page.waitForFunction((t) => document.title === t, `(2) ${ADDRESS} · linkbox`, { timeout: 2000 })
    expect(await rows().count()).toBe(2)
    expect(await rows().first().locator('td.m-subject a').textContent()).toBe('Your sign-in code')
    expect(await page.evaluate(() => (window as any).__stillHere)).toBe('yes')
    expect(dialogs).toEqual([])
    // The rows the script added are the rows the server renders: a reload shows the same list.
    const live = await page.locator('#mail-rows').innerHTML()
    await page.reload()
    expect((await page.locator('#mail-rows').innerHTML()).replace(/\s+/g, ' ')).toBe(live.replace(/\s+/g, ' '))
    expect(await page.title()).toBe(`(2) ${ADDRESS} · linkbox`)
    expect(dialogs).toEqual([])
    await checkPage(page, 'mail-live-mailbox')
  })
})

describe('a message', () => {
  test('the views are tabs (links): each shows its content; reload and back keep them; the keyboard reaches them', async () => {
    await page.goto(`${app.url}/dashboard/mail/${ADDRESS}`)
    await Promise.all([page.waitForURL(/\/\d+$/), page.getByRole('link', { name: 'Your sign-in code' }).click()])
    const messageUrl = page.url()
    const tabs = page.getByRole('navigation', { name: 'Show the message as' })
    expect(await tabs.getByRole('link').allTextContents()).toEqual(['Text', 'HTML', 'Headers', 'Raw source'])
    expect(await tabs.locator('[aria-current=page]').textContent()).toBe('HTML')
    expect(await page.frameLocator('iframe.mail-html').locator('b').textContent()).toBe('424242')
    await checkPage(page, 'mail-message-html')

    await Promise.all([page.waitForURL(`${messageUrl}?view=text`), tabs.getByRole('link', { name: 'Text' }).click()])
    expect(await page.locator('pre.mail-text').textContent()).toContain('Hello from Your sign-in code.')
    expect(await page.locator('iframe').count()).toBe(0)

    // From the keyboard: focus the Headers tab and press Enter.
    await tabs.getByRole('link', { name: 'Headers' }).focus()
    await Promise.all([page.waitForURL(`${messageUrl}?view=headers`), page.keyboard.press('Enter')])
    expect(await page.locator('table.mail-headers').textContent()).toContain('Subject')
    expect(await page.locator('table.mail-headers tr', { hasText: 'Subject' }).locator('td').textContent()).toBe(
      'Your sign-in code',
    )
    await checkPage(page, 'mail-message-headers')

    await Promise.all([
      page.waitForURL(`${messageUrl}?view=source`),
      tabs.getByRole('link', { name: 'Raw source' }).click(),
    ])
    expect(await page.locator('pre.mail-source').textContent()).toContain('Subject: Your sign-in code')
    expect(await page.locator('pre.mail-source').textContent()).toContain('<p>Your code is <b>424242</b>.</p>')
    await checkPage(page, 'mail-message-source')
    await page.reload()
    expect(await tabs.locator('[aria-current=page]').textContent()).toBe('Raw source')
    await page.goBack()
    expect(page.url()).toBe(`${messageUrl}?view=headers`)
    expect(await tabs.locator('[aria-current=page]').textContent()).toBe('Headers')
    await page.goBack()
    expect(await tabs.locator('[aria-current=page]').textContent()).toBe('Text')
    expect(await page.locator('pre.mail-text').isVisible()).toBe(true)
  })

  test('mark unread: back on the mailbox, said so, unread in the list and the title', async () => {
    await page.goto(`${app.url}/dashboard/mail/${ADDRESS}`)
    expect(await page.title()).toBe(`(1) ${ADDRESS} · linkbox`) // the sign-in code was read above
    await Promise.all([page.waitForURL(/\/\d+$/), page.getByRole('link', { name: 'Your sign-in code' }).click()])
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/mail/${ADDRESS}`),
      page.getByRole('button', { name: 'Mark unread' }).click(),
    ])
    expect(await page.locator('.notice.ok').textContent()).toBe('The message is marked unread.')
    expect(await page.title()).toBe(`(2) ${ADDRESS} · linkbox`)
    expect(await rows().first().getAttribute('class')).toBe('unread')
    // Reload: the notice was for one page only (the redirect's), the state stays.
    await page.reload()
    expect(await page.locator('.notice').count()).toBe(0)
    expect(await page.title()).toBe(`(2) ${ADDRESS} · linkbox`)
  })
})

describe('deleting', () => {
  test('one message from its page: gone from the page and from messages.json; its files gone from disk', async () => {
    const id = await deliver('Delete me', { big: true })
    await page.locator(`#mail-rows a[href$="/${id}"]`).waitFor({ timeout: 2000 }) // arrived live
    const filesBefore = mailDirFiles()
    expect(filesBefore.some((f) => f.endsWith('raw.eml'))).toBe(true)
    await Promise.all([page.waitForURL(/\/\d+$/), page.getByRole('link', { name: 'Delete me' }).click()])
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/mail/${ADDRESS}`),
      page.getByRole('button', { name: 'Delete', exact: true }).click(),
    ])
    expect(await page.locator('.notice.ok').textContent()).toBe('The message is deleted.')
    expect(await page.locator(`#mail-rows a[href$="/${id}"]`).count()).toBe(0)
    const list = await api('messages.json', { address: ADDRESS })
    expect(list.status).toBe(200)
    expect(list.body.return.messages.map((m: { id: number }) => m.id)).not.toContain(id)
    expect(mailDirFiles().filter((f) => f.endsWith('raw.eml'))).toEqual([])
    // Back goes to the message's page, which is gone now: the 404 page, not an error.
    await page.goBack()
    expect(await page.locator('h1').textContent()).toBe('Not found')
  })

  test('a selection: tick two, delete them; the rest stays', async () => {
    await page.goto(`${app.url}/dashboard/mail/${ADDRESS}`)
    const a = await deliver('Pick A')
    const b = await deliver('Pick B')
    await page.locator(`#mail-rows a[href$="/${b}"]`).waitFor({ timeout: 2000 })
    const before = await rows().count()
    await page.getByRole('checkbox', { name: 'Select: Pick A' }).check()
    await page.getByRole('checkbox', { name: 'Select: Pick B' }).check()
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/mail/${ADDRESS}`),
      page.getByRole('button', { name: 'Delete selected' }).click(),
    ])
    expect(await page.locator('.notice.ok').textContent()).toBe('2 messages deleted.')
    expect(await rows().count()).toBe(before - 2)
    const ids = (await api('messages.json', { address: ADDRESS })).body.return.messages.map((m: { id: number }) => m.id)
    expect(ids).not.toContain(a)
    expect(ids).not.toContain(b)
    expect(ids).toHaveLength(before - 2)
    // "Select all" ticks every row, one that arrived live included; unticked, it clears them.
    await deliver('Pick C')
    await page.locator('#mail-rows tr', { hasText: 'Pick C' }).waitFor({ timeout: 2000 })
    await page.getByRole('checkbox', { name: 'Select all' }).check()
    const boxes = page.locator('#mail-rows input[name=id]')
    expect(await boxes.count()).toBe(before - 1)
    for (const box of await boxes.all()) expect(await box.isChecked()).toBe(true)
    await page.getByRole('checkbox', { name: 'Select all' }).uncheck()
    for (const box of await boxes.all()) expect(await box.isChecked()).toBe(false)
  })

  test('the mailbox, after a confirmation page: its files go, and another account may take the address', async () => {
    await deliver('Last words', { big: true })
    await page.goto(`${app.url}/dashboard/mail/${ADDRESS}`)
    expect(mailDirFiles().length).toBeGreaterThan(0)
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/mail/${ADDRESS}/delete`),
      page.getByRole('link', { name: 'Delete mailbox…' }).click(),
    ])
    expect(await page.locator('h1').textContent()).toBe('Delete this mailbox?')
    await checkPage(page, 'mail-delete-confirm')
    // Cancel goes back, nothing deleted.
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/mail/${ADDRESS}`),
      page.getByRole('link', { name: 'Cancel' }).click(),
    ])
    expect((await api('mailbox.json', { address: ADDRESS })).status).toBe(200)
    await page.goBack()
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/mail`),
      page.getByRole('button', { name: 'Delete mailbox' }).click(),
    ])
    expect(await page.locator('.notice.ok').textContent()).toMatch(
      new RegExp(`^${ADDRESS.replace('.', '\\.')} is deleted, with its \\d+ messages?\\.$`),
    )
    expect(await page.locator('main').textContent()).toContain('No mailboxes yet')
    expect(mailDirFiles()).toEqual([])
    expect((await api('messages.json', { address: ADDRESS })).status).toBe(404)
    const bob = await api('mailbox.json', { address: ADDRESS }, bobKey)
    expect(bob.status).toBe(200)
    expect(bob.body.return).toMatchObject({ address: ADDRESS, messages: 0 })
    expect(Date.parse(bob.body.return.created)).toBeGreaterThan(Date.now() - 60_000)
    // Back to the confirmation page: the mailbox is bob's now, so it is not found for alice.
    await page.goBack()
    expect(await page.locator('h1').textContent()).toBe('Not found')
  })
})

describe('without JavaScript', () => {
  test('the mailbox page works, and a reload shows new mail', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, userAgent: CHROME_UA })
    const plain = await context.newPage()
    try {
      await signInBrowser(plain, app.url, 'alice', 'alice password')
      await plain.goto(`${app.url}/dashboard/mail`)
      await plain.fill('#mail-local', 'nojs')
      await Promise.all([
        plain.waitForURL(`${app.url}/dashboard/mail/nojs@${DOMAIN}`),
        plain.click('form.mail-new button[type=submit]'),
      ])
      expect(await plain.locator('#mail-empty').isVisible()).toBe(true)
      await send.sendMail({ from: 'sender@example.org', to: `nojs@${DOMAIN}`, subject: HOSTILE, text: 'plain' })
      await plain.reload()
      expect(await plain.locator('#mail-rows tr td.m-subject a').textContent()).toBe(HOSTILE)
      expect(await plain.title()).toBe(`(1) nojs@${DOMAIN} · linkbox`)
      // The confirmation step is a page and a form: it works without a script.
      await Promise.all([plain.waitForURL(/\/delete$/), plain.getByRole('link', { name: 'Delete mailbox…' }).click()])
      await Promise.all([
        plain.waitForURL(`${app.url}/dashboard/mail`),
        plain.getByRole('button', { name: 'Delete mailbox' }).click(),
      ])
      expect(await plain.locator('.notice.ok').textContent()).toContain(`nojs@${DOMAIN} is deleted`)
    } finally {
      await context.close()
    }
  })
})
