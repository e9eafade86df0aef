// Issue 24: a webhook endpoint is edited instead of deleted and added again (POST /api/webhooks.json
// action=update, rotate, redeliver_failed), through the real app on a real socket, its deliverer sending to a
// real receiver on 127.0.0.1 that checks every signature with the `standardwebhooks` package. What each edit
// does is looked at where it shows: what the receiver gets, under which webhook-id, verified with which secret.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { makeBox, type TestBox } from '../support/app'
import { startReceiver, until, type Received, type Receiver } from '../support/webhooks'

let box: TestBox
let key: string
const receivers: Receiver[] = []
/** What the receiver answers: 200, or what a test sets (it may wait). */
const answerWith = new Map<Receiver, (n: number) => number | Promise<number>>()

// Retries after 300 ms, then 300 ms: the third failed attempt is the last.
const SCHEDULE = [300, 300]

beforeAll(async () => {
  box = await makeBox(
    // No overlap after a rotation here (the old secret stops at once); the overlap: webhook-rotation.test.ts.
    {
      media: { allow_private_networks: true },
      server: { host: '127.0.0.1', port: 0 },
      webhooks: { rotation_overlap: 0 },
    },
    { webhookSchedule: SCHEDULE },
  )
  box.listen() // starts the deliverer
  key = await box.account('editor')
})
afterAll(async () => {
  await box?.cleanup()
  for (const r of receivers) r.stop()
})

function receiver(): Receiver {
  const r: Receiver = startReceiver(async (n) => new Response('', { status: (await answerWith.get(r)?.(n)) ?? 200 }))
  receivers.push(r)
  return r
}

const hooks = (fields: Record<string, string>, k = key) => box.post('/api/webhooks.json', fields, { 'x-api-key': k })
const api = (method: string, fields: Record<string, string>) =>
  box.post(`/api/${method}.json`, fields, { 'x-api-key': key })
