// A webhook endpoint's deliveries: its log, sending events again (one, or every failed one), the test event, and
// the sweep that keeps the outbox bounded. Creating, changing and deleting endpoints: service.ts.
import type { Caller } from '../kernel/caller'
import { byAccount, webhookTarget, type AuditEntry, type Who } from '../audit'
import { iso } from '../db/sqlite'
import { invalidParameter, missingParameter, notFound } from '../kernel/errors'
import type { Outbox } from '../kernel/outbox'
import { present } from './params'
import type { EndpointRow, WebhookQueue, EndpointRows } from './storage/contract'

export const LOG_LIMIT = { default: 50, max: 200 }
/** Delivered and failed events are kept this long for the log and redelivery. */
export const RETENTION_MS = 7 * 24 * 60 * 60 * 1000
/** Pending deliveries kept per endpoint; beyond it the oldest are dropped (a receiver gone for days). */
export const MAX_PENDING = 10_000
const SWEEP_BATCH = 1_000

export interface DeliveriesDeps<Tx> {
  endpoints: EndpointRows<Tx>
  queue: WebhookQueue<Tx>
  outbox: Outbox
  clock: () => number
  /** service.ts's: the caller's endpoint by the `id` parameter (or 400, 404, 403 not_owner). */
  owned: (caller: Caller, idInput: unknown) => Promise<EndpointRow>
  /** service.ts's: awaits a write; a storage failure becomes the 503. */
  written: <T>(write: Promise<T>) => Promise<T>
  /** service.ts's: a change's audit row, inside its transaction. */
  record: (tx: Tx, who: Who, entry: AuditEntry) => unknown
  /** service.ts's: the endpoint as the write's transaction read it again (deleted since: 404). */
  stillThere: <T>(row: T | null | undefined, id: number) => T
}

export function createDeliveries<Tx>({
  endpoints,
  queue,
  outbox,
  clock,
  owned,
  written,
  record,
  stillThere,
}: DeliveriesDeps<Tx>) {
  let dropped = 0

  async function log(row: EndpointRow, limitInput: unknown) {
    let limit = LOG_LIMIT.default
    if (present(limitInput)) {
      limit = Number(limitInput)
      if (!Number.isInteger(limit) || limit < 1 || limit > LOG_LIMIT.max)
        throw invalidParameter('limit', `a whole number from 1 to ${LOG_LIMIT.max}`)
    }
    return {
      id: row.id,
      deliveries: (await queue.log(row.id, limit)).map((d) => ({
        event_id: d.event_id,
        webhook_id: d.webhook_id,
        type: d.type,
        state: d.state,
        attempts: d.attempts,
        last_status: d.last_status,
        last_error: d.last_error,
        last_ms: d.last_ms,
        last_at: iso(d.last_at),
        next_at: iso(d.next_at)!,
      })),
    }
  }

  /** The caller's delivery of event `event` to endpoint `id`, with its newest attempt; 404 when there is none. */
  async function delivery(caller: Caller, input: { id?: unknown; event?: unknown }) {
    const row = await owned(caller, input.id)
    const eventId = Number(input.event)
    if (!present(input.event) || !Number.isSafeInteger(eventId) || eventId < 1)
      throw invalidParameter('event', 'the event_id of a delivery in the log')
    const d = await queue.delivery(row.id, eventId)
    if (!d) throw notFound(`There is no delivery of event ${eventId} to webhook ${row.id} (the log keeps 7 days).`)
    return d
  }

  /** Every failed delivery of the endpoint is sent again (each under its event's webhook-id); how many. */
  async function redeliverFailed(caller: Caller, input: { id?: unknown }, by: Who = byAccount(caller, '')) {
    const before = await owned(caller, input.id)
    const requeued = await written(
      endpoints.requeueFailed(before.id, clock(), (tx, now, n, owner) => {
        if (n > 0)
          return record(tx, by, {
            action: 'webhook.redeliver',
            target: webhookTarget(now.id, owner, now.url),
            detail: `${n} failed deliveries sent again`,
          })
      }),
    )
    const { row, n } = stillThere(requeued, before.id)
    if (n > 0) outbox.wake()
    return { id: before.id, redelivered: n, enabled: row.enabled === 1 }
  }

  async function testRow(row: EndpointRow) {
    const now = clock()
    const event = await queue.enqueueFor(
      row.id,
      { type: 'webhook.test', accountId: row.account_id, at: now, data: { webhook: row.id, url: row.url } },
      now,
    )
    outbox.wake()
    return { event_id: event.id, webhook_id: event.webhook_id, enabled: row.enabled === 1 }
  }

  /** Sends an event to an endpoint again, under the same webhook-id: pending now, attempts kept. */
  async function redeliver(caller: Caller, input: { id?: unknown; event?: unknown }) {
    const row = await owned(caller, input.id)
    if (!present(input.event)) throw missingParameter('event')
    const eventId = Number(input.event)
    if (!Number.isSafeInteger(eventId) || eventId < 1)
      throw invalidParameter('event', 'the event_id of a delivery in the log')
    // The event's account and the endpoint are checked again in the redelivery's own transaction.
    const done = await written(queue.redeliver(eventId, row.id, row.account_id, clock()))
    if (done === 'no_event') throw notFound(`There is no event ${eventId} of this account (events are kept 7 days).`)
    if (done === 'no_endpoint') throw notFound(`There is no webhook ${row.id}.`)
    outbox.wake()
    const d = done.delivery
    return {
      id: row.id,
      event_id: eventId,
      webhook_id: done.event.webhook_id,
      state: d.state,
      attempts: d.attempts,
      next_at: iso(d.next_at)!,
    }
  }

  /**
   * Keeps the outbox bounded: events delivered or failed (nothing pending) more than 7 days ago go with
   * their rows; an endpoint with more than 10,000 pending deliveries loses the oldest. Returns what went.
   */
  async function sweep(now: number = clock()) {
    let events = 0
    for (;;) {
      const n = await queue.sweepEvents(now - RETENTION_MS, SWEEP_BATCH)
      events += n
      if (n < SWEEP_BATCH) break
    }
    const cut = await queue.trimPending(MAX_PENDING, now)
    dropped += cut
    return { events, dropped: cut }
  }

  return {
    log,
    delivery,
    redeliverFailed,
    testRow,
    redeliver,
    sweep,
    /** Pending deliveries dropped by the cap since start (for /metrics). */
    get dropped() {
      return dropped
    },
  }
}
