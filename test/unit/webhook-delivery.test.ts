// The webhook deliverer (issue 10, "How it is checked") against real HTTP receivers on 127.0.0.1 and a
// real SQLite file: signatures checked with the `standardwebhooks` package, retries on a schedule shortened
// to milliseconds, 410, Retry-After, the SSRF guard, redelivery under the same id, and one slow receiver
// beside a fast one. Rows are written with plain SQL (test/support/webhooks.ts), as the outbox writes them.
import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase, type Db } from '../../src/db/sqlite'
import { sqliteAuditRows } from '../../src/audit/storage/sqlite'
import { sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'
import { createDeliverer, retryAfterMs, type Deliverer, type DelivererDeps } from '../../src/webhooks/deliverer'
import { makeBox, tempDir, testConfig } from '../support/app'
import {
  addAccount,
  addEndpoint,
  addEvent,
  delivery,
  endpointRow,
  nextSeq,
  startReceiver,
  until,
  type Receiver,
} from '../support/webhooks'

const SHORT = [20, 20, 20, 20, 20, 20, 20]
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

interface Rig {
  db: Db
  account: number
  deliverer: Deliverer
  logs: string[]
}

/** A database file in a temp dir, one account, and a started deliverer (stopped and removed after the test). */
function rig(opts: Partial<DelivererDeps<Db>> & { allowPrivate?: boolean } = {}): Rig {
  const dir = tempDir('linkbox-webhooks-')
  const db = openDatabase(join(dir, 'linkbox.db'))
  const logs: string[] = []
  const deliverer = createDeliverer({
    queue: sqliteWebhookQueue(db),
    audit: sqliteAuditRows(db),
    config: testConfig(dir, { media: { allow_private_networks: opts.allowPrivate ?? true } }),
    clock: Date.now,
    schedule: SHORT,
    log: (line) => logs.push(line),
    ...opts,
  })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  cleanups.push(() => db.close())
  cleanups.push(() => deliverer.stop())
  return { db, account: addAccount(db, 'owner'), deliverer, logs }
}

function receiver(answer?: Parameters<typeof startReceiver>[0]): Receiver {
  const r = startReceiver(answer)
  cleanups.push(() => r.stop())
  return r
}

/** An endpoint for the receiver (its secret handed to the receiver for verifying). */
function endpointFor(t: Rig, r: Receiver, opts: { events?: string; url?: string } = {}) {
  const e = addEndpoint(t.db, t.account, opts.url ?? r.url, { events: opts.events })
  r.secret = e.secret
  return e
}

describe('signed delivery', () => {
  test("a delivery arrives signed and verifiable, as the exact stored bytes, under its event's random webhook-id", async () => {
    const t = rig()
    const r = receiver()
    const e = endpointFor(t, r)
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'abc', url: 'https://example.com/ü' })
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).state === 'ok', 'the delivery is ok')
    expect(r.got).toHaveLength(1)
    const got = r.got[0]!
    expect(got.verifyError).toBeNull()
    expect(got.id).toBe(ev.webhookId)
    expect(got.body).toBe(ev.payload)
    expect(got.contentType).toBe('application/json')
    expect(Math.abs(Number(got.timestamp) - Date.now() / 1000)).toBeLessThan(300)
    const row = delivery(t.db, ev.id, e.id)
    expect(row).toMatchObject({ state: 'ok', attempts: 1, last_status: 200, last_error: null })
    expect(row.last_ms).toBeGreaterThanOrEqual(0)
    expect(row.last_at).toBeGreaterThan(0)
    expect(t.deliverer.stats.outcomes.ok).toBe(1)

    // A wrong secret does not verify: the receiver's check is a real one.
    r.secret = addEndpoint(t.db, t.account, 'http://unused.test/', { enabled: false }).secret
    const ev2 = addEvent(t.db, t.account, 'link.deleted', { hex: 'abc' })
    t.deliverer.wake()
    await until(() => r.got.length === 2, 'the second delivery')
    expect(r.got[1]!.verifyError).not.toBeNull()
    expect(r.got[1]!.id).toBe(ev2.webhookId)
  })

  test("only subscribed, enabled endpoints get an event; a disabled endpoint's pending row is not sent", async () => {
    const t = rig()
    const clicks = receiver()
    const links = receiver()
    const c = endpointFor(t, clicks, { events: 'link.clicked' })
    endpointFor(t, links, { events: 'link.created' })
    const ev = addEvent(t.db, t.account, 'link.clicked', { clicks: [] })
    t.db.query('UPDATE webhook_endpoints SET enabled = 0 WHERE id = ?').run(c.id)
    t.deliverer.start()
    const ev2 = addEvent(t.db, t.account, 'link.created', { hex: 'x' })
    t.deliverer.wake()
    await until(() => links.got.length === 1, 'the link.created delivery')
    expect(links.got[0]!.id).toBe(ev2.webhookId)
    expect(clicks.got).toEqual([])
    expect(delivery(t.db, ev.id, c.id).state).toBe('pending')
  })
})

