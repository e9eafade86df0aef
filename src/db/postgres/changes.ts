// The change feed between nodes on PostgreSQL (contract: ../changes.ts): LISTEN/NOTIFY on one channel, a heartbeat
// that finds a lost listen within seconds, and a resync of every subscriber when messages may have been lost.
import type { SQL } from 'bun'
import { checkTopic, createSubscribers, type ChangeFeed } from '../changes'
import { isConnectionError } from './health'
import { pgClient } from './index'

export const CHANNEL = 'linkbox_changes'
/** Under PostgreSQL's limit (a payload must be shorter than 8000 bytes), with room for the envelope. */
export const MAX_PAYLOAD_BYTES = 7_900
/** More keys than this in one publish (or pending for one topic) are sent as a resync of the topic. */
export const RESYNC_OVER = 1_000
export const HEARTBEAT_MS = 1_000
export const LOST_AFTER_MS = 1_500

export interface PostgresChangeFeedOptions {
  heartbeatMs?: number
  lostAfterMs?: number
  /** A subscriber that threw, or a send that failed for another reason than the connection (default: stderr). */
  onError?: (err: unknown) => void
}

type Message = { o: string; t: string; k: string[] } | { o: string; t: string; r: 1 } | { o: string; p: number }

const bytes = (text: string) => Buffer.byteLength(text, 'utf8')

/** The messages that say `keys` of `topic` changed: as few as fit under MAX_PAYLOAD_BYTES, or one resync. */
export function encodeChanges(origin: string, topic: string, keys: readonly string[]): string[] {
  const resync = JSON.stringify({ o: origin, t: topic, r: 1 } satisfies Message)
  if (keys.length > RESYNC_OVER) return [resync]
  const head = JSON.stringify({ o: origin, t: topic, k: [] }) // …"k":[] : each key adds its JSON and a comma
  const payloads: string[] = []
  let batch: string[] = []
  let size = bytes(head)
  for (const key of new Set(keys)) {
    const cost = bytes(JSON.stringify(key)) + (batch.length > 0 ? 1 : 0)
    if (bytes(head) + cost > MAX_PAYLOAD_BYTES) return [resync]
    if (size + cost > MAX_PAYLOAD_BYTES) {
      payloads.push(JSON.stringify({ o: origin, t: topic, k: batch }))
      batch = []
      size = bytes(head)
    }
    size += bytes(JSON.stringify(key)) + (batch.length > 0 ? 1 : 0)
    batch.push(key)
  }
  if (batch.length > 0) payloads.push(JSON.stringify({ o: origin, t: topic, k: batch }))
  return payloads
}

/** A message from the channel, or null for anything else (another program may NOTIFY on it too). */
export function decodeChange(payload: string): Message | null {
  let m: unknown
  try {
    m = JSON.parse(payload)
  } catch {
    return null
  }
  if (typeof m !== 'object' || m === null || typeof (m as { o?: unknown }).o !== 'string') return null
  const o = (m as { o: string }).o
  if (typeof (m as { p?: unknown }).p === 'number') return { o, p: (m as { p: number }).p }
  const t = (m as { t?: unknown }).t
  if (typeof t !== 'string') return null
  if ((m as { r?: unknown }).r === 1) return { o, t, r: 1 }
  const k = (m as { k?: unknown }).k
  if (Array.isArray(k) && k.every((key) => typeof key === 'string')) return { o, t, k }
  return null
}

/**
 * The feed of one node: `target` is the node's pool (listen() opens its own connection beside the pool's), or
 * a database.url, for which the feed makes a pool of its own (two connections: the listen and the NOTIFYs)
 * and closes it with itself. Resolves once the LISTEN is acknowledged, so that nothing published after it is
 * missed; rejects when the server cannot be reached (a node starts with its database).
 */
