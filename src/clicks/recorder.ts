// Clicks are counted in memory as they come — per link, day and name, the shape the store writes — and
// the counters are written in one transaction every interval (or sooner when a batch holds `maxBatch`
// link-days), on a worker thread (writer.ts), so a visit never waits for the disk or for a write. No
// address is kept: the user agent and referrer become counters at once.
// When the database cannot be written (a full disk, a read-only file), the counters stay in memory and the
// writes are retried with a growing pause; a visit never pays for a failing write, and the log gets one
// line when writes start failing and one when they work again. A batch is counted as written only once
// its transaction committed; one that failed is merged back into the counters being filled.
import { noteWriteSuccess, storageReason, type Db } from '../db'
import { createClassifier, createSourceCache } from './classify'
import { bump, clicksIn, DAY_MS, DIMENSIONS, newDayCounts, PartialWrite, type ClickBatch, type DayCounts } from './store'
import { mainThreadWriter, workerWriter, type BatchWriter } from './writer'

// Real user agents fit in 256 characters; a longer one costs time to parse.
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
  /** Link-days in one batch before it is written without waiting for the timer. */
  maxBatch?: number
  intervalMs?: number
  /**
   * Counters held in memory (a link-day is one, each name under it one more), written or not. While
   * writes fail they pile up; past this bound a click that needs a new counter is dropped, and counted.
   */
  maxPending?: number
  /** First pause after a failed write; it doubles with each failure up to `maxRetryMs`. */
  retryMs?: number
  maxRetryMs?: number
  /** Where the state changes are reported (one line each). */
  log?: (line: string) => void
  /** 'worker' (the default for a database file) or 'main': where batches are written (writer.ts). */
  writeOn?: 'worker' | 'main'
  /** Starts the writer thread (tests substitute one that dies). */
  spawnWriter?: () => Worker
  /** How often the writer thread checkpoints the WAL besides after its own commits (default 5 s). */
  checkpointMs?: number
}

/** Counters being filled, or handed to the writer: the batch, its clicks, and what it holds in memory. */
interface Tally {
  batch: ClickBatch
  clicks: number
  counters: number
  linkDays: number
}
const emptyTally = (): Tally => ({ batch: new Map(), clicks: 0, counters: 0, linkDays: 0 })

/** The counters of a batch (what is left of one written in part). */
function tallyOf(batch: ClickBatch): Tally {
  const t: Tally = { batch, clicks: clicksIn(batch), counters: 0, linkDays: 0 }
  for (const days of batch.values())
    for (const d of days.values()) {
      t.linkDays++
      t.counters += 1 + DIMENSIONS.reduce((n, dim) => n + d.dims[dim].size, 0)
    }
  return t
}

/** Adds `from` into `into` (both aggregates of clicks not yet written). */
function merge(into: Tally, from: Tally) {
  into.clicks += from.clicks
  into.counters += from.counters
  into.linkDays += from.linkDays
  for (const [linkId, days] of from.batch) {
    const mine = into.batch.get(linkId)
    if (!mine) {
      into.batch.set(linkId, days)
      continue
    }
    for (const [day, d] of days) {
      const m = mine.get(day)
      if (!m) {
        mine.set(day, d)
        continue
      }
      into.linkDays--
      into.counters--
      m.clicks += d.clicks
      m.bots += d.bots
      for (const dim of DIMENSIONS) {
        for (const [name, n] of d.dims[dim]) {
          if (m.dims[dim].has(name)) into.counters--
          bump(m.dims[dim], name, n)
        }
      }
    }
  }
}

