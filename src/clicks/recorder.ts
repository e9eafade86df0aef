// Clicks are counted in memory as they come — per link, day and name, the shape the store writes — and
// the counters are written in one transaction every interval (or sooner when a batch holds `maxBatch`
// link-days), on a worker thread (writer.ts), so a visit never waits for the disk or for a write. The user
// agent and referrer become counters at once, and so does the visitor's address: a country (geo/index.ts)
// and a visitor of the link-day (visitors.ts), each through a cache that real traffic hits (~0.1 µs; a
// new address costs a ~2 µs tree walk, a new address and user agent of the day a ~2 µs HMAC). It is
// never written: not to the database, nor to the webhook events. Measured (in-process server, one hot
// code under wrk, 6 s): keeping the addresses and user agents of a second's clicks for the flush to
// resolve cost 20-25 MiB more peak RSS (122-127 against 102-104 MiB) for no throughput gained.
// When the database cannot be written (a full disk, a read-only file), the counters stay in memory and the
// writes are retried with a growing pause; a visit never pays for a failing write, and the log gets one
// line when writes start failing and one when they work again. A batch is counted as written only once
// its transaction committed; one that failed is merged back into the counters being filled.
// Webhooks (`link.clicked`, opt-in): at each flush the links of accounts with a subscribed endpoint
// (`webhooks.wanted`, an in-memory look-up per account) become one event per account, carried with the
// batch and committed in its last transaction (store.ts). A batch that fails keeps its events for the next
// attempt, and the clicks it puts back are marked as already reported (Entry.heldClicks), so each click is
// reported once, in the transaction that counts it or after that one.
import { noteWriteSuccess, storageReason, type Db } from '../db/sqlite'
import type { Geo } from '../kernel/geo'
import { createClassifier, createSourceCache } from './classify'
import type { Classified } from './classify'
import {
  CLICK_ITEMS_PER_EVENT,
  clicksIn,
  DAY_MS,
  dayOf,
  decodeBatch,
  EXTRA_DIMENSIONS,
  PartialWrite,
  PROFILE_DIMENSIONS,
  type ClickBatch,
  type ClickEvent,
  type ClickItem,
  type EncodedBatch,
} from './store'
import { createVisitorCounter, type VisitorCounterOptions } from './visitors'
import { mainThreadWriter, workerWriter, type BatchWriter } from './writer'
import { log as rootLog } from '../kernel/log'

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
  /** 'worker' (the default for a database file) or 'main': where batches are written (writer.ts). */
  writeOn?: 'worker' | 'main'
  /**
   * Where batches go instead of the database file's writer (thread or main): e.g. countsWriter over the
   * PostgreSQL click counts (writer.ts), where every node adds its increments to the same rows.
   */
  writer?: BatchWriter
  /** Starts the writer thread (tests substitute one that dies). */
  spawnWriter?: () => Worker
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

/** What the recorder needs of the webhook outbox (app.ts wires it to webhooks/outbox.ts). */
export interface ClickWebhooks {
  /** Cheap: whether an enabled endpoint of the account subscribes to link.clicked. */
  wanted(accountId: number): boolean
  /** After a batch that carried events committed: wakes the deliverer. */
  written(): void
  /** The events' timestamp (the app's clock). */
  now(): number
}

/**
 * One link's clicks on one day, as counted: bots, and human clicks per profile (the first profile inline,
 * others in `more`: most link-days see one or two). ~100 bytes, where a DayCounts with its four Maps took
 * ~1,400: under traffic over 100,000 links the counters of a second or two are ~30,000 link-days.
 */
interface Entry {
  linkId: number
  day: number
  clicks: number
  bots: number
  profile: number
  n: number
  more: Map<number, number> | null
  /** The link's account (-1: none) and code, for link.clicked events. */
  account: number
  code: string
  /** Of clicks and bots, those already in kept events (put back by absorb after a failed write). */
  heldClicks: number
  heldBots: number
  /** Visitors new since the link-day's last flush. */
  visitors: number
  /** Human clicks per country: the first inline (most link-days of a flush see one), others in `countries`. */
  country: string
  countryN: number
  countries: Map<string, number> | null
  /** Human clicks per destination a rule or split chose (null: none). */
  destinations: Map<string, number> | null
}

