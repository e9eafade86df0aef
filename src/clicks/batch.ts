// A batch of clicks as the recorder hands it to a writer: per link and day, counters and names, and the
// link.clicked events that go with it; encoded compactly to cross to the writer thread.
import { bump, DIMENSIONS, emptyDims, type Dimension } from './names'

export const DAY_MS = 86_400_000
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

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

/** The clicks (human and bot) in a batch. */
export function clicksIn(batch: ClickBatch): number {
  let n = 0
  for (const days of batch.values()) for (const d of days.values()) n += d.clicks + d.bots
  return n
}

/** A batch in parts of at most `links` links (each part is written in a transaction of its own). */
export function* inParts(batch: ClickBatch, links: number): Generator<ClickBatch> {
  const all = [...batch]
  for (let at = 0; at < all.length; at += links) yield new Map(all.slice(at, at + links))
}
