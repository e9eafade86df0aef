// The dashboard's Mailboxes section through the real app and SQLite file, with mail delivered over a real
// SMTP socket (nodemailer): the list and the form (errors tied to the field), a mailbox's messages, a
// message read in full (its views: text, HTML, headers, raw source), the HTML route's strict headers, the
// CSRF check, another account's mailbox, message and HTML answered with the same 404 as ones that do not
// exist; deleting (a message, a selection, the mailbox after its confirmation page) and "mark unread" as
// forms answered with a redirect; the live view's event stream.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import nodemailer from 'nodemailer'
import { headerFields, MAIL_HTML_HEADERS } from '../../src/dashboard/mail-view'
import { makeBox, type TestBox } from '../support/app'
import { follow, postForm, signIn, type SignedIn } from '../support/dashboard'

// Sockets and fsyncs: more than bun's default of 5 s on a slow disk.
setDefaultTimeout(30_000)

const DOMAIN = 'mail.test'
const OTHER_DOMAIN = 'other.test'

let box: TestBox
let port: number
let alice: SignedIn
let bob: SignedIn
let send: ReturnType<typeof nodemailer.createTransport>

beforeAll(async () => {
  box = await makeBox({ mail: { domains: [DOMAIN, OTHER_DOMAIN], smtp_host: '127.0.0.1' } }, { smtpPort: 0 })
  port = (await box.startSmtp())!.port
  await box.accounts.createAccount({ name: 'alice', password: 'alice password' })
  await box.accounts.createAccount({ name: 'bob', password: 'bob password' })
  alice = await signIn(box, 'alice', 'alice password')
  bob = await signIn(box, 'bob', 'bob password')
  send = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true } as any)
})
afterAll(async () => {
  send?.close()
  await box?.cleanup()
})

const page = (who: SignedIn, path: string) => box.request(path, { headers: { cookie: who.cookie } })
const mailboxRows = () =>
  box.db.query('SELECT address, account_id FROM mailboxes ORDER BY id').all() as {
    address: string
    account_id: number
  }[]

async function newMailbox(who: SignedIn, local: string, domain = DOMAIN): Promise<string> {
  const res = await postForm(box, who, '/dashboard/mail', { local, domain })
  expect(res.status).toBe(303)
  return decodeURIComponent(res.headers.get('location')!.replace('/dashboard/mail/', ''))
}

