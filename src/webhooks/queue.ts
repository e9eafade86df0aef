// The webhook outbox and delivery queue behind one async interface, on either engine (issue 22, SPEC §11):
// what the outbox and the deliverer do with the database. The SQLite implementation wraps the synchronous
// stores (store.ts, outbox.ts's eventInserts) as they are; the PostgreSQL one is queue-postgres.ts. One test
// suite (test/db/webhook-queue.test.ts) runs against both.
//
// What both promise:
// - enqueue runs INSIDE the caller's transaction (`tx`: the SQLite connection inside db.transaction, or the
//   handle of a PostgreSQL sql.begin): the event and its pending deliveries commit or roll back with the
//   change that caused them. On SQLite the work is done, or thrown, before the call returns, so a synchronous
//   transaction calls it without await (and a failure still undoes the transaction).
// - Each delivery is taken by one claim at a time: claim writes a lease (claimed_until, migration 15) in the
//   statement that picks the row (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: one writer). A holder that
//   dies gives the row back when its lease runs out; a recorded result ends the lease, and a finished row
//   (ok, failed) is never claimed again. The webhook-id is the event row's, the same on every node and retry.
// - A lease is short (LEASE_MS) and its holder renews it while the request is in flight (renew, one
//   statement for all of a node's requests): a node that dies gives its rows back within LEASE_MS of its last
//   renewal, whereas a live node keeps a row however long its request takes. A holder that stops before an
//   answer gives its leases back (release, one statement): those rows are due at once again, their attempt
//   not counted. Both act only on rows still pending under the lease the holder names: a lease that ran out
//   and was taken by another claim is neither stretched nor ended by its old holder. Nothing releases a lease
//   it does not name: a node starting up finds its dead predecessor's rows leased like any other node's, and
//   takes them when the lease runs out (it cannot tell them from a live node's).
// - The lease is a fence: a retry or a failure is written only under the lease its claim wrote, so a node
//   that comes back after its lease ran out does not overwrite the next holder's result. A success is
//   written whoever reports it: the receiver has the event.
//
// - A redelivery is one decision: the event and the endpoint read (and, on PostgreSQL, locked FOR KEY SHARE)
//   in the transaction that writes the delivery, so one swept or deleted meanwhile is 'no_event' or
//   'no_endpoint', never a foreign key error. The endpoint has one delivery row per event (UNIQUE (endpoint_id,
//   event_id)): redeliveries at once, on any nodes, make it pending once, a new row only when there was none,
//   and always under the event's webhook-id. One in flight keeps its lease: not sent twice at once.
// - The sweep deletes an event only when none of its deliveries is pending, checked under locks (PostgreSQL:
//   the events FOR UPDATE SKIP LOCKED, then their deliveries FOR UPDATE in id order, then the check in a new
//   statement), so a delivery pending again meanwhile (redelivered, requeued) and any delivery in flight
//   (always pending) stays. Nodes sweeping at once take different events; each row goes once.
// - The cap (trimPending) is one statement: per endpoint, the pending deliveries beyond the newest `cap` by
//   event go, but none in flight under a live lease. What it guarantees across nodes: it never drops one of
//   the newest `cap` pending deliveries it saw, so sweeps at once on several nodes drop the excess once, not
//   once per node; right after it, an endpoint has at most `cap` pending deliveries plus those in flight plus
//   those enqueued (by any node) since its statement began. Enqueue never checks the cap (it runs in the
//   caller's change and must not fail it): between sweeps an endpoint can exceed `cap` by what all nodes
//   enqueue in one sweep interval.
//
// Times are the caller's clock (unix ms), as next_at always was: nodes' clocks must agree to well within
// LEASE_MS (15 s; NTP keeps them within milliseconds).
import type { Db } from '../db/sqlite'
import { eventInserts, payloadOf } from './outbox'
import type { EventWriter, NewEvent } from '../kernel/outbox'
import {
  createDeliveryStore,
  createWebhookStore,
  type DeliveryLogRow,
  type EndpointCounts,
  type EventIds,
  type EventRow,
  type LeasedAttempt,
  type LeasedDelivery,
} from './store'

