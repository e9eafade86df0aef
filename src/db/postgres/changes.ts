// The change feed between nodes on PostgreSQL (see ../changes.ts for the contract): LISTEN/NOTIFY on one
// channel, CHANNEL, through Bun.SQL's listen() (one dedicated connection per pool) and notify().
//
// A message is JSON text: {"o":origin,"t":topic,"k":[keys…]} (these keys changed), {"o","t","r":1} (the whole
// topic: resync it) or {"o","p":n} (a heartbeat, below). JSON escapes any key (quotes, backslashes, unicode,
// control characters) and the receiver parses it back to the same string. PostgreSQL refuses a payload of
// 8000 bytes or more: keys are packed into messages of at most MAX_PAYLOAD_BYTES (UTF-8 bytes, not
// characters), as many as needed, sent in one transaction so that they arrive together. More than RESYNC_OVER
// keys at once (an account deleted with all its links) are sent as ONE topic resync instead: a few hundred
// messages that every node must parse cost more than refilling a cache, and the receivers would drop most
// of their entries anyway. A single key too long for a message is sent as a resync of its topic too.
//
// A node's own messages come back to it from the server: they are skipped (by `o`, a random id per feed),
// since publish() has told the node's own subscribers already, synchronously (as the local feed does).
// Skipping is only a saving: a message delivered twice would drop an entry that is gone already.
//
// Lost messages. NOTIFY is not stored: whatever is sent while the listening connection is down is gone.
// So whenever the listen comes back (Bun reconnects it by itself, or the feed makes a new one, below),
// every subscriber is told onResync() — after the LISTEN is acknowledged, so nothing sent later is missed.
// Bun's reconnect backs off exponentially (measured with Bun 1.4.4: ~0.1, 0.6, 1.2, 2.5, 4, 6 s… between
// attempts, 15 s and more after a long outage), and it cannot be asked whether its connection is alive. The
// feed therefore sends itself a heartbeat every HEARTBEAT_MS through the pool; one that does not come back
// within LOST_AFTER_MS, or the first one that goes out after the pool failed to reach the server, means the
// listen is lost: the feed drops it and listens again at once (then every HEARTBEAT_MS until the server
// answers). A node recovers within ~1–2 s of the database coming back, and one whose listening connection
// dies silently (a firewall's idle timeout) finds out within ~3 s, not at the next TCP keepalive.
//
// A publish that cannot reach the server (the database is down) is kept and sent again with the next
// heartbeat, merged per topic and bounded: more than RESYNC_OVER pending keys of a topic become a resync of it.
//
// Every structure is bounded: the subscribers (the code's own), the pending keys (RESYNC_OVER per topic, and
// topics are names in the code), one heartbeat outstanding, one send and one listen in flight at a time.
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

type Message =
  | { o: string; t: string; k: string[] }
  | { o: string; t: string; r: 1 }
  | { o: string; p: number }

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
export async function postgresChangeFeed(target: SQL | string, opts: PostgresChangeFeedOptions = {}): Promise<ChangeFeed> {
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
          const payloads = keys === 'resync' ? [JSON.stringify({ o: origin, t: topic, r: 1 })] : encodeChanges(origin, topic, [...keys])
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