describe('the list and the form', () => {
  test('no mailboxes: an empty list and the form, the domains to choose from', async () => {
    const res = await page(alice, '/dashboard/mail')
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('No mailboxes yet')
    expect(html).toContain(`<option value="${DOMAIN}" selected>@${DOMAIN}</option>`)
    expect(html).toContain(`<option value="${OTHER_DOMAIN}">@${OTHER_DOMAIN}</option>`)
    expect(html).toContain('aria-current="page">Mailboxes')
  })

  test('a name makes that address (303 to its page, with a notice); a random one goes on the chosen domain', async () => {
    const res = await postForm(box, alice, '/dashboard/mail', { local: 'Signup-Test', domain: DOMAIN })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe(`/dashboard/mail/signup-test@${DOMAIN}`)
    const notice = res.headers.get('set-cookie')!.match(/lb_notice=([^;]+)/)![1]!
    const mailboxPage = await box.request(res.headers.get('location')!, {
      headers: { cookie: `${alice.cookie}; lb_notice=${notice}` },
    })
    expect(mailboxPage.status).toBe(200)
    const html = await mailboxPage.text()
    expect(html).toContain(`signup-test@${DOMAIN} is ready until`)
    expect(html).toContain('No mail yet')
    expect(html).toContain('data-copy="mb-address"')

    const random = await newMailbox(alice, '', OTHER_DOMAIN)
    expect(random).toMatch(new RegExp(`^[a-z0-9]{10}@${OTHER_DOMAIN.replace('.', '\\.')}$`))
    const aliceId = (box.db.query("SELECT id FROM accounts WHERE name = 'alice'").get() as { id: number }).id
    expect(
      mailboxRows()
        .filter((r) => r.account_id === aliceId)
        .map((r) => r.address),
    ).toEqual([`signup-test@${DOMAIN}`, random])

    // Newest first, each with a copy button, and the counts.
    const list = await (await page(alice, '/dashboard/mail')).text()
    expect(list.indexOf(random)).toBeLessThan(list.indexOf(`signup-test@${DOMAIN}`))
    expect(list).toContain('<button type="button" class="copy secondary small" data-copy="mb-0"')
    expect(list).toContain(`<a href="/dashboard/mail/${random}" id="mb-0">${random}</a>`)
  })

  test('asking again for an address you have renews it: still one row', async () => {
    const before = mailboxRows().length
    expect(await newMailbox(alice, 'signup-test')).toBe(`signup-test@${DOMAIN}`)
    expect(mailboxRows().length).toBe(before)
  })

  test('a bad name: 303 back to the form, the message tied to the field, what was typed kept, nothing made', async () => {
    const before = mailboxRows().length
    const posted = await postForm(box, alice, '/dashboard/mail', { local: 'no spaces<b>', domain: DOMAIN })
    expect(posted.headers.get('location')).toMatch(/^\/dashboard\/mail\?form=[A-Za-z0-9_-]{22}$/)
    const res = await follow(box, posted, alice.cookie)
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('aria-invalid="true"')
    expect(html).toContain('aria-describedby="mail-local-error mail-local-hint"')
    expect(html).toContain('<span class="error" id="mail-local-error">The name must be 1 to 64 characters')
    expect(html).toContain('value="no spaces&lt;b&gt;"')
    expect(mailboxRows().length).toBe(before)

    const domain = await follow(
      box,
      await postForm(box, alice, '/dashboard/mail', { local: 'x', domain: 'evil.example' }),
      alice.cookie,
    )
    expect(await domain.text()).toContain('Choose one of the domains listed.')
  })

  test("another account's address: the service's message on the field (after the 303 back)", async () => {
    const res = await follow(
      box,
      await postForm(box, bob, '/dashboard/mail', { local: 'signup-test', domain: DOMAIN }),
      bob.cookie,
    )
    const html = await res.text()
    expect(html).toContain(`The address signup-test@${DOMAIN} belongs to another account.`)
    expect(html).toContain('aria-invalid="true"')
    expect(html).not.toContain(`href="/dashboard/mail/signup-test@${DOMAIN}"`)
  })

  test('without the form token, or from another site: 403 and no mailbox', async () => {
    const before = mailboxRows().length
    for (const res of [
      await postForm(box, alice, '/dashboard/mail', { local: 'forged', domain: DOMAIN, _csrf: '' }),
      await postForm(box, alice, '/dashboard/mail', { local: 'forged', domain: DOMAIN, _csrf: alice.csrf + 'x' }),
      await postForm(
        box,
        alice,
        '/dashboard/mail',
        { local: 'forged', domain: DOMAIN },
        { origin: 'http://evil.example' },
      ),
      await box.request('/dashboard/mail', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice.cookie },
        body: `local=forged&domain=${DOMAIN}`,
      }),
    ])
      expect(res.status).toBe(403)
    expect(mailboxRows().length).toBe(before)
  })

  test('signed out: the pages send you to sign in; the HTML route answers 404', async () => {
    const res = await box.request('/dashboard/mail')
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/login?next=%2Fdashboard%2Fmail')
    expect((await box.request(`/dashboard/mail/signup-test@${DOMAIN}/1/html`)).status).toBe(404)
  })
})