export type { EventRow, LeasedAttempt, LeasedDelivery } from './store'

/**
 * How long a claim (or a renewal) holds a delivery. Short, so that a node that died gives its rows back soon
 * (a node restarted after a SIGKILL sends them again after at most this); its holder renews it every
 * LEASE_MS / 3 while the request is in flight (the deliverer), so a live node never loses a row it is still
 * sending, whatever the 15 s answer timeout and the writing of the result take.
 */
export const LEASE_MS = 15_000

/** A lease a holder names: the delivery and the claimed_until its claim (or last renewal) wrote. */
export interface HeldLease {
  id: number
  lease: number
}

/** An event as the outbox writes it: `at` is when the change happened. */
export type { NewEvent } from '../kernel/outbox'


export interface WebhookQueue<Tx> extends EventWriter<Tx> {
  /**
   * Inside the caller's transaction: the event and one pending delivery (due `now`) per enabled endpoint of
   * the account subscribed to its type; nothing at all when there is none. The deliveries written.
   */
  enqueue(tx: Tx, event: NewEvent, now: number): Promise<number>
  /** One event for one endpoint only (webhook.test), whatever it subscribes to, in a transaction of its own. */
  enqueueFor(endpointId: number, event: NewEvent, now: number): Promise<EventIds>
  /** Which enabled endpoint of which account wants which types (comma-separated): what the outbox's index holds. */
  subscriptions(): Promise<{ id: number; account_id: number; events: string }[]>
  /** Pending deliveries of enabled endpoints and the creation time of the oldest one's event (null: none). */
  outbox(): Promise<{ pending: number; oldest: number | null }>
  /** Up to `limit` due deliveries, oldest due first, none of the `busy` endpoints, each under a lease of `leaseMs`. */
  claim(now: number, opts: { limit: number; busy?: Iterable<number>; leaseMs?: number }): Promise<LeasedDelivery[]>
  /**
   * The leases still held (each row pending, its claimed_until the `lease` named) extended to end at `until`,
   * in one statement; the ids renewed (a row missing from it was finished, or its lease lost: not this holder's).
   */
  renew(held: readonly HeldLease[], until: number): Promise<number[]>
  /**
   * The leases still held given back (a shutdown cut their requests), in one statement: each row due at once
   * again, next_at and attempts as they were. How many were given back.
   */
  release(held: readonly HeldLease[]): Promise<number>
  /** When the next delivery not due at `now` (due later, or under a lease) becomes due; null: none. */
  nextDue(now: number): Promise<number | null>
  /** A 2xx: the delivery done (whoever reports it), its endpoint healthy again. */
  markOk(attempt: LeasedAttempt, endpointId: number): Promise<void>
  /** Pending again, due `next`. False: the lease was lost or the row is over; nothing written. */
  markRetry(attempt: LeasedAttempt, next: number): Promise<boolean>
  /** Given up (the last attempt, or a permanent refusal). True when this turned the endpoint failing. */
  markFailed(attempt: LeasedAttempt, endpointId: number): Promise<boolean>
  /**
   * A 410: the endpoint disabled with `reason` and every pending delivery to it failed, in one transaction;
   * `within` runs in it when this call disabled it (the audit row; on SQLite it must be synchronous).
   * True when this call disabled it.
   */
  markGone(attempt: LeasedAttempt, endpointId: number, reason: string, within?: (tx: Tx) => unknown): Promise<boolean>
  /** The endpoint's newest deliveries (by event, newest first): the delivery log. */
  log(endpointId: number, limit: number): Promise<DeliveryLogRow[]>
  /** Deliveries by state, per endpoint of the account. */
  counts(accountId: number): Promise<EndpointCounts[]>
  /** The event (its webhook-id, its payload); null when there is none (swept, or never made). */
  event(id: number): Promise<EventRow | null>
  /**
   * Event `eventId` sent to endpoint `endpointId` again, under the event's webhook-id: its delivery pending,
   * due `now`, attempts from 0 (a new row when the endpoint never had it). 'no_event' when the event is gone
   * or not `accountId`'s, 'no_endpoint' when the endpoint is; nothing written then. One in flight keeps its lease.
   */
  redeliver(eventId: number, endpointId: number, accountId: number, now: number): Promise<Redelivery | 'no_event' | 'no_endpoint'>
  /** One batch of the sweep: up to `batch` events created before `before` with nothing pending, deleted with their deliveries; how many. */
  sweepEvents(before: number, batch: number): Promise<number>
  /** The outbox's cap: per endpoint, the pending deliveries beyond the newest `cap` dropped, but none in flight under a lease live at `now`; how many. */
  trimPending(cap: number, now: number): Promise<number>
}

