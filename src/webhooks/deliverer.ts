// The background deliverer: sends each pending row of webhook_deliveries (the outbox whcore fills in the
// transaction of the change) to its endpoint, signed per Standard Webhooks, through the SSRF guard, and
// records every attempt on the row. Nothing about a delivery lives only in memory but the fact that it is
// in flight right now: a crash (SIGKILL) at any moment leaves the row pending, and it is sent again after
// the restart under the same webhook-id (the event row's) — at least once, never under another id.
//
// Fairness: at most PER_ENDPOINT requests in flight per endpoint and TOTAL in all, and the query that picks
// due rows leaves out endpoints already at their limit, so a receiver that takes 10 s per answer holds two
// slots and nothing else: another endpoint's deliveries go out beside it.
//
// Decisions (SPEC §9 leaves them open):
// - A private address (or a scheme the guard refuses) is permanent for that URL: the delivery fails at
//   once, its last_error says 'private address', and the endpoint is marked failing. Retrying would only
//   knock on the same closed door seven times over 32 hours.
// - Retry-After (seconds or an HTTP date) on a failed answer can only move the next attempt later than the
//   schedule, never earlier (a receiver answering "Retry-After: 0" every time must not turn the schedule
//   into a burst), and is capped at 24 h from now.
// - A 3xx is a failed attempt like a 5xx: a POST is never re-sent to where a receiver points.
// - stop() aborts requests in flight and leaves their rows pending (sent again after the restart): a
//   shutdown does not wait out a 15 s receiver.
//
// Its SQL is in store.ts (createDeliveryStore), apart from the sending logic.
//
// Still on the synchronous store, not yet on Storages' queue (issue 22): the queue claims rows under a lease
// (LEASE_MS, 60 s), so after a SIGKILL the restarted service would wait out its own dead lease before sending
// again, where it now sends at once (test/webhook-durability.test.ts), and stop() would need a way to give a
// lease back (the queue has none) for the rows it cuts to go out at once after a start. The /metrics gauge
// (stats.outbox) is read synchronously at scrape time.
import { createAuditLog, type Who } from '../audit/service'
import type { Config } from '../config'
import type { Db } from '../db'
import { GuardError, guardedFetch } from '../net/guard'
import { signatureHeaders } from './sign'
import { createDeliveryStore, DELIVERY_BATCH as BATCH, type AttemptRecord, type DueDelivery } from './store'

/** SPEC §9: the waits after the 1st … 7th failed attempt; the 8th failure is final. */
export const RETRY_SCHEDULE_MS: readonly number[] = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]

export type DeliveryOutcome = 'ok' | 'failed' | 'retry' | 'gone' | 'private'
export const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = ['ok', 'failed', 'retry', 'gone', 'private']

const PER_ENDPOINT = 2
const TOTAL = 16
/** The answer's headers must come within this, and the (discarded) body too. */
const TIMEOUT_MS = 15_000
/** Bytes of an answer's body read (and thrown away) before the connection is let go. */
const BODY_CAP = 4096
/** The timer looks at the outbox at least this often (rows written by another process: the CLI). */
const MAX_SLEEP_MS = 5_000
const RETRY_AFTER_CAP_MS = 24 * 60 * 60 * 1000
/** After a write of a result failed (full disk), nothing is sent for this long: no resending storm. */
const PAUSE_AFTER_WRITE_FAILURE_MS = 5_000

export interface DelivererDeps {
  db: Db
  config: Config
  clock: () => number
  /** Name resolution for the guard (tests); default the system resolver. */
  resolve?: (host: string) => Promise<string[]>
  /** Which addresses count as public (tests); default the guard's. */
  isAllowed?: (address: string) => boolean
  /** Waits after each failed attempt, in ms (tests use milliseconds); default RETRY_SCHEDULE_MS. */
  schedule?: readonly number[]
  /** Endpoint state changes (disabled, failing) as one line; faults with the error. */
  log: (line: string, err?: unknown) => void
  /** Called once per finished attempt (the /metrics counter). */
  onOutcome?: (outcome: DeliveryOutcome) => void
}

