// The webhook outbox and delivery queue on SQLite (the contract: contract.ts WebhookQueue). One writer at a time,
// so a claim's UPDATE alone keeps two connections from taking one row; parameters only (json_each for small lists).
import type { Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import { syncWithin } from '../../db/sqlite/within'
import type { EventType } from '../../kernel/outbox'
import {
  LEASE_MS,
  payloadOf,
  type DeliveryLogRow,
  type EndpointCounts,
  type EventIds,
  type EventRow,
  type HeldLease,
  type LeasedAttempt,
  type LeasedDelivery,
  type Subscription,
  type WebhookQueue,
} from './contract'

import { type AttemptRow, detailOf, detailParams } from './attempts'

export { sqliteEndpointRows } from './sqlite-endpoints'

/** The statements of an event and its deliveries, on any connection (the outbox's, or the click writer's thread). */
function eventStatements(db: Db) {
  const q = lazyStatements(db)
  return {
    // The webhook-id is the column's default: random, never computed here.
    insertEvent: q.query<EventIds, [number, string, number, string]>(
      'INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?1, ?2, ?3, ?4) RETURNING id, webhook_id',
    ),
    // The endpoints are read from the table inside the caller's transaction, not from the outbox's index:
    // an endpoint deleted or disabled a moment ago (by this process or the CLI) simply gets nothing.
    insertDeliveries: q.query<unknown, [number, number, number, string]>(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at)
       SELECT ?1, id, 'pending', ?2 FROM webhook_endpoints
       WHERE account_id = ?3 AND enabled = 1 AND instr(',' || events || ',', ',' || ?4 || ',') > 0`,
    ),
    insertDelivery: q.query<unknown, [number, number, number]>(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (?1, ?2, 'pending', ?3)`,
    ),
    removeEvent: q.query<unknown, [number]>('DELETE FROM webhook_events WHERE id = ?'),
  }
}

/**
 * The inserts of one event and its pending deliveries on `db`, called INSIDE the caller's transaction (the click
 * writer's thread writes `link.clicked` this way, synchronously); with no taker no event row is left. The deliveries.
 */
export function eventInserts(db: Db) {
  const s = eventStatements(db)
  return (type: EventType, accountId: number, at: number, data: Record<string, unknown>, now: number): number => {
    const { id } = s.insertEvent.get(accountId, type, at, payloadOf(type, at, data))!
    const n = s.insertDeliveries.run(id, now, accountId, type).changes
    // The index said yes but the table has no taker (deleted a moment ago): no event without a delivery.
    if (n === 0) s.removeEvent.run(id)
    return n
  }
}

const SUBSCRIPTIONS = 'SELECT id, account_id, events FROM webhook_endpoints WHERE enabled = 1'

/** What SQLite's outbox reads synchronously (issue 22: `wanted` is asked on every change and every click). */
export function sqliteOutboxReads(db: Db) {
  const q = lazyStatements(db)
  const subscriptions = q.query<Subscription, []>(SUBSCRIPTIONS)
  const dataVersion = q.query<{ data_version: number }, []>('PRAGMA data_version')
  return {
    subscriptions: () => subscriptions.all(),
    /** Moves when another connection (the CLI) commits. */
    dataVersion: () => dataVersion.get()!.data_version,
  }
}

/** The event inserts of each SQLite connection, prepared once (the outbox's own, or a click writer's). */
const inserters = new WeakMap<Db, ReturnType<typeof eventInserts>>()

