// The SQL of click statistics: how an aggregated batch of clicks is written, and read back for a window.
// The recorder (recorder.ts) turns clicks into a ClickBatch (per link, per day, counters and names); this
// module writes one batch in one transaction, so a batch is either all counted or not at all.
//
// Storage (migration 4): a link-day is one row of click_days with its breakdowns as JSON in `dims`
// ({"source": {"name": clicks, …}, "device": …}); a link-month is one row of click_months, the sum of its
// days; all-time counts are links.clicks and links.bots. A flush costs three or four rows per link, however
// many names it carries, and a window of a year is read from twelve months and the days at its edges.
// Issue 23 added two dimensions, `country` and `destination` (the latter only for visits a rule or split
// sent), and click_days.visitors (migration 18), added to as clicks are: by increments, never rewritten.
//
// Names: a day keeps at most MAX_NAMES names per dimension, then OTHER (see classify.ts). A month keeps at
// most MONTH_NAMES (the busiest; see placeByVolume) and OTHER: a year of a link with thousands of
// referrers is then read from a few thousand names, not from every name of every day (18,714 names,
// 350 KB of JSON and 12 ms to merge, for a year of a link with 10M clicks). A month's counts per dimension,
// OTHER included, are always exactly the sum of its days'; only which of the smallest names are shown by
// name may differ from what the days alone would show.
//
// `link.clicked` webhook events travel with a batch (EncodedBatch.events, built by the recorder at flush
// time) and are inserted in the transaction of the batch's LAST part: committed with the batch, or, when
// any part fails, not at all and handed back with the unwritten rest (PartialWrite.events).
import type { Db } from '../db/sqlite'
import { eventInserts } from '../webhooks/storage/sqlite'
import { MAX_NAMES, OTHER } from './classify'

export const DAY_MS = 86_400_000
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

export const DIMENSIONS = ['source', 'device', 'browser', 'os', 'country', 'destination'] as const
export type Dimension = (typeof DIMENSIONS)[number]
/** The dimensions of a click's profile (recorder.ts); country and destination are counted beside it. */
export const PROFILE_DIMENSIONS = ['source', 'device', 'browser', 'os'] as const
/** The dimensions counted beside the profile, by their index in EncodedBatch rows. */
export const EXTRA_DIMENSIONS = ['country', 'destination'] as const

/**
 * One link's clicks on one day: human clicks, bot clicks, the visitors new since the link-day's last
 * flush (visitors.ts), and the human clicks by name per dimension (destination: only those a rule or
 * split chose).
 */
export interface DayCounts {
  clicks: number
  bots: number
  visitors: number
  dims: Record<Dimension, Map<string, number>>
}
/** link id → day number (ms / DAY_MS, UTC) → counts. Plain Maps: a worker receives it by structured clone. */
export type ClickBatch = Map<number, Map<number, DayCounts>>

export const newDayCounts = (): DayCounts => ({
  clicks: 0,
  bots: 0,
  visitors: 0,
  dims: emptyDims(),
})
export const bump = (m: Map<string, number>, name: string, n = 1) => m.set(name, (m.get(name) ?? 0) + n)

/**
 * A batch as the recorder hands it over: compact, because a batch over 100,000 links as nested Maps took
 * ~1.4 KB a link-day in memory and as long to copy to the writer thread. `profiles` holds four names per
 * profile (source, device, browser, os: what a human click is counted under); `names` the names counted
 * beside profiles (countries, destinations); `rows` holds per link-day linkId, day number, human clicks,
 * bot clicks, new visitors, the number k of profiles counted, then k pairs (profile index, clicks), then
 * the number x of other names counted, then x triples (EXTRA_DIMENSIONS index, name index, clicks).
 */
export interface EncodedBatch {
  rows: Float64Array
  profiles: string[]
  names: string[]
  /** link.clicked events to write with the batch (absent: none). Plain data: it crosses to the thread. */
  events?: ClickEvent[]
}

