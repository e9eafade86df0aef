// The SQL of webhook endpoints, events and the delivery log, and nothing else: the rules live in
// service.ts, outbox.ts and deliverer.ts (the queue's claims and attempts are createDeliveryStore below).
import type { Db } from '../db/sqlite'
import { lazyStatements } from '../db/sqlite/lazy'

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
  /** Pending after a failed attempt: waiting for a retry. */
  retrying: number
}

export interface DeliveryLogRow {
  event_id: number
  webhook_id: string
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
  /** The webhook-id header: random, given by the column's default (migration 9). */
  webhook_id: string
}

/** What an inserted event is known by: its row (the log, redelivery) and its webhook-id (the receiver). */
export interface EventIds {
  id: number
  webhook_id: string
}

export function createWebhookStore(db: Db) {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insertEndpoint = q.query<EndpointRow, [number, string, string, string, number]>(
    'INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING *',
  )
  const endpoint = q.query<EndpointRow, [number]>('SELECT * FROM webhook_endpoints WHERE id = ?')
  const endpointsOf = q.query<EndpointRow & { account_name: string }, [number]>(
    `SELECT w.*, a.name AS account_name FROM webhook_endpoints w JOIN accounts a ON a.id = w.account_id
     WHERE w.account_id = ? ORDER BY w.id`,
  )
  const allEndpoints = q.query<EndpointRow & { account_name: string }, []>(
    'SELECT w.*, a.name AS account_name FROM webhook_endpoints w JOIN accounts a ON a.id = w.account_id ORDER BY w.id',
  )
  const accountNamed = q.query<{ id: number }, [string]>('SELECT id FROM accounts WHERE name = ?')
  const accountName = q.query<{ name: string }, [number]>('SELECT name FROM accounts WHERE id = ?')
  const countOf = q.query<{ n: number }, [number]>('SELECT count(*) AS n FROM webhook_endpoints WHERE account_id = ?')
  const removeEndpoint = q.query<unknown, [number]>('DELETE FROM webhook_endpoints WHERE id = ?')
  // An owner's edit: the row as it is after it, or null when it is gone (deleted meanwhile).
  const updateEndpoint = q.query<EndpointRow, [number, number, string, string, number, string | null]>(
    `UPDATE webhook_endpoints SET url = ?3, events = ?4, enabled = ?5, disabled_reason = ?6
     WHERE id = ?1 AND account_id = ?2 RETURNING *`,
  )
  const setSecret = q.query<EndpointRow, [number, number, string]>(
    'UPDATE webhook_endpoints SET secret = ?3 WHERE id = ?1 AND account_id = ?2 RETURNING *',
  )
  // Failed deliveries back to pending: the same rows (so the same webhook-ids), due now, attempts from 0.
  const requeueFailed = q.query<unknown, [number, number]>(
    `UPDATE webhook_deliveries SET state = 'pending', next_at = ?2, attempts = 0 WHERE endpoint_id = ?1 AND state = 'failed'`,
  )
  // What the outbox's in-memory index holds: which enabled endpoint of which account wants which types.
  const subscriptions = q.query<{ id: number; account_id: number; events: string }, []>(
    'SELECT id, account_id, events FROM webhook_endpoints WHERE enabled = 1',
  )
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

  // The webhook-id is the column's default: random, never computed here.
  const insertEvent = q.query<EventIds, [number, string, number, string]>(
    'INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?1, ?2, ?3, ?4) RETURNING id, webhook_id',
  )
  // The endpoints are read from the table inside the caller's transaction, not from the outbox's index:
  // an endpoint deleted or disabled a moment ago (by this process or the CLI) simply gets nothing.
  const insertDeliveries = q.query<unknown, [number, number, number, string]>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at)
     SELECT ?1, id, 'pending', ?2 FROM webhook_endpoints
     WHERE account_id = ?3 AND enabled = 1 AND instr(',' || events || ',', ',' || ?4 || ',') > 0`,
  )
  const insertDelivery = q.query<unknown, [number, number, number]>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (?1, ?2, 'pending', ?3)`,
  )
  const removeEvent = q.query<unknown, [number]>('DELETE FROM webhook_events WHERE id = ?')
  const event = q.query<EventRow, [number]>('SELECT * FROM webhook_events WHERE id = ?')
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
  // The cap as one decision (the async queue, queue.ts): per endpoint over the cap, its pending deliveries
  // beyond the newest ?1 (by event) go, but for one in flight under a lease live at ?2 (claimed_until, which
  // only the leased claims write). One statement: the count and the rows it drops come from one look.
  const trimPending = q.query<unknown, [number, number]>(
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM (
         SELECT d.id, d.claimed_until, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.event_id DESC) AS rn
           FROM webhook_deliveries d
          WHERE d.state = 'pending' AND d.endpoint_id IN (
            SELECT endpoint_id FROM webhook_deliveries WHERE state = 'pending' GROUP BY endpoint_id HAVING count(*) > ?1))
        WHERE rn > ?1 AND claimed_until <= ?2)`,
  )

  return {
    insertEndpoint: (accountId: number, url: string, events: string, secret: string, now: number) =>
      insertEndpoint.get(accountId, url, events, secret, now)!,
    endpoint: (id: number) => endpoint.get(id),
    endpointsOf: (accountId: number) => endpointsOf.all(accountId),
    allEndpoints: () => allEndpoints.all(),
    /** The CLI names accounts; null when there is none of that name. */
    accountId: (name: string) => accountNamed.get(name)?.id ?? null,
    accountName: (id: number) => accountName.get(id)?.name ?? null,
    countOf: (accountId: number) => countOf.get(accountId)!.n,
    removeEndpoint: (id: number) => removeEndpoint.run(id).changes,
    updateEndpoint: (id: number, accountId: number, v: { url: string; events: string; enabled: boolean; disabledReason: string | null }) =>
      updateEndpoint.get(id, accountId, v.url, v.events, v.enabled ? 1 : 0, v.disabledReason),
    setSecret: (id: number, accountId: number, secret: string) => setSecret.get(id, accountId, secret),
    /** Every failed delivery of the endpoint pending again, due `now`; how many. */
    requeueFailed: (endpointId: number, now: number) => requeueFailed.run(endpointId, now).changes,
    subscriptions: () => subscriptions.all(),
    counts: (accountId: number) => counts.all(accountId),
    log: (endpointId: number, limit: number) => log.all(endpointId, limit),
    insertEvent: (accountId: number, type: string, created: number, payload: string): EventIds =>
      insertEvent.get(accountId, type, created, payload)!,
    /** One pending delivery per enabled endpoint of the account subscribed to `type`; how many. */
    insertDeliveries: (eventId: number, nextAt: number, accountId: number, type: string) =>
      insertDeliveries.run(eventId, nextAt, accountId, type).changes,
    insertDelivery: (eventId: number, endpointId: number, nextAt: number) => insertDelivery.run(eventId, endpointId, nextAt),
    removeEvent: (id: number) => removeEvent.run(id),
    event: (id: number) => event.get(id),
    redeliver: (eventId: number, endpointId: number, now: number) => redeliver.get(eventId, endpointId, now)!,
    sweepEvents: (before: number, batch: number) => oldEvents.run(before, batch).changes,
    /** Per endpoint, pending deliveries beyond the newest `cap` dropped, but none in flight under a lease live at `now`; how many. */
    trimPending: (cap: number, now: number) => trimPending.run(cap, now).changes,
  }
}
export type WebhookStore = ReturnType<typeof createWebhookStore>

/** Due rows claimed per query by the deliverer at most; the claim runs again as long as it starts something. */
export const DELIVERY_BATCH = 32

export interface DueDelivery {
  id: number
  event_id: number
  webhook_id: string
  endpoint_id: number
  attempts: number
  url: string
  secret: string
  payload: string
}

export interface AttemptRecord {
  id: number
  status: number | null
  error: string | null
  ms: number
  at: number
}

/** A delivery taken under a lease: `lease` is its claimed_until, the fence its result is written under. */
export interface LeasedDelivery extends DueDelivery {
  lease: number
}

export interface LeasedAttempt extends AttemptRecord {
  /** The claimed_until its claim wrote. */
  lease: number
}

/** The delivery queue's SQL on SQLite (queue.ts), prepared once; parameters only (json_each for the small lists). */
export function createDeliveryStore(db: Db) {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const outbox = q.prepare(
    `SELECT count(*) AS pending, min(ev.created) AS oldest
       FROM webhook_deliveries d
       JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.enabled = 1
       JOIN webhook_events ev ON ev.id = d.event_id
      WHERE d.state = 'pending'`,
  )
  const healthy = q.prepare('UPDATE webhook_endpoints SET failing = 0 WHERE id = ? AND failing = 1')
  const failing = q.prepare('UPDATE webhook_endpoints SET failing = 1 WHERE id = ? AND failing = 0')
  const disable = q.prepare('UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $reason WHERE id = $id AND enabled = 1')
  // Claims under a lease (the async queue, queue.ts; migration 15). One UPDATE picks the due rows and writes
  // their lease: SQLite runs one writer at a time, so two connections (two processes) never take one row.
  // A row is due again when its lease has run out (claimed_until <= now): its holder died mid-delivery.
  const claim = q.prepare(
    `UPDATE webhook_deliveries SET claimed_until = $until WHERE id IN (
       SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.state = 'pending' AND d.next_at <= $now AND d.claimed_until <= $now AND e.enabled = 1
          AND d.endpoint_id NOT IN (SELECT value FROM json_each($busy))
        ORDER BY d.next_at, d.id LIMIT $limit)
     RETURNING id`,
  )
  const claimed = q.prepare(
    `SELECT d.id, d.event_id, ev.webhook_id, d.endpoint_id, d.attempts, e.url, e.secret, ev.payload, d.claimed_until AS lease
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
  // row only while it is still pending under the lease its holder names, so a lease that ran out and was
  // taken by another claim is neither stretched nor ended by its old holder. Giving one back leaves next_at
  // and attempts as they are: the row is due at once again, its attempt not counted.
  const heldBy = `state = 'pending' AND id IN (SELECT json_extract(value, '$[0]') FROM json_each($held))
       AND claimed_until = (SELECT json_extract(h.value, '$[1]') FROM json_each($held) h WHERE json_extract(h.value, '$[0]') = webhook_deliveries.id)`
  const renewLeased = q.prepare(`UPDATE webhook_deliveries SET claimed_until = $until WHERE ${heldBy} RETURNING id`)
  const releaseLeased = q.prepare(`UPDATE webhook_deliveries SET claimed_until = 0 WHERE ${heldBy}`)
  const heldParams = (held: readonly { id: number; lease: number }[]) => JSON.stringify(held.map((h) => [h.id, h.lease]))
  const attemptParams = (r: LeasedAttempt) => ({ id: r.id, lease: r.lease, status: r.status, error: r.error, ms: r.ms, at: r.at })

  return {
    /** Pending deliveries of enabled endpoints and the creation time of the oldest one's event. */
    outbox(): { pending: number; oldest: number | null } {
      return outbox.get() as { pending: number; oldest: number | null }
    },

    /**
     * Takes up to `limit` due deliveries of enabled endpoints (oldest due first, none of the `busy` endpoints)
     * under a lease ending at `until`: no other claim takes them before then.
     */
    claim(now: number, until: number, limit: number, busy: Iterable<number>): LeasedDelivery[] {
      return db.transaction(() => {
        const ids = (claim.all({ now, until, limit, busy: JSON.stringify([...busy]) } as any) as { id: number }[]).map((r) => r.id)
        return ids.length === 0 ? [] : (claimed.all({ ids: JSON.stringify(ids) } as any) as LeasedDelivery[])
      })()
    },
    /** When the next pending delivery that is not due at `now` (later, or under a lease) becomes due; null: none. */
    nextLeased(now: number): number | null {
      return (nextLeased.get({ now } as any) as { at: number | null }).at
    },
    markOkLeased(r: LeasedAttempt, endpointId: number): void {
      db.transaction(() => {
        okLeased.run({ id: r.id, status: r.status, ms: r.ms, at: r.at } as any)
        healthy.run(endpointId)
      })()
    },
    /** False: the lease was lost (run out and taken by another claim) or the row is no longer pending; nothing written. */
    markRetryLeased(r: LeasedAttempt, next: number): boolean {
      return retryLeased.run({ ...attemptParams(r), next } as any).changes > 0
    },
    /** True when this turned the endpoint failing (only when the result was written: the lease still held). */
    markFailedLeased(r: LeasedAttempt, endpointId: number): boolean {
      return db.transaction(() => failedLeased.run(attemptParams(r) as any).changes > 0 && failing.run(endpointId).changes > 0)()
    },
    /** The leases still held (pending, claimed_until as named) now end at `until`; the ids renewed. */
    renewLeased(held: readonly { id: number; lease: number }[], until: number): number[] {
      if (held.length === 0) return []
      return (renewLeased.all({ held: heldParams(held), until } as any) as { id: number }[]).map((r) => r.id)
    },
    /** The leases still held given back: those rows due at once again, attempts as they were; how many. */
    releaseLeased(held: readonly { id: number; lease: number }[]): number {
      if (held.length === 0) return 0
      return releaseLeased.run({ held: heldParams(held) } as any).changes
    },
    /**
     * A 410, under a lease: the endpoint is disabled whoever reports it, every pending delivery to it failed.
     * `within` runs in the same transaction when this disabled it (the audit row). True when this disabled it.
     */
    markGoneLeased(r: LeasedAttempt, endpointId: number, reason: string, within?: () => void): boolean {
      return db.transaction(() => {
        failedLeased.run(attemptParams(r) as any)
        const disabled = disable.run({ id: endpointId, reason } as any).changes > 0
        failPendingLeased.run({ endpoint: endpointId, error: `not sent: ${reason}` } as any)
        if (disabled) within?.()
        return disabled
      })()
    },
  }
}
