// Issue 24 through the real app and SQLite file, over a real socket: the dashboard's new webhook forms
// (edit, enabled, a new secret, redeliver all failed) answer 303s and change the rows; each refuses a
// missing CSRF token (403) and another account's endpoint (the same 404 as none); a new secret's form sent
// twice makes one secret. The live pages' JSON (a webhook's log.json, the admin's health.json) answers only a
// signed-in owner (an administrator), never from a cache, and says what the page shows.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'
import { follow, overSocket, postForm, signIn, type SignedIn } from '../support/dashboard'

let box: TestBox
let http: ReturnType<typeof overSocket>
let alice: SignedIn
let bob: SignedIn
let root: SignedIn
let hook = 0
const TARGET = 'http://127.0.0.1:9/hook'

beforeAll(async () => {
  box = await makeBox({ media: { allow_private_networks: true }, server: { host: '127.0.0.1', port: 0 } })
  // Listening serves the socket; the deliverer runs too, against a closed port: attempts fail and are retried.
  http = overSocket(`http://127.0.0.1:${box.listen().port}`)
  await box.accounts.createAccount({ name: 'alice', password: 'alice password' })
  await box.accounts.createAccount({ name: 'bob', password: 'bob password' })
  await box.accounts.createAccount({ name: 'root', password: 'root password', admin: true })
  alice = await signIn(http, 'alice', 'alice password')
  bob = await signIn(http, 'bob', 'bob password')
  root = await signIn(http, 'root', 'root password')
})
afterAll(async () => box?.cleanup())

const row = () =>
  box.db
    .query('SELECT url, events, enabled, disabled_reason, secret FROM webhook_endpoints WHERE id = ?')
    .get(hook) as {
    url: string
    events: string
    enabled: number
    disabled_reason: string | null
    secret: string
  }
const get = (who: SignedIn | null, path: string) => http.request(path, { headers: who ? { cookie: who.cookie } : {} })

function editBody(who: SignedIn, url: string, events: string[], csrf = who.csrf) {
  const body = new URLSearchParams({ _csrf: csrf, url })
  for (const e of events) body.append('events', e)
  return http.request(`/dashboard/webhooks/${hook}/edit`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: who.cookie },
    body: body.toString(),
  })
}