/** `Retry-After` as ms from now (delta seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (value === null) return null
  const text = value.trim()
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, RETRY_AFTER_CAP_MS)
  const date = Date.parse(text)
  if (Number.isNaN(date)) return null
  return Math.min(Math.max(date - now, 0), RETRY_AFTER_CAP_MS)
}

const short = (text: string) => (text.length > 200 ? `${text.slice(0, 197)}...` : text)

/** Reads at most BODY_CAP bytes of an answer (until `signal`), then lets it go; the bytes are not kept. */
async function drain(response: Response, signal: AbortSignal): Promise<void> {
  const body = response.body
  if (!body) return
  const reader = body.getReader()
  const onAbort = () => void reader.cancel().catch(() => {})
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    let read = 0
    while (read < BODY_CAP) {
      const r = await reader.read()
      if (r.done) return
      read += r.value.byteLength
    }
    await reader.cancel()
  } catch {
    // A body cut short changes nothing: the status decided.
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

const DELIVERER: Who = { actor: { kind: 'system', name: 'webhook deliverer' }, address: '' }

export function createDeliverer(deps: DelivererDeps) {
  const store = createDeliveryStore(deps.db)
  // An endpoint its receiver turns off (410) is a change to a webhook: in the audit log, by the system.
  const audit = createAuditLog(deps.db, deps.clock)
  const schedule = deps.schedule ?? RETRY_SCHEDULE_MS
  const { clock, log } = deps
  const allowPrivate = deps.config.media.allow_private_networks

  /** Delivery id → its request's controller and its settling promise (at most TOTAL entries). */
  const inflight = new Map<number, { controller: AbortController; done: Promise<void> }>()
  /** Endpoint id → requests in flight to it (only endpoints with at least one). */
  const perEndpoint = new Map<number, number>()
  const outcomes: Record<DeliveryOutcome, number> = { ok: 0, failed: 0, retry: 0, gone: 0, private: 0 }
  let running = false
  let stopping = false
  let timer: ReturnType<typeof setTimeout> | null = null
  let pumpQueued = false
  let pausedUntil = 0

  const busyEndpoints = () => [...perEndpoint].filter(([, n]) => n >= PER_ENDPOINT).map(([id]) => id)

  function count(outcome: DeliveryOutcome) {
    outcomes[outcome]++
    deps.onOutcome?.(outcome)
  }

  /** Starts every due delivery a free slot allows, then sets the timer for the next due one. */
  function pump() {
    if (!running || stopping) return
    if (timer) clearTimeout(timer)
    timer = null
    let wait = MAX_SLEEP_MS
    try {
      const now = clock()
      if (now < pausedUntil) wait = pausedUntil - now
      else {
        // A batch shorter than BATCH held every startable row; a full one may hide more behind rows of
        // endpoints it filled up, so the query runs again (without them) while it still starts something.
        for (let more = true; more && inflight.size < TOTAL; ) {
          const rows = store.due(clock(), inflight.keys(), busyEndpoints())
          let started = 0
          for (const row of rows) {
            if (inflight.size >= TOTAL) break
            if ((perEndpoint.get(row.endpoint_id) ?? 0) >= PER_ENDPOINT) continue
            send(row)
            started++
          }
          more = rows.length === BATCH && started > 0
        }
        // Due rows not started wait for a slot (a finishing request pumps again); the rest by the clock.
        const next = store.nextDue(clock())
        if (next !== null) wait = Math.min(MAX_SLEEP_MS, Math.max(10, next - clock()))
      }
    } catch (err) {
      log('webhook deliveries: reading the outbox failed', err)
    }
    timer = setTimeout(pump, wait)
    timer.unref?.()
  }

  function send(row: DueDelivery) {
    const controller = new AbortController()
    perEndpoint.set(row.endpoint_id, (perEndpoint.get(row.endpoint_id) ?? 0) + 1)
    const done = attempt(row, controller)
      .catch((err) => log('webhook delivery', err))
      .finally(() => {
        inflight.delete(row.id)
        const left = (perEndpoint.get(row.endpoint_id) ?? 1) - 1
        if (left > 0) perEndpoint.set(row.endpoint_id, left)
        else perEndpoint.delete(row.endpoint_id)
        wake()
      })
    inflight.set(row.id, { controller, done })
  }

  async function attempt(row: DueDelivery, controller: AbortController): Promise<void> {
    const headers = { 'content-type': 'application/json', ...signatureHeaders(row.secret, row.webhook_id, row.payload, clock()) }
    const started = performance.now()
    const deadline = setTimeout(() => controller.abort(new GuardError('timeout', 'no answer in time')), TIMEOUT_MS)
    let status: number | null = null
    let error: string | null = null
    let retryAfter: number | null = null
    let permanent = false
    let ms = 0
    try {
      const { response } = await guardedFetch(row.url, {
        allowPrivate,
        method: 'POST',
        body: row.payload,
        headers,
        timeoutMs: TIMEOUT_MS,
        signal: controller.signal,
        resolve: deps.resolve,
        isAllowed: deps.isAllowed,
      })
      ms = Math.round(performance.now() - started)
      status = response.status
      if (status < 200 || status > 299) {
        error = status >= 300 && status <= 399 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`
        retryAfter = retryAfterMs(response.headers.get('retry-after'), clock())
      }
      await drain(response, controller.signal)
    } catch (err) {
      ms = Math.round(performance.now() - started)
      // Shutting down: the row stays pending and goes out again after the restart.
      if (stopping) return
      const reason = err instanceof GuardError ? err.reason : 'network'
      if (reason === 'private') {
        permanent = true
        error = 'private address: the host is on a private or local network'
      } else if (reason === 'scheme') {
        permanent = true
        error = short(`refused: ${(err as Error).message}`)
      } else if (reason === 'timeout' || reason === 'aborted') error = `timeout: no answer within ${TIMEOUT_MS / 1000} s`
      else error = short(`${reason}: ${err instanceof Error ? err.message : String(err)}`)
    } finally {
      clearTimeout(deadline)
    }

    const record: AttemptRecord = { id: row.id, status, error, ms, at: clock() }
    const attemptNo = row.attempts + 1
    try {
      if (status !== null && status >= 200 && status <= 299) {
        store.markOk(record, row.endpoint_id)
        count('ok')
      } else if (status === 410) {
        const reason = 'the receiver answered 410 Gone'
        const disabled = deps.db.transaction(() => {
          const done = store.markGone(record, row.endpoint_id, reason)
          if (done) audit.record(DELIVERER, { action: 'webhook.disable', target: `webhook ${row.endpoint_id}: ${row.url}`, detail: reason })
          return done
        })()
        if (disabled) log(`webhook endpoint ${row.endpoint_id} disabled: ${reason}`)
        count('gone')
      } else if (permanent || attemptNo > schedule.length) {
        if (store.markFailed(record, row.endpoint_id))
          log(`webhook endpoint ${row.endpoint_id} is failing: event ${row.event_id} not delivered after ${attemptNo} attempts (${error})`)
        count(permanent && error!.startsWith('private') ? 'private' : 'failed')
      } else {
        const planned = schedule[attemptNo - 1]! * (0.9 + Math.random() * 0.2)
        store.markRetry(record, record.at + Math.round(Math.max(planned, retryAfter ?? 0)))
        count('retry')
      }
    } catch (err) {
      // The result could not be written (full disk): the row stays as it was and is sent again, but not at once.
      pausedUntil = clock() + PAUSE_AFTER_WRITE_FAILURE_MS
      log('webhook deliveries: recording an attempt failed', err)
    }
  }

  function wake() {
    if (!running || stopping || pumpQueued) return
    pumpQueued = true
    queueMicrotask(() => {
      pumpQueued = false
      pump()
    })
  }

  return {
    /** Starts sending: at once whatever is due (left by a crash too), then on wake() and on the timer. */
    start() {
      if (running) return
      running = true
      stopping = false
      pump()
    },
    /** Stops sending; requests in flight are aborted and their rows stay pending. Resolves when none is left. */
    async stop(): Promise<void> {
      stopping = true
      running = false
      if (timer) clearTimeout(timer)
      timer = null
      for (const { controller } of inflight.values()) controller.abort(new GuardError('aborted', 'shutting down'))
      await Promise.allSettled([...inflight.values()].map((f) => f.done))
    },
    /** Something was committed to the outbox: look now rather than at the next tick. */
    wake,
    stats: {
      /** Finished attempts since start, by outcome. */
      outcomes: outcomes as Readonly<Record<DeliveryOutcome, number>>,
      get inFlight() {
        return inflight.size
      },
      /** Pending deliveries (enabled endpoints) and the creation time (unix ms) of the oldest one's event. */
      outbox: () => store.outbox(),
    },
  }
}
export type Deliverer = ReturnType<typeof createDeliverer>
