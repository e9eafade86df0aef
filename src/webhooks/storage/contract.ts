// The webhooks feature's storage contract: endpoints (EndpointRows) and the outbox with its delivery queue
// (WebhookQueue), one interface each for both engines; what both promise is in the notes (ARCHITECTURE).
import type { EventType, EventWriter, NewEvent } from '../../kernel/outbox'

export type { NewEvent } from '../../kernel/outbox'

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
  /** The secret before the last rotation, still valid (deliveries signed with both) until previous_until. */
  previous_secret: string | null
  /** Unix ms; 0 (or past): no previous secret is valid. */
  previous_until: number
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

export interface DueDelivery {
  id: number
  event_id: number
  webhook_id: string
  endpoint_id: number
  attempts: number
  url: string
  secret: string
  /** The previous secret while it is still valid at the claim's `now` (signed with too), else null. */
  previous_secret?: string | null
  payload: string
}

export interface AttemptRecord {
  id: number
  status: number | null
  error: string | null
  ms: number
  at: number
  /** What the attempt sent and got (the delivery's detail page); written with its result, replacing the last. */
  detail?: AttemptDetail
}

/** Bounds of what an attempt's answer keeps (post.ts reads no more). */
export const ANSWER_BOUNDS = { headers: 50, headerBytes: 8192, bodyBytes: 4096 } as const

/** One attempt as it went: what was sent (the body is the event's payload) and what came back. */
export interface AttemptDetail {
  /** Its number in the delivery's current run (a redelivery starts again from 1). */
  attempt: number
  /** Where it went (the endpoint's URL then: it may have been edited since). */
  url: string
  /** [name, value] pairs as sent, in order. */
  request_headers: [string, string][]
  response_status: number | null
  /** At most ANSWER_BOUNDS.headers pairs and headerBytes bytes. */
  response_headers: [string, string][]
  /** The answer's first ANSWER_BOUNDS.bodyBytes bytes, as UTF-8 text. */
  response_body: string
  /** The body, or the headers, went on beyond what is kept. */
  response_truncated: boolean
}

/** A delivery as its detail page shows it: the log's row, its event's body, and its newest attempt (if any). */
export interface DeliveryDetail extends DeliveryLogRow {
  payload: string
  created: number
  last_attempt: (AttemptDetail & { at: number; ms: number; error: string | null }) | null
}

/** What a rotation did: the endpoint after it, and whether a previous secret still valid was dropped by it. */
export interface Rotation {
  row: EndpointRow
  dropped: boolean
}

/** A delivery taken under a lease: `lease` is its claimed_until, the fence its result is written under. */
export interface LeasedDelivery extends DueDelivery {
  lease: number
}

export interface LeasedAttempt extends AttemptRecord {
  /** The claimed_until its claim wrote. */
  lease: number
}

export interface NewEndpoint {
  url: string
  /** The subscribed event types, comma-separated. */
  events: string
  secret: string
  now: number
}

/** What an owner's edit writes. */
export interface EndpointChange {
  url: string
  events: string
  enabled: boolean
  disabledReason: string | null
}

/** An endpoint with its account's name (the CLI's list, the audit rows' targets). */
export type NamedEndpoint = EndpointRow & { account_name: string }