describe('reading mail', () => {
  let address: string
  let id: number
  const HTML =
    '<html><body><h1>Hi</h1><p>Confirm <a href="https://example.com/confirm?t=1&amp;u=2">here</a></p>' +
    '<img src="https://tracker.example/pixel.png"><script>parent.document.title = "pwned"</script></body></html>'

  beforeAll(async () => {
    address = await newMailbox(alice, 'reader')
    const info = await send.sendMail({
      from: '"Sender <Name>" <sender@example.org>',
      to: address,
      cc: 'copy@example.net',
      subject: 'Welcome <script>alert(1)</script>',
      text: 'Hello & welcome.\n<b>not bold</b>\nhttps://example.com/confirm?t=1&u=2',
      html: HTML,
      attachments: [{ filename: 'notes <1>.txt', content: 'attached text\n', contentType: 'text/plain' }],
    })
    id = Number(/stored as (\d+)/.exec(info.response)![1])
  })

  test('the mailbox page lists it, unread, escaped, linking to the message', async () => {
    const res = await page(alice, `/dashboard/mail/${address}`)
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain(`<tr class="unread">`)
    expect(html).toContain(
      `<a href="/dashboard/mail/${address}/${id}">Welcome &lt;script&gt;alert(1)&lt;/script&gt;</a>`,
    )
    expect(html).toContain('Sender &lt;Name&gt;')
    expect(html).not.toContain('<script>alert(1)')
    expect(html).toContain('<span id="mb-count">1 message</span> ·')
    // The title counts it as unread; the live view's stream is named on the list.
    expect(html).toContain(`<title>(1) ${address} · linkbox</title>`)
    expect(html).toContain(`data-events="/dashboard/mail/${address}/events"`)
    expect(html).toContain(
      `<input type="checkbox" name="id" value="${id}" form="mail-select" aria-label="Select: Welcome &lt;script&gt;alert(1)&lt;/script&gt;">`,
    )
    // The list page counts it as unread.
    expect(await (await page(alice, '/dashboard/mail')).text()).toContain('<span class="badge count">1</span>')
  })

  test('the message page: headers, the text escaped in <pre>, links, attachments, and the HTML only in a sandboxed frame', async () => {
    const res = await page(alice, `/dashboard/mail/${address}/${id}`)
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('<h1 class="mail-subject">Welcome &lt;script&gt;alert(1)&lt;/script&gt;</h1>')
    expect(html).toContain('copy@example.net')
    // A message with HTML opens on its HTML view; the text is a tab (a link) away.
    expect(html).toContain(`<a href="/dashboard/mail/${address}/${id}?view=html" aria-current="page">HTML</a>`)
    expect(html).not.toContain('<pre class="mail-text">')
    const text = await (await page(alice, `/dashboard/mail/${address}/${id}?view=text`)).text()
    expect(text).toContain('<pre class="mail-text">Hello &amp; welcome.\n&lt;b&gt;not bold&lt;/b&gt;')
    expect(text).not.toContain('<iframe')
    expect(html).toContain(
      '<a href="https://example.com/confirm?t=1&amp;u=2" rel="noopener noreferrer nofollow" target="_blank">',
    )
    // The frame: sandbox with no allow-* at all, its own route; the mail's markup is nowhere in the page.
    const frame = /<iframe[^>]*>/.exec(html)![0]
    expect(frame).toContain(' sandbox ')
    expect(frame).not.toContain('allow')
    expect(frame).toContain(`src="/dashboard/mail/${address}/${id}/html"`)
    expect(frame).toContain('title="The message as sent: Welcome &lt;script&gt;')
    expect(html).toContain('remote content (images, fonts, styles from other sites) is blocked')
    expect(html).not.toContain('tracker.example')
    expect(html).not.toContain('parent.document')
    // The attachment: a signed link on this site that downloads the file.
    const att = /<a href="(\/mail\/attachment\/\d+\?[^"]+)" download>notes &lt;1&gt;.txt<\/a>/.exec(html)
    expect(att).not.toBeNull()
    const dl = await box.request(att![1]!.replaceAll('&amp;', '&'))
    expect(dl.status).toBe(200)
    expect(await dl.text()).toBe('attached text\n')
    // Reading it marked it seen.
    expect(box.db.query('SELECT seen FROM mail_messages WHERE id = ?').get(id)).toEqual({ seen: 1 })
    expect(await (await page(alice, `/dashboard/mail/${address}`)).text()).toContain('<tr class="seen">')
  })

  test('the HTML route: the HTML as sent, under exactly the strict headers', async () => {
    const res = await page(alice, `/dashboard/mail/${address}/${id}/html`)
    expect(res.status).toBe(200)
    expect((await res.text()).trimEnd()).toBe(HTML)
    expect(res.headers.get('content-security-policy')).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; frame-ancestors 'self'; sandbox",
    )
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    for (const [name, value] of Object.entries(MAIL_HTML_HEADERS)) expect(res.headers.get(name)).toBe(value)
  })

  test("another account's mailbox, message and HTML: the same 404 as ones that do not exist", async () => {
    for (const path of [`/dashboard/mail/${address}`, `/dashboard/mail/${address}/${id}`]) {
      const res = await page(bob, path)
      expect(res.status).toBe(404)
      const html = await res.text()
      expect(html).toContain('There is no such mailbox or message in your account.')
      expect(html).not.toContain('Welcome')
    }
    const frame = await page(bob, `/dashboard/mail/${address}/${id}/html`)
    expect(frame.status).toBe(404)
    expect(await frame.text()).toBe('Not found')
    expect(frame.headers.get('content-security-policy')).toBe(MAIL_HTML_HEADERS['content-security-policy']!)
    for (const path of [
      `/dashboard/mail/nobody@${DOMAIN}`,
      `/dashboard/mail/${address}/999999`,
      `/dashboard/mail/${address}/abc`,
      `/dashboard/mail/not an address`,
      `/dashboard/mail/x@unknown.example/1`,
    ])
      expect((await page(alice, path)).status).toBe(404)
    // A message of one of alice's mailboxes asked for through another of hers: 404 too.
    const other = await newMailbox(alice, 'second')
    expect((await page(alice, `/dashboard/mail/${other}/${id}`)).status).toBe(404)
    expect((await page(alice, `/dashboard/mail/${other}/${id}/html`)).status).toBe(404)
  })
})