/**
 * Counters being filled: link-days by key, and profiles (source, device, browser, os) interned per tally
 * by the classifier's result object and the source. `counters` is what the memory bound counts: a
 * link-day, a profile counted under it, a profile in the table.
 */
interface Tally {
  entries: Map<number, Entry>
  /** Link id → the days it has entries for. */
  links: Map<number, number[]>
  profiles: string[]
  profileIds: Map<Classified, Map<string, number>>
  /** Profiles put back by absorb(), by their four names (empty unless a write failed). */
  joined: Map<string, number>
  clicks: number
  counters: number
  /** link.clicked events of failed writes, to go with the next batch. */
  events: ClickEvent[]
}
const emptyTally = (): Tally => ({ entries: new Map(), links: new Map(), profiles: [], profileIds: new Map(), joined: new Map(), clicks: 0, counters: 0, events: [] })
const joinNames = (names: string[]) => names.join('\u0000')
// Day numbers fit in 17 bits until the year 2328; ids up to 2^36 keep the key an exact integer.
const DAY_BITS = 131_072
const keyOf = (linkId: number, day: number) => linkId * DAY_BITS + (day % DAY_BITS)

/** The tally as the writer takes it (store.ts EncodedBatch). */
function encode(t: Tally): EncodedBatch {
  let length = 0
  for (const e of t.entries.values())
    length += 7 + (e.n > 0 ? 2 : 0) + 2 * (e.more?.size ?? 0) + 3 * extraCount(e)
  const rows = new Float64Array(length)
  const names: string[] = []
  const nameIds = new Map<string, number>()
  const nameId = (name: string) => {
    let id = nameIds.get(name)
    if (id === undefined) nameIds.set(name, (id = names.push(name) - 1))
    return id
  }
  let i = 0
  const extra = (dim: number, name: string, n: number) => {
    rows[i++] = dim
    rows[i++] = nameId(name)
    rows[i++] = n
  }
  for (const e of t.entries.values()) {
    rows[i++] = e.linkId
    rows[i++] = e.day
    rows[i++] = e.clicks
    rows[i++] = e.bots
    rows[i++] = e.visitors
    rows[i++] = (e.n > 0 ? 1 : 0) + (e.more?.size ?? 0)
    if (e.n > 0) {
      rows[i++] = e.profile
      rows[i++] = e.n
    }
    if (e.more)
      for (const [p, n] of e.more) {
        rows[i++] = p
        rows[i++] = n
      }
    rows[i++] = extraCount(e)
    if (e.countryN > 0) extra(COUNTRY, e.country, e.countryN)
    if (e.countries) for (const [name, n] of e.countries) extra(COUNTRY, name, n)
    if (e.destinations) for (const [name, n] of e.destinations) extra(DESTINATION, name, n)
  }
  return { rows, profiles: t.profiles, names }
}

const COUNTRY = EXTRA_DIMENSIONS.indexOf('country')
const DESTINATION = EXTRA_DIMENSIONS.indexOf('destination')
/** The names a link-day counts beside its profiles. */
const extraCount = (e: Entry) => (e.countryN > 0 ? 1 : 0) + (e.countries?.size ?? 0) + (e.destinations?.size ?? 0)

/** Counts `n` human clicks of a link-day under a country. Returns 1 when that takes a new slot. */
function countCountry(e: Entry, name: string, n: number): number {
  if (e.countryN === 0 || e.country === name) {
    const fresh = e.countryN === 0 ? 1 : 0
    e.country = name
    e.countryN += n
    return fresh
  }
  e.countries ??= new Map()
  const held = e.countries.get(name)
  e.countries.set(name, (held ?? 0) + n)
  return held === undefined ? 1 : 0
}

/** Counts `n` human clicks of a link-day under a chosen destination. Returns 1 when that takes a new slot. */
function countDestination(e: Entry, url: string, n: number): number {
  e.destinations ??= new Map()
  const held = e.destinations.get(url)
  e.destinations.set(url, (held ?? 0) + n)
  return held === undefined ? 1 : 0
}

