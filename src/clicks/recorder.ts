// Clicks are buffered in memory and written in one transaction every interval or every `maxBatch`
// clicks, so a visit never waits for the disk. No address is kept: only the user agent and referrer,
// which become counters at flush time.
// When the database cannot be written (a full disk, a read-only file), the clicks stay in memory and the
// writes are retried with a growing pause; a visit never pays for a failing write, and the log gets one
// line when writes start failing and one when they work again.
import { noteWriteSuccess, storageReason, type Db } from '../db'
import { createClassifier, createSourceCache } from './classify'
import { bump, createClickStore, DAY_MS, newDayCounts, type ClickBatch } from './store'

interface PendingClick {
  linkId: number
  at: number
  ua: string
  referer: string
}

// Real user agents fit in 256 characters; a longer one costs memory while buffered and time to parse.
const USER_AGENT_CHARS = 256

/** Thrown by stop() when the last flush fails: the clicks still in memory are lost with the process. */
export class ClicksNotWritten extends Error {
  constructor(
    readonly count: number,
    readonly reason: string,
  ) {
    super(`${count} clicks could not be written: ${reason}`)
    this.name = 'ClicksNotWritten'
  }
}

export interface ClickRecorderOptions {
  maxBatch?: number
  intervalMs?: number
  maxPending?: number
  /** First pause after a failed write; it doubles with each failure up to `maxRetryMs`. */
  retryMs?: number
  maxRetryMs?: number
  /** Where the state changes are reported (one line each). */
  log?: (line: string) => void
}

export function createClickRecorder(db: Db, opts: ClickRecorderOptions = {}) {
  const maxBatch = opts.maxBatch ?? 1000
  const maxPending = opts.maxPending ?? 100_000
  const intervalMs = opts.intervalMs ?? 1000
  const retryMs = opts.retryMs ?? 1000
  const maxRetryMs = opts.maxRetryMs ?? 60_000
  const log = opts.log ?? ((line: string) => console.error(line))
  const writeBatch = createClickStore(db).write
  let buffer: PendingClick[] = []
  let timer: ReturnType<typeof setInterval> | null = null
  let flushedTotal = 0
  let droppedTotal = 0
  let flushQueued = false
  // While writes fail: the reason, the current pause and when the next attempt may run.
  let failure: string | null = null
  let retryDelay = 0
  let retryAt = 0
  let droppedAtFailure = 0
  let failedFlushes = 0

  const classify = createClassifier()
  const source = createSourceCache()
  // One pass over the batch into per-link, per-day counters (no per-click string keys or dates); the
  // store then writes them (store.ts).
  const write = (clicks: PendingClick[]) => {
    const batch: ClickBatch = new Map()
    for (const c of clicks) {
      let days = batch.get(c.linkId)
      if (!days) batch.set(c.linkId, (days = new Map()))
      const dayNumber = Math.floor(c.at / DAY_MS)
      let d = days.get(dayNumber)
      if (!d) days.set(dayNumber, (d = newDayCounts()))
      const who = classify(c.ua, c.at)
      if (who.bot) {
        d.bots++
        continue
      }
      d.clicks++
      bump(d.dims.source, source(c.referer))
      bump(d.dims.device, who.device)
      bump(d.dims.browser, who.browser)
      bump(d.dims.os, who.os)
    }
    writeBatch(batch)
  }

  function flush(): number {
    if (buffer.length === 0) return 0
    const batch = buffer
    buffer = []
    try {
      write(batch)
    } catch (err) {
      // Keep the clicks for the next attempt (e.g. the database was busy) rather than lose them.
      buffer = batch.concat(buffer)
      throw err
    }
    flushedTotal += batch.length
    noteWriteSuccess(db)
    return batch.length
  }

  return {
    record(linkId: number, at: number, ua: string, referer: string) {
      // While writes fail (a full disk, say) the buffer must not grow without end: past the cap the
      // oldest clicks go, and are counted.
      if (buffer.length >= maxPending) {
        buffer.shift()
        droppedTotal++
      }
      buffer.push({ linkId, at, ua: ua.slice(0, USER_AGENT_CHARS), referer: referer.slice(0, 2048) })
      // While failing, a full batch waits for the next retry: no write attempt per click.
      if (buffer.length >= maxBatch && !flushQueued && failure === null) {
        flushQueued = true
        queueMicrotask(() => {
          flushQueued = false
          safeFlush()
        })
      }
    },
    flush,
    /** A flush that never throws and skips while writes fail and the next retry is not due. */
    flushIfWritable: safeFlush,
    /** True while click writes fail; `lastError` says why. */
    get failing() {
      return failure !== null
    },
    get lastError() {
      return failure
    },
    /** Flush attempts that failed since start (the backoff keeps this far below the number of clicks). */
    get failures() {
      return failedFlushes
    },
    get pending() {
      return buffer.length
    },
    get flushed() {
      return flushedTotal
    },
    get dropped() {
      return droppedTotal
    },
    start() {
      timer ??= setInterval(safeFlush, intervalMs)
    },
    /** Stops the timer and writes what is left, whatever the backoff; throws ClicksNotWritten if it cannot. */
    stop() {
      if (timer) clearInterval(timer)
      timer = null
      try {
        flush()
      } catch (err) {
        throw new ClicksNotWritten(buffer.length, storageReason(err))
      }
    },
  }

  function safeFlush() {
    if (failure !== null && Date.now() < retryAt) return
    try {
      const written = flush()
      if (failure !== null) {
        const dropped = droppedTotal - droppedAtFailure
        failure = null
        log(`click writes work again; ${written} clicks written${dropped ? `, ${dropped} dropped while failing (buffer full)` : ''}`)
      }
    } catch (err) {
      failedFlushes++
      const reason = storageReason(err)
      if (failure === null) {
        retryDelay = retryMs
        droppedAtFailure = droppedTotal
        log(`click writes failing: ${reason}; ${buffer.length} clicks kept in memory (retrying from ${retryMs} ms up to every ${maxRetryMs} ms)`)
      } else retryDelay = Math.min(retryDelay * 2, maxRetryMs)
      failure = reason
      retryAt = Date.now() + retryDelay
    }
  }
}
export type ClickRecorder = ReturnType<typeof createClickRecorder>