describe('the webhook forms', () => {
  test('edit: 303 to the endpoint with a notice; a refused edit goes back to the form with what was typed', async () => {
    const made = await postForm(http, alice, '/dashboard/webhooks', { url: TARGET, events: 'link.created' })
    expect(made.status).toBe(303)
    hook = (box.db.query('SELECT id FROM webhook_endpoints').get() as { id: number }).id
    const form = await (await get(alice, `/dashboard/webhooks/${hook}/edit`)).text()
    expect(form).toContain(`value="${TARGET}"`)
    expect(form).toContain('<input type="checkbox" name="events" value="link.created" checked>')
    expect(form).toContain('<input type="checkbox" name="events" value="link.deleted">')

    const ok = await editBody(alice, 'http://127.0.0.1:10/other', ['link.deleted', 'mail.received'])
    expect(ok.status).toBe(303)
    expect(ok.headers.get('location')).toBe(`/dashboard/webhooks/${hook}`)
    expect(row()).toMatchObject({ url: 'http://127.0.0.1:10/other', events: 'link.deleted,mail.received' })
    expect(await (await follow(http, ok, alice.cookie)).text()).toContain(
      'Saved: events go to http://127.0.0.1:10/other (link.deleted, mail.received).',
    )

    const bad = await editBody(alice, 'ftp://example.com/x', ['link.created'])
    expect(bad.status).toBe(303)
    expect(bad.headers.get('location')).toMatch(new RegExp(`^/dashboard/webhooks/${hook}/edit\\?form=`))
    const shown = await (await follow(http, bad, alice.cookie)).text()
    expect(shown).toContain(
      '<span class="error" id="wh-url-error">The URL must be an absolute URL with the scheme http or https.</span>',
    )
    expect(shown).toContain('value="ftp://example.com/x"')
    expect(row().url).toBe('http://127.0.0.1:10/other')
  })

  test('enabled: 0 disables (said why), 1 enables; the page offers the other', async () => {
    const off = await postForm(http, alice, `/dashboard/webhooks/${hook}/enabled`, { enabled: '0' })
    expect(off.status).toBe(303)
    expect(row()).toMatchObject({ enabled: 0, disabled_reason: 'disabled by its owner' })
    const page = await (await follow(http, off, alice.cookie)).text()
    expect(page).toContain('The endpoint is disabled: nothing is sent to it until it is enabled again.')
    expect(page).toContain('<input type="hidden" name="enabled" value="1"><button type="submit">Enable</button>')
    const on = await postForm(http, alice, `/dashboard/webhooks/${hook}/enabled`, { enabled: '1' })
    expect(on.status).toBe(303)
    expect(row()).toMatchObject({ enabled: 1, disabled_reason: null })
  })

  test('a new secret: asked first; shown once on the page the 303 leads to; the same form sent twice makes one', async () => {
    const old = row().secret
    const ask = await (await get(alice, `/dashboard/webhooks/${hook}/rotate`)).text()
    const once = ask.match(/name="_once" value="([^"]+)"/)![1]!
    const first = await postForm(http, alice, `/dashboard/webhooks/${hook}/rotate`, { _once: once })
    expect(first.status).toBe(303)
    const location = first.headers.get('location')!
    expect(location).toMatch(new RegExp(`^/dashboard/webhooks/${hook}\\?rotated=[A-Za-z0-9_-]{22}$`))
    const fresh = row().secret
    expect(fresh).not.toBe(old)
    expect(location).not.toContain(fresh)
    expect(await (await follow(http, first, alice.cookie)).text()).toContain(
      `<input id="wh-secret" readonly value="${fresh}"`,
    )
    // Again (a double click, back and send again): no second secret; the first answer's page, which shows it no more.
    const again = await postForm(http, alice, `/dashboard/webhooks/${hook}/rotate`, { _once: once })
    expect(again.status).toBe(303)
    expect(again.headers.get('location')).toBe(location)
    expect(row().secret).toBe(fresh)
    const later = await (await follow(http, again, alice.cookie)).text()
    expect(later).not.toContain(fresh)
    expect(later).toContain('new signing secret was shown once')
  })

  test('redeliver all failed: the failed rows pending again, said how many', async () => {
    box.db.query('UPDATE webhook_endpoints SET enabled = 0 WHERE id = ?').run(hook) // nothing is sent meanwhile
    const { id: eventId } = box.db
      .query(
        "INSERT INTO webhook_events (account_id, type, created, payload) VALUES ((SELECT account_id FROM webhook_endpoints WHERE id = ?), 'link.deleted', ?, '{}') RETURNING id",
      )
      .get(hook, Date.now()) as { id: number }
    box.db
      .query(
        "INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_at) VALUES (?, ?, 'failed', 8, 0)",
      )
      .run(eventId, hook)
    const res = await postForm(http, alice, `/dashboard/webhooks/${hook}/redeliver-failed`, {})
    expect(res.status).toBe(303)
    expect(await (await follow(http, res, alice.cookie)).text()).toContain(
      '1 failed delivery is sent again, each under its event&#39;s webhook-id. This endpoint is disabled: they wait until it is enabled.',
    )
    expect(box.db.query('SELECT state, attempts FROM webhook_deliveries WHERE event_id = ?').get(eventId)).toEqual({
      state: 'pending',
      attempts: 0,
    })
    const none = await postForm(http, alice, `/dashboard/webhooks/${hook}/redeliver-failed`, {})
    expect(await (await follow(http, none, alice.cookie)).text()).toContain('No failed deliveries to send again.')
    box.db.query('UPDATE webhook_endpoints SET enabled = 1 WHERE id = ?').run(hook)
  })

  test("without the CSRF token every new form is 403; on another account's endpoint, the 404 of none; nothing changes", async () => {
    const before = row()
    const forms: [string, Record<string, string>][] = [
      [`/dashboard/webhooks/${hook}/edit`, { url: 'http://127.0.0.1:11/x', events: 'link.created' }],
      [`/dashboard/webhooks/${hook}/enabled`, { enabled: '0' }],
      [`/dashboard/webhooks/${hook}/rotate`, {}],
      [`/dashboard/webhooks/${hook}/redeliver-failed`, {}],
    ]
    for (const [path, fields] of forms) {
      expect((await postForm(http, alice, path, { ...fields, _csrf: 'wrong' })).status, path).toBe(403)
      const other = await postForm(http, bob, path, fields)
      expect(other.status, path).toBe(404)
      expect(await other.text()).toContain('There is no such webhook in your account.')
    }
    for (const path of [`/dashboard/webhooks/${hook}/edit`, `/dashboard/webhooks/${hook}/rotate`])
      expect((await get(bob, path)).status, path).toBe(404)
    expect(row()).toEqual(before)
  })
})

