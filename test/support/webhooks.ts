// Test data for the webhook deliverer written with plain SQL (the rows whcore's outbox and endpoints API
// write, in the shape of migrations 7 and 9), and a real HTTP receiver on 127.0.0.1 that records every request
// and checks its signature with the `standardwebhooks` package — never with our own code.
import type { Database } from 'bun:sqlite'
import { Webhook } from 'standardwebhooks'
import { newSecret } from '../../src/webhooks/sign'

export function addAccount(db: Database, name: string): number {
  return (
    db.query('INSERT INTO accounts (name, created) VALUES (?, ?) RETURNING id').get(name, Date.now()) as { id: number }
  ).id
}

export interface EndpointRow {
  id: number
  url: string
  secret: string
}

export function addEndpoint(
  db: Database,
  accountId: number,
  url: string,
  opts: { events?: string; enabled?: boolean; secret?: string } = {},
): EndpointRow {
  const secret = opts.secret ?? newSecret()
  const { id } = db
    .query(
      'INSERT INTO webhook_endpoints (account_id, url, events, secret, enabled, created) VALUES (?, ?, ?, ?, ?, ?) RETURNING id',
    )
    .get(
      accountId,
      url,
      opts.events ?? 'link.created,link.updated,link.deleted,mail.received',
      secret,
      opts.enabled === false ? 0 : 1,
      Date.now(),
    ) as { id: number }
  return { id, url, secret }
}

/**
 * An event as the outbox writes it: the row in webhook_events and, in the same transaction, one pending
 * delivery (due `nextAt`, default now) per enabled endpoint of the account subscribed to its type.
 */
export function addEvent(
  db: Database,
  accountId: number,
  type: string,
  data: Record<string, unknown>,
  opts: { nextAt?: number } = {},
): { id: number; webhookId: string; payload: string } {
  const created = Date.now()
  const payload = JSON.stringify({ type, timestamp: new Date(created).toISOString(), data })
  return db.transaction(() => {
    // The webhook-id is the column's default (random), as for the outbox's own inserts.
    const { id, webhook_id: webhookId } = db
      .query(
        'INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?, ?, ?, ?) RETURNING id, webhook_id',
      )
      .get(accountId, type, created, payload) as { id: number; webhook_id: string }
    const endpoints = db
      .query('SELECT id, events FROM webhook_endpoints WHERE account_id = ? AND enabled = 1')
      .all(accountId) as { id: number; events: string }[]
    for (const e of endpoints)
      if (e.events.split(',').includes(type))
        db.query(
          "INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (?, ?, 'pending', ?)",
        ).run(id, e.id, opts.nextAt ?? created)
    return { id, webhookId, payload }
  })()
}

export interface DeliveryRow {
  id: number
  event_id: number
  endpoint_id: number
  state: 'pending' | 'ok' | 'failed'
  attempts: number
  next_at: number
  last_status: number | null
  last_error: string | null
  last_ms: number | null
  last_at: number | null
  /** The lease of the claim holding it (unix ms; 0: none): webhooks/storage/contract.ts. */
  claimed_until: number
}

export function delivery(db: Database, eventId: number, endpointId: number): DeliveryRow {
  return db
    .query('SELECT * FROM webhook_deliveries WHERE event_id = ? AND endpoint_id = ?')
    .get(eventId, endpointId) as DeliveryRow
}

export function endpointRow(
  db: Database,
  id: number,
): { enabled: number; failing: number; disabled_reason: string | null } {
  return db.query('SELECT enabled, failing, disabled_reason FROM webhook_endpoints WHERE id = ?').get(id) as any
}

export interface Received {
  id: string
  timestamp: string
  body: string
  contentType: string | null
  /** The `standardwebhooks` verdict with the endpoint's secret: null when verified, else its error text. */
  verifyError: string | null
  /** Order of arrival across every receiver of the test (see `sequence`). */
  seq: number
  /** Every header as sent (names in lower case): to verify again with another secret. */
  headers: Record<string, string>
}

let sequence = 0
/** A counter shared by all receivers and by tests: "this happened before that", without clocks. */
export const nextSeq = () => ++sequence

export interface Receiver {
  url: string
  port: number
  got: Received[]
  /** Set once the endpoint exists; each request is verified with it. */
  secret: string
  stop(): void
}

/**
 * Bun.serve on 127.0.0.1, port 0. `answer(n, request)` (n counts from 1) decides the response; it may
 * wait. Every request is recorded (and verified) when it arrives, before it is answered.
 */
export function startReceiver(
  answer: (n: number, got: Received) => Response | Promise<Response> = () => new Response('ok'),
): Receiver {
  const got: Received[] = []
  const r: Receiver = {
    url: '',
    port: 0,
    got,
    secret: '',
    stop: () => server.stop(true),
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch: async (req) => {
      const body = await req.text()
      const headers: Record<string, string> = {}
      req.headers.forEach((value, name) => (headers[name] = value))
      let verifyError: string | null = null
      try {
        new Webhook(r.secret).verify(body, headers)
      } catch (err) {
        verifyError = (err as Error).message
      }
      const entry: Received = {
        id: headers['webhook-id'] ?? '',
        timestamp: headers['webhook-timestamp'] ?? '',
        body,
        contentType: req.headers.get('content-type'),
        verifyError,
        seq: nextSeq(),
        headers,
      }
      got.push(entry)
      return answer(got.length, entry)
    },
  })
  r.port = server.port!
  r.url = `http://127.0.0.1:${server.port}/hook`
  return r
}

/** Polls `check` until it returns true (the test's own timeout bounds the wait). */
export async function until(check: () => boolean, what: string, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs
  while (!check()) {
    if (Date.now() > end) throw new Error(`gave up waiting: ${what}`)
    await Bun.sleep(10)
  }
}