/** One link-day's clicks of a flush, as a link.clicked event reports them. */
export interface ClickItem {
  hex: string
  clicks: number
  bots: number
  /** YYYY-MM-DD (UTC) of the counts. */
  day: string
}
/** One link.clicked event: an account's clicks of one flush (at most CLICK_ITEMS_PER_EVENT items). */
export interface ClickEvent {
  accountId: number
  /** When the flush that counted them ran (unix ms): the event's timestamp. */
  at: number
  clicks: ClickItem[]
}
/** Items in one link.clicked event: more link-days in a flush make several events. */
export const CLICK_ITEMS_PER_EVENT = 10_000

/** Adds `from` into `into` (both not yet written). */
export function mergeBatch(into: ClickBatch, from: ClickBatch): ClickBatch {
  for (const [linkId, days] of from) {
    const mine = into.get(linkId)
    if (!mine) {
      into.set(linkId, days)
      continue
    }
    for (const [day, d] of days) {
      const m = mine.get(day)
      if (!m) {
        mine.set(day, d)
        continue
      }
      m.clicks += d.clicks
      m.bots += d.bots
      m.visitors += d.visitors
      for (const dim of DIMENSIONS) for (const [name, n] of d.dims[dim]) bump(m.dims[dim], name, n)
    }
  }
  return into
}

/**
 * The batch an EncodedBatch stands for, in parts of at most `links` links, decoded one at a time: the
 * decoded form takes ~1.4 KB a link-day, so a batch of 50,000 link-days decoded at once took ~70 MB.
 */
export function* decodeInParts(e: EncodedBatch, links = Infinity): Generator<ClickBatch> {
  let part: ClickBatch = new Map()
  const { rows, profiles, names } = e
  for (let i = 0; i < rows.length; ) {
    const linkId = rows[i]!
    const day = rows[i + 1]!
    const d = newDayCounts()
    d.clicks = rows[i + 2]!
    d.bots = rows[i + 3]!
    d.visitors = rows[i + 4]!
    const k = rows[i + 5]!
    i += 6
    for (let j = 0; j < k; j++, i += 2) {
      const p = rows[i]! * 4
      const n = rows[i + 1]!
      bump(d.dims.source, profiles[p]!, n)
      bump(d.dims.device, profiles[p + 1]!, n)
      bump(d.dims.browser, profiles[p + 2]!, n)
      bump(d.dims.os, profiles[p + 3]!, n)
    }
    const x = rows[i++]!
    for (let j = 0; j < x; j++, i += 3) bump(d.dims[EXTRA_DIMENSIONS[rows[i]!]!], names[rows[i + 1]!]!, rows[i + 2]!)
    let days = part.get(linkId)
    if (!days && part.size >= links) {
      yield part
      part = new Map()
    }
    if (!days) part.set(linkId, (days = new Map()))
    const held = days.get(day)
    if (held) mergeBatch(part, new Map([[linkId, new Map([[day, d]])]]))
    else days.set(day, d)
  }
  if (part.size > 0) yield part
}

/** The batch an EncodedBatch stands for, whole. */
export function decodeBatch(e: EncodedBatch): ClickBatch {
  const batch: ClickBatch = new Map()
  for (const part of decodeInParts(e)) mergeBatch(batch, part)
  return batch
}

type Names = Map<string, number>
export type DimNames = Record<Dimension, Names>

const emptyDims = (): DimNames => ({ source: new Map(), device: new Map(), browser: new Map(), os: new Map(), country: new Map(), destination: new Map() })

/** The `dims` column as Maps. Names are attacker-chosen text (a referrer host may be "__proto__"): they
 *  only ever live in Maps, and JSON.parse / Object.fromEntries define plain own properties. */
export function parseDims(text: string, into: DimNames = emptyDims()): DimNames {
  if (text === '{}') return into
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return into
  }
  if (!parsed || typeof parsed !== 'object') return into
  for (const dim of DIMENSIONS) {
    const names = (parsed as Record<string, unknown>)[dim]
    if (!names || typeof names !== 'object' || !Object.hasOwn(parsed, dim)) continue
    const target = into[dim]
    for (const [name, n] of Object.entries(names)) if (typeof n === 'number') bump(target, name, n)
  }
  return into
}

