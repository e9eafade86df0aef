// The dashboard's live inbox over real sockets: GET /dashboard/mail/<address>/events is a Server-Sent
// Events stream for the signed-in owner. A message sent over real SMTP arrives on it as the row the page
// renders (escaped); a reconnect with Last-Event-ID gets what it missed and nothing twice; the streams are
// bounded per account; a deleted mailbox ends its streams; a client that goes away is forgotten; and the
// server's close() ends open streams instead of waiting for them. The page in Chromium is
// test/browser/mail-live.test.ts's.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import nodemailer from 'nodemailer'
import { createLinkbox, type Linkbox } from '../../src/app/app'
import { MAX_WATCHERS_PER_ACCOUNT } from '../../src/mail/service'
import { tempDir, testConfig } from '../support/app'
import { overSocket, postForm, signIn, type SignedIn } from '../support/dashboard'

setDefaultTimeout(30_000)

const DOMAIN = 'mail.test'

let dir: string
let box: Linkbox
let url: string
let send: ReturnType<typeof nodemailer.createTransport>
let alice: SignedIn
let bob: SignedIn

beforeAll(async () => {
  dir = tempDir()
  box = createLinkbox(
    testConfig(dir, { server: { host: '127.0.0.1', port: 0 }, mail: { domains: [DOMAIN], smtp_host: '127.0.0.1' } }),
    { smtpPort: 0 },
  )
  url = `http://127.0.0.1:${box.listen().port}`
  const port = (await box.startSmtp())!.port
  send = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true } as any)
  await box.accounts.createAccount({ name: 'alice', password: 'alice password' })
  await box.accounts.createAccount({ name: 'bob', password: 'bob password' })
  alice = await signIn(overSocket(url), 'alice', 'alice password')
  bob = await signIn(overSocket(url), 'bob', 'bob password')
  for (const name of ['live', 'bounded', 'doomed', 'closing'])
    await postForm(overSocket(url), alice, '/dashboard/mail', { local: name, domain: DOMAIN })
})
afterAll(async () => {
  send?.close()
  await box?.close({ graceMs: 1000 })
  rmSync(dir, { recursive: true, force: true })
})

async function deliver(to: string, subject: string): Promise<number> {
  const info = await send.sendMail({
    from: '"Sender <x>" <sender@example.org>',
    to,
    subject,
    text: `body of ${subject}`,
  })
  return Number(/stored as (\d+)/.exec(info.response)![1])
}

