// Webhook endpoints and the outbox (issue 10, SPEC §9): the API's shapes and refusals, events written in the
// transaction of the change that caused them (and none for a change rolled back), the sweep's bounds, and
// the CLI. Delivery itself (signing, retries, the receiver) is deliverer.ts's and its own tests'.
import { Database } from 'bun:sqlite'
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { loadConfig } from '../../src/kernel/config'
import { createLinkbox } from '../../src/app/app'
import { makeBox, type TestBox } from '../support/app'
import { removeDir, runCli, writeConfig } from '../support/server'

const W = '/api/webhooks.json'
let box: TestBox
let key: string
let otherKey: string

beforeEach(async () => {
  // Receivers on 127.0.0.1 are a private address: allowed here, refused in the test that says so.
  box = await makeBox({ media: { allow_private_networks: true } })
  key = await box.account('alice')
  otherKey = await box.account('bob')
})
afterEach(async () => {
  await box.cleanup()
})

const hook = (fields: Record<string, string>, k = key) => box.post(W, fields, { 'X-Api-Key': k })
const rows = (sql: string, ...args: any[]) => box.db.query(sql).all(...args) as any[]
const accountId = (name: string) =>
  (box.db.query('SELECT id FROM accounts WHERE name = ?').get(name) as { id: number }).id

async function createHook(events?: string, k = key) {
  const r = await hook({ action: 'create', url: 'http://127.0.0.1:9/hook', ...(events ? { events } : {}) }, k)
  expect(r.status).toBe(200)
  return r.body.return as { id: number; url: string; events: string; secret: string }
}

