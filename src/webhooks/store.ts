// The SQL of webhook endpoints, events and the delivery log, and nothing else: the rules live in
// service.ts and outbox.ts. The deliverer's own queries (due rows, attempts) live in deliverer.ts.
import type { Db } from '../db'

export interface EndpointRow {
  id: number
  account_id: number
  url: string
  events: string
  secret: string
  enabled: number
  failing: number
  disabled_reason: string | null
  created: number
}

export interface EndpointCounts {
  endpoint_id: number
  ok: number
  failed: number
  pending: number
}

export interface DeliveryLogRow {
  event_id: number
  type: string
  state: 'pending' | 'ok' | 'failed'
  attempts: number
  last_status: number | null
  last_error: string | null
  last_ms: number | null
  last_at: number | null
  next_at: number
}

export interface EventRow {
  id: number
  account_id: number
  type: string
  created: number
  payload: string
}

export function createWebhookStore(db: Db) {
  const insertEndpoint = db.query<EndpointRow, [number, string, string, string, number]>(
    'INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING *',
  )
  const endpoint = db.query<EndpointRow, [number]>('SELECT * FROM webhook_endpoints WHERE id = ?')
  const endpointsOf = db.query<EndpointRow & { account_name: string }, [number]>(
    `SELECT w.*, a.name AS account_name FROM webhook_endpoints w JOIN accounts a ON a.id = w.account_id
     WHERE w.account_id = ? ORDER BY w.id`,
  )
  const allEndpoints = db.query<EndpointRow & { account_name: string }, []>(
    'SELECT w.*, a.name AS account_name FROM webhook_endpoints w JOIN accounts a ON a.id = w.account_id ORDER BY w.id',
  )
  const accountNamed = db.query<{ id: number }, [string]>('SELECT id FROM accounts WHERE name = ?')
  const countOf = db.query<{ n: number }, [number]>('SELECT count(*) AS n FROM webhook_endpoints WHERE account_id = ?')
  const removeEndpoint = db.query<unknown, [number]>('DELETE FROM webhook_endpoints WHERE id = ?')
  // What the outbox's in-memory index holds: which enabled endpoint of which account wants which types.
  const subscriptions = db.query<{ id: number; account_id: number; events: string }, []>(
    'SELECT id, account_id, events FROM webhook_endpoints WHERE enabled = 1',
  )
  // The endpoint_id half of UNIQUE (endpoint_id, event_id) serves these two.
  const counts = db.query<EndpointCounts, [number]>(
    `SELECT d.endpoint_id, sum(d.state = 'ok') AS ok, sum(d.state = 'failed') AS failed, sum(d.state = 'pending') AS pending
     FROM webhook_deliveries d WHERE d.endpoint_id IN (SELECT id FROM webhook_endpoints WHERE account_id = ?)
     GROUP BY d.endpoint_id`,
  )
  const log = db.query<DeliveryLogRow, [number, number]>(
    `SELECT d.event_id, e.type, d.state, d.attempts, d.last_status, d.last_error, d.last_ms, d.last_at, d.next_at
     FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
     WHERE d.endpoint_id = ?1 ORDER BY d.event_id DESC LIMIT ?2`,
  )

  const insertEvent = db.query<{ id: number }, [number, string, number, string]>(
    'INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?1, ?2, ?3, ?4) RETURNING id',
  )
  // The endpoints are read from the table inside the caller's transaction, not from the outbox's index:
  // an endpoint deleted or disabled a moment ago (by this process or the CLI) simply gets nothing.
  const insertDeliveries = db.query<unknown, [number, number, number, string]>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at)
     SELECT ?1, id, 'pending', ?2 FROM webhook_endpoints
     WHERE account_id = ?3 AND enabled = 1 AND instr(',' || events || ',', ',' || ?4 || ',') > 0`,
  )
  const insertDelivery = db.query<unknown, [number, number, number]>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (?1, ?2, 'pending', ?3)`,
  )
  const removeEvent = db.query<unknown, [number]>('DELETE FROM webhook_events WHERE id = ?')
  const event = db.query<EventRow, [number]>('SELECT * FROM webhook_events WHERE id = ?')
  // Redelivery: the same row (so the same webhook-id) back to pending, attempts kept; or a new row when
  // the endpoint never had this event (subscribed later, or its row was dropped).
  const redeliver = db.query<DeliveryLogRow, [number, number, number]>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (?1, ?2, 'pending', ?3)
     ON CONFLICT (endpoint_id, event_id) DO UPDATE SET state = 'pending', next_at = excluded.next_at, attempts = 0
     RETURNING event_id, '' AS type, state, attempts, last_status, last_error, last_ms, last_at, next_at`,
  )

  // The sweep. Events whose deliveries are all over (ok or failed, or none left) go after the retention
  // time, with their delivery rows; a batch at a time, so the write lock is never held long.
  const oldEvents = db.query<unknown, [number, number]>(
    `DELETE FROM webhook_events WHERE id IN (
       SELECT e.id FROM webhook_events e WHERE e.created < ?1
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
       ORDER BY e.id LIMIT ?2)`,
  )
  const overfull = db.query<{ endpoint_id: number; n: number }, [number]>(
    `SELECT endpoint_id, count(*) AS n FROM webhook_deliveries WHERE state = 'pending' GROUP BY endpoint_id HAVING n > ?`,
  )
  const dropOldest = db.query<unknown, [number, number]>(
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM webhook_deliveries WHERE endpoint_id = ?1 AND state = 'pending' ORDER BY event_id LIMIT ?2)`,
  )

  return {
    insertEndpoint: (accountId: number, url: string, events: string, secret: string, now: number) =>
      insertEndpoint.get(accountId, url, events, secret, now)!,
    endpoint: (id: number) => endpoint.get(id),
    endpointsOf: (accountId: number) => endpointsOf.all(accountId),
    allEndpoints: () => allEndpoints.all(),
    /** The CLI names accounts; null when there is none of that name. */
    accountId: (name: string) => accountNamed.get(name)?.id ?? null,
    countOf: (accountId: number) => countOf.get(accountId)!.n,
    removeEndpoint: (id: number) => removeEndpoint.run(id).changes,
    subscriptions: () => subscriptions.all(),
    counts: (accountId: number) => counts.all(accountId),
    log: (endpointId: number, limit: number) => log.all(endpointId, limit),
    insertEvent: (accountId: number, type: string, created: number, payload: string) =>
      insertEvent.get(accountId, type, created, payload)!.id,
    /** One pending delivery per enabled endpoint of the account subscribed to `type`; how many. */
    insertDeliveries: (eventId: number, nextAt: number, accountId: number, type: string) =>
      insertDeliveries.run(eventId, nextAt, accountId, type).changes,
    insertDelivery: (eventId: number, endpointId: number, nextAt: number) => insertDelivery.run(eventId, endpointId, nextAt),
    removeEvent: (id: number) => removeEvent.run(id),
    event: (id: number) => event.get(id),
    redeliver: (eventId: number, endpointId: number, now: number) => redeliver.get(eventId, endpointId, now)!,
    sweepEvents: (before: number, batch: number) => oldEvents.run(before, batch).changes,
    overfull: (cap: number) => overfull.all(cap),
    dropOldest: (endpointId: number, count: number) => dropOldest.run(endpointId, count).changes,
  }
}
export type WebhookStore = ReturnType<typeof createWebhookStore>