/** An open event stream: what it has sent so far, waiting for more, and closing it. */
async function open(who: SignedIn, address: string, headers: Record<string, string> = {}) {
  const abort = new AbortController()
  const res = await fetch(`${url}/dashboard/mail/${address}/events`, {
    headers: { cookie: who.cookie, ...headers },
    signal: abort.signal,
  })
  let text = ''
  let ended = false
  const reading = (async () => {
    if (!res.body) return
    const reader = res.body.getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
      }
    } catch {}
    ended = true
  })()
  return {
    res,
    get text() {
      return text
    },
    get ended() {
      return ended
    },
    /** Waits until what was sent matches (a delivery is another party: never a fixed sleep). */
    async until(pattern: RegExp, ms = 5000) {
      const deadline = Date.now() + ms
      while (!pattern.test(text)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; got: ${text}`)
        await Bun.sleep(10)
      }
    },
    async endedWithin(ms: number) {
      await Promise.race([reading, Bun.sleep(ms)])
      return ended
    },
    close: () => abort.abort(),
  }
}

/** The `mail` events sent so far, parsed. */
const mailEvents = (text: string) =>
  [...text.matchAll(/id: (\d+)\nevent: mail\ndata: (.*)\n\n/g)].map((m) => ({
    id: Number(m[1]),
    data: JSON.parse(m[2]!),
  }))

describe('the event stream', () => {
  test('a message sent over SMTP arrives as the escaped row the page renders, with the counts', async () => {
    const address = `live@${DOMAIN}`
    const stream = await open(alice, address)
    expect(stream.res.status).toBe(200)
    expect(stream.res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(stream.res.headers.get('cache-control')).toBe('no-store')
    await stream.until(/retry: 3000\n\n/)
    const id = await deliver(address, '<img src=x onerror=alert(1)>')
    await stream.until(/event: mail\n/)
    const [event] = mailEvents(stream.text)
    expect(event!.id).toBe(id)
    expect(event!.data.unread).toBe(1)
    expect(event!.data.count).toBe(1)
    expect(event!.data.messages.map((m: { id: number }) => m.id)).toEqual([id])
    const html = event!.data.messages[0].html as string
    expect(html).toContain(`<a href="/dashboard/mail/${address}/${id}">&lt;img src=x onerror=alert(1)&gt;</a>`)
    expect(html).toContain('Sender &lt;x&gt;')
    expect(html).not.toContain('<img')
    // The same markup as the page's row.
    const pageHtml = await (
      await fetch(`${url}/dashboard/mail/${address}`, { headers: { cookie: alice.cookie } })
    ).text()
    expect(pageHtml).toContain(html)
    stream.close()
  })

  test('reconnecting with Last-Event-ID: the messages after it, once; none before', async () => {
    const address = `live@${DOMAIN}`
    const first = await deliver(address, 'missed one')
    const second = await deliver(address, 'missed two')
    const stream = await open(alice, address, { 'last-event-id': String(first - 1) })
    await stream.until(/event: mail\n/)
    const events = mailEvents(stream.text)
    expect(events).toHaveLength(1)
    expect(events[0]!.id).toBe(second)
    expect(events[0]!.data.messages.map((m: { id: number }) => m.id)).toEqual([second, first])
    // A message after that: only it.
    const third = await deliver(address, 'live three')
    await stream.until(new RegExp(`id: ${third}\n`))
    expect(mailEvents(stream.text)[1]!.data.messages.map((m: { id: number }) => m.id)).toEqual([third])
    stream.close()
  })

  test('no session: 401; another account: 404 as for a mailbox that does not exist', async () => {
    const none = await fetch(`${url}/dashboard/mail/live@${DOMAIN}/events`)
    expect(none.status).toBe(401)
    expect(await none.text()).toBe('Sign in first.')
    const other = await fetch(`${url}/dashboard/mail/live@${DOMAIN}/events`, { headers: { cookie: bob.cookie } })
    expect(other.status).toBe(404)
    expect(await other.text()).toBe('Not found')
    const missing = await fetch(`${url}/dashboard/mail/nobody@${DOMAIN}/events`, { headers: { cookie: alice.cookie } })
    expect(missing.status).toBe(404)
  })

  test(`at most ${MAX_WATCHERS_PER_ACCOUNT} streams an account: one more is 503; a closed one is forgotten`, async () => {
    await Bun.sleep(100) // the streams the tests above closed are gone by now
    const start = box.mail.watching
    const address = `bounded@${DOMAIN}`
    const streams = []
    for (let i = start; i < MAX_WATCHERS_PER_ACCOUNT; i++) streams.push(await open(alice, address))
    for (const s of streams) expect(s.res.status).toBe(200)
    expect(box.mail.watching).toBe(MAX_WATCHERS_PER_ACCOUNT)
    const metrics = await (await fetch(`${url}/metrics`)).text()
    expect(metrics).toMatch(new RegExp(`^linkbox_mail_live_views ${MAX_WATCHERS_PER_ACCOUNT}$`, 'm'))
    const over = await fetch(`${url}/dashboard/mail/${address}/events`, { headers: { cookie: alice.cookie } })
    expect(over.status).toBe(503)
    expect(over.headers.get('retry-after')).toBe('5')
    expect(await over.text()).toContain('Too many mailboxes are open at once')
    // Another account is not held up by alice's.
    await postForm(overSocket(url), bob, '/dashboard/mail', { local: 'bobs', domain: DOMAIN })
    const bobs = await open(bob, `bobs@${DOMAIN}`)
    expect(bobs.res.status).toBe(200)
    bobs.close()
    // A client that goes away is forgotten (its slot is free again).
    streams.pop()!.close()
    const deadline = Date.now() + 5000
    while (box.mail.watching > MAX_WATCHERS_PER_ACCOUNT - 1 && Date.now() < deadline) await Bun.sleep(10)
    const again = await open(alice, address)
    expect(again.res.status).toBe(200)
    again.close()
    for (const s of streams) s.close()
    while (box.mail.watching > 0 && Date.now() < deadline + 5000) await Bun.sleep(10)
    expect(box.mail.watching).toBe(0)
  })

  test('deleting the mailbox ends its streams with `event: gone`', async () => {
    const address = `doomed@${DOMAIN}`
    const stream = await open(alice, address)
    await stream.until(/retry: 3000/)
    const res = await postForm(overSocket(url), alice, `/dashboard/mail/${address}/delete`, {})
    expect(res.status).toBe(303)
    await stream.until(/event: gone\n/)
    expect(await stream.endedWithin(2000)).toBe(true)
  })
})

describe('shutdown', () => {
  test('close() ends open streams and does not wait out its grace for them', async () => {
    const address = `closing@${DOMAIN}`
    const stream = await open(alice, address)
    await stream.until(/retry: 3000/)
    send.close()
    const started = Date.now()
    await box.close({ graceMs: 10_000 })
    expect(Date.now() - started).toBeLessThan(3000)
    expect(await stream.endedWithin(2000)).toBe(true)
  })
})
