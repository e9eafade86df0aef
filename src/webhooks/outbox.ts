// The outbox: an event is written in the same transaction as the change that caused it (one
// webhook_events row, one pending webhook_deliveries row per subscribed endpoint), so a crash never loses
// an event and a rolled-back change never sends one. The deliverer reads the rows; it is woken after the
// commit through `onEnqueued`.
//
// Most changes have nobody listening: an in-memory index (account → its enabled endpoints' event types)
// answers "does anyone want this?" without touching the database. It is rebuilt when this process creates,
// deletes or disables an endpoint (`reload`), and, since the CLI changes the table from another process,
// whenever SQLite's data_version says another connection committed (checked at most once a second).
// The index only filters: which endpoints get a delivery is read from the table inside the transaction.
// The index and its refresh stay synchronous on SQLite (issue 22): `wanted` is asked on every change and
// every click, and a service started after the CLI wrote an endpoint must see it on its first question. The
// test event is written through the queue (Storages' queue.enqueueFor, webhooks/service.ts).
// Types only from ../db: the click writer's thread loads this module, and nothing more than it needs.
import type { Db } from '../db'
import { createWebhookStore } from './store'
import { log as rootLog, type Logger } from '../log'

export const EVENT_TYPES = ['link.created', 'link.updated', 'link.deleted', 'link.clicked', 'link.reported', 'mail.received'] as const
/** What an endpoint can subscribe to. */
export type SubscribableType = (typeof EVENT_TYPES)[number]
/** `webhook.test` is sent to one endpoint on request (linkbox webhook test), whatever it subscribes to. */
export type EventType = SubscribableType | 'webhook.test'
/** What an endpoint gets when `events` is not given: everything but the (busy, opt-in) clicks. */
export const DEFAULT_EVENTS: SubscribableType[] = EVENT_TYPES.filter((t) => t !== 'link.clicked')

const RECHECK_MS = 1_000

/** The exact body sent for an event (SPEC §9): `timestamp` is when the change happened. */
export const payloadOf = (type: EventType, at: number, data: Record<string, unknown>) =>
  JSON.stringify({ type, timestamp: new Date(at).toISOString(), data })

/**
 * The inserts of one event and its pending deliveries, prepared on any connection: the outbox's own, or the
 * click writer's thread, which writes `link.clicked` events in the transaction of its flush (clicks/store.ts).
 * Call INSIDE the caller's transaction. The endpoints are read from the table there (INSERT … SELECT of the
 * enabled ones subscribed to `type`); with none, no event row is left. Returns the deliveries written.
 */
export function eventInserts(db: Db) {
  const store = createWebhookStore(db)
  return (type: EventType, accountId: number, at: number, data: Record<string, unknown>, now: number): number => {
    const { id } = store.insertEvent(accountId, type, at, payloadOf(type, at, data))
    const n = store.insertDeliveries(id, now, accountId, type)
    // The index said yes but the table has no taker (deleted a moment ago): no event without a delivery.
    if (n === 0) store.removeEvent(id)
    return n
  }
}

export function createOutbox(db: Db, clock: () => number = Date.now, log: Pick<Logger, 'fault'> = rootLog) {
  const store = createWebhookStore(db)
  const insertEvent = eventInserts(db)
  const dataVersion = db.query<{ data_version: number }, []>('PRAGMA data_version')
  let index = new Map<number, Set<string>>()
  let seenVersion = -1
  let checkedAt = -Infinity
  const listeners: (() => void)[] = []
  let wakeQueued = false

  function reload() {
    const next = new Map<number, Set<string>>()
    for (const row of store.subscriptions()) {
      const set = next.get(row.account_id) ?? new Set<string>()
      for (const t of row.events.split(',')) if (t) set.add(t)
      next.set(row.account_id, set)
    }
    index = next
    seenVersion = dataVersion.get()!.data_version
    checkedAt = Date.now()
  }

  function fresh() {
    const now = Date.now()
    if (now - checkedAt < RECHECK_MS) return
    checkedAt = now
    if (dataVersion.get()!.data_version !== seenVersion) reload()
  }

  function wanted(type: EventType, accountId: number | null): boolean {
    if (accountId === null) return false
    fresh()
    return index.get(accountId)?.has(type) ?? false
  }

  // After the commit: the caller's transaction is synchronous, so a microtask runs once it has ended. A
  // write that was rolled back wakes the deliverer for nothing, which costs one empty look.
  function wake() {
    if (wakeQueued || listeners.length === 0) return
    wakeQueued = true
    queueMicrotask(() => {
      wakeQueued = false
      for (const l of listeners) {
        try {
          l()
        } catch (err) {
          log.fault('webhook outbox listener failed', err)
        }
      }
    })
  }

  return {
    /**
     * Call INSIDE the transaction of the change: writes the event and its pending deliveries, or nothing when
     * no enabled endpoint of the account subscribes to `type`. `at` is when the change happened (default now).
     */
    enqueue(type: EventType, accountId: number | null, data: Record<string, unknown>, at?: number): void {
      if (accountId === null || !wanted(type, accountId)) return
      const now = clock()
      if (insertEvent(type, accountId, at ?? now, data, now) > 0) wake()
    },
    /** Cheap: whether any enabled endpoint of the account subscribes to `type` (the click path asks first). */
    wanted,
    /** Rebuilds the index from the table: after an endpoint is created, deleted, enabled or disabled. */
    reload,
    /** Called (after the commit, in a microtask) whenever events were enqueued: the deliverer's wake-up. */
    onEnqueued(listener: () => void) {
      listeners.push(listener)
    },
    /** Wakes the deliverer (after a redelivery, say). */
    wake,
  }
}
export type Outbox = ReturnType<typeof createOutbox>
