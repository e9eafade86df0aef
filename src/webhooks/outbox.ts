// The outbox: an event is written in the same transaction as the change that caused it (one
// webhook_events row, one pending webhook_deliveries row per subscribed endpoint), so a crash never loses
// an event and a rolled-back change never sends one. The deliverer reads the rows; it is woken after the
// commit through `onEnqueued`.
//
// Most changes have nobody listening: an in-memory index (account → its enabled endpoints' event types)
// answers "does anyone want this?" without touching the database. The index only filters: which endpoints
// get a delivery is read from the table inside the transaction. Two builds of it:
//
// - createOutbox(db): SQLite. The index and its refresh stay synchronous (issue 22): `wanted` is asked on
//   every change and every click, and a service started after the CLI wrote an endpoint must see it on its
//   first question. It is rebuilt when this process creates, deletes or disables an endpoint (`reload`), and,
//   since the CLI changes the table from another process, whenever SQLite's data_version says another
//   connection committed (checked at most once a second). Its `enqueue` is the synchronous one of the
//   services not yet on the async storages; a converted service writes through Storages' queue.enqueue in
//   its storage call's `within` and calls `wake()` after the commit. Wake-ups are this process's only: the
//   CLI's rows are found by the deliverer's timer (5 s).
// - createQueueOutbox({ queue, changes }): no `db`, for PostgreSQL (any engine's Storages' queue). The index
//   is read through queue.subscriptions(): at start, after `reload()` (which also tells every node, on the
//   change feed's 'endpoint' topic, to read it again), on a resync of the feed, and when it is older than
//   INDEX_MAX_AGE_MS (a change whose node died before telling, or the CLI). While it is not loaded, or being
//   read again, `wanted` answers true: building an event nobody takes costs one statement that writes
//   nothing, whereas a false "no" would lose it. `wake()` wakes this node's deliverer and tells every other
//   node's, on the feed's 'webhook' topic (at most once per WAKE_EVERY_MS, the last one always sent), so an
//   event committed on a node whose deliverer is not running goes out from another within milliseconds.
//   Why the feed and not a poll of the queue every second: a poll costs every node a query a second while
//   nothing happens, and still leaves up to a second; the feed costs one NOTIFY per burst of commits, and a
//   lost one is covered by the feed's resync (which wakes the deliverer) and by the deliverer's 5 s timer.
//   `enqueue` is SQLite's alone: there it throws.
// Types only from ../db and the feed: the click writer's thread loads this module, and nothing more than it needs.
import type { Db } from '../db/sqlite'
import type { ChangeFeed } from '../db/changes'
import { createWebhookStore } from './store'
import { log as rootLog, type Logger } from '../kernel/log'
import type { WebhookQueue } from './queue'
import type { EventType, Outbox } from '../kernel/outbox'

export { DEFAULT_EVENTS, EVENT_TYPES, type EventType, type Outbox, type SubscribableType } from '../kernel/outbox'

const RECHECK_MS = 1_000
/** The queue outbox reads its index again when it is older than this (a change nobody told it of). */
export const INDEX_MAX_AGE_MS = 10_000
/** The queue outbox tells other nodes' deliverers at most this often (the last wake-up always goes). */
export const WAKE_EVERY_MS = 50
/** The change feed's topics: 'webhook' (key 'due': an event was committed), 'endpoint' (key '*': read the index again). */
const WAKE_TOPIC = 'webhook'
const INDEX_TOPIC = 'endpoint'


/** account → the event types its enabled endpoints subscribe to. */
function indexOf(rows: readonly { account_id: number; events: string }[]): Map<number, Set<string>> {
  const next = new Map<number, Set<string>>()
  for (const row of rows) {
    const set = next.get(row.account_id) ?? new Set<string>()
    for (const t of row.events.split(',')) if (t) set.add(t)
    next.set(row.account_id, set)
  }
  return next
}

/** The listeners of onEnqueued, called once per burst in a microtask (after the caller's commit). */
function listenerList(log: Pick<Logger, 'fault'>) {
  const listeners: (() => void)[] = []
  let queued = false
  return {
    add: (l: () => void) => void listeners.push(l),
    // After the commit: the caller's transaction is synchronous (SQLite), so a microtask runs once it has
    // ended. A write that was rolled back wakes the deliverer for nothing, which costs one empty look.
    call() {
      if (queued || listeners.length === 0) return
      queued = true
      queueMicrotask(() => {
        queued = false
        for (const l of listeners) {
          try {
            l()
          } catch (err) {
            log.fault('webhook outbox listener failed', err)
          }
        }
      })
    },
  }
}

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