export interface EndpointRows<Tx> {
  /**
   * The endpoint inserted when the account has fewer than `max`, and `within` run with it and the account's
   * name; 'full' otherwise, or 'no_account' when the account is gone (nothing written or run).
   */
  insertUnder(
    accountId: number,
    max: number,
    e: NewEndpoint,
    within?: (tx: Tx, made: EndpointRow, owner: string) => unknown,
  ): Promise<EndpointRow | 'full' | 'no_account'>
  endpoint(id: number): Promise<EndpointRow | null>
  /** The account's endpoints, by id. */
  endpointsOf(accountId: number): Promise<NamedEndpoint[]>
  /** Every endpoint, by id. */
  allEndpoints(): Promise<NamedEndpoint[]>
  countOf(accountId: number): Promise<number>
  /** The account of that name (the CLI names accounts); null when there is none. */
  accountId(name: string): Promise<number | null>
  accountName(id: number): Promise<string | null>
  /**
   * The account's endpoint read in the write's transaction, `change` given it as it is now, the values it
   * returns written, and `within` run with the row before and after; null (nothing run) when it is gone.
   */
  update(
    id: number,
    accountId: number,
    change: (now: EndpointRow) => EndpointChange,
    within?: (tx: Tx, before: EndpointRow, after: EndpointRow, owner: string) => unknown,
  ): Promise<EndpointRow | null>
  /**
   * The account's endpoint signed from now on with `secret`, its secret until now kept valid until
   * `previousUntil` (0: not at all); a previous one still valid at `now` is dropped (`dropped`). `within` runs
   * in the transaction; null when it is gone.
   */
  rotateSecret(
    id: number,
    accountId: number,
    secret: string,
    times: { now: number; previousUntil: number },
    within?: (tx: Tx, row: EndpointRow, owner: string) => unknown,
  ): Promise<Rotation | null>
  /** The endpoint deleted (its deliveries with it) and `within` run with the row it was; null when it was gone. */
  remove(id: number, within?: (tx: Tx, removed: EndpointRow, owner: string) => unknown): Promise<EndpointRow | null>
  /**
   * Every failed delivery of the endpoint pending again, due `now`, and `within` run with the endpoint and how
   * many; null (nothing run) when the endpoint is gone.
   */
  requeueFailed(
    id: number,
    now: number,
    within?: (tx: Tx, row: EndpointRow, n: number, owner: string) => unknown,
  ): Promise<{ row: EndpointRow; n: number } | null>
}

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

/** Which enabled endpoint of which account wants which types (comma-separated): what the outbox's index holds. */
export interface Subscription {
  id: number
  account_id: number
  events: string
}

export interface WebhookQueue<Tx> extends EventWriter<Tx> {
  /**
   * Inside the caller's transaction: the event and one pending delivery (due `now`) per enabled endpoint of
   * the account subscribed to its type; nothing at all when there is none. The deliveries written.
   */
  enqueue(tx: Tx, event: NewEvent, now: number): Promise<number>
  /** One event for one endpoint only (webhook.test), whatever it subscribes to, in a transaction of its own. */
  enqueueFor(endpointId: number, event: NewEvent, now: number): Promise<EventIds>
  /** Which enabled endpoint of which account wants which types (comma-separated): what the outbox's index holds. */
  subscriptions(): Promise<Subscription[]>
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
  /** The endpoint's delivery of event `eventId` with its newest attempt; null when there is none. */
  delivery(endpointId: number, eventId: number): Promise<DeliveryDetail | null>
  /** Deliveries by state, per endpoint of the account. */
  counts(accountId: number): Promise<EndpointCounts[]>
  /** The event (its webhook-id, its payload); null when there is none (swept, or never made). */
  event(id: number): Promise<EventRow | null>
  /**
   * Event `eventId` sent to endpoint `endpointId` again, under the event's webhook-id: its delivery pending,
   * due `now`, attempts from 0 (a new row when the endpoint never had it). 'no_event' when the event is gone
   * or not `accountId`'s, 'no_endpoint' when the endpoint is; nothing written then. One in flight keeps its lease.
   */
  redeliver(
    eventId: number,
    endpointId: number,
    accountId: number,
    now: number,
  ): Promise<Redelivery | 'no_event' | 'no_endpoint'>
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

/** The exact body sent for an event (SPEC §9): `timestamp` is when the change happened. */
export const payloadOf = (type: EventType, at: number, data: Record<string, unknown>) =>
  JSON.stringify({ type, timestamp: new Date(at).toISOString(), data })
