// The dashboard's Webhooks section through the real app and SQLite file: creating an endpoint (its secret on
// the page the POST's 303 leads to, once), field errors (on the page the refusal's 303 leads to), the list with its counts, an endpoint's log with the test event and
// redelivery, deletion after a confirmation, the CSRF check on every form, and another account's endpoint
// answered with the same 404 as one that does not exist. The app does not listen here, so the deliverer
// does not run: deliveries stay pending, which is what these tests look at (sending is the browser test's).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'
import { follow, postForm, signIn, type SignedIn } from '../support/dashboard'

let box: TestBox
let alice: SignedIn
let bob: SignedIn
const TARGET = 'http://127.0.0.1:9/hook'

beforeAll(async () => {
  // 127.0.0.1 is a private address: allowed here so that no test depends on name resolution.
  box = await makeBox({ media: { allow_private_networks: true } })
  await box.accounts.createAccount({ name: 'alice', password: 'alice password' })
  await box.accounts.createAccount({ name: 'bob', password: 'bob password' })
  alice = await signIn(box, 'alice', 'alice password')
  bob = await signIn(box, 'bob', 'bob password')
})
afterAll(async () => box?.cleanup())

const page = (who: SignedIn, path: string) => box.request(path, { headers: { cookie: who.cookie } })
const endpoints = () =>
  box.db.query('SELECT id, url, events, secret FROM webhook_endpoints ORDER BY id').all() as {
    id: number
    url: string
    events: string
    secret: string
  }[]
const deliveries = (endpoint: number) =>
  box.db
    .query(
      'SELECT d.event_id, e.type, d.state FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE endpoint_id = ? ORDER BY d.event_id',
    )
    .all(endpoint) as { event_id: number; type: string; state: string }[]

/** The body of a form post: url and events (repeated, as checkboxes send them). */
function createBody(who: SignedIn, url: string, events: string[], csrf = who.csrf) {
  const body = new URLSearchParams({ _csrf: csrf, url })
  for (const e of events) body.append('events', e)
  return box.request('/dashboard/webhooks', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: who.cookie },
    body: body.toString(),
  })
}

let aliceHook: number

