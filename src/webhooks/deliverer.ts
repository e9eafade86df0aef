// The background deliverer: claims due deliveries under a lease (renewed while in flight), sends them (post.ts) at
// most PER_ENDPOINT per endpoint and TOTAL in all, and records each attempt under its lease. Design: ARCHITECTURE.
import { auditRow, type AuditRows, type Who } from '../audit'
import type { Config } from '../kernel/config'
import { GuardError } from '../kernel/net/guard'
import {
  LEASE_MS,
  type HeldLease,
  type LeasedAttempt,
  type LeasedDelivery,
  type WebhookQueue,
} from './storage/contract'
import { post } from './post'

export { retryAfterMs } from './post'

/** SPEC §9: the waits after the 1st … 7th failed attempt; the 8th failure is final. */
export const RETRY_SCHEDULE_MS: readonly number[] = [
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
]

export type DeliveryOutcome = 'ok' | 'failed' | 'retry' | 'gone' | 'private'
export const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = ['ok', 'failed', 'retry', 'gone', 'private']

/** Due rows claimed per query at most; the claim runs again as long as it starts something. */
const BATCH = 32
const PER_ENDPOINT = 2
const TOTAL = 16
/**
 * The timer looks at the outbox at least this often: rows written by a process that wakes nobody here (the
 * CLI on SQLite; a node whose wake-up was lost), and the outbox gauge.
 */
const MAX_SLEEP_MS = 5_000
/** After a write of a result failed (full disk), nothing is sent for this long: no resending storm. */
const PAUSE_AFTER_WRITE_FAILURE_MS = 5_000
/** The outbox gauge is read again at most this often. */
const GAUGE_EVERY_MS = 1_000

export interface DelivererDeps<Tx> {
  /** Storages' members (db/storages.ts), either engine. */
  queue: WebhookQueue<Tx>
  audit: AuditRows<Tx>
  config: Config
  clock: () => number
  /** Name resolution for the guard (tests); default the system resolver. */
  resolve?: (host: string) => Promise<string[]>
  /** Which addresses count as public (tests); default the guard's. */
  isAllowed?: (address: string) => boolean
  /** Waits after each failed attempt, in ms (tests use milliseconds); default RETRY_SCHEDULE_MS. */
  schedule?: readonly number[]
  /** How long a claim holds a row, renewed every third of it (tests shorten it); default LEASE_MS. */
  leaseMs?: number
  /** Endpoint state changes (disabled, failing) as one line; faults with the error. */
  log: (line: string, err?: unknown) => void
  /** Called once per finished attempt (the /metrics counter). */
  onOutcome?: (outcome: DeliveryOutcome) => void
}

const DELIVERER: Who = { actor: { kind: 'system', name: 'webhook deliverer' }, address: '' }

/** A request in flight: its row, the lease it holds now (renewals move it), and how it ends. */
interface Flight {
  row: LeasedDelivery
  lease: number
  controller: AbortController
  done: Promise<void>
  /** Its answer is being written: left out of renewals (its result is written under `lease`). */
  recording: boolean
  /** A renewal did not get its row back: cut, and nothing of it is written. */
  lost: boolean
  /** Cut by stop(): its lease is given back. */
  cut: boolean
}