describe('retries', () => {
  test('a 503 is retried and then succeeds, under the same webhook-id, each attempt freshly signed', async () => {
    const t = rig()
    const r = receiver((n) => new Response(n === 1 ? 'busy' : 'ok', { status: n === 1 ? 503 : 200 }))
    const e = endpointFor(t, r)
    const ev = addEvent(t.db, t.account, 'link.updated', { hex: 'abc' })
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).state === 'ok', 'delivered after a retry')
    expect(r.got.map((g) => [g.id, g.verifyError, g.body])).toEqual([
      [ev.webhookId, null, ev.payload],
      [ev.webhookId, null, ev.payload],
    ])
    expect(delivery(t.db, ev.id, e.id)).toMatchObject({ state: 'ok', attempts: 2, last_status: 200, last_error: null })
    expect(t.deliverer.stats.outcomes).toMatchObject({ retry: 1, ok: 1 })
  })

  test('after the last retry the delivery fails and the endpoint is failing; a later success clears it', async () => {
    const t = rig({ schedule: [10, 10] })
    let healthy = false
    const r = receiver(() => new Response('no', { status: healthy ? 200 : 500 }))
    const e = endpointFor(t, r)
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'a' })
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).state === 'failed', 'failed after the retries')
    expect(delivery(t.db, ev.id, e.id)).toMatchObject({
      state: 'failed',
      attempts: 3,
      last_status: 500,
      last_error: 'HTTP 500',
    })
    expect(r.got.map((g) => g.id)).toEqual([ev.webhookId, ev.webhookId, ev.webhookId])
    expect(endpointRow(t.db, e.id)).toMatchObject({ enabled: 1, failing: 1 })
    expect(t.logs.some((l) => l.includes(`webhook endpoint ${e.id} is failing`))).toBe(true)
    expect(t.deliverer.stats.outcomes).toMatchObject({ retry: 2, failed: 1 })

    healthy = true
    const ev2 = addEvent(t.db, t.account, 'link.created', { hex: 'b' })
    t.deliverer.wake()
    await until(() => delivery(t.db, ev2.id, e.id).state === 'ok', 'the next event delivered')
    expect(endpointRow(t.db, e.id).failing).toBe(0)
  })

  test('Retry-After moves the next attempt later than the schedule (capped at 24 h); it never brings it earlier', async () => {
    const t = rig({ schedule: [10, 10] })
    const r = receiver((n) =>
      n === 1 ? new Response('later', { status: 429, headers: { 'retry-after': '1' } }) : new Response('ok'),
    )
    const e = endpointFor(t, r)
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'a' })
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).attempts === 1, 'the first attempt recorded')
    const first = delivery(t.db, ev.id, e.id)
    expect(first).toMatchObject({ state: 'pending', last_status: 429 })
    expect(first.next_at - first.last_at!).toBeGreaterThanOrEqual(1000)
    await until(() => delivery(t.db, ev.id, e.id).state === 'ok', 'delivered after Retry-After')

    const now = Date.parse('2030-01-01T00:00:00Z')
    expect(retryAfterMs('120', now)).toBe(120_000)
    expect(retryAfterMs('Tue, 01 Jan 2030 00:00:30 GMT', now)).toBe(30_000)
    expect(retryAfterMs('Mon, 31 Dec 2029 00:00:00 GMT', now)).toBe(0)
    expect(retryAfterMs('9999999', now)).toBe(24 * 3600 * 1000)
    expect(retryAfterMs('soon', now)).toBeNull()
    expect(retryAfterMs(null, now)).toBeNull()
  })

  test('a 3xx is a failed attempt and the redirect is not followed', async () => {
    const t = rig({ schedule: [5_000] })
    const elsewhere = receiver()
    const r = receiver(() => Response.redirect(elsewhere.url, 307))
    const e = endpointFor(t, r)
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'a' })
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).attempts === 1, 'the attempt recorded')
    expect(delivery(t.db, ev.id, e.id)).toMatchObject({
      state: 'pending',
      last_status: 307,
      last_error: 'HTTP 307: redirects are not followed',
    })
    expect(elsewhere.got).toEqual([])
  })

  test('a receiver that is not there: a network error, retried', async () => {
    const t = rig({ schedule: [5_000] })
    const gone = startReceiver()
    const url = gone.url
    gone.stop()
    const e = addEndpoint(t.db, t.account, url)
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'a' })
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).attempts === 1, 'the attempt recorded')
    const row = delivery(t.db, ev.id, e.id)
    expect(row).toMatchObject({ state: 'pending', last_status: null })
    expect(row.last_error).toStartWith('network: ')
    expect(row.last_error!.length).toBeLessThanOrEqual(200)
  })
})