describe('creating', () => {
  test('the form: every event a checkbox, link.clicked unchecked by default', async () => {
    const res = await page(alice, '/dashboard/webhooks')
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('No endpoints yet')
    for (const t of ['link.created', 'link.updated', 'link.deleted', 'mail.received'])
      expect(html).toContain(`<input type="checkbox" name="events" value="${t}" checked>`)
    expect(html).toContain('<input type="checkbox" name="events" value="link.clicked">')
  })

  test('created: the secret is on the page the 303 leads to, once, and nowhere after; the list shows the endpoint', async () => {
    const posted = await createBody(alice, TARGET, ['link.created', 'mail.received'])
    expect(posted.status).toBe(303)
    expect(posted.headers.get('cache-control')).toBe('no-store')
    expect(posted.headers.get('set-cookie')).toBeNull()
    const location = posted.headers.get('location')!
    const res = await follow(box, posted, alice.cookie)
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const html = await res.text()
    const [row] = endpoints()
    expect(location).toBe(
      `/dashboard/webhooks/${row!.id}?created=${new URL(location, 'http://x').searchParams.get('created')}`,
    )
    expect(location).not.toContain(row!.secret)
    expect(row).toMatchObject({ url: TARGET, events: 'link.created,mail.received' })
    expect(row!.secret).toMatch(/^whsec_/)
    expect(html).toContain(`<input id="wh-secret" readonly value="${row!.secret}"`)
    expect(html).toContain('data-copy="wh-secret" hidden>Copy</button>')
    expect(html).toContain('it is shown only this once')
    aliceHook = row!.id
    // The same address again: the endpoint's page, saying the secret was shown once.
    const again = await (await page(alice, location)).text()
    expect(again).not.toContain(row!.secret)
    expect(again).toContain('This endpoint&#39;s signing secret was shown once, and is not shown again.')

    const list = await (await page(alice, '/dashboard/webhooks')).text()
    expect(list).not.toContain(row!.secret)
    expect(list).toContain(`<a href="/dashboard/webhooks/${aliceHook}">${TARGET}</a>`)
    expect(list).toContain('<code>link.created</code> <code>mail.received</code>')
    expect(list).toContain('0 ok</span> · <span title="Failed">0 failed</span> · <span title="Pending">0 pending')
    expect(list).toContain('Active')
    expect(await (await page(alice, `/dashboard/webhooks/${aliceHook}`)).text()).not.toContain(row!.secret)
  })

  test('a bad URL: 303 back to the form, tied to the URL field, what was typed kept; no events ticked: on the events', async () => {
    const before = endpoints().length
    const posted = await createBody(alice, 'ftp://example.com/<x>', ['link.created', 'link.clicked'])
    expect(posted.headers.get('location')).toMatch(/^\/dashboard\/webhooks\?form=[A-Za-z0-9_-]{22}$/)
    const bad = await follow(box, posted, alice.cookie)
    expect(bad.status).toBe(200)
    const html = await bad.text()
    expect(html).toContain(
      '<span class="error" id="wh-url-error">The URL must be an absolute URL with the scheme http or https.</span>',
    )
    expect(html).toContain('aria-describedby="wh-url-error wh-url-hint" aria-invalid="true"')
    expect(html).toContain('value="ftp://example.com/&lt;x&gt;"')
    // The ticks as sent, not the defaults.
    expect(html).toContain('value="link.clicked" checked>')
    expect(html).toContain('value="link.updated">')

    const none = await follow(box, await createBody(alice, TARGET, []), alice.cookie)
    const noneHtml = await none.text()
    expect(noneHtml).toContain('<span class="error" id="wh-events-error">Choose at least one event.</span>')
    expect(noneHtml).toContain('<fieldset class="wh-events" aria-describedby="wh-events-error" aria-invalid="true">')
    expect(endpoints().length).toBe(before)
  })
})