describe('the views of a message', () => {
  let address: string
  let id: number
  let plainId: number

  beforeAll(async () => {
    address = await newMailbox(alice, 'views')
    const info = await send.sendMail({
      from: 'sender@example.org',
      to: address,
      subject: 'Views <b>bold</b>',
      headers: { 'X-Custom': 'folded\r\n  value <i>here</i>' },
      text: 'plain text body',
      html: '<p>html body</p>',
    })
    id = Number(/stored as (\d+)/.exec(info.response)![1])
    const plain = await send.sendMail({
      from: 'sender@example.org',
      to: address,
      subject: 'Only text',
      text: 'just text',
    })
    plainId = Number(/stored as (\d+)/.exec(plain.response)![1])
  })

  test('headers: each field of the source in order, unfolded and escaped', async () => {
    const html = await (await page(alice, `/dashboard/mail/${address}/${id}?view=headers`)).text()
    expect(html).toContain('aria-current="page">Headers</a>')
    expect(html).toContain('<tr><th scope="row">Subject</th><td>Views &lt;b&gt;bold&lt;/b&gt;</td></tr>')
    expect(html).toMatch(/<tr><th scope="row">X-Custom<\/th><td>folded +value &lt;i&gt;here&lt;\/i&gt;<\/td><\/tr>/)
    const fields = [...html.matchAll(/<th scope="row">([^<]+)<\/th>/g)].map((m) => m[1])
    expect(fields.indexOf('From')).toBeGreaterThanOrEqual(0)
    expect(fields).toContain('Content-Type')
    expect(html).not.toContain('<iframe')
  })

  test('a folded field is one field; the header block ends at the first empty line', () => {
    const source = new TextEncoder().encode('Subject: one\r\n two\r\n\tthree\r\nX-A: b:c\r\n\r\nBody: not a header\r\n')
    expect(headerFields(source)).toEqual([
      ['Subject', 'one two three'],
      ['X-A', 'b:c'],
    ])
    expect(headerFields(new TextEncoder().encode('no header here'))).toEqual([])
  })

  test('raw source: the message as received, escaped in <pre>', async () => {
    const html = await (await page(alice, `/dashboard/mail/${address}/${id}?view=source`)).text()
    expect(html).toContain('aria-current="page">Raw source</a>')
    const pre = /<pre class="mail-text mail-source"[^>]*>([\s\S]*?)<\/pre>/.exec(html)![1]!
    expect(pre).toContain('Subject: Views &lt;b&gt;bold&lt;/b&gt;')
    expect(pre).toContain('&lt;p&gt;html body&lt;/p&gt;')
    expect(pre).not.toContain('<p>')
  })

  test('a message without HTML: no HTML tab, and it opens on its text; an unknown view shows the default', async () => {
    const html = await (await page(alice, `/dashboard/mail/${address}/${plainId}`)).text()
    expect(html).not.toContain('?view=html')
    expect(html).toContain('aria-current="page">Text</a>')
    expect(html).toContain('<pre class="mail-text">just text')
    for (const view of ['html', 'nonsense', '<script>']) {
      const other = await (
        await page(alice, `/dashboard/mail/${address}/${plainId}?view=${encodeURIComponent(view)}`)
      ).text()
      expect(other).toContain('aria-current="page">Text</a>')
      expect(other).not.toContain('<script>')
    }
  })
})

