// How a day's and a month's names are kept within their caps (the `dims` JSON of click_days and click_months):
// the same rules on both engines, so the same batches leave the same names.
import { MAX_NAMES, OTHER } from './classify'

export const DIMENSIONS = ['source', 'device', 'browser', 'os', 'country', 'destination'] as const
export type Dimension = (typeof DIMENSIONS)[number]

export const bump = (m: Map<string, number>, name: string, n = 1) => m.set(name, (m.get(name) ?? 0) + n)

type Names = Map<string, number>
export type DimNames = Record<Dimension, Names>

export const emptyDims = (): DimNames => ({
  source: new Map(),
  device: new Map(),
  browser: new Map(),
  os: new Map(),
  country: new Map(),
  destination: new Map(),
})

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

export const monthOf = (day: string) => day.slice(0, 7)

/** What placeNames stored of each dimension's names, for one day. */
export type StoredNames = Record<Dimension, ReadonlyMap<string, number>>

/** Whether placeNames would place every name of an empty day as it is: none past MAX_NAMES, no OTHER. */
export function placedAsTheyCome(dims: DimNames): boolean {
  for (const dim of DIMENSIONS) if (dims[dim].size > MAX_NAMES || dims[dim].has(OTHER)) return false
  return true
}

/** The names several days stored in one dimension, added up in the days' order. */
export function sumNames(days: StoredNames[], dim: Dimension): Names {
  const sum: Names = new Map()
  for (const placed of days) for (const [name, n] of placed[dim]) bump(sum, name, n)
  return sum
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
