// Clicks counted in memory as they come, written every interval (or at `maxBatch` link-days) by a writer, so a
// visit never waits for the disk; failing writes are retried with a growing pause (ARCHITECTURE, clicks).
import { noteWriteSuccess, storageReason, type Db } from '../db/sqlite'
import type { Geo } from '../kernel/geo'
import { log as rootLog } from '../kernel/log'
import { clicksIn, DAY_MS, decodeBatch } from './batch'
import { clickEvents, foldEvents, type ClickWebhooks } from './click-events'
import { createClassifier, createSourceCache } from './classify'
import { PartialWrite, type SqliteClickEvents } from './storage/contract'
import {
  absorb,
  countCountry,
  countDestination,
  countProfile,
  emptyTally,
  encode,
  entryOf,
  joinNames,
  keyOf,
  takeLink,
  type Tally,
} from './tally'
import { createVisitorCounter, type VisitorCounterOptions } from './visitors'
import { mainThreadWriter, workerWriter, type BatchWriter } from './writer'

export type { ClickWebhooks } from './click-events'

// Real user agents fit in 256 characters; a longer one costs time to parse.
const USER_AGENT_CHARS = 256
/** The country of an address that is not located (or of a click recorded without one). */
export const UNKNOWN_COUNTRY = 'unknown'

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
   * Counters held in memory, written or not: a link-day, a profile (referrer, device, browser, system),
   * a profile counted under a link-day — ~100 bytes each. While writes fail or lag they pile up; past
   * this bound a click that needs a new counter is dropped, and counted. The default, 500,000 (~50 MB),
   * is ~16 s of traffic spread over 100,000 links at 15,000 clicks/s: at 100,000 it dropped 40% of the
   * clicks of a healthy server whose writer took 2 s for a batch.
   */
  maxPending?: number
  /** First pause after a failed write; it doubles with each failure up to `maxRetryMs`. */
  retryMs?: number
  maxRetryMs?: number
  /** Where the state changes are reported (one line each). */
  log?: (line: string) => void
  /** 'worker' (the default for a database file given `spawnWriter`) or 'main': where batches are written (writer.ts). */
  writeOn?: 'worker' | 'main'
  /**
   * Where batches go instead of the database file's writer (thread or main): e.g. countsWriter over the
   * PostgreSQL click counts (writer.ts), where every node adds its increments to the same rows.
   */
  writer?: BatchWriter
  /** Starts the writer thread (the root's, app/click-write-worker.ts; tests substitute one that dies). None: the main thread writes. */
  spawnWriter?: () => Worker
  /** SQLite: how the main-thread writer writes link.clicked rows (the root hands in the webhooks feature's). */
  eventRows?: SqliteClickEvents
  /** How often the writer thread checkpoints the WAL besides after its own commits (default 5 s). */
  checkpointMs?: number
  /** link.clicked webhooks (absent: none are built). */
  webhooks?: ClickWebhooks
  /** Countries of addresses (absent: clicks are counted without a country). */
  geo?: Geo
  /** The visitor counter's memory bound (visitors.ts). */
  visitors?: VisitorCounterOptions
  /** Several nodes on one database: new visitors of exact link-days go to the shared set instead (false: count here). */
  sharedVisitors?: { take(linkId: number, day: number, hash: number): boolean }
}