export function createDeliverer<Tx>(deps: DelivererDeps<Tx>) {
  const { queue, audit, clock, log } = deps
  const schedule = deps.schedule ?? RETRY_SCHEDULE_MS
  const leaseMs = deps.leaseMs ?? LEASE_MS
  const allowPrivate = deps.config.media.allow_private_networks

  /** Delivery id → its request (at most TOTAL entries). */
  const inflight = new Map<number, Flight>()
  /** Endpoint id → requests in flight to it (only endpoints with at least one). */
  const perEndpoint = new Map<number, number>()
  const outcomes: Record<DeliveryOutcome, number> = { ok: 0, failed: 0, retry: 0, gone: 0, private: 0 }
  let running = false
  let stopping = false
  let timer: ReturnType<typeof setTimeout> | null = null
  let renewTimer: ReturnType<typeof setInterval> | null = null
  let pumpQueued = false
  let pausedUntil = 0
  /** The pass running now (one at a time), and whether another was asked for meanwhile. */
  let pumping: Promise<void> | null = null
  let pumpAgain = false
  /** The renewal in flight (one at a time): a result waits for it, so that it is written under the newest lease. */
  let renewing: Promise<void> | null = null
  let outbox: { pending: number; oldest: number | null } = { pending: 0, oldest: null }
  let gaugeAt = -Infinity
  let gaugeReading = false
  let gaugeAgain = false
  let gaugeTimer: ReturnType<typeof setTimeout> | null = null

  const busyEndpoints = () => [...perEndpoint].filter(([, n]) => n >= PER_ENDPOINT).map(([id]) => id)
  const held = (f: Flight): HeldLease => ({ id: f.row.id, lease: f.lease })

  function count(outcome: DeliveryOutcome) {
    outcomes[outcome]++
    deps.onOutcome?.(outcome)
  }

  /**
   * The outbox gauge read again now, or (read less than GAUGE_EVERY_MS ago, or being read) once that much has
   * passed: one read at a time, and a change seen meanwhile is read after it.
   */
  function refreshGauge() {
    if (!running) return
    if (gaugeReading) {
      gaugeAgain = true
      return
    }
    if (gaugeTimer) return
    const wait = gaugeAt + GAUGE_EVERY_MS - Date.now()
    if (wait > 0) {
      gaugeTimer = setTimeout(() => {
        gaugeTimer = null
        refreshGauge()
      }, wait)
      gaugeTimer.unref?.()
      return
    }
    gaugeReading = true
    gaugeAt = Date.now()
    queue
      .outbox()
      .then((value) => void (outbox = value))
      .catch((err) => log('webhook deliveries: reading the outbox figures failed', err))
      .finally(() => {
        gaugeReading = false
        if (gaugeAgain) {
          gaugeAgain = false
          refreshGauge()
        }
      })
  }

  /** Passes until none is asked for; then the timer for the next due row (or the next look). */
  function pump() {
    if (!running || stopping) return
    if (pumping) {
      pumpAgain = true
      return
    }
    if (timer) clearTimeout(timer)
    timer = null
    pumping = (async () => {
      let wait = MAX_SLEEP_MS
      do {
        pumpAgain = false
        wait = await pass()
      } while (pumpAgain && running && !stopping)
      if (running && !stopping) {
        timer = setTimeout(pump, wait)
        timer.unref?.()
      }
      refreshGauge()
    })().finally(() => void (pumping = null))
  }

  /** Starts every due delivery a free slot allows; how long until the next look. */
  async function pass(): Promise<number> {
    try {
      const now = clock()
      if (now < pausedUntil) return pausedUntil - now
      // A claim that filled every slot it asked for may have left more behind rows of endpoints it filled up,
      // so it runs again (without them) while it still starts something.
      for (let more = true; more && inflight.size < TOTAL && !stopping; ) {
        const limit = Math.min(BATCH, TOTAL - inflight.size)
        const rows = await queue.claim(clock(), { limit, busy: busyEndpoints(), leaseMs })
        const extra: HeldLease[] = []
        let started = 0
        for (const row of rows) {
          if (stopping || inflight.size >= TOTAL || (perEndpoint.get(row.endpoint_id) ?? 0) >= PER_ENDPOINT)
            extra.push({ id: row.id, lease: row.lease })
          else {
            send(row)
            started++
          }
        }
        // Claimed beyond an endpoint's slots (or while stopping): due again at once, for the next free slot.
        if (extra.length > 0) await queue.release(extra)
        more = rows.length === limit && started > 0
      }
      // Due rows not started wait for a slot (a finishing request pumps again); the rest by the clock.
      const next = await queue.nextDue(clock())
      return next === null ? MAX_SLEEP_MS : Math.min(MAX_SLEEP_MS, Math.max(10, next - clock()))
    } catch (err) {
      log('webhook deliveries: reading the outbox failed', err)
      return MAX_SLEEP_MS
    }
  }

  function send(row: LeasedDelivery) {
    const flight: Flight = {
      row,
      lease: row.lease,
      controller: new AbortController(),
      done: Promise.resolve(),
      recording: false,
      lost: false,
      cut: false,
    }
    perEndpoint.set(row.endpoint_id, (perEndpoint.get(row.endpoint_id) ?? 0) + 1)
    inflight.set(row.id, flight)
    flight.done = attempt(flight)
      .catch((err) => log('webhook delivery', err))
      .finally(() => {
        if (!flight.cut) inflight.delete(row.id)
        const left = (perEndpoint.get(row.endpoint_id) ?? 1) - 1
        if (left > 0) perEndpoint.set(row.endpoint_id, left)
        else perEndpoint.delete(row.endpoint_id)
        wake()
      })
  }

  /** Every request in flight (but those being recorded) keeps its row for another leaseMs: one statement. */
  function renew() {
    if (renewing || stopping) return
    const flights = [...inflight.values()].filter((f) => !f.recording && !f.lost && !f.cut)
    if (flights.length === 0) return
    renewing = (async () => {
      const until = clock() + leaseMs
      try {
        const kept = new Set(await queue.renew(flights.map(held), until))
        for (const f of flights) {
          if (kept.has(f.row.id)) f.lease = until
          else if (!f.recording) {
            // Finished by another (a 410 on a sibling request) or taken by another node once the lease ran
            // out (renewals failed for that long): not this node's to send any more.
            f.lost = true
            f.controller.abort(new GuardError('aborted', 'lease lost'))
          }
        }
      } catch (err) {
        // Tried again at the next tick; the leases hold leaseMs from their last renewal.
        log('webhook deliveries: renewing leases failed', err)
      }
    })().finally(() => void (renewing = null))
  }

  async function attempt(flight: Flight): Promise<void> {
    const { row, controller } = flight
    const answer = await post(row, {
      allowPrivate,
      clock,
      controller,
      resolve: deps.resolve,
      isAllowed: deps.isAllowed,
    })
    if (answer.thrown) {
      // Shutting down: stop() gives the lease back, and the row goes out again at once after a start.
      if (stopping) {
        flight.cut = true
        return
      }
      // The row is another's now (a renewal found it so): nothing of this attempt is written.
      if (flight.lost) return
    }
    const { status, error, retryAfter, permanent, ms } = answer

    // Written under the newest lease: a renewal in flight (which may have moved it) ends first.
    flight.recording = true
    while (renewing) await renewing
    const attemptNo = row.attempts + 1
    // What this attempt sent and got, for the delivery's page: written with its result, under the same fence.
    const detail = {
      attempt: attemptNo,
      url: row.url,
      request_headers: answer.sent,
      response_status: status,
      response_headers: answer.headers,
      response_body: answer.body,
      response_truncated: answer.truncated,
    }
    const record: LeasedAttempt = { id: row.id, lease: flight.lease, status, error, ms, at: clock(), detail }
    try {
      if (status !== null && status >= 200 && status <= 299) {
        await queue.markOk(record, row.endpoint_id)
        count('ok')
      } else if (status === 410) {
        const reason = 'the receiver answered 410 Gone'
        // The endpoint's change, in the audit log by the system, in the transaction that disabled it.
        const entry = {
          action: 'webhook.disable' as const,
          target: `webhook ${row.endpoint_id}: ${row.url}`,
          detail: reason,
        }
        const disabled = await queue.markGone(record, row.endpoint_id, reason, (tx) =>
          audit.insert(tx, auditRow(DELIVERER, entry, clock())),
        )
        if (disabled) log(`webhook endpoint ${row.endpoint_id} disabled: ${reason}`)
        count('gone')
      } else if (permanent || attemptNo > schedule.length) {
        if (await queue.markFailed(record, row.endpoint_id))
          log(
            `webhook endpoint ${row.endpoint_id} is failing: event ${row.event_id} not delivered after ${attemptNo} attempts (${error})`,
          )
        count(permanent && error!.startsWith('private') ? 'private' : 'failed')
      } else {
        const planned = schedule[attemptNo - 1]! * (0.9 + Math.random() * 0.2)
        await queue.markRetry(record, record.at + Math.round(Math.max(planned, retryAfter ?? 0)))
        count('retry')
      }
    } catch (err) {
      // The result could not be written (full disk, the database away): the row stays as it was, under its
      // lease, and is sent again once that runs out, but nothing is sent for a while.
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
    /**
     * Starts sending: at once whatever is due (rows released by a stop among them), then on wake() and on the
     * timer. Rows a killed process held are due once their lease has run out.
     */
    start() {
      if (running) return
      running = true
      stopping = false
      renewTimer = setInterval(renew, Math.max(1, Math.floor(leaseMs / 3)))
      renewTimer.unref?.()
      pump()
    },
    /**
     * Stops sending: requests in flight are aborted and their leases given back (due at once again, their
     * attempt not counted). Resolves when none is left.
     */
    async stop(): Promise<void> {
      stopping = true
      running = false
      for (const t of [timer, gaugeTimer]) if (t) clearTimeout(t)
      if (renewTimer) clearInterval(renewTimer)
      timer = gaugeTimer = renewTimer = null
      for (const { controller } of inflight.values()) controller.abort(new GuardError('aborted', 'shutting down'))
      // A pass claiming now gives back what it gets (stopping); then every request ends, then any renewal.
      await pumping
      await Promise.allSettled([...inflight.values()].map((f) => f.done))
      while (renewing) await renewing
      const cut = [...inflight.values()].filter((f) => f.cut)
      for (const f of cut) inflight.delete(f.row.id)
      if (cut.length > 0) {
        try {
          await queue.release(cut.map(held))
        } catch (err) {
          // They come back when their lease runs out, as after a crash.
          log('webhook deliveries: giving leases back failed', err)
        }
      }
    },
    /** Something was committed to the outbox: look now rather than at the next tick. */
    wake,
    stats: {
      /** Finished attempts since start, by outcome. */
      outcomes: outcomes as Readonly<Record<DeliveryOutcome, number>>,
      get inFlight() {
        return inflight.size
      },
      /**
       * Pending deliveries (enabled endpoints) and the creation time (unix ms) of the oldest one's event, as
       * the loop last read them (see the header: at most MAX_SLEEP_MS old while it runs).
       */
      outbox: () => outbox,
    },
  }
}
export type Deliverer = ReturnType<typeof createDeliverer>
