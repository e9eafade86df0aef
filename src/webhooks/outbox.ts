// The outbox: a change writes its event in its own transaction; an in-memory index (account → subscribed types)
// answers `wanted` without the database. createOutbox: SQLite, synchronous; createQueueOutbox: PostgreSQL, the feed
// (whose index answers only for link.clicked: every other event is decided in its change's transaction).
import type { Db } from '../db/sqlite'
import type { ChangeFeed } from '../db/changes'
import { log as rootLog, type Logger } from '../kernel/log'
import type { EventType, Outbox } from '../kernel/outbox'
import type { Subscription, WebhookQueue } from './storage/contract'
import { eventInserts, sqliteOutboxReads } from './storage/sqlite'

const RECHECK_MS = 1_000
/** The queue outbox reads its index again when it is older than this (a change nobody told it of). */
export const INDEX_MAX_AGE_MS = 10_000
/** The queue outbox tells other nodes' deliverers at most this often (the last wake-up always goes). */
export const WAKE_EVERY_MS = 50
/** The change feed's topics: 'webhook' (key 'due': an event was committed), 'endpoint' (key '*': read the index again). */
const WAKE_TOPIC = 'webhook'
const INDEX_TOPIC = 'endpoint'

/** account → the event types its enabled endpoints subscribe to. */
function indexOf(rows: readonly Subscription[]): Map<number, Set<string>> {
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

export function createOutbox(db: Db, clock: () => number = Date.now, log: Pick<Logger, 'fault'> = rootLog): Outbox {
  const reads = sqliteOutboxReads(db)
  const insertEvent = eventInserts(db)
  let index = new Map<number, Set<string>>()
  let seenVersion = -1
  let checkedAt = -Infinity
  const listeners = listenerList(log)

  function reload() {
    index = indexOf(reads.subscriptions())
    seenVersion = reads.dataVersion()
    checkedAt = Date.now()
  }

  function fresh() {
    const now = Date.now()
    if (now - checkedAt < RECHECK_MS) return
    checkedAt = now
    if (reads.dataVersion() !== seenVersion) reload()
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

/**
 * The outbox without `db` (PostgreSQL): the index is read through queue.subscriptions() (at start, on reload, on a
 * resync, when older than INDEX_MAX_AGE_MS) and answers true while unread; wake() tells every node on the feed.
 */
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
      throw new Error(
        `webhooks: ${type}: the synchronous enqueue is SQLite's; enqueue through Storages' queue.enqueue in the change's transaction`,
      )
    },
    wanted(type, accountId) {
      if (accountId === null) return false
      // A change's event is decided in its transaction (enqueue reads the endpoints there): an endpoint another
      // node made a moment ago may not be in this index yet. Only the click flush, the busy path, asks the index.
      if (type !== 'link.clicked') return true
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