/** One more link-day of `t`, or the one it has. */
function entryOf(t: Tally, linkId: number, day: number, account: number, code: string): { entry: Entry; created: boolean } {
  const key = keyOf(linkId, day)
  const held = t.entries.get(key)
  if (held) return { entry: held, created: false }
  const entry: Entry = {
    linkId,
    day,
    clicks: 0,
    bots: 0,
    profile: -1,
    n: 0,
    more: null,
    account,
    code,
    heldClicks: 0,
    heldBots: 0,
    visitors: 0,
    country: '',
    countryN: 0,
    countries: null,
    destinations: null,
  }
  t.entries.set(key, entry)
  const days = t.links.get(linkId)
  if (days) days.push(day)
  else t.links.set(linkId, [day])
  return { entry, created: true }
}

/** Moves one link's entries out of `t` into a tally of their own (to be written ahead of the rest). */
function takeLink(t: Tally, linkId: number): Tally {
  const part = emptyTally()
  const remap = new Map<number, number>()
  const mapped = (p: number) => {
    let q = remap.get(p)
    if (q === undefined) {
      q = part.profiles.length / 4
      part.profiles.push(...t.profiles.slice(p * 4, p * 4 + 4))
      remap.set(p, q)
      part.counters++
    }
    return q
  }
  for (const day of t.links.get(linkId) ?? []) {
    const key = keyOf(linkId, day)
    const e = t.entries.get(key)
    if (!e) continue
    t.entries.delete(key)
    const slots = (e.n > 0 ? 1 : 0) + (e.more?.size ?? 0) + extraCount(e)
    t.clicks -= e.clicks + e.bots
    t.counters -= 1 + slots // its profiles stay in t's table (others may count under them), and counted
    const { entry } = entryOf(part, linkId, day, e.account, e.code)
    entry.heldClicks = e.heldClicks
    entry.heldBots = e.heldBots
    entry.bots = e.bots
    entry.visitors = e.visitors
    entry.country = e.country
    entry.countryN = e.countryN
    entry.countries = e.countries
    entry.destinations = e.destinations
    if (e.n > 0) countProfile(entry, mapped(e.profile), e.n)
    if (e.more) for (const [p, n] of e.more) countProfile(entry, mapped(p), n)
    entry.clicks = e.clicks // human clicks without a profile too (absorb's remainder; never in practice)
    part.clicks += e.clicks + e.bots
    part.counters += 1 + slots
  }
  t.links.delete(linkId)
  return part
}

/** Counts `n` human clicks of a link-day under a profile. Returns 1 when that takes a new slot. */
function countProfile(e: Entry, profile: number, n: number): number {
  e.clicks += n
  if (e.n === 0 || e.profile === profile) {
    const fresh = e.n === 0 ? 1 : 0
    e.profile = profile
    e.n += n
    return fresh
  }
  e.more ??= new Map()
  const held = e.more.get(profile)
  e.more.set(profile, (held ?? 0) + n)
  return held === undefined ? 1 : 0
}

/**
 * Adds what a failed write left unwritten back into the tally being filled. The store only ever reads a
 * link-day's names per dimension, so any profiles with those sums will do: each dimension's names are
 * taken in turn, a profile at a time, as many clicks as the smallest of the four heads has left.
 * `from` is the tally the batch was made of (for each link-day's account and code). The clicks put back
 * are already in the kept events: they count as held, not to be reported again.
 */
function absorb(t: Tally, batch: ClickBatch, from: Tally) {
  for (const [linkId, days] of batch)
    for (const [day, d] of days) {
      const was = from.entries.get(keyOf(linkId, day))
      const { entry, created } = entryOf(t, linkId, day, was?.account ?? -1, was?.code ?? '')
      if (created) t.counters++
      entry.heldClicks += d.clicks
      entry.heldBots += d.bots
      entry.bots += d.bots
      entry.visitors += d.visitors
      t.clicks += d.clicks + d.bots
      for (const [name, n] of d.dims.country) t.counters += countCountry(entry, name, n)
      for (const [name, n] of d.dims.destination) t.counters += countDestination(entry, name, n)
      const heads = PROFILE_DIMENSIONS.map((dim) => [...d.dims[dim]])
      const at = [0, 0, 0, 0]
      const left = heads.map((h) => h[0]?.[1] ?? 0)
      let humans = d.clicks
      while (humans > 0) {
        const n = Math.min(...left)
        if (!(n > 0)) break // the dimensions do not add up (never, for batches this module made)
        const names = heads.map((h, i) => h[at[i]!]![0])
        let profile = t.joined.get(joinNames(names))
        if (profile === undefined) {
          profile = t.profiles.length / 4
          t.profiles.push(...names)
          t.joined.set(joinNames(names), profile)
          t.counters++
        }
        t.counters += countProfile(entry, profile, n)
        humans -= n
        for (let i = 0; i < 4; i++) {
          left[i]! -= n
          if (left[i] === 0) left[i] = heads[i]![++at[i]!]?.[1] ?? 0
        }
      }
      if (humans > 0) entry.clicks += humans
    }
}