export function createOutbox(db: Db, clock: () => number = Date.now, log: Pick<Logger, 'fault'> = rootLog): Outbox {
  const store = createWebhookStore(db)
  const insertEvent = eventInserts(db)
  const dataVersion = db.query<{ data_version: number }, []>('PRAGMA data_version')
  let index = new Map<number, Set<string>>()
  let seenVersion = -1
  let checkedAt = -Infinity
  const listeners = listenerList(log)

  function reload() {
    index = indexOf(store.subscriptions())
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

  return {
    enqueue(type, accountId, data, at) {
      if (accountId === null || !wanted(type, accountId)) return
      const now = clock()
      if (insertEvent(type, accountId, at ?? now, data, now) > 0) listeners.call()
    },
    wanted,
    reload,
    onEnqueued: listeners.add,
    wake: listeners.call,
    close() {},
  }
}

export interface QueueOutboxDeps {
  /** Storages' queue (its subscriptions): either engine. */
  queue: Pick<WebhookQueue<unknown>, 'subscriptions'>
  /** The change feed between nodes (db/changes.ts; PostgreSQL's: postgres/changes.ts). */
  changes: ChangeFeed
  log?: Pick<Logger, 'fault'>
}

/** The outbox without `db` (PostgreSQL): see the header. Its index is read at the first question. */
export function createQueueOutbox({ queue, changes, log = rootLog }: QueueOutboxDeps): Outbox {
  const listeners = listenerList(log)
  /** null: not read yet (everything is wanted). */
  let index: Map<number, Set<string>> | null = null
  let readAt = -Infinity
  /** Reads started, and the newest one's number: an older read that ends later is not kept. */
  let generation = 0
  let reading = 0
  let closed = false
  let lastWake = -Infinity
  let wakeTimer: ReturnType<typeof setTimeout> | null = null
  /** This node's own message on the feed, delivered back to it synchronously while it publishes: skipped. */
  let publishing = false

  function read() {
    if (closed) return
    const mine = ++generation
    reading++
    readAt = Date.now()
    queue
      .subscriptions()
      .then((rows) => {
        if (mine === generation && !closed) index = indexOf(rows)
      })
      .catch((err) => {
        // Read again a second from now (at the next question after it): until then the old index (or
        // "everything") answers, and a database that is away is not asked on every click.
        readAt = Date.now() - INDEX_MAX_AGE_MS + 1_000
        log.fault('webhook outbox: reading the subscriptions failed', err)
      })
      .finally(() => void reading--)
  }

  function publish(topic: string, key: string) {
    publishing = true
    try {
      changes.publish(topic, [key])
    } catch (err) {
      log.fault(`webhook outbox: telling other nodes (${topic}) failed`, err)
    } finally {
      publishing = false
    }
  }

  const offIndex = changes.subscribe(INDEX_TOPIC, () => void (publishing || read()), read)
  // Another node committed events: this node's deliverer looks (a resync: some may have been missed).
  const offWake = changes.subscribe(WAKE_TOPIC, () => void (publishing || listeners.call()), listeners.call)

  function announce() {
    if (wakeTimer || closed) return
    const wait = lastWake + WAKE_EVERY_MS - Date.now()
    const send = () => {
      lastWake = Date.now()
      publish(WAKE_TOPIC, 'due')
    }
    if (wait <= 0) return send()
    wakeTimer = setTimeout(() => {
      wakeTimer = null
      send()
    }, wait)
    wakeTimer.unref?.()
  }

  return {
    enqueue(type) {
      throw new Error(`webhooks: ${type}: the synchronous enqueue is SQLite's; enqueue through Storages' queue.enqueue in the change's transaction`)
    },
    wanted(type, accountId) {
      if (accountId === null) return false
      if (Date.now() - readAt > INDEX_MAX_AGE_MS) read()
      if (index === null || reading > 0) return true
      return index.get(accountId)?.has(type) ?? false
    },
    reload() {
      read()
      publish(INDEX_TOPIC, '*')
    },
    onEnqueued: listeners.add,
    wake() {
      listeners.call()
      announce()
    },
    close() {
      closed = true
      offIndex()
      offWake()
      if (wakeTimer) clearTimeout(wakeTimer)
      wakeTimer = null
    },
  }
}
