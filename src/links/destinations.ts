// Where a visit of a link with redirect rules or an A/B split goes (SPEC §2a): compiled once per cached row;
// the first matching rule decides, else the split's arm by a keyed daily hash, else long_url (design notes).
import { createClassifier } from '../clicks'
import type { LinkRow } from './storage/contract'
import type { Rule, SplitArm } from './validate-routing'

const DAY_MS = 86_400_000

interface CompiledRule {
  url: string
  device: Set<string> | null
  os: Set<string> | null
  country: Set<string> | null
  language: Set<string> | null
}

interface Decision {
  rules: CompiledRule[]
  /** Whether a rule asks for the device or system (the user agent is classified), or the country. */
  needsAgent: boolean
  needsCountry: boolean
  split: { urls: string[]; upTo: number[]; total: number } | null
}

/** What a visit tells about its visitor. */
export interface Visitor {
  ua: string
  address: string
  /** The Accept-Language header as sent ('' when none). */
  acceptLanguage: string
}

/** The primary tag of the first Accept-Language entry, lower case ("de-CH,de;q=0.9" → "de"); '' for none or "*". */
export function primaryLanguage(header: string): string {
  let end = header.length
  for (let i = 0; i < header.length; i++) {
    const c = header.charCodeAt(i)
    if (c === 44 /* , */ || c === 59 /* ; */ || c === 45 /* - */ || c === 95 /* _ */) {
      end = i
      break
    }
  }
  const tag = header.slice(0, end).trim().toLowerCase()
  return /^[a-z]{1,8}$/.test(tag) ? tag : ''
}

const setOf = (list: string[] | undefined, clean: (v: string) => string) => (list ? new Set(list.map(clean)) : null)

function compile(row: LinkRow): Decision {
  const rules: CompiledRule[] = (row.rules ? (JSON.parse(row.rules) as Rule[]) : []).map((r) => ({
    url: r.url,
    device: setOf(r.device, (v) => v),
    os: setOf(r.os, (v) => v.toLowerCase()),
    country: setOf(r.country, (v) => v),
    language: setOf(r.language, (v) => v),
  }))
  let split: Decision['split'] = null
  if (row.split) {
    const arms = JSON.parse(row.split) as SplitArm[]
    let total = 0
    const upTo = arms.map((a) => (total += a.weight))
    split = { urls: arms.map((a) => a.url), upTo, total }
  }
  return {
    rules,
    needsAgent: rules.some((r) => r.device || r.os),
    needsCountry: rules.some((r) => r.country),
    split,
  }
}

export function createDestinations(deps: {
  clock: () => number
  /** The ISO alpha-2 country of an address, or null (geo/index.ts). */
  country: (address: string) => string | null
  /** The shared key of a UTC day, or null while this node does not have it yet (a key of its own stands in). */
  dayKey?: (day: number) => Uint8Array | null
}) {
  const decisions = new WeakMap<LinkRow, Decision>()
  const classify = createClassifier()
  let keyDay = -1
  let key: Uint8Array = new Uint8Array(0)
  let standIn = false

  /** A number in [0, total) for this visitor, link and UTC day. */
  function bucket(v: Visitor, linkId: number, total: number): number {
    const now = deps.clock()
    const day = Math.floor(now / DAY_MS)
    if (day !== keyDay || standIn) {
      const shared = deps.dayKey ? deps.dayKey(day) : null
      if (shared) key = shared
      else if (day !== keyDay) key = crypto.getRandomValues(new Uint8Array(32))
      standIn = !shared && deps.dayKey !== undefined
      keyDay = day
    }
    const mac = new Bun.CryptoHasher('sha256', key).update(`${linkId}\n${v.address}\n${v.ua}`).digest()
    return (((mac[0]! << 24) | (mac[1]! << 16) | (mac[2]! << 8) | mac[3]!) >>> 0) % total
  }

  return {
    /** The URL this visitor goes to: the first matching rule's, else the split's pick, else long_url. */
    choose(row: LinkRow, v: Visitor): string {
      let d = decisions.get(row)
      if (!d) decisions.set(row, (d = compile(row)))
      if (d.rules.length > 0) {
        const agent = d.needsAgent ? classify(v.ua, deps.clock()) : null
        const country = d.needsCountry ? deps.country(v.address) : null
        let language: string | undefined
        for (const r of d.rules) {
          if (r.device && !r.device.has(agent!.device)) continue
          if (r.os && !r.os.has(agent!.os.toLowerCase())) continue
          if (r.country && (country === null || !r.country.has(country))) continue
          if (r.language && !r.language.has((language ??= primaryLanguage(v.acceptLanguage)))) continue
          return r.url
        }
      }
      if (d.split) {
        const b = bucket(v, row.id, d.split.total)
        const i = d.split.upTo.findIndex((upTo) => b < upTo)
        return d.split.urls[i]!
      }
      return row.long_url
    },
  }
}
export type Destinations = ReturnType<typeof createDestinations>