/**
 * The link.clicked events of a tally: its link-days' clicks not yet reported, for the accounts that want
 * them, one event per account (split at CLICK_ITEMS_PER_EVENT items). The look-up is made once per account.
 */
function clickEvents(t: Tally, hooks: ClickWebhooks): ClickEvent[] {
  let wanted: Map<number, ClickItem[] | null> | null = null
  for (const e of t.entries.values()) {
    if (e.account < 0) continue
    wanted ??= new Map()
    let items = wanted.get(e.account)
    if (items === undefined) wanted.set(e.account, (items = hooks.wanted(e.account) ? [] : null))
    if (items === null) continue
    const clicks = e.clicks - e.heldClicks
    const bots = e.bots - e.heldBots
    if (clicks + bots > 0) items.push({ hex: e.code, clicks, bots, day: dayOf(e.day * DAY_MS) })
  }
  const events: ClickEvent[] = []
  if (!wanted) return events
  const at = hooks.now()
  for (const [accountId, items] of wanted)
    for (let i = 0; items && i < items.length; i += CLICK_ITEMS_PER_EVENT)
      events.push({ accountId, at, clicks: items.slice(i, i + CLICK_ITEMS_PER_EVENT) })
  return events
}

/**
 * Events kept across failed writes, folded into one per account (split at CLICK_ITEMS_PER_EVENT items) with
 * each link-day's counts summed, at the time of the latest: while writes keep failing, what is kept
 * grows with the link-days clicked, not with the number of attempts.
 */
function foldEvents(events: ClickEvent[]): ClickEvent[] {
  const byAccount = new Map<number, { at: number; items: Map<string, ClickItem> }>()
  for (const e of events) {
    let acc = byAccount.get(e.accountId)
    if (!acc) byAccount.set(e.accountId, (acc = { at: e.at, items: new Map() }))
    acc.at = Math.max(acc.at, e.at)
    for (const item of e.clicks) {
      const key = `${item.hex}\u0000${item.day}`
      const held = acc.items.get(key)
      if (held) {
        held.clicks += item.clicks
        held.bots += item.bots
      } else acc.items.set(key, { ...item })
    }
  }
  const out: ClickEvent[] = []
  for (const [accountId, { at, items }] of byAccount) {
    const all = [...items.values()]
    for (let i = 0; i < all.length; i += CLICK_ITEMS_PER_EVENT) out.push({ accountId, at, clicks: all.slice(i, i + CLICK_ITEMS_PER_EVENT) })
  }
  return out
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
  const onWorker = db !== null && (opts.writeOn ?? 'worker') === 'worker' && db.filename !== '' && db.filename !== ':memory:'
  let writer: BatchWriter | null = opts.writer ?? null
  if (!writer && !db) throw new Error('clicks: a recorder needs a database or a writer')
  const writerOf = () => (writer ??= onWorker ? workerWriter(db!, { log, spawn: opts.spawnWriter, checkpointMs: opts.checkpointMs }) : mainThreadWriter(db!))
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
        log(`${clicks} clicks may or may not have been written when the writer thread stopped; they are not written again (counted as dropped)`)
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
    /**
     * `account` (-1: none) and `code` are the link's, for link.clicked events; `address` the visitor's
     * (made a country and a visitor at once; held only in those two bounded caches, never written);
     * `destination` the URL a rule or split chose ('' for a link without them).
     */
    record(linkId: number, at: number, ua: string, referer: string, account = -1, code = '', address = '', destination = '') {
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
        if (profile < 0 && tally.joined.size > 0) profile = tally.joined.get(joinNames([from, who.device, who.browser, who.os])) ?? -1
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
        if (fresh > 0 && !(sharedVisitors && visitors.lastNew >= 0 && sharedVisitors.take(linkId, day, visitors.lastNew))) e.visitors += fresh
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