describe('the live JSON', () => {
  test("log.json: the owner's log as the page shows it; 401 signed out, 404 for another account's; never cached", async () => {
    await box.webhooks.test(hook)
    const res = await get(alice, `/dashboard/webhooks/${hook}/log.json`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-store')
    const body = await res.json()
    expect(body.id).toBe(hook)
    expect(body.state).toEqual({ label: expect.any(String), tone: expect.any(String), note: expect.any(String) })
    expect(Object.keys(body.counts).sort()).toEqual(['failed', 'ok', 'pending'])
    const test = body.deliveries.find((d: any) => d.type === 'webhook.test')
    // at and due: the time of "when" for a <time datetime> (issue 38).
    expect(Object.keys(test).sort()).toEqual([
      'at',
      'attempts',
      'due',
      'error',
      'event_id',
      'state',
      'status',
      'time',
      'tone',
      'type',
      'when',
    ])
    expect(JSON.stringify(body)).not.toContain(row().secret)

    const out = await get(null, `/dashboard/webhooks/${hook}/log.json`)
    expect(out.status).toBe(401)
    expect((await out.json()).error).toBe('signed_out')
    const other = await get(bob, `/dashboard/webhooks/${hook}/log.json`)
    expect(other.status).toBe(404)
    expect(await other.json()).toEqual({ error: 'not_found', message: 'There is no such webhook in your account.' })
    expect((await get(alice, '/dashboard/webhooks/99999/log.json')).status).toBe(404)
  })

  test('health.json: for an administrator, the figures by key (data-stat) and the bars; 401 signed out, 403 for others', async () => {
    const res = await get(root, '/dashboard/admin/health.json')
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const body = await res.json()
    expect(body.problem).toBeNull()
    const keys = body.stats.map((s: any) => s.key)
    expect(keys).toEqual(expect.arrayContaining(['version', 'uptime', 'links', 'api-answers', 'outbox']))
    expect(new Set(keys).size).toBe(keys.length)
    // Every key the page marks is in the JSON, and the other way round.
    const page = await (await get(root, '/dashboard/admin/health')).text()
    const marked = [...page.matchAll(/data-stat="([^"]+)"/g)].map((m) => m[1])
    expect(marked.sort()).toEqual([...keys].sort())
    expect([...page.matchAll(/data-bars="([^"]+)"/g)].map((m) => m[1]).sort()).toEqual(
      body.bars.map((b: any) => b.key).sort(),
    )
    expect(page).toContain('data-live-health="/dashboard/admin/health.json"')
    expect((await get(null, '/dashboard/admin/health.json')).status).toBe(401)
    const notAdmin = await get(alice, '/dashboard/admin/health.json')
    expect(notAdmin.status).toBe(403)
    expect((await notAdmin.json()).error).toBe('not_admin')
  })
})