describe('410 Gone', () => {
  test('disables the endpoint, fails its pending deliveries, and nothing more is sent to it', async () => {
    const t = rig()
    const r = receiver(() => new Response('gone', { status: 410 }))
    const e = endpointFor(t, r)
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'a' })
    const later = addEvent(t.db, t.account, 'link.created', { hex: 'b' }, { nextAt: Date.now() + 3_600_000 })
    t.deliverer.start()
    await until(() => endpointRow(t.db, e.id).enabled === 0, 'the endpoint disabled')
    expect(endpointRow(t.db, e.id)).toMatchObject({ enabled: 0, disabled_reason: 'the receiver answered 410 Gone' })
    expect(delivery(t.db, ev.id, e.id)).toMatchObject({ state: 'failed', attempts: 1, last_status: 410 })
    expect(delivery(t.db, later.id, e.id)).toMatchObject({
      state: 'failed',
      attempts: 0,
      last_error: 'not sent: the receiver answered 410 Gone',
    })
    expect(t.logs).toContain(`webhook endpoint ${e.id} disabled: the receiver answered 410 Gone`)
    // In the audit log (issue 25), by the system, in the transaction that disabled it.
    expect(
      t.db.query("SELECT actor_kind, actor_name, target, detail FROM audit_log WHERE action = 'webhook.disable'").all(),
    ).toEqual([
      {
        actor_kind: 'system',
        actor_name: 'webhook deliverer',
        target: `webhook ${e.id}: ${r.url}`,
        detail: 'the receiver answered 410 Gone',
      },
    ])
    // A row left pending for it (written by a transaction that began before the 410) is skipped.
    t.db.query("UPDATE webhook_deliveries SET state = 'pending', next_at = 0 WHERE event_id = ?").run(later.id)
    t.deliverer.wake()
    await Bun.sleep(100)
    expect(r.got).toHaveLength(1)
    expect(t.deliverer.stats.outcomes.gone).toBe(1)
  })
})

