// The webhook outbox and delivery queue on PostgreSQL (the contract: contract.ts), for any number of nodes: claims
// FOR UPDATE SKIP LOCKED under a lease; locks in one order (deliveries by id, then their endpoint). Notes: ARCHITECTURE.
import type { SQL, TransactionSQL } from 'bun'
import {
  LEASE_MS,
  payloadOf,
  type DeliveryLogRow,
  type EndpointCounts,
  type EventRow,
  type HeldLease,
  type LeasedAttempt,
  type LeasedDelivery,
  type WebhookQueue,
} from './contract'
import { detailOf, detailParams } from './attempts'

export { postgresEndpointRows } from './postgres-endpoints'

/** bigint columns come back from Bun.SQL as text; every number here stays far below 2^53. */
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))

const eventRow = (r: Record<string, unknown>): EventRow => ({
  id: Number(r.id),
  account_id: Number(r.account_id),
  type: r.type as string,
  created: Number(r.created),
  payload: r.payload as string,
  webhook_id: r.webhook_id as string,
})

const logRow = (r: Record<string, unknown>): DeliveryLogRow => ({
  event_id: Number(r.event_id),
  webhook_id: r.webhook_id as string,
  type: r.type as string,
  state: r.state as DeliveryLogRow['state'],
  attempts: Number(r.attempts),
  last_status: num(r.last_status),
  last_error: r.last_error as string | null,
  last_ms: num(r.last_ms),
  last_at: num(r.last_at),
  next_at: Number(r.next_at),
})

/** The ids and the leases of `held`, as two int8 arrays for unnest (heldRows below). */
const heldArrays = (sql: SQL, held: readonly HeldLease[]) => [
  sql.array(
    held.map((h) => h.id),
    'INT8',
  ),
  sql.array(
    held.map((h) => h.lease),
    'INT8',
  ),
]

/** An attempt's detail, replacing the delivery's last one, inside `tx` (after its result was written). */
async function writeDetail(tx: SQL, a: LeasedAttempt) {
  if (!a.detail) return
  const p = detailParams(a, a.detail)
  await tx`
    INSERT INTO webhook_attempts (delivery_id, attempt, url, at, ms, request_headers, response_status, response_headers,
                                  response_body, response_truncated, error)
    SELECT id, ${p.attempt}, ${p.url}, ${p.at}, ${p.ms}, ${p.request}, ${p.status}, ${p.headers}, ${p.body}, ${p.truncated}, ${p.error}
      FROM webhook_deliveries WHERE id = ${p.id}
    ON CONFLICT (delivery_id) DO UPDATE SET attempt = excluded.attempt, url = excluded.url, at = excluded.at, ms = excluded.ms,
      request_headers = excluded.request_headers, response_status = excluded.response_status,
      response_headers = excluded.response_headers, response_body = excluded.response_body,
      response_truncated = excluded.response_truncated, error = excluded.error`
}

/**
 * Per transaction, per account: the event types its enabled endpoints subscribe to, read once. A group of
 * creations by one account asks once; an event nobody subscribes to then costs no statement.
 */
function subscribedIn(tx: TransactionSQL, accountId: number, memo: WeakMap<object, Map<number, Promise<Set<string>>>>) {
  let accounts = memo.get(tx)
  if (!accounts) memo.set(tx, (accounts = new Map()))
  let types = accounts.get(accountId)
  if (!types) {
    types = tx`SELECT events FROM webhook_endpoints WHERE account_id = ${accountId} AND enabled = 1`.then(
      (rows: { events: string }[]) => new Set(rows.flatMap((r) => r.events.split(','))),
    )
    accounts.set(accountId, types)
  }
  return types
}