export function createClickRecorder(db: Db, opts: ClickRecorderOptions = {}) {
  // Link-days, not clicks: a batch over many links is written early (its transaction stays short), while
  // any number of clicks on the links of one interval is one write. Each early write at 1,000 would keep
  // the writer thread (and a core) busy all the time under traffic spread over ~1,000 links.
  const maxBatch = opts.maxBatch ?? 10_000
  const maxPending = opts.maxPending ?? 100_000
  const intervalMs = opts.intervalMs ?? 1000
  const retryMs = opts.retryMs ?? 1000
  const maxRetryMs = opts.maxRetryMs ?? 60_000
  const log = opts.log ?? ((line: string) => console.error(line))
  // A database without a file (":memory:") has no second connection to give a thread.
  const onWorker = (opts.writeOn ?? 'worker') === 'worker' && db.filename !== '' && db.filename !== ':memory:'
  let writer: BatchWriter | null = null
  const writerOf = () => (writer ??= onWorker ? workerWriter(db, { log, spawn: opts.spawnWriter, checkpointMs: opts.checkpointMs }) : mainThreadWriter(db))
  let tally = emptyTally()
  // The batch the writer holds (one at a time), and the promise that settles when it is done with it.
  let sending: Tally | null = null
  let sent: Promise<void> | null = null
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

  /** Writes what is counted so far; resolves with the clicks written once their transaction committed. */
  async function flush(): Promise<number> {
    while (sent) await sent // one batch in flight; clicks counted before this call are in it or in the next
    if (tally.clicks === 0) return 0
    const mine = tally
    tally = emptyTally()
    sending = mine
    let done!: () => void
    sent = new Promise<void>((r) => (done = r))
    try {
      const outcome = await writerOf().write(mine.batch)
      if (outcome === 'uncertain') {
        droppedTotal += mine.clicks
        log(`${mine.clicks} clicks may or may not have been written when the writer thread stopped; they are not written again (counted as dropped)`)
        return 0
      }
      flushedTotal += mine.clicks
      noteWriteSuccess(db)
      return mine.clicks
    } catch (err) {
      // Kept for the next attempt (the database was busy, the disk full) rather than lost; of a batch
      // written in part, only the part that was not committed.
      let kept = mine
      if (err instanceof PartialWrite) {
        kept = tallyOf(err.unwritten)
        flushedTotal += mine.clicks - kept.clicks
      }
      merge(kept, tally)
      tally = kept
      throw err
    } finally {
      sending = null
      sent = null
      done()
      flushEarlyIfFull()
    }
  }

  /** A batch over `maxBatch` link-days is written without waiting for the timer (not while failing). */
  function flushEarlyIfFull() {
    if (tally.linkDays < maxBatch || flushQueued || sent || failure !== null) return
    flushQueued = true
    queueMicrotask(() => {
      flushQueued = false
      void safeFlush()
    })
  }

  /** A flush that never throws and skips while writes fail and the next retry is not due. */
  async function safeFlush(): Promise<void> {
    if (failure !== null && Date.now() < retryAt) return
    try {
      const written = await flush()
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
        log(`click writes failing: ${reason}; ${tally.clicks} clicks kept in memory (retrying from ${retryMs} ms up to every ${maxRetryMs} ms)`)
      } else retryDelay = Math.min(retryDelay * 2, maxRetryMs)
      failure = reason
      retryAt = Date.now() + retryDelay
    }
  }

  return {
    record(linkId: number, at: number, ua: string, referer: string) {
      const who = classify(ua.length > USER_AGENT_CHARS ? ua.slice(0, USER_AGENT_CHARS) : ua, at)
      const from = who.bot ? '' : source(referer.length > 2048 ? referer.slice(0, 2048) : referer)
      const dayNumber = Math.floor(at / DAY_MS)
      let days = tally.batch.get(linkId)
      let d: DayCounts | undefined = days?.get(dayNumber)
      // The memory bound: what this click would add (a link-day, names it has not seen), held or not.
      let needed = d ? 0 : 1
      if (!who.bot) {
        if (!d) needed += 4
        else {
          if (!d.dims.source.has(from)) needed++
          if (!d.dims.device.has(who.device)) needed++
          if (!d.dims.browser.has(who.browser)) needed++
          if (!d.dims.os.has(who.os)) needed++
        }
      }
      if (needed > 0 && tally.counters + (sending?.counters ?? 0) + needed > maxPending) {
        droppedTotal++
        return
      }
      if (!days) tally.batch.set(linkId, (days = new Map()))
      if (!d) {
        days.set(dayNumber, (d = newDayCounts()))
        tally.linkDays++
      }
      tally.counters += needed
      tally.clicks++
      if (who.bot) d.bots++
      else {
        d.clicks++
        bump(d.dims.source, from)
        bump(d.dims.device, who.device)
        bump(d.dims.browser, who.browser)
        bump(d.dims.os, who.os)
      }
      if (tally.linkDays >= maxBatch) flushEarlyIfFull()
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
    /** Clicks not yet written: being counted, or in the writer's hands. */
    /** True when clicks of this link are counted but not yet written (in memory or in the writer's hands). */
    hasPending(linkId: number) {
      return tally.batch.has(linkId) || (sending?.batch.has(linkId) ?? false)
    },
    get pending() {
      return tally.clicks + (sending?.clicks ?? 0)
    },
    get flushed() {
      return flushedTotal
    },
    get dropped() {
      return droppedTotal
    },
    start() {
      // A tick during a slow write leaves the counters to the next tick rather than queue a second write.
      timer ??= setInterval(() => {
        if (!sent) void safeFlush()
      }, intervalMs)
      writerOf()
    },
    /**
     * Stops the timer, writes what is left whatever the backoff and closes the writer thread; throws
     * ClicksNotWritten if the write fails.
     */
    async stop() {
      if (timer) clearInterval(timer)
      timer = null
      try {
        await flush()
      } catch (err) {
        throw new ClicksNotWritten(tally.clicks + (sending?.clicks ?? 0), storageReason(err))
      } finally {
        await writer?.close()
      }
    },
  }
}
export type ClickRecorder = ReturnType<typeof createClickRecorder>