describe('one event, one webhook-id', () => {
  test('across endpoints, retries and a redelivery the id stays the one of the event', async () => {
    const t = rig()
    const a = receiver((n) => new Response('', { status: n === 1 ? 502 : 204 }))
    const b = receiver()
    const ea = endpointFor(t, a)
    const eb = endpointFor(t, b)
    const ev = addEvent(t.db, t.account, 'mail.received', { address: 'x@mail.test' })
    t.deliverer.start()
    await until(
      () => delivery(t.db, ev.id, ea.id).state === 'ok' && delivery(t.db, ev.id, eb.id).state === 'ok',
      'both delivered',
    )
    // Redelivery (whcore's action=redeliver): the row is pending again.
    t.db
      .query(
        "UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_at = 0 WHERE event_id = ? AND endpoint_id = ?",
      )
      .run(ev.id, eb.id)
    t.deliverer.wake()
    await until(() => b.got.length === 2 && delivery(t.db, ev.id, eb.id).state === 'ok', 'redelivered')
    const ids = new Set([...a.got, ...b.got].map((g) => g.id))
    expect([...ids]).toEqual([ev.webhookId])
    expect([...a.got, ...b.got].every((g) => g.verifyError === null)).toBe(true)
    expect(a.got).toHaveLength(2)
  })

  test('stop() cuts a request in flight and leaves it pending; the next start sends it again under the same id', async () => {
    const t = rig()
    let hold = true
    const r = receiver(async () => {
      while (hold) await Bun.sleep(10)
      return new Response('ok')
    })
    const e = endpointFor(t, r)
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'a' })
    t.deliverer.start()
    await until(() => r.got.length === 1, 'the first request arrives')
    await t.deliverer.stop()
    // Its lease given back: due at once, not after the lease (15 s) has run out.
    expect(delivery(t.db, ev.id, e.id)).toMatchObject({ state: 'pending', attempts: 0, claimed_until: 0 })
    hold = false
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).state === 'ok', 'sent again')
    expect(r.got.map((g) => g.id)).toEqual([ev.webhookId, ev.webhookId])
  })
})

describe('the lease', () => {
  test('a request that outlasts the lease keeps its row (renewed while in flight): not sent twice, its result written under the renewed lease', async () => {
    const t = rig({ leaseMs: 300 })
    const r = receiver(async () => {
      await Bun.sleep(1_200) // four leases
      return new Response('', { status: 503 })
    })
    const e = endpointFor(t, r)
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'a' })
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).attempts === 1, 'the attempt recorded')
    expect(r.got).toHaveLength(1)
    // The retry was written: under the lease its last renewal wrote, not the claim's (the fence).
    expect(delivery(t.db, ev.id, e.id)).toMatchObject({ state: 'pending', last_status: 503, claimed_until: 0 })
    expect(t.deliverer.stats.outcomes.retry).toBe(1)
  })
})

describe('the SSRF guard', () => {
  test('a receiver on a private address is refused unless allowed, and the refusal is final at once', async () => {
    const resolve = async (host: string) => (host === 'hooks.test' ? ['127.0.0.1'] : [])
    const t = rig({ allowPrivate: false, resolve })
    const r = receiver()
    const url = `http://hooks.test:${r.port}/hook`
    const e = endpointFor(t, r, { url })
    const ev = addEvent(t.db, t.account, 'link.created', { hex: 'a' })
    t.deliverer.start()
    await until(() => delivery(t.db, ev.id, e.id).state === 'failed', 'refused')
    expect(delivery(t.db, ev.id, e.id)).toMatchObject({
      state: 'failed',
      attempts: 1,
      last_status: null,
      last_error: 'private address: the host is on a private or local network',
    })
    expect(endpointRow(t.db, e.id).failing).toBe(1)
    expect(r.got).toEqual([])
    expect(t.deliverer.stats.outcomes).toMatchObject({ private: 1, retry: 0 })

    // The same address counted as public (as the internet stands in tests): delivered.
    const allowed = rig({ allowPrivate: false, resolve, isAllowed: (a) => a === '127.0.0.1' })
    const e2 = addEndpoint(allowed.db, allowed.account, url, { secret: e.secret })
    const ev2 = addEvent(allowed.db, allowed.account, 'link.created', { hex: 'a' })
    allowed.deliverer.start()
    await until(() => delivery(allowed.db, ev2.id, e2.id).state === 'ok', 'delivered when allowed')

    // media.allow_private_networks = true lets a private receiver through.
    const open = rig({ allowPrivate: true, resolve })
    const e3 = addEndpoint(open.db, open.account, url, { secret: e.secret })
    const ev3 = addEvent(open.db, open.account, 'link.created', { hex: 'a' })
    open.deliverer.start()
    await until(() => delivery(open.db, ev3.id, e3.id).state === 'ok', 'delivered with allow_private_networks')
    expect(r.got.map((g) => g.verifyError)).toEqual([null, null])
  })
})