/** A redelivery: the event it sends again and its delivery as the log shows it now. */
export interface Redelivery {
  event: EventRow
  delivery: DeliveryLogRow
}

/** The event inserts of each SQLite connection, prepared once (the outbox's own, or a click writer's). */
const inserters = new WeakMap<Db, ReturnType<typeof eventInserts>>()

/** The SQLite stores as they are, behind the async interface; `tx` is a connection inside db.transaction. */
export function sqliteWebhookQueue(db: Db): WebhookQueue<Db> {
  const deliveries = createDeliveryStore(db)
  const webhooks = createWebhookStore(db)
  return {
    // Not async: the rows are written (or the error thrown) inside the caller's synchronous transaction.
    enqueue(tx, e, now) {
      if (!tx.inTransaction) throw new Error(`webhooks: ${e.type} must be enqueued inside the transaction of its change`)
      let insert = inserters.get(tx)
      if (!insert) inserters.set(tx, (insert = eventInserts(tx)))
      return Promise.resolve(insert(e.type, e.accountId, e.at, e.data, now))
    },
    enqueueFor: async (endpointId, e, now) =>
      db.transaction(() => {
        const ids = webhooks.insertEvent(e.accountId, e.type, e.at, payloadOf(e.type, e.at, e.data))
        webhooks.insertDelivery(ids.id, endpointId, now)
        return ids
      })(),
    subscriptions: async () => webhooks.subscriptions(),
    outbox: async () => deliveries.outbox(),
    claim: async (now, o) => deliveries.claim(now, now + (o.leaseMs ?? LEASE_MS), o.limit, o.busy ?? []),
    renew: async (held, until) => deliveries.renewLeased(held, until),
    release: async (held) => deliveries.releaseLeased(held),
    nextDue: async (now) => deliveries.nextLeased(now),
    markOk: async (a, endpointId) => deliveries.markOkLeased(a, endpointId),
    markRetry: async (a, next) => deliveries.markRetryLeased(a, next),
    markFailed: async (a, endpointId) => deliveries.markFailedLeased(a, endpointId),
    markGone: async (a, endpointId, reason, within) => deliveries.markGoneLeased(a, endpointId, reason, within && (() => void within(db))),
    log: async (endpointId, limit) => webhooks.log(endpointId, limit),
    counts: async (accountId) => webhooks.counts(accountId),
    event: async (id) => webhooks.event(id) ?? null,
    redeliver: async (eventId, endpointId, accountId, now) =>
      db.transaction(() => {
        const event = webhooks.event(eventId)
        if (!event || event.account_id !== accountId) return 'no_event' as const
        const hook = webhooks.endpoint(endpointId)
        if (!hook || hook.account_id !== accountId) return 'no_endpoint' as const
        const d = webhooks.redeliver(eventId, endpointId, now)
        return { event, delivery: { ...d, webhook_id: event.webhook_id, type: event.type } }
      })(),
    sweepEvents: async (before, batch) => webhooks.sweepEvents(before, batch),
    trimPending: async (cap, now) => webhooks.trimPending(cap, now),
  }
}