/** A 400-ish answer with this code whose message has `text` (bun's toMatchObject with expect.stringContaining rewrites what it was given). */
function refused(res: { body: any }, code: string, text: string) {
  expect(res.body.code).toBe(code)
  expect(res.body.message).toContain(text)
}
/** A promise and its resolve: a receiver holds an answer until the test has done something. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}
const typeOf = (r: Received) => JSON.parse(r.body).type as string
const verifies = (r: Received, secret: string) => {
  try {
    new Webhook(secret).verify(r.body, r.headers)
    return true
  } catch {
    return false
  }
}

async function endpoint(r: Receiver, events: string) {
  const made = await hooks({ action: 'create', url: r.url, events })
  expect(made.status, JSON.stringify(made.body)).toBe(200)
  r.secret = made.body.return.secret
  return made.body.return.id as number
}

let codes = 0
const code = () => `ed${++codes}x${Date.now().toString(36)}`

describe('update: events', () => {
  test('adding link.deleted delivers deletions; removing link.created delivers no more creations', async () => {
    const r = receiver()
    const id = await endpoint(r, 'link.created')
    const a = code()
    expect((await api('getLink', { url: 'https://example.com/a', alias: a })).status).toBe(200)
    await until(() => r.got.length === 1, 'link.created')

    const added = await hooks({ action: 'update', id: String(id), events: 'link.created, link.deleted' })
    expect(added.status, JSON.stringify(added.body)).toBe(200)
    expect(added.body.return).toEqual({
      id,
      url: r.url,
      events: 'link.created,link.deleted',
      enabled: true,
      disabled_reason: null,
    })
    expect((await api('delete', { code: a })).status).toBe(200)
    await until(() => r.got.length === 2, 'link.deleted')
    expect(typeOf(r.got[1]!)).toBe('link.deleted')
    expect(JSON.parse(r.got[1]!.body).data.hex).toBe(a)

    expect((await hooks({ action: 'update', id: String(id), events: 'link.deleted' })).body.return.events).toBe(
      'link.deleted',
    )
    const b = code()
    expect((await api('getLink', { url: 'https://example.com/b', alias: b })).status).toBe(200)
    // A creation now delivers nothing: the deletion after it arrives alone (delivered in order of the events).
    expect((await api('delete', { code: b })).status).toBe(200)
    await until(() => r.got.length >= 3, 'the second link.deleted')
    await Bun.sleep(300)
    expect(r.got.map(typeOf)).toEqual(['link.created', 'link.deleted', 'link.deleted'])
    expect(JSON.parse(r.got[2]!.body).data.hex).toBe(b)
    for (const g of r.got) expect(g.verifyError).toBeNull()
    // No event row was even written for the creation nobody wanted.
    expect(
      box.db
        .query("SELECT count(*) AS n FROM webhook_events WHERE type = 'link.created' AND payload LIKE ?")
        .get(`%${b}%`),
    ).toEqual({ n: 0 })
  })

  test('errors name the field: an unknown event, a bad URL, a bad enabled, no id; nothing given changes nothing', async () => {
    const r = receiver()
    const id = String(await endpoint(r, 'link.created'))
    const bad = await hooks({ action: 'update', id, events: 'link.created,link.exploded' })
    expect(bad.status).toBe(400)
    refused(bad, 'invalid_parameter', '"events"')
    expect(bad.body.message).toContain('link.exploded')
    const shape = await hooks({ action: 'update', id, events: 'nonsense' })
    refused(shape, 'invalid_parameter', '"events"')
    const url = await hooks({ action: 'update', id, url: 'ftp://example.com/x' })
    refused(url, 'invalid_url', '"url"')
    const creds = await hooks({ action: 'update', id, url: 'http://user:pw@example.com/x' })
    refused(creds, 'invalid_url', 'user name or password')
    // Nothing to change: the endpoint as it is.
    const nothing = await hooks({ action: 'update', id })
    expect(nothing.body.return).toEqual({
      id: Number(id),
      url: r.url,
      events: 'link.created',
      enabled: true,
      disabled_reason: null,
    })
    const enabled = await hooks({ action: 'update', id, enabled: 'maybe' })
    refused(enabled, 'invalid_parameter', '"enabled"')
    const noId = await hooks({ action: 'update', events: 'link.created' })
    refused(noId, 'missing_parameter', '"id"')
    // Nothing changed by any of them.
    expect(box.db.query('SELECT url, events, enabled FROM webhook_endpoints WHERE id = ?').get(Number(id))).toEqual({
      url: r.url,
      events: 'link.created',
      enabled: 1,
    })
  })

  test("another account's endpoint: not_owner, and nothing changes", async () => {
    const r = receiver()
    const id = String(await endpoint(r, 'link.created'))
    const other = await box.account(`other${codes++}`)
    const attempts: Record<string, string>[] = [
      { action: 'update', id, events: 'link.deleted' },
      { action: 'rotate', id },
      { action: 'redeliver_failed', id },
    ]
    for (const fields of attempts) {
      const res = await hooks(fields, other)
      expect(res.status).toBe(403)
      expect(res.body.code).toBe('not_owner')
    }
    const row = box.db.query('SELECT events, secret FROM webhook_endpoints WHERE id = ?').get(Number(id)) as {
      events: string
      secret: string
    }
    expect(row).toEqual({ events: 'link.created', secret: r.secret })
  })
})

describe('update: the URL', () => {
  test('a new URL passes the SSRF guard (a private address refused), and later deliveries go to it', async () => {
    // A box that refuses private networks, with one loopback address called public (the receivers').
    const guarded = await makeBox({ server: { host: '127.0.0.1', port: 0 } }, { isAllowed: (a) => a === '127.0.0.1' })
    try {
      guarded.listen()
      const k = await guarded.account('guarded')
      const first = receiver()
      const second = receiver()
      const made = await guarded.post(
        '/api/webhooks.json',
        { action: 'create', url: first.url, events: 'link.created' },
        { 'x-api-key': k },
      )
      expect(made.status, JSON.stringify(made.body)).toBe(200)
      first.secret = second.secret = made.body.return.secret
      const id = String(made.body.return.id)
      for (const url of ['http://127.0.0.2:9/hook', 'http://10.0.0.1/hook', 'http://[::1]:9/hook']) {
        const refused = await guarded.post('/api/webhooks.json', { action: 'update', id, url }, { 'x-api-key': k })
        expect(refused.status, url).toBe(400)
        expect(refused.body.code, url).toBe('private_address')
      }
      expect((guarded.db.query('SELECT url FROM webhook_endpoints').get() as { url: string }).url).toBe(first.url)
      const moved = await guarded.post(
        '/api/webhooks.json',
        { action: 'update', id, url: second.url },
        { 'x-api-key': k },
      )
      expect(moved.status, JSON.stringify(moved.body)).toBe(200)
      expect(moved.body.return.url).toBe(second.url)
      expect(
        (await guarded.post('/api/getLink.json', { url: 'https://example.com/moved' }, { 'x-api-key': k })).status,
      ).toBe(200)
      await until(() => second.got.length === 1, 'the delivery to the new URL')
      expect(first.got).toEqual([])
      expect(second.got[0]!.verifyError).toBeNull()
    } finally {
      await guarded.cleanup()
    }
  })

  test('deleted while its new URL was being checked: a 404, and no row comes back', async () => {
    let doomed = 0
    const racing = await makeBox(
      { media: { allow_private_networks: true } },
      {
        // The name lookup of the new URL is the await between the read and the write: delete it there.
        resolve: async (host) => {
          if (host === 'slow.example') racing.db.query('DELETE FROM webhook_endpoints WHERE id = ?').run(doomed)
          return ['127.0.0.1']
        },
      },
    )
    try {
      const k = await racing.account('racer')
      const made = await racing.post(
        '/api/webhooks.json',
        { action: 'create', url: 'http://127.0.0.1:9/hook' },
        { 'x-api-key': k },
      )
      doomed = made.body.return.id
      const res = await racing.post(
        '/api/webhooks.json',
        { action: 'update', id: String(doomed), url: 'http://slow.example/hook' },
        { 'x-api-key': k },
      )
      expect(res.status).toBe(404)
      expect(res.body).toMatchObject({ code: 'not_found', message: `There is no webhook ${doomed}.` })
      expect(racing.db.query('SELECT count(*) AS n FROM webhook_endpoints').get()).toEqual({ n: 0 })
    } finally {
      await racing.cleanup()
    }
  })
})

describe('rotate', () => {
  test('without an overlap (rotation_overlap = 0) the next delivery, a retry of a queued one included, verifies with the new secret only', async () => {
    const r = receiver()
    // The first attempt fails once the secret is rotated; its retry (300 ms later) is the "queued one".
    const rotatedYet = gate()
    answerWith.set(r, async (n) => (n === 1 ? (await rotatedYet.opened, 500) : 200))
    const id = await endpoint(r, 'link.created')
    const old = r.secret
    expect((await api('getLink', { url: 'https://example.com/rotate' })).status).toBe(200)
    await until(() => r.got.length === 1, 'the first attempt')
    const rotated = await hooks({ action: 'rotate', id: String(id) })
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200)
    rotatedYet.open()
    const fresh = rotated.body.return.secret as string
    expect(Object.keys(rotated.body.return).sort()).toEqual([
      'earlier_secret_dropped',
      'id',
      'previous_secret_expires',
      'secret',
    ])
    expect(rotated.body.return.previous_secret_expires).toBeNull()
    expect(rotated.body.return.id).toBe(id)
    expect(fresh).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
    expect(fresh).not.toBe(old)
    expect(box.db.query('SELECT secret FROM webhook_endpoints WHERE id = ?').get(id)).toEqual({ secret: fresh })
    // Shown only in that answer: not in the list.
    expect(JSON.stringify((await hooks({ action: 'list' })).body)).not.toContain(fresh)

    await until(() => r.got.length === 2, 'the retry')
    const [before, retry] = r.got as [Received, Received]
    expect(retry.id).toBe(before.id) // the same event
    expect(verifies(before, old)).toBe(true)
    expect(verifies(retry, fresh)).toBe(true)
    expect(verifies(retry, old)).toBe(false)
    // A new event too.
    expect((await api('getLink', { url: 'https://example.com/rotated' })).status).toBe(200)
    await until(() => r.got.length === 3, 'a new event')
    expect(verifies(r.got[2]!, fresh)).toBe(true)
    expect(verifies(r.got[2]!, old)).toBe(false)
  })
})

describe('redeliver_failed', () => {
  test('failed deliveries are sent again once the receiver answers 2xx, each under its first webhook-id', async () => {
    const r = receiver()
    let up = false
    answerWith.set(r, () => (up ? 204 : 503))
    const id = await endpoint(r, 'link.created')
    for (const n of [1, 2]) expect((await api('getLink', { url: `https://example.com/failed${n}` })).status).toBe(200)
    // Three attempts each (the first and two retries), then failed.
    const failedBoth = () =>
      (
        box.db
          .query("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'failed'")
          .get(id) as { n: number }
      ).n === 2
    await until(failedBoth, 'both deliveries failed')
    expect(r.got.length).toBe(6)
    const listed = (await hooks({ action: 'list' })).body.return.webhooks.find((w: any) => w.id === id)
    expect(listed).toMatchObject({ failing: true, deliveries: { ok: 0, failed: 2, pending: 0, retrying: 0 } })
    const firstIds = [...new Set(r.got.map((g) => g.id))]
    expect(firstIds.length).toBe(2) // one id per event, the same on each attempt

    up = true
    const again = await hooks({ action: 'redeliver_failed', id: String(id) })
    expect(again.status, JSON.stringify(again.body)).toBe(200)
    expect(again.body.return).toEqual({ id, redelivered: 2, enabled: true })
    await until(() => r.got.length === 8, 'the two redeliveries')
    const redelivered = r.got.slice(6)
    expect(redelivered.map((g) => g.id).sort()).toEqual([...firstIds].sort())
    for (const g of redelivered) expect(g.verifyError).toBeNull()
    // The same bytes as the first attempt of each event.
    for (const g of redelivered) expect(g.body).toBe(r.got.find((x) => x.id === g.id)!.body)
    // The receiver has the requests before the deliverer records their answers: wait for the rows.
    const okBoth = () =>
      (
        box.db.query("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'ok'").get(id) as {
          n: number
        }
      ).n === 2
    await until(okBoth, 'both redeliveries recorded')
    const log = (await hooks({ action: 'deliveries', id: String(id) })).body.return.deliveries
    expect(log.map((d: any) => [d.state, d.last_status])).toEqual([
      ['ok', 204],
      ['ok', 204],
    ])
    // No id is used for two events: across every event of this box, ids are distinct.
    const ids = box.db.query('SELECT webhook_id FROM webhook_events').all() as { webhook_id: string }[]
    expect(new Set(ids.map((i) => i.webhook_id)).size).toBe(ids.length)
    // Healthy again after the success; nothing more to redeliver.
    const after = (await hooks({ action: 'list' })).body.return.webhooks.find((w: any) => w.id === id)
    expect(after).toMatchObject({ failing: false, deliveries: { ok: 2, failed: 0, pending: 0, retrying: 0 } })
    expect((await hooks({ action: 'redeliver_failed', id: String(id) })).body.return).toEqual({
      id,
      redelivered: 0,
      enabled: true,
    })
    await Bun.sleep(200)
    expect(r.got.length).toBe(8)
  })
})

describe('enabled', () => {
  test('disabled: nothing is sent, a queued retry waits; enabled: it goes out, and new events again', async () => {
    const r = receiver()
    // The first attempt fails once the endpoint is disabled: its retry is queued, due 300 ms later.
    const offYet = gate()
    answerWith.set(r, async (n) => (n === 1 ? (await offYet.opened, 500) : 200))
    const id = await endpoint(r, 'link.created')
    expect((await api('getLink', { url: 'https://example.com/before-off' })).status).toBe(200)
    await until(() => r.got.length === 1, 'the first attempt')
    const off = await hooks({ action: 'update', id: String(id), enabled: 'false' })
    expect(off.status, JSON.stringify(off.body)).toBe(200)
    expect(off.body.return).toMatchObject({ enabled: false, disabled_reason: 'disabled by its owner' })
    offYet.open()
    await until(
      () =>
        (box.db.query('SELECT attempts FROM webhook_deliveries WHERE endpoint_id = ?').get(id) as { attempts: number })
          .attempts === 1,
      'the failed attempt recorded',
    )
    expect((await api('getLink', { url: 'https://example.com/while-off' })).status).toBe(200)
    // The retry was due 300 ms later: nothing for well past it.
    await Bun.sleep(1_200)
    expect(r.got.length).toBe(1)
    expect((await hooks({ action: 'list' })).body.return.webhooks.find((w: any) => w.id === id)).toMatchObject({
      enabled: false,
      disabled_reason: 'disabled by its owner',
      deliveries: { pending: 1, retrying: 1 },
    })

    const on = await hooks({ action: 'update', id: String(id), enabled: 'true' })
    expect(on.body.return).toMatchObject({ enabled: true, disabled_reason: null })
    await until(() => r.got.length === 2, 'the queued retry')
    expect(r.got[1]!.id).toBe(r.got[0]!.id)
    expect(JSON.parse(r.got[1]!.body).data.long_url).toBe('https://example.com/before-off')
    expect((await api('getLink', { url: 'https://example.com/after-on' })).status).toBe(200)
    await until(() => r.got.length === 3, 'a new event')
    await Bun.sleep(200)
    // The creation while it was off was never queued for it.
    expect(r.got.map((g) => JSON.parse(g.body).data.long_url)).toEqual([
      'https://example.com/before-off',
      'https://example.com/before-off',
      'https://example.com/after-on',
    ])
    for (const g of r.got) expect(g.verifyError).toBeNull()
  })

  test('an endpoint a 410 disabled can be enabled again; its failed deliveries come back with redeliver_failed', async () => {
    const r = receiver()
    let gone = true
    answerWith.set(r, () => (gone ? 410 : 200))
    const id = await endpoint(r, 'link.created')
    expect((await api('getLink', { url: 'https://example.com/gone' })).status).toBe(200)
    await until(
      () =>
        (box.db.query('SELECT enabled FROM webhook_endpoints WHERE id = ?').get(id) as { enabled: number }).enabled ===
        0,
      'disabled by the 410',
    )
    gone = false
    const on = await hooks({ action: 'update', id: String(id), enabled: '1' })
    expect(on.body.return).toMatchObject({ enabled: true, disabled_reason: null })
    expect((await hooks({ action: 'redeliver_failed', id: String(id) })).body.return).toEqual({
      id,
      redelivered: 1,
      enabled: true,
    })
    await until(() => r.got.length === 2, 'the redelivery')
    expect(r.got[1]!.id).toBe(r.got[0]!.id)
  })
})