describe('fairness', () => {
  test("a slow receiver (10 s per answer) does not delay another endpoint's deliveries", async () => {
    const t = rig()
    const answered: number[] = []
    const slow = receiver(async () => {
      await Bun.sleep(10_000)
      answered.push(nextSeq())
      return new Response('ok')
    })
    const fast = receiver()
    const es = endpointFor(t, slow, { events: 'link.clicked' })
    const ef = endpointFor(t, fast, { events: 'link.created' })
    // The slow endpoint's events are older, and more than one batch (32) of them: oldest-first order alone
    // would serve them first.
    const slowEvents = Array.from({ length: 40 }, (_, i) => addEvent(t.db, t.account, 'link.clicked', { i }))
    const fastEvents = Array.from({ length: 8 }, (_, i) => addEvent(t.db, t.account, 'link.created', { i }))
    const startedAt = Date.now()
    t.deliverer.start()
    await until(() => fastEvents.every((ev) => delivery(t.db, ev.id, ef.id).state === 'ok'), 'the fast endpoint served')
    const servedAt = nextSeq()
    // Served at once, not by the deliverer's 5 s look at the outbox (8 local requests take milliseconds;
    // the bound is generous so that only a pass that left them waiting for the timer fails it).
    expect(Date.now() - startedAt).toBeLessThan(4_000)
    // All of the fast endpoint's deliveries are done before the slow one has answered anything, and the slow
    // one holds exactly its two slots.
    expect(answered).toEqual([])
    expect(fast.got.every((g) => g.seq < servedAt)).toBe(true)
    expect(slow.got).toHaveLength(2)
    expect(t.deliverer.stats.inFlight).toBe(2)
    expect(slowEvents.map((ev) => delivery(t.db, ev.id, es.id).state)).toEqual(Array(40).fill('pending'))
  }, 30_000)

  test('at most 16 requests in flight in all', async () => {
    const t = rig()
    let hold = true
    let open = 0
    let most = 0
    const receivers = Array.from({ length: 10 }, () =>
      receiver(async () => {
        most = Math.max(most, ++open)
        while (hold) await Bun.sleep(10)
        open--
        return new Response('ok')
      }),
    )
    const endpoints = receivers.map((r) => endpointFor(t, r))
    const events = Array.from({ length: 3 }, (_, i) => addEvent(t.db, t.account, 'link.created', { i }))
    t.deliverer.start()
    await until(() => open === 16, '16 requests open')
    await Bun.sleep(100)
    expect(most).toBe(16)
    expect(t.deliverer.stats.inFlight).toBe(16)
    hold = false
    await until(
      () => events.every((ev) => endpoints.every((e) => delivery(t.db, ev.id, e.id).state === 'ok')),
      'all 30 delivered',
    )
    expect(most).toBe(16)
  })
})

describe('in the app', () => {
  test('/metrics: deliveries by outcome, the outbox and the age of its oldest event', async () => {
    const box = await makeBox({ media: { allow_private_networks: true } }, { webhookSchedule: [5_000] })
    cleanups.push(() => box.cleanup())
    const r = receiver((n) => new Response('', { status: n === 1 ? 200 : 500 }))
    const account = addAccount(box.db, 'metrics')
    const e = addEndpoint(box.db, account, r.url)
    r.secret = e.secret
    const ev = addEvent(box.db, account, 'link.created', { hex: 'a' })
    box.deliverer.start()
    await until(() => delivery(box.db, ev.id, e.id).state === 'ok', 'delivered')
    addEvent(box.db, account, 'link.created', { hex: 'b' })
    box.deliverer.wake()
    await until(() => box.deliverer.stats.outcomes.retry === 1, 'one retry planned')
    await Bun.sleep(1100) // the outbox gauges are cached for a second
    const text = await (await box.readMetrics()).text()
    expect(text).toContain('linkbox_webhook_deliveries_total{outcome="ok"} 1')
    expect(text).toContain('linkbox_webhook_deliveries_total{outcome="retry"} 1')
    expect(text).toContain('linkbox_webhook_deliveries_total{outcome="gone"} 0')
    expect(text).toContain('linkbox_webhook_outbox 1')
    expect(text).toMatch(/linkbox_webhook_oldest_pending_seconds [12]\n/)
  })
})