describe('an endpoint', () => {
  test('the test event: 303 back with a notice, then pending in the log; redeliver it', async () => {
    const res = await postForm(box, alice, `/dashboard/webhooks/${aliceHook}/test`, {})
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe(`/dashboard/webhooks/${aliceHook}`)
    const [d] = deliveries(aliceHook)
    expect(d).toMatchObject({ type: 'webhook.test', state: 'pending' })
    const html = await (await page(alice, `/dashboard/webhooks/${aliceHook}`)).text()
    expect(html).toContain('<code>webhook.test</code>')
    expect(html).toContain('<span class="state wait">pending</span>')
    expect(html).toContain(`<input type="hidden" name="event" value="${d!.event_id}">`)

    // Redelivering a delivered one puts it back to pending (here: mark it ok first, as the deliverer would).
    box.db
      .query("UPDATE webhook_deliveries SET state = 'ok', attempts = 1, last_status = 200 WHERE event_id = ?")
      .run(d!.event_id)
    const again = await postForm(box, alice, `/dashboard/webhooks/${aliceHook}/redeliver`, {
      event: String(d!.event_id),
    })
    expect(again.status).toBe(303)
    expect(deliveries(aliceHook)[0]!.state).toBe('pending')
    // An unknown event: a notice on the endpoint's page, not a 404.
    const unknown = await postForm(box, alice, `/dashboard/webhooks/${aliceHook}/redeliver`, { event: '999999' })
    expect(unknown.status).toBe(303)
    expect(
      Buffer.from(unknown.headers.get('set-cookie')!.match(/lb_notice=([^;]+)/)![1]!, 'base64url').toString(),
    ).toContain('There is no event 999999')
  })

  test('without the form token: every POST is 403 and nothing changes', async () => {
    const before = { endpoints: endpoints(), deliveries: deliveries(aliceHook) }
    for (const [path, fields] of [
      ['/dashboard/webhooks', { url: 'http://127.0.0.1:9/forged', events: 'link.created' }],
      [`/dashboard/webhooks/${aliceHook}/test`, {}],
      [`/dashboard/webhooks/${aliceHook}/redeliver`, { event: String(before.deliveries[0]!.event_id) }],
      [`/dashboard/webhooks/${aliceHook}/delete`, {}],
    ] as const) {
      const missing = await box.request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice.cookie },
        body: new URLSearchParams(fields as Record<string, string>).toString(),
      })
      expect(missing.status).toBe(403)
      expect((await postForm(box, alice, path, { ...fields, _csrf: 'wrong' })).status).toBe(403)
      expect((await postForm(box, alice, path, fields, { origin: 'http://evil.example' })).status).toBe(403)
    }
    expect(endpoints()).toEqual(before.endpoints)
    expect(deliveries(aliceHook)).toEqual(before.deliveries)
  })

  test("another account's endpoint: every page and form is the same 404 as one that does not exist; nothing changes", async () => {
    const before = { endpoints: endpoints(), deliveries: deliveries(aliceHook) }
    for (const path of [`/dashboard/webhooks/${aliceHook}`, `/dashboard/webhooks/${aliceHook}/delete`]) {
      const res = await page(bob, path)
      expect(res.status).toBe(404)
      const html = await res.text()
      expect(html).toContain('There is no such webhook in your account.')
      expect(html).not.toContain(TARGET)
    }
    for (const [path, fields] of [
      [`/dashboard/webhooks/${aliceHook}/test`, {}],
      [`/dashboard/webhooks/${aliceHook}/redeliver`, { event: String(before.deliveries[0]!.event_id) }],
      [`/dashboard/webhooks/${aliceHook}/delete`, {}],
    ] as const) {
      const res = await postForm(box, bob, path, fields)
      expect(res.status).toBe(404)
      expect(await res.text()).not.toContain(TARGET)
    }
    for (const path of ['/dashboard/webhooks/999999', '/dashboard/webhooks/abc', '/dashboard/webhooks/0/delete'])
      expect((await page(alice, path)).status).toBe(404)
    expect((await page(bob, '/dashboard/webhooks')).status).toBe(200)
    expect(await (await page(bob, '/dashboard/webhooks')).text()).not.toContain(TARGET)
    expect(endpoints()).toEqual(before.endpoints)
    expect(deliveries(aliceHook)).toEqual(before.deliveries)
  })

  test('delete: a confirmation page, then the POST; it and its log are gone', async () => {
    const confirm = await page(alice, `/dashboard/webhooks/${aliceHook}/delete`)
    expect(confirm.status).toBe(200)
    const html = await confirm.text()
    expect(html).toContain('Delete this endpoint?')
    expect(html).toContain(`<form method="post" action="/dashboard/webhooks/${aliceHook}/delete"`)
    expect(endpoints()).toHaveLength(1) // a GET changes nothing
    const res = await postForm(box, alice, `/dashboard/webhooks/${aliceHook}/delete`, {})
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard/webhooks')
    expect(endpoints()).toHaveLength(0)
    expect(deliveries(aliceHook)).toHaveLength(0)
    expect((await page(alice, `/dashboard/webhooks/${aliceHook}`)).status).toBe(404)
  })

  test('the 21st endpoint: the service refuses it, shown on the form', async () => {
    for (let i = 0; i < 20; i++)
      expect((await createBody(bob, `http://127.0.0.1:9/h${i}`, ['link.created'])).headers.get('location')).toContain(
        '?created=',
      )
    const res = await follow(box, await createBody(bob, 'http://127.0.0.1:9/h20', ['link.created']), bob.cookie)
    expect(await res.text()).toContain('An account can have at most 20 webhooks: delete one first.')
  })
})