export function sqliteWebhookQueue(db: Db): WebhookQueue<Db> {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const events = eventStatements(db)
  const subscriptions = q.query<Subscription, []>(SUBSCRIPTIONS)
  const endpointOf = q.query<{ account_id: number }, [number]>('SELECT account_id FROM webhook_endpoints WHERE id = ?')
  // The endpoint_id half of UNIQUE (endpoint_id, event_id) serves these two.
  const counts = q.query<EndpointCounts, [number]>(
    `SELECT d.endpoint_id, sum(d.state = 'ok') AS ok, sum(d.state = 'failed') AS failed, sum(d.state = 'pending') AS pending,
            sum(d.state = 'pending' AND d.attempts > 0) AS retrying
     FROM webhook_deliveries d WHERE d.endpoint_id IN (SELECT id FROM webhook_endpoints WHERE account_id = ?)
     GROUP BY d.endpoint_id`,
  )
  const log = q.query<DeliveryLogRow, [number, number]>(
    `SELECT d.event_id, e.webhook_id, e.type, d.state, d.attempts, d.last_status, d.last_error, d.last_ms, d.last_at, d.next_at
     FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
     WHERE d.endpoint_id = ?1 ORDER BY d.event_id DESC LIMIT ?2`,
  )
  const event = q.query<EventRow, [number]>('SELECT * FROM webhook_events WHERE id = ?')
  const deliveryOf = q.query<AttemptRow, [number, number]>(
    `SELECT d.event_id, e.webhook_id, e.type, d.state, d.attempts, d.last_status, d.last_error, d.last_ms, d.last_at, d.next_at,
            e.payload, e.created, a.attempt, a.url, a.at AS a_at, a.ms AS a_ms, a.error AS a_error, a.request_headers,
            a.response_status, a.response_headers, a.response_body, a.response_truncated
       FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
       LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
      WHERE d.endpoint_id = ?1 AND d.event_id = ?2`,
  )
  // An attempt's detail replaces the delivery's last one; nothing when the delivery is gone.
  const attemptDetail = q.prepare(
    `INSERT INTO webhook_attempts (delivery_id, attempt, url, at, ms, request_headers, response_status, response_headers,
                                   response_body, response_truncated, error)
     SELECT id, $attempt, $url, $at, $ms, $request, $status, $headers, $body, $truncated, $error FROM webhook_deliveries WHERE id = $id
     ON CONFLICT (delivery_id) DO UPDATE SET attempt = excluded.attempt, url = excluded.url, at = excluded.at, ms = excluded.ms,
       request_headers = excluded.request_headers, response_status = excluded.response_status,
       response_headers = excluded.response_headers, response_body = excluded.response_body,
       response_truncated = excluded.response_truncated, error = excluded.error`,
  )
  const writeDetail = (a: LeasedAttempt) => {
    if (a.detail) attemptDetail.run(detailParams(a, a.detail) as any)
  }
  // Redelivery: the same row (so the same webhook-id) back to pending, attempts kept; or a new row when
  // the endpoint never had this event (subscribed later, or its row was dropped).
  const redeliver = q.query<DeliveryLogRow, [number, number, number]>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (?1, ?2, 'pending', ?3)
     ON CONFLICT (endpoint_id, event_id) DO UPDATE SET state = 'pending', next_at = excluded.next_at, attempts = 0
     RETURNING event_id, '' AS webhook_id, '' AS type, state, attempts, last_status, last_error, last_ms, last_at, next_at`,
  )
  // The sweep. Events whose deliveries are all over (ok or failed, or none left) go after the retention
  // time, with their delivery rows; a batch at a time, so the write lock is never held long.
  const oldEvents = q.query<unknown, [number, number]>(
    `DELETE FROM webhook_events WHERE id IN (
       SELECT e.id FROM webhook_events e WHERE e.created < ?1
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
       ORDER BY e.id LIMIT ?2)`,
  )
  // The cap as one statement: per endpoint over the cap, its pending deliveries beyond the newest ?1 (by event)
  // go, but for one in flight under a lease live at ?2 (claimed_until, which only the leased claims write).
  const trimPending = q.query<unknown, [number, number]>(
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM (
         SELECT d.id, d.claimed_until, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.event_id DESC) AS rn
           FROM webhook_deliveries d
          WHERE d.state = 'pending' AND d.endpoint_id IN (
            SELECT endpoint_id FROM webhook_deliveries WHERE state = 'pending' GROUP BY endpoint_id HAVING count(*) > ?1))
        WHERE rn > ?1 AND claimed_until <= ?2)`,
  )
  const outbox = q.prepare(
    `SELECT count(*) AS pending, min(ev.created) AS oldest
       FROM webhook_deliveries d
       JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.enabled = 1
       JOIN webhook_events ev ON ev.id = d.event_id
      WHERE d.state = 'pending'`,
  )
  const healthy = q.prepare('UPDATE webhook_endpoints SET failing = 0 WHERE id = ? AND failing = 1')
  const failing = q.prepare('UPDATE webhook_endpoints SET failing = 1 WHERE id = ? AND failing = 0')
  const disable = q.prepare(
    'UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $reason WHERE id = $id AND enabled = 1',
  )
  // One UPDATE picks the due rows and writes their lease (migration 15). A row is due again when its lease
  // has run out (claimed_until <= now): its holder died mid-delivery.
  const claim = q.prepare(
    `UPDATE webhook_deliveries SET claimed_until = $until WHERE id IN (
       SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.state = 'pending' AND d.next_at <= $now AND d.claimed_until <= $now AND e.enabled = 1
          AND d.endpoint_id NOT IN (SELECT value FROM json_each($busy))
        ORDER BY d.next_at, d.id LIMIT $limit)
     RETURNING id`,
  )
  const claimed = q.prepare(
    `SELECT d.id, d.event_id, ev.webhook_id, d.endpoint_id, d.attempts, e.url, e.secret,
            CASE WHEN e.previous_until > $now THEN e.previous_secret END AS previous_secret, ev.payload, d.claimed_until AS lease
       FROM webhook_deliveries d
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
       JOIN webhook_events ev ON ev.id = d.event_id
      WHERE d.id IN (SELECT value FROM json_each($ids))
      ORDER BY d.next_at, d.id`,
  )
  // When a row not due now becomes due: its next_at, or the end of its lease, whichever is later.
  const nextLeased = q.prepare(
    `SELECT min(max(d.next_at, d.claimed_until)) AS at
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.state = 'pending' AND max(d.next_at, d.claimed_until) > $now AND e.enabled = 1`,
  )
  // A result ends the lease. A success is written whoever reports it (the receiver has the event); a retry
  // or a failure only while the row is still pending under the lease its claim wrote (the fence).
  const okLeased = q.prepare(
    `UPDATE webhook_deliveries SET state = 'ok', attempts = attempts + 1, last_status = $status, last_error = NULL,
            last_ms = $ms, last_at = $at, claimed_until = 0 WHERE id = $id`,
  )
  const retryLeased = q.prepare(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = $next, last_status = $status, last_error = $error,
            last_ms = $ms, last_at = $at, claimed_until = 0 WHERE id = $id AND state = 'pending' AND claimed_until = $lease`,
  )
  const failedLeased = q.prepare(
    `UPDATE webhook_deliveries SET state = 'failed', attempts = attempts + 1, last_status = $status, last_error = $error,
            last_ms = $ms, last_at = $at, claimed_until = 0 WHERE id = $id AND state = 'pending' AND claimed_until = $lease`,
  )
  const failPendingLeased = q.prepare(
    `UPDATE webhook_deliveries SET state = 'failed', last_error = $error, claimed_until = 0 WHERE endpoint_id = $endpoint AND state = 'pending'`,
  )
  // A lease kept (renewed while its request is in flight) or given back (a request cut by a shutdown): each
  // row only while it is still pending under the lease its holder names. Giving one back leaves next_at
  // and attempts as they are: the row is due at once again, its attempt not counted.
  const heldBy = `state = 'pending' AND id IN (SELECT json_extract(value, '$[0]') FROM json_each($held))
       AND claimed_until = (SELECT json_extract(h.value, '$[1]') FROM json_each($held) h WHERE json_extract(h.value, '$[0]') = webhook_deliveries.id)`
  const renewLeased = q.prepare(`UPDATE webhook_deliveries SET claimed_until = $until WHERE ${heldBy} RETURNING id`)
  const releaseLeased = q.prepare(`UPDATE webhook_deliveries SET claimed_until = 0 WHERE ${heldBy}`)
  const heldParams = (held: readonly HeldLease[]) => JSON.stringify(held.map((h) => [h.id, h.lease]))
  const attemptParams = (r: LeasedAttempt) => ({
    id: r.id,
    lease: r.lease,
    status: r.status,
    error: r.error,
    ms: r.ms,
    at: r.at,
  })

  return {
    // Not async: the rows are written (or the error thrown) inside the caller's synchronous transaction.
    enqueue(tx, e, now) {
      if (!tx.inTransaction)
        throw new Error(`webhooks: ${e.type} must be enqueued inside the transaction of its change`)
      let insert = inserters.get(tx)
      if (!insert) inserters.set(tx, (insert = eventInserts(tx)))
      return Promise.resolve(insert(e.type, e.accountId, e.at, e.data, now))
    },
    enqueueFor: async (endpointId, e, now) =>
      db.transaction(() => {
        const ids = events.insertEvent.get(e.accountId, e.type, e.at, payloadOf(e.type, e.at, e.data))!
        events.insertDelivery.run(ids.id, endpointId, now)
        return ids
      })(),
    subscriptions: async () => subscriptions.all(),
    outbox: async () => outbox.get() as { pending: number; oldest: number | null },
    claim: async (now, o) =>
      db.transaction(() => {
        const params = {
          now,
          until: now + (o.leaseMs ?? LEASE_MS),
          limit: o.limit,
          busy: JSON.stringify([...(o.busy ?? [])]),
        }
        const ids = (claim.all(params as any) as { id: number }[]).map((r) => r.id)
        return ids.length === 0 ? [] : (claimed.all({ ids: JSON.stringify(ids), now } as any) as LeasedDelivery[])
      })(),
    async renew(held, until) {
      if (held.length === 0) return []
      return (renewLeased.all({ held: heldParams(held), until } as any) as { id: number }[]).map((r) => r.id)
    },
    async release(held) {
      if (held.length === 0) return 0
      return releaseLeased.run({ held: heldParams(held) } as any).changes
    },
    nextDue: async (now) => (nextLeased.get({ now } as any) as { at: number | null }).at,
    markOk: async (a, endpointId) =>
      db.transaction(() => {
        if (okLeased.run({ id: a.id, status: a.status, ms: a.ms, at: a.at } as any).changes > 0) writeDetail(a)
        healthy.run(endpointId)
      })(),
    markRetry: async (a, next) =>
      db.transaction(() => {
        const written = retryLeased.run({ ...attemptParams(a), next } as any).changes > 0
        if (written) writeDetail(a)
        return written
      })(),
    // True when this turned the endpoint failing (only when the result was written: the lease still held).
    markFailed: async (a, endpointId) =>
      db.transaction(() => {
        if (failedLeased.run(attemptParams(a) as any).changes === 0) return false
        writeDetail(a)
        return failing.run(endpointId).changes > 0
      })(),
    // The endpoint is disabled whoever reports the 410; `within` (the audit row) only when this disabled it.
    markGone: async (a, endpointId, reason, within) =>
      db.transaction(() => {
        if (failedLeased.run(attemptParams(a) as any).changes > 0) writeDetail(a)
        const disabled = disable.run({ id: endpointId, reason } as any).changes > 0
        failPendingLeased.run({ endpoint: endpointId, error: `not sent: ${reason}` } as any)
        if (disabled && within) syncWithin(within(db))
        return disabled
      })(),
    log: async (endpointId, limit) => log.all(endpointId, limit),
    delivery: async (endpointId, eventId) => {
      const r = deliveryOf.get(endpointId, eventId)
      return r ? detailOf(r) : null
    },
    counts: async (accountId) => counts.all(accountId),
    event: async (id) => event.get(id) ?? null,
    redeliver: async (eventId, endpointId, accountId, now) =>
      db.transaction(() => {
        const ev = event.get(eventId)
        if (!ev || ev.account_id !== accountId) return 'no_event' as const
        const hook = endpointOf.get(endpointId)
        if (!hook || hook.account_id !== accountId) return 'no_endpoint' as const
        const d = redeliver.get(eventId, endpointId, now)!
        return { event: ev, delivery: { ...d, webhook_id: ev.webhook_id, type: ev.type } }
      })(),
    sweepEvents: async (before, batch) => oldEvents.run(before, batch).changes,
    trimPending: async (cap, now) => trimPending.run(cap, now).changes,
  }
}
