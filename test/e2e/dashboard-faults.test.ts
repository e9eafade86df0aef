// Issue 20, item 8, over real sockets against the real app and SQLite file: revoking a key asks first, like
// deleting a link or a webhook; the empty webhooks page points to its form where it is (below); the links
// table's QR opens in a new tab and says so; an endpoint whose delivery failed shows as failing in the list
// as soon as a retry is due, not "Active" (the deliverer runs: the app listens).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startApp, type RunningApp } from '../support/browser'
import { dashboardHttp } from '../support/dashboard-http'
import { startReceiver, until, type Receiver } from '../support/webhooks'

let app: RunningApp
const receivers: Receiver[] = []

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: 'alice password' })
  await app.accounts.createAccount({ name: 'bob', password: 'bob password' })
})
afterAll(async () => {
  for (const r of receivers) r.stop()
  await app?.stop()
})

const { get, post, signIn, callerOf } = dashboardHttp(() => app)

describe('small dashboard faults', () => {
  test('revoking a key asks first (like deleting a link or a webhook): a confirmation page that changes nothing, then the POST', async () => {
    const who = await signIn('bob', 'bob password')
    const keys = () =>
      app.db
        .query(
          "SELECT k.id, k.prefix, k.revoked FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE a.name = 'bob' ORDER BY k.id",
        )
        .all() as { id: number; prefix: string; revoked: number | null }[]
    const own = keys()[0]!
    // The list offers a link to the question, not a button that revokes at once.
    const list = await (await get('/dashboard/keys', who.cookie)).text()
    expect(list).toContain(
      `<a class="danger-link" href="/dashboard/keys/${own.id}/revoke" aria-label="Revoke the key ${own.prefix}…">Revoke</a>`,
    )
    expect(list).not.toContain(`action="/dashboard/keys/${own.id}/revoke"`)

    const ask = await get(`/dashboard/keys/${own.id}/revoke`, who.cookie)
    expect(ask.status).toBe(200)
    expect(ask.headers.get('cache-control')).toBe('no-store')
    const page = await ask.text()
    expect(page).toContain('<h1>Revoke this key?</h1>')
    expect(page).toContain(`<code>${own.prefix}…</code>`)
    expect(page).toContain(`<form method="post" action="/dashboard/keys/${own.id}/revoke" class="actions">`)
    expect(page).toContain(`name="_csrf" value="${who.csrf}"`)
    expect(page).toContain('<a href="/dashboard/keys">Cancel</a>')
    expect(keys()[0]!.revoked).toBeNull()

    const done = await post(
      `/dashboard/keys/${own.id}/revoke`,
      who.cookie,
      { _csrf: who.csrf },
      { referer: `${app.url}/dashboard/keys/${own.id}/revoke` },
    )
    expect(done.status).toBe(303)
    expect(done.headers.get('location')).toBe('/dashboard/keys')
    expect(keys()[0]!.revoked).not.toBeNull()
    // Asked again once revoked, another account's key, or no key at all: the 404 page.
    const alicesKey = (
      app.db
        .query("SELECT k.id FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE a.name = 'alice'")
        .get() as { id: number }
    ).id
    for (const id of [String(own.id), String(alicesKey), '999999', 'abc']) {
      const res = await get(`/dashboard/keys/${id}/revoke`, who.cookie)
      expect(res.status).toBe(404)
      expect(await res.text()).toContain('Key not found')
    }
    expect(app.db.query('SELECT revoked FROM api_keys WHERE id = ?').get(alicesKey)).toEqual({ revoked: null })
  })

  test('the empty webhooks page points to its form where it is: below the list', async () => {
    const who = await signIn('bob', 'bob password')
    const page = await (await get('/dashboard/webhooks', who.cookie)).text()
    expect(page).toContain(
      '<p class="empty">No endpoints yet. <a href="#new-webhook">Add one below</a> to be told when links change or mail arrives.</p>',
    )
    expect(page).not.toContain('above')
    expect(page.indexOf('id="new-webhook"')).toBeGreaterThan(page.indexOf('No endpoints yet'))
  })

  test("the links table's QR opens in a new tab (and says so), not in place of the dashboard", async () => {
    const who = await signIn('bob', 'bob password')
    await app.links.create({ url: 'https://example.com/qr-me', alias: 'qr-me' }, callerOf('bob'))
    const page = await (await get('/dashboard', who.cookie)).text()
    expect(page).toContain(
      '<a href="/qr/qr-me.png" target="_blank" rel="noopener">QR<span class="visually-hidden"> qr-me (opens in a new tab)</span></a>',
    )
  })

  test('an endpoint whose delivery failed shows Failing with its pending retry; a healthy one shows Active', async () => {
    const who = await signIn('bob', 'bob password')
    const broken = startReceiver(() => new Response('down', { status: 500 }))
    const healthy = startReceiver()
    receivers.push(broken, healthy)
    const caller = callerOf('bob')
    const bad = await app.webhooks.create(caller, { url: broken.url })
    const good = await app.webhooks.create(caller, { url: healthy.url })
    await app.webhooks.testOwned(caller, { id: bad.id })
    await app.webhooks.testOwned(caller, { id: good.id })
    const row = (id: number) =>
      app.db.query('SELECT state, attempts FROM webhook_deliveries WHERE endpoint_id = ?').get(id) as {
        state: string
        attempts: number
      }
    // The deliverer runs (the app listens): the first attempt fails, the next is 5 s later.
    await until(() => row(bad.id).attempts >= 1, 'the failed first attempt')
    await until(() => row(good.id).state === 'ok', 'the healthy delivery')
    expect(row(bad.id).state).toBe('pending')

    const page = await (await get('/dashboard/webhooks', who.cookie)).text()
    const rowOf = (url: string) =>
      page.match(
        new RegExp(`<tr>\\s*<td class="wh-url wide"><a href="/dashboard/webhooks/\\d+">${url}</a>[\\s\\S]*?</tr>`),
      )![0]
    expect(rowOf(broken.url)).toContain(
      '<td data-label="Status"><span class="state warn">Failing</span><div class="muted">1 pending retry</div></td>',
    )
    expect(rowOf(broken.url)).not.toContain('Active')
    expect(rowOf(healthy.url)).toContain('<td data-label="Status"><span class="state good">Active</span></td>')
    // The endpoint's own page says the same.
    const one = await (await get(`/dashboard/webhooks/${bad.id}`, who.cookie)).text()
    expect(one).toContain(
      '<dt>Status</dt><dd id="wh-state"><span class="state warn">Failing</span><div class="muted">1 pending retry</div></dd>',
    )
    // The API's list is as the contract says: `failing` only once a delivery used up its retries.
    expect((await app.webhooks.list(caller)).webhooks.find((w) => w.id === bad.id)).toMatchObject({
      failing: false,
      deliveries: { ok: 0, failed: 0, pending: 1 },
    })
  })
})