describe('POST /api/webhooks.json', () => {
  test('create → {id, url, events, secret}; list, deliveries, redeliver, delete have their shapes', async () => {
    const made = await createHook()
    expect(Object.keys(made).sort()).toEqual(['events', 'id', 'secret', 'url'])
    expect(made.url).toBe('http://127.0.0.1:9/hook')
    expect(made.events).toBe('link.created,link.updated,link.deleted,link.reported,links.imported,mail.received') // all but link.clicked
    expect(made.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
    expect(Buffer.from(made.secret.slice(6), 'base64').length).toBe(24)

    await box.post('/api/getLink.json', { url: 'https://example.com/a' }, { 'X-Api-Key': key })
    const list = await hook({ action: 'list' })
    expect(list.status).toBe(200)
    expect(list.body.return).toEqual({
      webhooks: [
        {
          id: made.id,
          url: made.url,
          events: made.events,
          enabled: true,
          failing: false,
          disabled_reason: null,
          created: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          previous_secret_expires: null,
          deliveries: { ok: 0, failed: 0, pending: 1, retrying: 0 },
        },
      ],
    })
    expect(JSON.stringify(list.body)).not.toContain(made.secret) // shown once, at creation

    const log = await hook({ action: 'deliveries', id: String(made.id) })
    expect(log.body.return.id).toBe(made.id)
    const [d] = log.body.return.deliveries
    const [event] = rows('SELECT id, webhook_id FROM webhook_events')
    expect(event.webhook_id).toMatch(/^msg_[0-9a-f]{32}$/)
    expect(d).toEqual({
      event_id: event.id,
      webhook_id: event.webhook_id,
      type: 'link.created',
      state: 'pending',
      attempts: 0,
      last_status: null,
      last_error: null,
      last_ms: null,
      last_at: null,
      next_at: expect.stringMatching(/T/),
    })

    // A delivery that failed after its retries is sent again: same webhook-id, a fresh series of attempts
    // (with 8 kept, the deliverer would fail it for good on its first failure).
    box.db.query("UPDATE webhook_deliveries SET state = 'failed', attempts = 8, last_status = 503").run()
    const again = await hook({ action: 'redeliver', id: String(made.id), event: String(d.event_id) })
    expect(again.status).toBe(200)
    expect(again.body.return).toEqual({
      id: made.id,
      event_id: d.event_id,
      webhook_id: event.webhook_id,
      state: 'pending',
      attempts: 0,
      next_at: expect.any(String),
    })
    expect(rows('SELECT state, attempts, last_status FROM webhook_deliveries')).toEqual([
      { state: 'pending', attempts: 0, last_status: 503 },
    ])
    expect(rows('SELECT count(*) AS n FROM webhook_events')).toEqual([{ n: 1 }])

    const gone = await hook({ action: 'delete', id: String(made.id) })
    expect(gone.body.return).toEqual({ id: made.id, deleted: true })
    expect((await hook({ action: 'list' })).body.return).toEqual({ webhooks: [] })
    expect(rows('SELECT count(*) AS n FROM webhook_deliveries')).toEqual([{ n: 0 }])
  })

  test("redeliver creates the delivery for an event of the account the endpoint never had; not another account's event", async () => {
    const a = await createHook('link.created')
    await box.post('/api/getLink.json', { url: 'https://example.com/a' }, { 'X-Api-Key': key })
    const b = await createHook('mail.received') // created after the event
    const [{ id: eventId, webhook_id: webhookId }] = rows('SELECT id, webhook_id FROM webhook_events')
    const r = await hook({ action: 'redeliver', id: String(b.id), event: String(eventId) })
    expect(r.body.return).toMatchObject({ id: b.id, webhook_id: webhookId, state: 'pending', attempts: 0 })
    expect(rows('SELECT endpoint_id FROM webhook_deliveries ORDER BY endpoint_id')).toEqual([
      { endpoint_id: a.id },
      { endpoint_id: b.id },
    ])
    // Bob's endpoint cannot take Alice's event.
    const bobs = await createHook('link.created', otherKey)
    const refused = await hook({ action: 'redeliver', id: String(bobs.id), event: String(eventId) }, otherKey)
    expect(refused.status).toBe(404)
    expect(refused.body.code).toBe('not_found')
  })

  test('refusals name the field: missing url, bad scheme, unknown event type, long url, missing id', async () => {
    const missing = await hook({ action: 'create' })
    expect([missing.status, missing.body.code]).toEqual([400, 'missing_parameter'])
    expect(missing.body.message).toContain('"url"')
    const ftp = await hook({ action: 'create', url: 'ftp://example.com/' })
    expect([ftp.status, ftp.body.code]).toEqual([400, 'invalid_url'])
    expect(ftp.body.message).toContain('"url"')
    const creds = await hook({ action: 'create', url: 'http://user:pw@127.0.0.1:9/' })
    expect([creds.status, creds.body.code]).toEqual([400, 'invalid_url'])
    const long = await hook({ action: 'create', url: `http://127.0.0.1:9/${'a'.repeat(2048)}` })
    expect([long.status, long.body.code]).toEqual([400, 'invalid_url'])
    const unknown = await hook({ action: 'create', url: 'http://127.0.0.1:9/', events: 'link.created, link.exploded' })
    expect([unknown.status, unknown.body.code]).toEqual([400, 'invalid_parameter'])
    expect(unknown.body.message).toContain('"events"')
    expect(unknown.body.message).toContain('"link.exploded"')
    const noId = await hook({ action: 'delete' })
    expect([noId.status, noId.body.message]).toEqual([400, 'The parameter "id" is required.'])
    const noEvent = await hook({ action: 'redeliver', id: '1' })
    expect(noEvent.body.message).toBe('The parameter "event" is required.')
    const badAction = await hook({ action: 'explode' })
    expect(badAction.status).toBe(400)
    expect(badAction.body.message).toContain('"action"')
    expect(rows('SELECT count(*) AS n FROM webhook_endpoints')).toEqual([{ n: 0 }])
  })

  test("another account's endpoint → 403 not_owner; an unknown one → 404; no key → 401; no scope → 403", async () => {
    const made = await createHook()
    for (const action of ['delete', 'deliveries']) {
      const r = await hook({ action, id: String(made.id) }, otherKey)
      expect([r.status, r.body.code]).toEqual([403, 'not_owner'])
    }
    expect((await hook({ action: 'list' }, otherKey)).body.return).toEqual({ webhooks: [] })
    const nf = await hook({ action: 'delete', id: '999' })
    expect([nf.status, nf.body.code]).toEqual([404, 'not_found'])
    expect((await box.post(W, { action: 'list' })).status).toBe(401)
    const narrow = (await box.accounts.createKey({ account: 'alice', scopes: ['links'] })).key
    const denied = await hook({ action: 'list' }, narrow)
    expect([denied.status, denied.body.code]).toEqual([403, 'scope_denied'])
    expect(rows('SELECT count(*) AS n FROM webhook_endpoints')).toEqual([{ n: 1 }])
  })

  test('at most 20 endpoints per account, also when the creations arrive at once', async () => {
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) => hook({ action: 'create', url: `http://127.0.0.1:9/h${i}` })),
    )
    expect(answers.filter((a) => a.status === 200).length).toBe(20)
    const refused = answers.filter((a) => a.status !== 200)
    expect(refused.length).toBe(5)
    for (const r of refused) {
      expect([r.status, r.body.code]).toEqual([400, 'too_many_webhooks'])
      expect(r.body.message).toContain('at most 20')
    }
    // Another account has its own 20.
    expect((await createHook(undefined, otherKey)).id).toBeGreaterThan(0)
  })
})