/** `db`: the SQLite database the clicks are written to; null when `opts.writer` writes them elsewhere. */
export function createClickRecorder(db: Db | null, opts: ClickRecorderOptions = {}) {
  // Link-days, not clicks: a batch over many links is written early (its transaction stays short), while
  // any number of clicks on the links of one interval is one write. Each early write at 1,000 would keep
  // the writer thread (and a core) busy all the time under traffic spread over ~1,000 links.
  const maxBatch = opts.maxBatch ?? 10_000
  const maxPending = opts.maxPending ?? 500_000
  const intervalMs = opts.intervalMs ?? 1000
  const retryMs = opts.retryMs ?? 1000
  const maxRetryMs = opts.maxRetryMs ?? 60_000
  const log = opts.log ?? ((line: string) => rootLog.error(line))
  const hooks = opts.webhooks ?? null
  // A database without a file (":memory:") has no second connection to give a thread.
  const onWorker =
    db !== null &&
    opts.spawnWriter !== undefined &&
    (opts.writeOn ?? 'worker') === 'worker' &&
    db.filename !== '' &&
    db.filename !== ':memory:'
  let writer: BatchWriter | null = opts.writer ?? null
  if (!writer && !db) throw new Error('clicks: a recorder needs a database or a writer')
  const writerOf = () =>
    (writer ??= onWorker
      ? workerWriter(db!, { log, spawn: opts.spawnWriter!, eventRows: opts.eventRows, checkpointMs: opts.checkpointMs })
      : mainThreadWriter(db!, opts.eventRows))
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
  const geo = opts.geo ?? null
  const visitors = createVisitorCounter(opts.visitors)
  const sharedVisitors = opts.sharedVisitors ?? null

  /** Writes what is counted so far; resolves with the clicks written once their transaction committed. */
  async function flush(): Promise<number> {
    while (sent) await sent // one batch in flight; clicks counted before this call are in it or in the next
    if (tally.clicks === 0 && tally.events.length === 0) return 0
    const mine = tally
    tally = emptyTally()
    return send(mine)
  }

  /**
   * Writes one link's counted clicks ahead of the rest (for an exact statistics answer): a few rows, where
   * a whole flush per answer would write every link each time and lose the coalescing of an interval.
   */
  async function flushLink(linkId: number): Promise<number> {
    while (sent) await sent
    if (!tally.links.has(linkId)) return 0
    return send(takeLink(tally, linkId))
  }

  async function send(mine: Tally): Promise<number> {
    const batch = encode(mine)
    // Kept events of failed writes and this flush's become one event per account again.
    const fresh = hooks ? clickEvents(mine, hooks) : []
    const events = mine.events.length === 0 ? fresh : foldEvents([...mine.events, ...fresh])
    if (events.length > 0) batch.events = events
    const clicks = mine.clicks
    sending = mine
    let done!: () => void
    sent = new Promise<void>((r) => (done = r))
    try {
      const outcome = await writerOf().write(batch)
      if (outcome === 'uncertain') {
        droppedTotal += clicks
        log(
          `${clicks} clicks may or may not have been written when the writer thread stopped; they are not written again (counted as dropped)`,
        )
        return 0
      }
      flushedTotal += clicks
      if (db) noteWriteSuccess(db)
      if (events.length > 0) hooks?.written()
      return clicks
    } catch (err) {
      // Kept for the next attempt (the database was busy, the disk full) rather than lost; of a batch
      // written in part, only the part that was not committed.
      const kept = err instanceof PartialWrite ? err.unwritten : decodeBatch(batch)
      absorb(tally, kept, mine)
      // The events go with the last part: whatever part failed, none of them was committed.
      const keptEvents = err instanceof PartialWrite ? err.events : events
      if (keptEvents.length > 0) tally.events = foldEvents([...tally.events, ...keptEvents])
      flushedTotal += clicks - clicksIn(kept)
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
    if (tally.entries.size < maxBatch || flushQueued || sent || failure !== null) return
    flushQueued = true
    queueMicrotask(() => {
      flushQueued = false
      void safeFlush()
    })
  }

  /** A flush that never throws and skips while writes fail and the next retry is not due. */
  async function safeFlush(write: () => Promise<number> = flush): Promise<void> {
    if (failure !== null && Date.now() < retryAt) return
    try {
      const written = await write()
      if (failure !== null) {
        const dropped = droppedTotal - droppedAtFailure
        failure = null
        log(
          `click writes work again; ${written} clicks written${dropped ? `, ${dropped} dropped while failing (buffer full)` : ''}`,
        )
      }
    } catch (err) {
      failedFlushes++
      const reason = storageReason(err)
      if (failure === null) {
        retryDelay = retryMs
        droppedAtFailure = droppedTotal
        log(
          `click writes failing: ${reason}; ${tally.clicks} clicks kept in memory (retrying from ${retryMs} ms up to every ${maxRetryMs} ms)`,
        )
      } else retryDelay = Math.min(retryDelay * 2, maxRetryMs)
      failure = reason
      retryAt = Date.now() + retryDelay
    }
  }

  return {
    /**
     * `account` (-1: none) and `code` are the link's, for link.clicked events; `address` the visitor's
     * (made a country and a visitor at once; held only in those two bounded caches, never written);
     * `destination` the URL a rule or split chose ('' for a link without them).
     */
    record(
      linkId: number,
      at: number,
      ua: string,
      referer: string,
      account = -1,
      code = '',
      address = '',
      destination = '',
    ) {
      if (ua.length > USER_AGENT_CHARS) ua = ua.slice(0, USER_AGENT_CHARS)
      const who = classify(ua, at)
      const day = Math.floor(at / DAY_MS)
      let e = tally.entries.get(keyOf(linkId, day))
      let profile = -1
      let byFrom: Map<string, number> | undefined
      let from = ''
      // The memory bound: what this click would add (a link-day, a profile under it, a new profile),
      // counted with what is held or in the writer's hands.
      let needed = e ? 0 : 1
      if (!who.bot) {
        from = source(referer.length > 2048 ? referer.slice(0, 2048) : referer)
        byFrom = tally.profileIds.get(who)
        profile = byFrom?.get(from) ?? -1
        if (profile < 0 && tally.joined.size > 0)
          profile = tally.joined.get(joinNames([from, who.device, who.browser, who.os])) ?? -1
        if (profile < 0) needed += 2
        else if (!e || e.n === 0 || (e.profile !== profile && !e.more?.has(profile))) needed++
      }
      if (needed > 0 && tally.counters + (sending?.counters ?? 0) + needed > maxPending) {
        droppedTotal++
        return
      }
      e ??= entryOf(tally, linkId, day, account, code).entry
      tally.counters += needed
      tally.clicks++
      if (who.bot) e.bots++
      else {
        if (profile < 0) {
          profile = tally.profiles.length / 4
          tally.profiles.push(from, who.device, who.browser, who.os)
        }
        if (!byFrom) tally.profileIds.set(who, (byFrom = new Map()))
        byFrom.set(from, profile)
        countProfile(e, profile, 1)
        // A new country or destination under the link-day takes a counter past the bound's check: at most
        // one each per click, and the next click that needs one is then refused.
        if (geo) tally.counters += countCountry(e, (address && geo.country(address)) || UNKNOWN_COUNTRY, 1)
        const fresh = visitors.add(keyOf(linkId, day), day, address, ua)
        // Several nodes: a visitor new to this node may be known to another; the shared set decides (shared-visitors.ts).
        if (
          fresh > 0 &&
          !(sharedVisitors && visitors.lastNew >= 0 && sharedVisitors.take(linkId, day, visitors.lastNew))
        )
          e.visitors += fresh
        if (destination) tally.counters += countDestination(e, destination, 1)
      }
      if (tally.entries.size >= maxBatch) flushEarlyIfFull()
    },
    flush,
    /** A flush that never throws and skips while writes fail and the next retry is not due. */
    flushIfWritable: () => safeFlush(),
    /** The same, for one link's clicks only (see flushLink). */
    flushLinkIfWritable: (linkId: number) => safeFlush(() => flushLink(linkId)),
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
    /** True when clicks of this link are counted but not yet written (in memory or in the writer's hands). */
    hasPending(linkId: number) {
      return tally.links.has(linkId) || (sending?.links.has(linkId) ?? false)
    },
    /** Clicks not yet written: being counted, or in the writer's hands. */
    get pending() {
      return tally.clicks + (sending?.clicks ?? 0)
    },
    get flushed() {
      return flushedTotal
    },
    get dropped() {
      return droppedTotal
    },
    /** The distinct-visitor counter (its memory and the link-days it dropped to stay within it). */
    visitors,
    start() {
      // A tick during a slow write leaves the counters to the next tick rather than queue a second write.
      timer ??= setInterval(() => {
        if (!sent) void safeFlush()
      }, intervalMs)
      // The writer thread starts on the next turn, so the first answer does not wait for it (~5 ms of a start).
      setTimeout(() => timer && writerOf(), 0)
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