describe('deleting and marking unread in the dashboard', () => {
  let address: string
  const deliver = async (subject: string) => {
    const info = await send.sendMail({ from: 'sender@example.org', to: address, subject, text: `body of ${subject}` })
    return Number(/stored as (\d+)/.exec(info.response)![1])
  }
  const ids = () =>
    (
      box.db
        .query(
          'SELECT m.id FROM mail_messages m JOIN mailboxes b ON b.id = m.mailbox_id WHERE b.address = ? ORDER BY m.id',
        )
        .all(address) as { id: number }[]
    ).map((r) => r.id)

  beforeAll(async () => {
    address = await newMailbox(alice, 'tidy')
  })

  test('mark unread: 303 to the mailbox with a notice; the message is unread again', async () => {
    const id = await deliver('read me')
    await page(alice, `/dashboard/mail/${address}/${id}`) // reading marks it seen
    expect(box.db.query('SELECT seen FROM mail_messages WHERE id = ?').get(id)).toEqual({ seen: 1 })
    const res = await postForm(box, alice, `/dashboard/mail/${address}/${id}/unseen`, {})
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe(`/dashboard/mail/${address}`)
    const shown = await (await follow(box, res, alice.cookie)).text()
    expect(shown).toContain('<p class="notice ok" role="status">The message is marked unread.</p>')
    expect(shown).toContain(`<title>(1) ${address} · linkbox</title>`)
    expect(box.db.query('SELECT seen FROM mail_messages WHERE id = ?').get(id)).toEqual({ seen: 0 })
  })

  test('delete one message from its page: 303 to the mailbox, gone from the list and the rows; sent again: said so', async () => {
    const id = await deliver('delete me')
    const res = await postForm(box, alice, `/dashboard/mail/${address}/${id}/delete`, {})
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe(`/dashboard/mail/${address}`)
    const shown = await (await follow(box, res, alice.cookie)).text()
    expect(shown).toContain('The message is deleted.')
    expect(shown).not.toContain('delete me')
    expect(ids()).not.toContain(id)
    const again = await follow(
      box,
      await postForm(box, alice, `/dashboard/mail/${address}/${id}/delete`, {}),
      alice.cookie,
    )
    expect(await again.text()).toContain('That message was deleted already.')
  })

  test('delete a selection: only the ticked ones go; none ticked: said so, nothing goes', async () => {
    const [a, b, c] = [await deliver('first'), await deliver('second'), await deliver('third')]
    const before = ids()
    const none = await postForm(box, alice, `/dashboard/mail/${address}/delete-messages`, {})
    expect(await (await follow(box, none, alice.cookie)).text()).toContain('Select the messages to delete first.')
    expect(ids()).toEqual(before)
    const body = new URLSearchParams({ _csrf: alice.csrf })
    body.append('id', String(a))
    body.append('id', String(c))
    body.append('id', 'junk')
    const res = await box.request(`/dashboard/mail/${address}/delete-messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice.cookie },
      body: body.toString(),
    })
    expect(res.status).toBe(303)
    expect(await (await follow(box, res, alice.cookie)).text()).toContain('2 messages deleted.')
    expect(ids()).toContain(b)
    expect(ids()).not.toContain(a)
    expect(ids()).not.toContain(c)
  })

  test("another account's mailbox: nothing deleted or changed; the same answer as a mailbox that does not exist", async () => {
    const id = await deliver('not yours')
    const answers: string[] = []
    for (const [who, path] of [
      [bob, `/dashboard/mail/${address}/${id}/delete`],
      [bob, `/dashboard/mail/${address}/${id}/unseen`],
      [bob, `/dashboard/mail/${address}/delete-messages`],
      [bob, `/dashboard/mail/${address}/delete`],
      [alice, `/dashboard/mail/nobody@${DOMAIN}/delete`],
    ] as const) {
      const res = await postForm(box, who, path, { id: String(id) })
      expect(res.status).toBe(303)
      expect(res.headers.get('location')).toBe('/dashboard/mail')
      answers.push(
        (await (await follow(box, res, who.cookie)).text())
          .match(/<p class="notice error"[^>]*>([^<]*)/)![1]!
          .replace(/nobody@\S+ /, 'X ')
          .replace(address, 'X'),
      )
    }
    expect(new Set(answers).size).toBe(1)
    expect(ids()).toContain(id)
    expect((await page(bob, `/dashboard/mail/${address}/delete`)).status).toBe(404)
  })

  test('without the CSRF token, or from another site: 403 and nothing deleted', async () => {
    const id = await deliver('kept')
    const bad = await postForm(box, alice, `/dashboard/mail/${address}/${id}/delete`, { _csrf: 'wrong' })
    expect(bad.status).toBe(403)
    const cross = await postForm(
      box,
      alice,
      `/dashboard/mail/${address}/delete`,
      {},
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    )
    expect(cross.status).toBe(403)
    expect(ids()).toContain(id)
  })

  test('delete the mailbox: a confirmation page (a form), then 303 to the list; rows and files gone, the address free', async () => {
    const id = await deliver('last one')
    const confirm = await page(alice, `/dashboard/mail/${address}/delete`)
    expect(confirm.status).toBe(200)
    const html = await confirm.text()
    expect(html).toContain('<h1>Delete this mailbox?</h1>')
    expect(html).toContain(`<form method="post" action="/dashboard/mail/${address}/delete" class="actions">`)
    expect(ids()).toContain(id) // asking is not deleting
    const res = await postForm(box, alice, `/dashboard/mail/${address}/delete`, {})
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard/mail')
    const list = await (await follow(box, res, alice.cookie)).text()
    expect(list).toMatch(new RegExp(`${address.replace('.', '\\.')} is deleted, with its \\d+ messages\\.`))
    expect(box.db.query('SELECT count(*) AS n FROM mailboxes WHERE address = ?').get(address)).toEqual({ n: 0 })
    expect(ids()).toEqual([])
    // Bob may take it now.
    expect(await newMailbox(bob, 'tidy')).toBe(address)
  })
})