describe('the SSRF guard at creation', () => {
  test('a private address is refused (400 private_address naming "url") unless media.allow_private_networks', async () => {
    const strict = await makeBox(
      {},
      {
        resolve: async (h) =>
          h === 'intranet.example' ? ['10.1.2.3'] : h === 'hooks.example' ? ['93.184.215.14'] : [],
      },
    )
    try {
      const k = await strict.account('carol')
      for (const url of [
        'http://127.0.0.1:8080/hook',
        'http://[::1]/hook',
        'http://intranet.example/hook',
        'http://2130706433/',
      ]) {
        const r = await strict.post(W, { action: 'create', url }, { 'X-Api-Key': k })
        expect({ url, status: r.status, code: r.body.code }).toEqual({ url, status: 400, code: 'private_address' })
        expect(r.body.message).toContain('"url"')
      }
      const ok = await strict.post(W, { action: 'create', url: 'https://hooks.example/in' }, { 'X-Api-Key': k })
      expect(ok.status).toBe(200)
      // A name that does not resolve now is taken (the deliverer checks every send again).
      expect(
        (await strict.post(W, { action: 'create', url: 'https://not-yet.example/in' }, { 'X-Api-Key': k })).status,
      ).toBe(200)
    } finally {
      await strict.cleanup()
    }
    // The box of this file allows private networks: the same loopback URL is taken.
    expect((await hook({ action: 'create', url: 'http://127.0.0.1:8080/hook' })).status).toBe(200)
  })
})