export async function postgresChangeFeed(
  target: SQL | string,
  opts: PostgresChangeFeedOptions = {},
): Promise<ChangeFeed> {
  const own = typeof target === 'string' ? pgClient(target, { max: 1 }) : null
  const sql = own ?? (target as SQL)
  const heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS
  const lostAfterMs = opts.lostAfterMs ?? LOST_AFTER_MS
  const onError = opts.onError ?? ((err) => console.error('change feed:', err))
  const origin = Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString('hex')
  const subscribers = createSubscribers(onError)
  let closed = false

  // Listening. `listens` counts acknowledged LISTENs over the feed's life: every one after the first means
  // messages may have been lost in between.
  let subscription: Awaited<ReturnType<SQL['listen']>> | null = null
  let listening: Promise<void> | null = null
  let listens = 0
  const onPayload = (payload: string) => {
    const m = decodeChange(payload)
    if (!m || closed) return
    if ('p' in m) {
      if (m.o === origin) heartbeat.heard = Math.max(heartbeat.heard, m.p)
      return
    }
    if (m.o === origin) return
    if ('r' in m) subscribers.resync(m.t)
    else subscribers.keys(m.t, m.k)
  }
  const onListen = () => {
    heartbeat.sentAt = null
    if (listens++ > 0) subscribers.resync()
  }
  const listen = () =>
    (listening ??= (async () => {
      try {
        const s = await sql.listen(CHANNEL, onPayload, onListen)
        if (closed) await s.unlisten()
        else subscription = s
      } finally {
        listening = null
      }
    })())
  const relisten = async () => {
    const old = subscription
    subscription = null
    heartbeat.sentAt = null
    await old?.unlisten().catch(() => {})
    await listen().catch(() => {}) // the server is not back yet: the next tick tries again
  }

  // Sending: what could not be sent yet, per topic (keys, or a resync), and one send in flight at a time.
  const pending = new Map<string, Set<string> | 'resync'>()
  let sending: Promise<void> | null = null
  let poolFailed = false
  const keep = (topic: string, keys: readonly string[]) => {
    const had = pending.get(topic) ?? new Set<string>()
    if (had === 'resync') return
    for (const key of keys) had.add(key)
    pending.set(topic, had.size > RESYNC_OVER ? 'resync' : had)
  }
  const send = () =>
    (sending ??= (async () => {
      try {
        while (pending.size > 0 && !closed) {
          const [topic, keys] = pending.entries().next().value!
          pending.delete(topic)
          const payloads =
            keys === 'resync'
              ? [JSON.stringify({ o: origin, t: topic, r: 1 })]
              : encodeChanges(origin, topic, [...keys])
          try {
            await notifyAll(payloads)
            reported = false
            if (poolFailed) {
              poolFailed = false
              void relisten()
            }
          } catch (err) {
            if (keys === 'resync') pending.set(topic, 'resync')
            else keep(topic, [...keys])
            failed(err)
            return // the next heartbeat tries again
          }
        }
      } finally {
        sending = null
      }
    })())
  const notifyAll = async (payloads: string[]) => {
    if (payloads.length === 1) return await sql.notify(CHANNEL, payloads[0])
    await sql.begin(async (tx) => {
      for (const payload of payloads) await tx.notify(CHANNEL, payload)
    })
  }

  // A NOTIFY that failed: the pool did not reach the server, and the listen may be lost with it. An error that
  // is not about the connection (there should be none: payloads are sized) is reported once until one succeeds.
  let reported = false
  const failed = (err: unknown) => {
    poolFailed = true
    if (isConnectionError(err) || reported) return
    reported = true
    onError(err)
  }

  // The heartbeat: is the listen alive? `seq` is the last one sent, `sentAt` when the server took it (null:
  // none outstanding), `heard` the last one back. The echo may come back before notify() resolves: it is
  // compared at the next tick, never raced against.
  const heartbeat = { seq: 0, heard: 0, sentAt: null as number | null }
  const tick = async () => {
    if (closed) return
    if (pending.size > 0) await send()
    if (!subscription) return void (await relisten())
    if (heartbeat.sentAt !== null) {
      if (heartbeat.heard < heartbeat.seq) {
        if (performance.now() - heartbeat.sentAt > lostAfterMs) await relisten()
        return
      }
      heartbeat.sentAt = null
    }
    const seq = ++heartbeat.seq
    try {
      await sql.notify(CHANNEL, JSON.stringify({ o: origin, p: seq } satisfies Message))
      reported = false
      if (closed || heartbeat.seq !== seq) return
      heartbeat.sentAt = performance.now()
      // The pool could not reach the server a moment ago: Bun's own reconnect of the listen may be seconds
      // away (its backoff), so listen again now.
      if (poolFailed) {
        poolFailed = false
        await relisten()
      }
    } catch (err) {
      failed(err)
    }
  }
  let ticking = false
  const timer = setInterval(() => {
    if (ticking) return
    ticking = true
    tick().finally(() => (ticking = false))
  }, heartbeatMs)
  timer.unref()

  try {
    await listen()
  } catch (err) {
    closed = true
    clearInterval(timer)
    await own?.close().catch(() => {})
    throw err
  }

  return {
    publish(topic, keys) {
      checkTopic(topic)
      if (closed || keys.length === 0) return
      subscribers.keys(topic, keys)
      keep(topic, keys)
      void send()
    },
    subscribe: (topic, onKeys, onResync) => subscribers.add(topic, onKeys, onResync),
    async close() {
      if (closed) return
      closed = true
      clearInterval(timer)
      subscribers.close()
      await sending?.catch(() => {})
      await listening?.catch(() => {})
      await subscription?.unlisten().catch(() => {})
      subscription = null
      await own?.close().catch(() => {})
    },
  }
}
