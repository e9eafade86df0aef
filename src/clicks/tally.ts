// The counters the recorder fills between flushes (a Tally of link-day Entries), kept small because traffic
// over 100,000 links holds tens of thousands of them; and how a tally becomes the batch a writer takes.
import { EXTRA_DIMENSIONS, PROFILE_DIMENSIONS, type ClickBatch, type ClickEvent, type EncodedBatch } from './batch'
import type { Classified } from './classify'

/**
 * One link's clicks on one day, as counted: bots, and human clicks per profile (the first profile inline,
 * others in `more`: most link-days see one or two). ~100 bytes, where a DayCounts with its four Maps took
 * ~1,400: under traffic over 100,000 links the counters of a second or two are ~30,000 link-days.
 */
export interface Entry {
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
export interface Tally {
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
export const emptyTally = (): Tally => ({
  entries: new Map(),
  links: new Map(),
  profiles: [],
  profileIds: new Map(),
  joined: new Map(),
  clicks: 0,
  counters: 0,
  events: [],
})
export const joinNames = (names: string[]) => names.join('\u0000')
// Day numbers fit in 17 bits until the year 2328; ids up to 2^36 keep the key an exact integer.
const DAY_BITS = 131_072
export const keyOf = (linkId: number, day: number) => linkId * DAY_BITS + (day % DAY_BITS)

/** The tally as the writer takes it (batch.ts EncodedBatch). */
export function encode(t: Tally): EncodedBatch {
  let length = 0
  for (const e of t.entries.values()) length += 7 + (e.n > 0 ? 2 : 0) + 2 * (e.more?.size ?? 0) + 3 * extraCount(e)
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
export function countCountry(e: Entry, name: string, n: number): number {
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
export function countDestination(e: Entry, url: string, n: number): number {
  e.destinations ??= new Map()
  const held = e.destinations.get(url)
  e.destinations.set(url, (held ?? 0) + n)
  return held === undefined ? 1 : 0
}

/** One more link-day of `t`, or the one it has. */
export function entryOf(
  t: Tally,
  linkId: number,
  day: number,
  account: number,
  code: string,
): { entry: Entry; created: boolean } {
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
export function takeLink(t: Tally, linkId: number): Tally {
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
export function countProfile(e: Entry, profile: number, n: number): number {
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
export function absorb(t: Tally, batch: ClickBatch, from: Tally) {
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