export function stringifyDims(dims: DimNames): string {
  const out: Record<string, Record<string, number>> = {}
  for (const dim of DIMENSIONS) if (dims[dim].size > 0) out[dim] = Object.fromEntries(dims[dim])
  return JSON.stringify(out)
}

/** What placeNames stores of no names: one shared, never written, map. */
const NO_NAMES: ReadonlyMap<string, number> = new Map()

/**
 * Adds a batch's names to what a day holds: a name that has a place keeps it and counts on; a new one takes
 * a free place, the batch's busiest first; the clicks of the rest go to OTHER. Returns what was added, as
 * stored (placed names and OTHER), for the month to add up.
 */
export function placeNames(day: Names, added: Names): ReadonlyMap<string, number> {
  if (added.size === 0) return NO_NAMES
  const stored = new Map<string, number>()
  let placed = day.has(OTHER) ? day.size - 1 : day.size
  const names = placed + added.size > MAX_NAMES ? [...added].sort((a, b) => b[1] - a[1]) : added
  let rest = 0
  for (const [name, n] of names) {
    if (name !== OTHER && (day.has(name) || placed < MAX_NAMES)) {
      if (!day.has(name)) placed++
      bump(day, name, n)
      bump(stored, name, n)
    } else rest += n
  }
  if (rest > 0) {
    bump(day, OTHER, rest)
    bump(stored, OTHER, rest)
  }
  return stored
}

/** Names a month keeps per dimension (and OTHER): four times what an answer shows. */
export const MONTH_NAMES = 4 * MAX_NAMES

/**
 * Adds names to a month that keeps at most `limit`: a known name counts on; a new one takes a free place;
 * when there is none, the smallest name gives way (its clicks move to OTHER) to a newcomer at least as
 * busy, else the newcomer's clicks go to OTHER. The batch's busiest come first. Nothing is ever counted
 * twice or lost: a name's earlier clicks stay where they were counted.
 */
export function placeByVolume(held: Names, added: ReadonlyMap<string, number>, limit = MONTH_NAMES): void {
  if (added.size === 0) return
  for (const [name, n] of [...added].sort((a, b) => b[1] - a[1])) {
    if (name === OTHER || held.has(name)) {
      bump(held, name, n)
      continue
    }
    if ((held.has(OTHER) ? held.size - 1 : held.size) < limit) {
      held.set(name, n)
      continue
    }
    let smallest: string | null = null
    let least = Infinity
    for (const [k, v] of held) if (k !== OTHER && v < least) [smallest, least] = [k, v]
    if (smallest !== null && n >= least) {
      held.delete(smallest)
      bump(held, OTHER, least)
      held.set(name, n)
    } else bump(held, OTHER, n)
  }
}

const monthOf = (day: string) => day.slice(0, 7)

/** What placeNames stored of each dimension's names, for one day. */
export type StoredNames = Record<Dimension, ReadonlyMap<string, number>>

/** Whether placeNames would place every name of an empty day as it is: none past MAX_NAMES, no OTHER. */
function placedAsTheyCome(dims: DimNames): boolean {
  for (const dim of DIMENSIONS) if (dims[dim].size > MAX_NAMES || dims[dim].has(OTHER)) return false
  return true
}

/** The names several days stored in one dimension, added up in the days' order. */
function sumNames(days: StoredNames[], dim: Dimension): Names {
  const sum: Names = new Map()
  for (const placed of days) for (const [name, n] of placed[dim]) bump(sum, name, n)
  return sum
}

/**
 * Links written per transaction. A link's first clicks of a day cost 60-100 µs on a 1M-link database (three
 * rows on scattered pages: its totals, its day, its month), so a transaction holds the write lock for 30-50 ms;
 * 2,000 a transaction cost 15-25% less CPU a link but would hold it four times as long.
 */
export const LINKS_PER_COMMIT = 500

/**
 * A batch was not (all) written: `unwritten` holds the part whose transaction failed and the parts after it,
 * `events` the batch's link.clicked events (written with the last part, so never when a part failed).
 */
export class PartialWrite extends Error {
  constructor(
    readonly cause: unknown,
    readonly unwritten: ClickBatch,
    readonly events: ClickEvent[] = [],
  ) {
    super(cause instanceof Error ? cause.message : String(cause))
    this.name = 'PartialWrite'
    const code = (cause as { code?: unknown } | null)?.code
    if (typeof code === 'string') Object.assign(this, { code })
  }
}