describe('events in the transaction of the change', () => {
  test('link.created, link.updated, link.deleted: one event row and one pending delivery each, body {type, timestamp, data}', async () => {
    const made = await createHook()
    const created = await box.post(
      '/api/getLink.json',
      { url: 'https://example.com/x', alias: 'evt-one', password: 'secret-pw' },
      { 'X-Api-Key': key },
    )
    expect(created.status).toBe(200)
    await box.post('/api/update.json', { code: 'evt-one', url: 'https://example.com/y' }, { 'X-Api-Key': key })
    await box.post('/api/delete.json', { code: 'evt-one' }, { 'X-Api-Key': key })
    const events = rows('SELECT id, account_id, type, created, payload FROM webhook_events ORDER BY id')
    expect(events.map((e) => e.type)).toEqual(['link.created', 'link.updated', 'link.deleted'])
    for (const e of events) {
      expect(e.account_id).toBe(accountId('alice'))
      const body = JSON.parse(e.payload)
      expect(Object.keys(body)).toEqual(['type', 'timestamp', 'data'])
      expect(body.type).toBe(e.type)
      expect(body.timestamp).toBe(new Date(e.created).toISOString())
      expect(body.data.hex).toBe('evt-one')
      expect(body.data.password).toBe(true)
      expect(e.payload).not.toContain('argon2') // the public record, never the hash
    }
    // data is the link's record exactly as the API answered it.
    const first = JSON.parse(events[0].payload).data
    expect(first).toEqual(created.body.return)
    expect(JSON.parse(events[1].payload).data.long_url).toBe('https://example.com/y')
    expect(rows('SELECT event_id, endpoint_id, state, attempts FROM webhook_deliveries ORDER BY event_id')).toEqual(
      events.map((e) => ({ event_id: e.id, endpoint_id: made.id, state: 'pending', attempts: 0 })),
    )
  })

  test('nothing is written for an account without a subscribed, enabled endpoint, nor for anonymous links', async () => {
    await createHook('mail.received')
    const disabled = await createHook('link.created')
    box.db
      .query('UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ? WHERE id = ?')
      .run('the receiver answered 410 Gone', disabled.id)
    box.outbox.reload()
    await box.post('/api/getLink.json', { url: 'https://example.com/a' }, { 'X-Api-Key': key })
    await box.post('/api/getLink.json', { url: 'https://example.com/b' }, { 'X-Api-Key': otherKey })
    await box.post('/api/getLink.json', { url: 'https://example.com/c' })
    expect(rows('SELECT count(*) AS n FROM webhook_events')).toEqual([{ n: 0 }])
    expect(box.outbox.wanted('link.created', accountId('alice'))).toBe(false)
    expect(box.outbox.wanted('mail.received', accountId('alice'))).toBe(true)
    expect(box.outbox.wanted('link.created', null)).toBe(false)
  })

  test('one event per change, to every subscribed endpoint; link.clicked only when asked for', async () => {
    const a = await createHook('link.created')
    const b = await createHook('link.created,link.clicked')
    expect((await hook({ action: 'list' })).body.return.webhooks.map((w: any) => w.events)).toEqual([
      'link.created',
      'link.created,link.clicked',
    ])
    expect(box.outbox.wanted('link.clicked', accountId('alice'))).toBe(true)
    await box.post('/api/getLink.json', { url: 'https://example.com/a' }, { 'X-Api-Key': key })
    expect(rows('SELECT count(*) AS n FROM webhook_events')).toEqual([{ n: 1 }])
    expect(rows('SELECT endpoint_id FROM webhook_deliveries ORDER BY endpoint_id')).toEqual([
      { endpoint_id: a.id },
      { endpoint_id: b.id },
    ])
  })

  test('a creation that fails leaves no event: a taken alias, and a failure after the event was written', async () => {
    await createHook('link.created')
    const first = await box.post(
      '/api/getLink.json',
      { url: 'https://example.com/a', alias: 'taken-one' },
      { 'X-Api-Key': key },
    )
    expect(first.status).toBe(200)
    // Two creations in one group (one transaction, a savepoint each): the one on a taken alias fails alone.
    const [dup, fresh] = await Promise.all([
      box.post('/api/getLink.json', { url: 'https://example.com/b', alias: 'taken-one' }, { 'X-Api-Key': key }),
      box.post('/api/getLink.json', { url: 'https://example.com/c', alias: 'fresh-one' }, { 'X-Api-Key': key }),
    ])
    expect([dup.status, fresh.status]).toEqual([409, 200])
    const hexes = () =>
      rows('SELECT payload FROM webhook_events ORDER BY id').map((e) => JSON.parse(e.payload).data.hex)
    expect(hexes()).toEqual(['taken-one', 'fresh-one'])
    // The delivery insert fails after the link and the event row were written: the link goes too.
    box.db.exec(
      "CREATE TEMP TRIGGER refuse AFTER INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    )
    const failed = await box.post(
      '/api/getLink.json',
      { url: 'https://example.com/d', alias: 'never-made' },
      { 'X-Api-Key': key },
    )
    expect(failed.status).toBe(500)
    expect(rows("SELECT count(*) AS n FROM links WHERE code = 'never-made'")).toEqual([{ n: 0 }])
    box.db.exec('DROP TRIGGER temp.refuse')
    expect(hexes()).toEqual(['taken-one', 'fresh-one'])
    expect(rows('SELECT count(*) AS n FROM webhook_deliveries')).toEqual([{ n: 2 }])
  })

  test('an update or delete that fails leaves no event (and one whose event fails is not made)', async () => {
    await createHook('link.updated,link.deleted')
    await box.post('/api/getLink.json', { url: 'https://example.com/a', alias: 'keep-me' }, { 'X-Api-Key': key })
    expect(
      (await box.post('/api/update.json', { code: 'keep-me', url: 'https://example.com/b' }, { 'X-Api-Key': otherKey }))
        .status,
    ).toBe(403)
    box.db.exec(
      "CREATE TEMP TRIGGER refuse AFTER INSERT ON webhook_events BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    )
    expect(
      (await box.post('/api/update.json', { code: 'keep-me', url: 'https://example.com/c' }, { 'X-Api-Key': key }))
        .status,
    ).toBe(500)
    expect((await box.post('/api/delete.json', { code: 'keep-me' }, { 'X-Api-Key': key })).status).toBe(500)
    box.db.exec('DROP TRIGGER temp.refuse')
    expect(rows("SELECT long_url FROM links WHERE code = 'keep-me'")).toEqual([{ long_url: 'https://example.com/a' }])
    expect(rows('SELECT count(*) AS n FROM webhook_events')).toEqual([{ n: 0 }])
  })

  test("mail.received: once per mailbox, data as events.emit sends it, in the delivery's transaction", async () => {
    await createHook('mail.received')
    const alice = (await box.accounts.authenticate(key))!
    await box.mail.getOrCreate(alice, 'inbox-one')
    await box.mail.getOrCreate(alice, 'inbox-two')
    const ids = await Promise.all(
      ['inbox-one', 'inbox-two'].map(async (a) => {
        const c = await box.mail.checkRecipient(`${a}@localhost`)
        if (!c.ok) throw new Error('no mailbox')
        return c.mailboxId
      }),
    )
    const emitted: any[] = []
    box.events.on('mail.received', (p) => emitted.push(p.message))
    const bytes = Buffer.from(
      'From: Ann <ann@example.com>\r\nTo: inbox-one@localhost\r\nSubject: Hello\r\n\r\nHi there\r\n',
    )
    await box.mail.deliver(
      { size: bytes.length, oversize: false, bytes, file: null },
      'ann@example.com',
      ids,
      () => false,
    )
    const events = rows('SELECT type, payload FROM webhook_events ORDER BY id')
    expect(events.map((e) => e.type)).toEqual(['mail.received', 'mail.received'])
    expect(events.map((e) => JSON.parse(e.payload).data)).toEqual(emitted)
    expect(emitted.map((m) => m.address)).toEqual(['inbox-one@localhost', 'inbox-two@localhost'])
    expect(emitted[0]).toMatchObject({ subject: 'Hello', from: { address: 'ann@example.com', name: 'Ann' } })
  })

  test('the deliverer is woken after the commit, and sees the rows', async () => {
    await createHook('link.created')
    const reader = new Database(join(box.dir, 'linkbox.db'), { readonly: true })
    try {
      const seen: number[] = []
      box.outbox.onEnqueued(() =>
        seen.push((reader.query('SELECT count(*) AS n FROM webhook_deliveries').get() as { n: number }).n),
      )
      await box.post('/api/getLink.json', { url: 'https://example.com/a' }, { 'X-Api-Key': key })
      expect(seen).toEqual([1])
    } finally {
      reader.close()
    }
  })

  test('an endpoint added by another process (the CLI) is noticed without a restart', async () => {
    const other = new Database(join(box.dir, 'linkbox.db'))
    expect(box.outbox.wanted('link.created', accountId('alice'))).toBe(false)
    other
      .query(
        "INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (?, 'http://127.0.0.1:9/', 'link.created', 'whsec_x', 1)",
      )
      .run(accountId('alice'))
    other.close()
    // Another connection's commit is looked for at most once a second.
    await Bun.sleep(1_100)
    await box.post('/api/getLink.json', { url: 'https://example.com/a' }, { 'X-Api-Key': key })
    expect(rows('SELECT type FROM webhook_events')).toEqual([{ type: 'link.created' }])
  })
})

describe('the sweep', () => {
  test('deletes events older than 7 days with nothing pending; keeps pending and recent ones', async () => {
    const made = await createHook('link.created')
    const now = Date.now()
    const day = 86_400_000
    const acct = accountId('alice')
    const ev = box.db.query(
      'INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?, ?, ?, ?) RETURNING id',
    )
    const dl = box.db.query(
      'INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (?, ?, ?, ?)',
    )
    const put = (ageDays: number, state: string | null) => {
      const { id } = ev.get(acct, 'link.created', now - ageDays * day, '{}') as { id: number }
      if (state) dl.run(id, made.id, state, now)
      return id
    }
    const oldOk = put(8, 'ok')
    const oldFailed = put(8, 'failed')
    const oldNone = put(8, null)
    const oldPending = put(8, 'pending')
    const recentOk = put(6, 'ok')
    expect(await box.webhooks.sweep(now)).toEqual({ events: 3, dropped: 0 })
    expect(rows('SELECT id FROM webhook_events ORDER BY id').map((r) => r.id)).toEqual([oldPending, recentOk])
    expect(
      rows('SELECT count(*) AS n FROM webhook_deliveries WHERE event_id IN (?, ?, ?)', oldOk, oldFailed, oldNone),
    ).toEqual([{ n: 0 }])
  })

  test('caps pending deliveries per endpoint at 10,000: the oldest go, and are counted', async () => {
    const a = await createHook('link.created')
    const b = await createHook('link.created')
    const acct = accountId('alice')
    box.db.transaction(() => {
      const ev = box.db.query(
        'INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?, ?, ?, ?) RETURNING id',
      )
      const dl = box.db.query(
        "INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (?, ?, 'pending', 0)",
      )
      for (let i = 0; i < 10_005; i++) {
        const { id } = ev.get(acct, 'link.created', Date.now(), '{}') as { id: number }
        dl.run(id, a.id)
        if (i < 10) dl.run(id, b.id)
      }
    })()
    const [{ first }] = rows('SELECT min(id) AS first FROM webhook_events')
    expect(await box.webhooks.sweep()).toEqual({ events: 0, dropped: 5 })
    expect(box.webhooks.dropped).toBe(5)
    expect(
      rows(
        'SELECT endpoint_id, count(*) AS n, min(event_id) AS oldest FROM webhook_deliveries GROUP BY endpoint_id ORDER BY endpoint_id',
      ),
    ).toEqual([
      { endpoint_id: a.id, n: 10_000, oldest: first + 5 },
      { endpoint_id: b.id, n: 10, oldest: first },
    ])
  })
})

describe('the CLI', () => {
  const config = writeConfig(undefined, { media: { allow_private_networks: true } })
  const cli = (...args: string[]) => runCli([...args, '--config', config.configPath])
  afterAll(() => removeDir(config.dir))

  test('webhook create | list | test | log | delete', async () => {
    expect((await cli('account', 'create', 'dana')).code).toBe(0)
    const made = await cli(
      'webhook',
      'create',
      'dana',
      'http://127.0.0.1:9/in',
      '--events',
      'link.created,link.clicked',
    )
    expect(made.code).toBe(0)
    const secret = made.stdout.trimEnd().split('\n').at(-1)!
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
    expect(made.stdout).toContain('webhook 1 for dana: http://127.0.0.1:9/in (link.created,link.clicked)')

    const list = await cli('webhook', 'list')
    expect(list.code).toBe(0)
    expect(list.stdout.split('\n')[1]).toBe(
      '1\tdana\tenabled\t0\t0\t0\tlink.created,link.clicked\thttp://127.0.0.1:9/in',
    )
    expect(list.stdout).not.toContain(secret)
    expect((await cli('webhook', 'list', 'dana')).stdout.split('\n')[1]).toStartWith('1\tdana\tenabled')

    const t = await cli('webhook', 'test', '1')
    expect(t.code).toBe(0)
    expect(t.stdout).toContain('the running service delivers it')
    const webhookId = t.stdout.trimEnd().split('\n').at(-1)!
    expect(webhookId).toMatch(/^msg_[0-9a-f]{32}$/)
    const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
    const event = db.query('SELECT type, payload FROM webhook_events WHERE webhook_id = ?').get(webhookId) as any
    expect(event.type).toBe('webhook.test')
    expect(JSON.parse(event.payload)).toMatchObject({
      type: 'webhook.test',
      data: { webhook: 1, url: 'http://127.0.0.1:9/in' },
    })
    expect(db.query('SELECT endpoint_id, state FROM webhook_deliveries').all()).toEqual([
      { endpoint_id: 1, state: 'pending' },
    ])
    db.close()
    const log = await cli('webhook', 'log', '1')
    expect(log.stdout.split('\n')[1]).toStartWith(`${webhookId}\twebhook.test\tpending\t0\t`)

    // The service, started later, finds what the CLI wrote.
    const box = createLinkbox(loadConfig(config.configPath))
    try {
      expect(box.outbox.wanted('link.clicked', 1)).toBe(true)
    } finally {
      await box.close()
    }

    const bad = await cli('webhook', 'create', 'dana', 'http://127.0.0.1:9/', '--events', 'link.nope')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('"link.nope"')
    const nobody = await cli('webhook', 'create', 'nobody', 'http://127.0.0.1:9/')
    expect(nobody.code).toBe(2)
    expect(nobody.stderr).toContain('No account named "nobody"')

    const del = await cli('webhook', 'delete', '1')
    expect([del.code, del.stdout.trim()]).toEqual([0, 'webhook 1 deleted'])
    expect((await cli('webhook', 'delete', '1')).stderr).toContain('There is no webhook 1')
    expect((await cli('webhook', 'list')).stdout.trim().split('\n').length).toBe(1)
    expect((await cli('webhook', 'frobnicate')).code).toBe(2)
  })

  test('the CLI refuses a private address unless media.allow_private_networks', async () => {
    const strict = writeConfig()
    try {
      const s = (...args: string[]) => runCli([...args, '--config', strict.configPath])
      expect((await s('account', 'create', 'erin')).code).toBe(0)
      const r = await s('webhook', 'create', 'erin', 'http://127.0.0.1:9/in')
      expect(r.code).toBe(2)
      expect(r.stderr).toContain('private or local network')
    } finally {
      removeDir(strict.dir)
    }
  })
})