export function postgresWebhookQueue(sql: SQL): WebhookQueue<TransactionSQL> {
  const subscribed = new WeakMap<object, Map<number, Promise<Set<string>>>>()
  return {
    async enqueue(tx, e, now) {
      if (!(await subscribedIn(tx, e.accountId, subscribed)).has(e.type)) return 0
      // One statement: no event row without a delivery (the endpoints are read here, inside the caller's
      // transaction, not from a node's index: one deleted or disabled a moment ago gets nothing).
      const [row] = await tx`
        WITH takers AS (
          SELECT id FROM webhook_endpoints
           WHERE account_id = ${e.accountId} AND enabled = 1 AND ${e.type} = ANY (string_to_array(events, ','))
           ORDER BY id FOR KEY SHARE),
        event AS (
          INSERT INTO webhook_events (account_id, type, created, payload)
          SELECT ${e.accountId}, ${e.type}, ${e.at}, ${payloadOf(e.type, e.at, e.data)} WHERE EXISTS (SELECT 1 FROM takers)
          RETURNING id),
        written AS (
          INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at)
          SELECT event.id, takers.id, 'pending', ${now} FROM event, takers
          RETURNING 1)
        SELECT count(*) AS n FROM written`
      return Number(row.n)
    },

    async enqueueFor(endpointId, e, now) {
      return sql.begin(async (tx) => {
        const [ev] = await tx`INSERT INTO webhook_events (account_id, type, created, payload)
                              VALUES (${e.accountId}, ${e.type}, ${e.at}, ${payloadOf(e.type, e.at, e.data)}) RETURNING id, webhook_id`
        await tx`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (${ev.id}, ${endpointId}, 'pending', ${now})`
        return { id: Number(ev.id), webhook_id: ev.webhook_id as string }
      })
    },

    async subscriptions() {
      const rows = await sql`SELECT id, account_id, events FROM webhook_endpoints WHERE enabled = 1 ORDER BY id`
      return rows.map((r: Record<string, unknown>) => ({
        id: Number(r.id),
        account_id: Number(r.account_id),
        events: r.events as string,
      }))
    },

    async outbox() {
      const [row] = await sql`
        SELECT count(*) AS pending, min(ev.created) AS oldest
          FROM webhook_deliveries d
          JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.enabled = 1
          JOIN webhook_events ev ON ev.id = d.event_id
         WHERE d.state = 'pending'`
      return { pending: Number(row.pending), oldest: num(row.oldest) }
    },

    async claim(now, o) {
      const until = now + (o.leaseMs ?? LEASE_MS)
      const rows = await sql`
        WITH picked AS (
          SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
           WHERE d.state = 'pending' AND d.next_at <= ${now} AND d.claimed_until <= ${now} AND e.enabled = 1
             AND d.endpoint_id <> ALL (${sql.array([...(o.busy ?? [])], 'INT8')})
           ORDER BY d.next_at, d.id
           LIMIT ${o.limit}
           FOR UPDATE OF d SKIP LOCKED)
        UPDATE webhook_deliveries d SET claimed_until = ${until}
          FROM picked, webhook_endpoints e, webhook_events ev
         WHERE d.id = picked.id AND e.id = d.endpoint_id AND ev.id = d.event_id
        RETURNING d.id, d.event_id, ev.webhook_id, d.endpoint_id, d.attempts, e.url, e.secret,
                  CASE WHEN e.previous_until > ${now} THEN e.previous_secret END AS previous_secret, ev.payload,
                  d.claimed_until AS lease, d.next_at`
      return rows
        .map((r: Record<string, unknown>) => ({ ...r, next_at: Number(r.next_at) }))
        .sort(
          (a: { next_at: number; id: unknown }, b: { next_at: number; id: unknown }) =>
            a.next_at - b.next_at || Number(a.id) - Number(b.id),
        )
        .map(
          (r: Record<string, unknown>): LeasedDelivery => ({
            id: Number(r.id),
            event_id: Number(r.event_id),
            webhook_id: r.webhook_id as string,
            endpoint_id: Number(r.endpoint_id),
            attempts: Number(r.attempts),
            url: r.url as string,
            secret: r.secret as string,
            previous_secret: (r.previous_secret ?? null) as string | null,
            payload: r.payload as string,
            lease: Number(r.lease),
          }),
        )
    },

    async renew(held, until) {
      if (held.length === 0) return []
      // The rows still pending under the lease named, locked in id order (the lock order above: a renewal that
      // meets a 410's markGone, which locks the endpoint's deliveries in id order too, never waits in a circle);
      // one changed meanwhile is re-checked on its newest version once its lock is granted.
      const [ids, leases] = heldArrays(sql, held)
      const rows = await sql`
        WITH kept AS (
          SELECT d.id FROM webhook_deliveries d JOIN unnest(${ids}::int8[], ${leases}::int8[]) AS h(id, lease) ON d.id = h.id AND d.claimed_until = h.lease
           WHERE d.state = 'pending' ORDER BY d.id FOR UPDATE OF d)
        UPDATE webhook_deliveries d SET claimed_until = ${until} FROM kept WHERE d.id = kept.id
        RETURNING d.id`
      return rows.map((r: { id: unknown }) => Number(r.id))
    },

    async release(held) {
      if (held.length === 0) return 0
      // As renew: the rows still held, locked in id order. next_at and attempts stay: due at once again.
      const [ids, leases] = heldArrays(sql, held)
      const r = await sql`
        WITH kept AS (
          SELECT d.id FROM webhook_deliveries d JOIN unnest(${ids}::int8[], ${leases}::int8[]) AS h(id, lease) ON d.id = h.id AND d.claimed_until = h.lease
           WHERE d.state = 'pending' ORDER BY d.id FOR UPDATE OF d)
        UPDATE webhook_deliveries d SET claimed_until = 0 FROM kept WHERE d.id = kept.id`
      return r.count
    },

    async nextDue(now) {
      const [row] = await sql`
        SELECT min(greatest(d.next_at, d.claimed_until)) AS at
          FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         WHERE d.state = 'pending' AND greatest(d.next_at, d.claimed_until) > ${now} AND e.enabled = 1`
      return num(row.at)
    },

    async markOk(a, endpointId) {
      await sql.begin(async (tx) => {
        const r =
          await tx`UPDATE webhook_deliveries SET state = 'ok', attempts = attempts + 1, last_status = ${a.status}, last_error = NULL,
                   last_ms = ${a.ms}, last_at = ${a.at}, claimed_until = 0 WHERE id = ${a.id}`
        if (r.count > 0) await writeDetail(tx, a)
        await tx`UPDATE webhook_endpoints SET failing = 0 WHERE id = ${endpointId} AND failing = 1`
      })
    },

    async markRetry(a, next) {
      return sql.begin(async (tx) => {
        const r = await tx`
          UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = ${next}, last_status = ${a.status}, last_error = ${a.error},
                 last_ms = ${a.ms}, last_at = ${a.at}, claimed_until = 0
           WHERE id = ${a.id} AND state = 'pending' AND claimed_until = ${a.lease}`
        if (r.count > 0) await writeDetail(tx, a)
        return r.count > 0
      })
    },

    async markFailed(a, endpointId) {
      return sql.begin(async (tx) => {
        const r = await tx`
          UPDATE webhook_deliveries SET state = 'failed', attempts = attempts + 1, last_status = ${a.status}, last_error = ${a.error},
                 last_ms = ${a.ms}, last_at = ${a.at}, claimed_until = 0
           WHERE id = ${a.id} AND state = 'pending' AND claimed_until = ${a.lease}`
        if (r.count === 0) return false
        await writeDetail(tx, a)
        return (await tx`UPDATE webhook_endpoints SET failing = 1 WHERE id = ${endpointId} AND failing = 0`).count > 0
      })
    },

    async markGone(a, endpointId, reason, within) {
      return sql.begin(async (tx) => {
        // The deliveries first, in id order (the lock order above), then the endpoint.
        await tx`SELECT id FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND (state = 'pending' OR id = ${a.id}) ORDER BY id FOR UPDATE`
        const failed = await tx`
          UPDATE webhook_deliveries SET state = 'failed', attempts = attempts + 1, last_status = ${a.status}, last_error = ${a.error},
                 last_ms = ${a.ms}, last_at = ${a.at}, claimed_until = 0
           WHERE id = ${a.id} AND state = 'pending' AND claimed_until = ${a.lease}`
        if (failed.count > 0) await writeDetail(tx, a)
        const disabled =
          (
            await tx`UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ${reason} WHERE id = ${endpointId} AND enabled = 1`
          ).count > 0
        await tx`UPDATE webhook_deliveries SET state = 'failed', last_error = ${`not sent: ${reason}`}, claimed_until = 0
                  WHERE endpoint_id = ${endpointId} AND state = 'pending'`
        if (disabled && within) await within(tx)
        return disabled
      })
    },

    async log(endpointId, limit) {
      const rows = await sql`
        SELECT d.event_id, e.webhook_id, e.type, d.state, d.attempts, d.last_status, d.last_error, d.last_ms, d.last_at, d.next_at
          FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
         WHERE d.endpoint_id = ${endpointId} ORDER BY d.event_id DESC LIMIT ${limit}`
      return rows.map(logRow)
    },

    async delivery(endpointId, eventId) {
      const [r] = await sql`
        SELECT d.event_id, e.webhook_id, e.type, d.state, d.attempts, d.last_status, d.last_error, d.last_ms, d.last_at, d.next_at,
               e.payload, e.created, a.attempt, a.url, a.at AS a_at, a.ms AS a_ms, a.error AS a_error, a.request_headers,
               a.response_status, a.response_headers, a.response_body, a.response_truncated
          FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
          LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
         WHERE d.endpoint_id = ${endpointId} AND d.event_id = ${eventId}`
      if (!r) return null
      return detailOf({
        ...logRow(r),
        payload: r.payload,
        created: Number(r.created),
        attempt: num(r.attempt),
        url: r.url ?? null,
        a_at: num(r.a_at),
        a_ms: num(r.a_ms),
        a_error: r.a_error ?? null,
        request_headers: r.request_headers ?? null,
        response_status: num(r.response_status),
        response_headers: r.response_headers ?? null,
        response_body: r.response_body ?? null,
        response_truncated: num(r.response_truncated),
      })
    },

    async counts(accountId) {
      const rows = await sql`
        SELECT d.endpoint_id, count(*) FILTER (WHERE d.state = 'ok') AS ok, count(*) FILTER (WHERE d.state = 'failed') AS failed,
               count(*) FILTER (WHERE d.state = 'pending') AS pending, count(*) FILTER (WHERE d.state = 'pending' AND d.attempts > 0) AS retrying
          FROM webhook_deliveries d WHERE d.endpoint_id IN (SELECT id FROM webhook_endpoints WHERE account_id = ${accountId})
         GROUP BY d.endpoint_id ORDER BY d.endpoint_id`
      return rows.map(
        (r: Record<string, unknown>): EndpointCounts => ({
          endpoint_id: Number(r.endpoint_id),
          ok: Number(r.ok),
          failed: Number(r.failed),
          pending: Number(r.pending),
          retrying: Number(r.retrying),
        }),
      )
    },

    async event(id) {
      const [row] = await sql`SELECT * FROM webhook_events WHERE id = ${id}`
      return row ? eventRow(row) : null
    },

    async redeliver(eventId, endpointId, accountId, now) {
      return sql.begin(async (tx) => {
        // Locked, so a sweep deleting it waits for this commit or has deleted it already (then: no row here).
        const [ev] = await tx`SELECT * FROM webhook_events WHERE id = ${eventId} FOR KEY SHARE`
        if (!ev || Number(ev.account_id) !== accountId) return 'no_event' as const
        const [hook] = await tx`SELECT account_id FROM webhook_endpoints WHERE id = ${endpointId} FOR KEY SHARE`
        if (!hook || Number(hook.account_id) !== accountId) return 'no_endpoint' as const
        const event = eventRow(ev)
        // claimed_until is left as it is: a delivery in flight is not sent again before its lease ends.
        const [d] = await tx`
          INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (${eventId}, ${endpointId}, 'pending', ${now})
          ON CONFLICT (endpoint_id, event_id) DO UPDATE SET state = 'pending', next_at = excluded.next_at, attempts = 0
          RETURNING event_id, state, attempts, last_status, last_error, last_ms, last_at, next_at`
        return { event, delivery: logRow({ ...d, webhook_id: event.webhook_id, type: event.type }) }
      })
    },

    async sweepEvents(before, batch) {
      return sql.begin(async (tx) => {
        // Another node's sweep holds some: they are its to delete (SKIP LOCKED); so is an event a
        // redelivery holds this instant, whose delivery will be pending.
        const picked = await tx`
          SELECT e.id FROM webhook_events e
           WHERE e.created < ${before}
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
           ORDER BY e.id LIMIT ${batch}
           FOR UPDATE OF e SKIP LOCKED`
        if (picked.length === 0) return 0
        const ids = sql.array(
          picked.map((r: { id: unknown }) => Number(r.id)),
          'INT8',
        )
        await tx`SELECT id FROM webhook_deliveries WHERE event_id = ANY (${ids}) ORDER BY id FOR UPDATE`
        // A new statement, so a new look: what was committed before the locks above were granted.
        const gone = await tx`
          DELETE FROM webhook_events e
           WHERE e.id = ANY (${ids})
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')`
        return gone.count
      })
    },

    async trimPending(cap, now) {
      const gone = await sql`
        WITH over AS (
          SELECT endpoint_id FROM webhook_deliveries WHERE state = 'pending' GROUP BY endpoint_id HAVING count(*) > ${cap}),
        ranked AS (
          SELECT d.id, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.event_id DESC) AS rn
            FROM webhook_deliveries d JOIN over ON over.endpoint_id = d.endpoint_id
           WHERE d.state = 'pending'),
        doomed AS (
          SELECT d.id FROM webhook_deliveries d JOIN ranked ON ranked.id = d.id
           WHERE ranked.rn > ${cap} AND d.state = 'pending' AND d.claimed_until <= ${now}
           ORDER BY d.id
           FOR UPDATE OF d)
        DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM doomed)`
      return gone.count
    },
  }
}