/** The clicks (human and bot) in a batch. */
export function clicksIn(batch: ClickBatch): number {
  let n = 0
  for (const days of batch.values()) for (const d of days.values()) n += d.clicks + d.bots
  return n
}

export function createClickStore(db: Db) {
  const dayDims = db.query<{ dims: string }, [number, string]>('SELECT dims FROM click_days WHERE link_id = ?1 AND day = ?2')
  // Visitors are added as an increment, like clicks: the same statement works with several writers.
  const putDay = db.query<unknown, [number, string, number, number, number, string]>(
    `INSERT INTO click_days (link_id, day, clicks, bots, visitors, dims) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
     ON CONFLICT (link_id, day) DO UPDATE SET clicks = clicks + excluded.clicks, bots = bots + excluded.bots,
       visitors = visitors + excluded.visitors, dims = excluded.dims`,
  )
  const monthDims = db.query<{ dims: string }, [number, string]>('SELECT dims FROM click_months WHERE link_id = ?1 AND month = ?2')
  const putMonth = db.query<unknown, [number, string, number, number, string]>(
    `INSERT INTO click_months (link_id, month, clicks, bots, dims) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (link_id, month) DO UPDATE SET clicks = clicks + excluded.clicks, bots = bots + excluded.bots, dims = excluded.dims`,
  )
  const addTotals = db.query<unknown, [number, number, number]>(
    'UPDATE links SET clicks = clicks + ?1, bots = bots + ?2 WHERE id = ?3',
  )

  // Prepared on the first batch that carries events: most connections never write one.
  let insertEvent: ReturnType<typeof eventInserts> | null = null
  const writeEvents = (events: ClickEvent[]) => {
    insertEvent ??= eventInserts(db)
    for (const e of events) insertEvent('link.clicked', e.accountId, e.at, { clicks: e.clicks }, e.at)
  }

  const write = db.transaction((batch: ClickBatch, events: ClickEvent[]) => {
    if (events.length > 0) writeEvents(events)
    for (const [linkId, days] of batch) {
      let clicks = 0
      let bots = 0
      for (const d of days.values()) {
        clicks += d.clicks
        bots += d.bots
      }
      // A click on a link deleted before the flush is dropped (its rows went with it): its totals change no
      // row. One statement finds that out and adds the totals (no look-up of the link first).
      if (addTotals.run(clicks, bots, linkId).changes === 0) continue
      // Per month of the link's days (almost always one): its counts and what each day stored of its names.
      const months = new Map<string, { clicks: number; bots: number; placed: StoredNames[] }>()
      for (const [dayNumber, d] of days) {
        const day = dayOf(dayNumber * DAY_MS)
        const stored = dayDims.get(linkId, day)
        let placed: StoredNames
        let dims: string
        if (stored === null && placedAsTheyCome(d.dims)) {
          // The link-day's first write, as placeNames would place it on an empty day: every name as it came.
          placed = d.dims
          dims = stringifyDims(d.dims)
        } else {
          const held = parseDims(stored?.dims ?? '{}')
          placed = {} as StoredNames
          for (const dim of DIMENSIONS) placed[dim] = placeNames(held[dim], d.dims[dim])
          dims = stringifyDims(held)
        }
        putDay.run(linkId, day, d.clicks, d.bots, d.visitors, dims)
        const key = monthOf(day)
        const month = months.get(key)
        if (month === undefined) months.set(key, { clicks: d.clicks, bots: d.bots, placed: [placed] })
        else {
          month.clicks += d.clicks
          month.bots += d.bots
          month.placed.push(placed)
        }
      }
      for (const [key, m] of months) {
        const held = parseDims(monthDims.get(linkId, key)?.dims ?? '{}')
        for (const dim of DIMENSIONS) placeByVolume(held[dim], m.placed.length === 1 ? m.placed[0]![dim] : sumNames(m.placed, dim))
        putMonth.run(linkId, key, m.clicks, m.bots, stringifyDims(held))
      }
    }
  })

  const days = db.query<{ day: string; clicks: number; visitors: number }, [number, string, string]>(
    'SELECT day, clicks, visitors FROM click_days WHERE link_id = ?1 AND day BETWEEN ?2 AND ?3 ORDER BY day',
  )
  const daysDims = db.query<{ dims: string }, [number, string, string]>(
    'SELECT dims FROM click_days WHERE link_id = ?1 AND day BETWEEN ?2 AND ?3',
  )
  const monthsDims = db.query<{ dims: string }, [number, string, string]>(
    'SELECT dims FROM click_months WHERE link_id = ?1 AND month BETWEEN ?2 AND ?3',
  )

  /**
   * Writes a batch part by part, each part in its own transaction, so that the write lock is never held
   * for long: a link created on the main connection meanwhile waits for one short transaction, not for a
   * batch of a hundred thousand links. When one fails, it and the parts after it are thrown with the error
   * (PartialWrite.unwritten); what was committed before stays committed and counted once.
   */
  function writeParts(parts: Iterator<ClickBatch> & Iterable<ClickBatch>, events: ClickEvent[] = []) {
    // One part ahead, to know which one is the last: the events go in its transaction.
    let next = parts.next()
    if (next.done && events.length > 0) next = { done: false, value: new Map() } // events alone (a retry)
    while (!next.done) {
      const part = next.value
      next = parts.next()
      const last = next.done === true
      try {
        write(part, last ? events : [])
      } catch (err) {
        if (!last) {
          mergeBatch(part, next.value)
          for (const rest of parts) mergeBatch(part, rest)
        }
        throw new PartialWrite(err, part, events)
      }
    }
  }

  function* inParts(batch: ClickBatch, links: number) {
    const all = [...batch]
    for (let at = 0; at < all.length; at += links) yield new Map(all.slice(at, at + links))
  }

  return {
    /** Writes one batch (see writeParts); throws PartialWrite with what was not committed. */
    write: (batch: ClickBatch) => writeParts(inParts(batch, LINKS_PER_COMMIT)),
    /** The same for an encoded batch, decoded a part at a time (see decodeInParts). */
    writeEncoded: (e: EncodedBatch) => writeParts(decodeInParts(e, LINKS_PER_COMMIT), e.events),
    /** Human clicks and visitors per day of the window, days without clicks left out. */
    days: (linkId: number, from: string, to: string) => days.all(linkId, from, to),
    /**
     * Every name counted in the window [from, to] (YYYY-MM-DD), per dimension: the whole months inside it
     * from click_months, the days at its edges from click_days (at most 60 rows for any window).
     */
    names(linkId: number, from: string, to: string): DimNames {
      const out = emptyDims()
      const [firstMonth, lastMonth] = wholeMonths(from, to)
      if (firstMonth > lastMonth) {
        for (const r of daysDims.all(linkId, from, to)) parseDims(r.dims, out)
        return out
      }
      for (const r of monthsDims.all(linkId, firstMonth, lastMonth)) parseDims(r.dims, out)
      if (from < `${firstMonth}-01`) for (const r of daysDims.all(linkId, from, `${firstMonth}-00`)) parseDims(r.dims, out)
      if (to > `${lastMonth}-31`) for (const r of daysDims.all(linkId, `${lastMonth}-32`, to)) parseDims(r.dims, out)
      return out
    },
  }
}

/** The first and last whole month (YYYY-MM) inside [from, to]; first > last when there is none. */
export function wholeMonths(from: string, to: string): [string, string] {
  const [fy, fm, fd] = from.split('-').map(Number) as [number, number, number]
  const [ty, tm, td] = to.split('-').map(Number) as [number, number, number]
  const first = fd === 1 ? [fy, fm] : fm === 12 ? [fy + 1, 1] : [fy, fm + 1]
  const lastDay = new Date(Date.UTC(ty, tm, 0)).getUTCDate() // day 0 of the next month
  const last = td === lastDay ? [ty, tm] : tm === 1 ? [ty - 1, 12] : [ty, tm - 1]
  const fmt = ([y, m]: number[]) => `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}`
  return [fmt(first), fmt(last)]
}
