// A link's statistics (stats.json, the statistics page): days and names of a window, briefly kept per link.
import type { Caller } from '../kernel/caller'
import { DIMENSIONS, dayOf, MAX_NAMES, OTHER, type ClickCounts, type ClickRecorder, type DimNames } from '../clicks'
import { iso } from '../db/sqlite'
import { invalidParameter, notFound } from '../kernel/errors'
import type { Domains } from './domains'
import type { LinkRow, LinkStorage, NameCount } from './storage/contract'
import { validateCode } from './validate'

const DAY_MS = 86_400_000
const DATE = /^\d{4}-\d{2}-\d{2}$/
const present = (v: unknown) => v !== undefined && v !== null && v !== ''

// Statistics cannot predate the service: the window is kept to years 1970-9999, where every day is a
// plain YYYY-MM-DD (a window reaching into year 0 would print days as "-000001-12-03").
function parseDay(value: unknown, name: string): string {
  const rule = 'a date as YYYY-MM-DD (UTC), from 1970-01-01 to 9999-12-31'
  if (typeof value !== 'string' || !DATE.test(value) || value < '1970-01-01') throw invalidParameter(name, rule)
  const ms = Date.parse(`${value}T00:00:00Z`)
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) throw invalidParameter(name, rule)
  return value
}

/**
 * At most MAX_NAMES names, the busiest, and the rest (with what was stored as OTHER on days that were full)
 * summed as one OTHER entry, placed by its clicks (after its ties). Names of equal clicks in name order.
 */
function topNames(names: Map<string, number>): NameCount[] {
  const sorted = [...names]
    .filter(([name]) => name !== OTHER)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  const top: NameCount[] = sorted.slice(0, MAX_NAMES).map(([name, clicks]) => ({ name, clicks }))
  let rest = names.get(OTHER) ?? 0
  for (let i = MAX_NAMES; i < sorted.length; i++) rest += sorted[i]![1]
  if (rest === 0) return top
  const at = top.findIndex((item) => item.clicks < rest)
  top.splice(at === -1 ? top.length : at, 0, { name: OTHER, clicks: rest })
  return top
}

/** What a statistics answer costs to build, kept briefly per link and window (see `stats`). */
interface WindowAnswer {
  written: number
  days: { date: string; clicks: number; visitors: number }[]
  names: Record<(typeof DIMENSIONS)[number], NameCount[]>
}
const ANSWERS_KEPT = 1000
const PAST_TTL_MS = 30_000

/** A window's days before today and their names, and the link's clicks + bots before today when read. */
interface PastPart {
  total: number
  at: number
  days: WindowAnswer['days']
  names: DimNames
}

/** Every day of [from, from + span) with its stored counts (0 where none was stored). */
function dayList(from: string, span: number, stored: { day: string; clicks: number; visitors: number }[]) {
  const byDay = new Map(stored.map((d) => [d.day, d]))
  const days: WindowAnswer['days'] = []
  for (let t = Date.parse(`${from}T00:00:00Z`), i = 0; i < span; i++, t += DAY_MS) {
    const date = dayOf(t)
    const d = byDay.get(date)
    days.push({ date, clicks: d?.clicks ?? 0, visitors: d?.visitors ?? 0 })
  }
  return days
}

export function createStatistics(deps: {
  store: Pick<LinkStorage<unknown>, 'byCode'>
  counts: ClickCounts
  recorder: ClickRecorder
  clock: () => number
  domains: Pick<Domains, 'named' | 'baseOf'>
  mayChange: (row: LinkRow, caller: Caller) => boolean
  stopped?: (row: LinkRow) => boolean
}) {
  const { store, counts, recorder, clock, domains } = deps
  // Answers per link and window, valid while no click of the link has been written since (clicks + bots,
  // read with the row, says so). Ids are never reused: a deleted link's entries only go stale.
  const answers = new Map<string, WindowAnswer>()
  // For a window ending today, its days before today, valid while the link's clicks + bots less today's are
  // the same: a link clicked while its statistics are polled rereads today's row alone, not the window's.
  // Read again after PAST_TTL_MS all the same: visitors shared by other nodes add to a day without clicks.
  const pasts = new Map<string, PastPart>()

  async function windowAnswer(row: LinkRow, from: string, to: string, span: number): Promise<WindowAnswer> {
    const linkId = row.id
    const key = `${linkId} ${from} ${to}`
    const written = row.clicks + row.bots
    const kept = answers.get(key)
    if (kept && kept.written === written) return kept
    const now = clock()
    const today = dayOf(now)
    // On a month's last day the window's names come from that month's rollup, not its days: read whole.
    const answer =
      to === today && from < today && dayOf(now + DAY_MS).slice(0, 7) === today.slice(0, 7)
        ? await withToday(linkId, key, from, today, span, written)
        : await whole(linkId, from, to, span, written)
    if (answers.size >= ANSWERS_KEPT) answers.clear()
    answers.set(key, answer)
    return answer
  }

  async function whole(linkId: number, from: string, to: string, span: number, written: number) {
    const [days, stored] = await Promise.all([counts.days(linkId, from, to), counts.names(linkId, from, to)])
    const names = {} as WindowAnswer['names']
    for (const dim of DIMENSIONS) names[dim] = topNames((stored as DimNames)[dim])
    return { written, days: dayList(from, span, days), names }
  }

  /** The window's days before today from `pasts` (read again when they changed), and today's row. */
  async function withToday(linkId: number, key: string, from: string, today: string, span: number, written: number) {
    const current = await counts.dayAndTotal(linkId, today)
    const total = current ? current.total - current.clicks - current.bots : -1
    let past = pasts.get(key)
    const at = clock()
    if (!past || past.total !== total || at - past.at > PAST_TTL_MS) {
      const before = dayOf(Date.parse(`${today}T00:00:00Z`) - DAY_MS)
      const [days, names] = await Promise.all([counts.days(linkId, from, before), counts.names(linkId, from, before)])
      past = { total, at, days: dayList(from, span - 1, days), names: names as DimNames }
      if (pasts.size >= ANSWERS_KEPT) pasts.clear()
      pasts.set(key, past)
    }
    const names = {} as WindowAnswer['names']
    for (const dim of DIMENSIONS) {
      const added = current?.names[dim]
      const sum = added && added.size > 0 ? new Map(past.names[dim]) : past.names[dim]
      if (added) for (const [name, n] of added) sum.set(name, (sum.get(name) ?? 0) + n)
      names[dim] = topNames(sum)
    }
    const days = [...past.days, { date: today, clicks: current?.clicks ?? 0, visitors: current?.visitors ?? 0 }]
    return { written, days, names }
  }

  /** `flush: false` reads what is written (at most a second behind): for the public page, which any
   *  visitor may load, so that a view never costs a write. */
  async function stats(
    input: { code: unknown; domain?: unknown; from?: unknown; to?: unknown },
    caller: Caller | null,
    opts: { flush?: boolean } = {},
  ) {
    const code = validateCode(input.code)
    const domain = domains.named(input.domain)
    const today = dayOf(clock())
    const to = present(input.to) ? parseDay(input.to, 'to') : today
    const from = present(input.from) ? parseDay(input.from, 'from') : dayOf(Date.parse(`${to}T00:00:00Z`) - 29 * DAY_MS)
    const span = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1
    if (span < 1) throw invalidParameter('from', 'a date on or before "to"')
    if (span > 366) throw invalidParameter('from', 'at most 366 days before "to"')
    let row = await store.byCode(code, domain)
    if (!row) throw notFound(`No link with the code "${code}".`)
    // Pending clicks of this link (at most a second old) are written first, only this link's, so the answer
    // is exact; while the database cannot be written this is skipped (or fails quietly).
    if (opts.flush !== false && recorder.hasPending(row.id)) {
      await recorder.flushLinkIfWritable(row.id)
      row = await store.byCode(code, domain) // with the clicks just written; or gone, deleted meanwhile
      if (!row) throw notFound(`No link with the code "${code}".`)
    }
    const { days, names } = await windowAnswer(row, from, to, span)
    const isOwner = !!caller && deps.mayChange(row, caller)
    // A password-protected link, or one stopped by an admin, a ban or a blocklist, shows where it leads
    // nowhere public (SPEC §3, §4): not its destination, nor those of its rules and split.
    const hidden = !isOwner && (row.password_hash !== null || (deps.stopped?.(row) ?? false))
    return {
      hex: row.code,
      url: `${domains.baseOf(row.domain)}/${row.code}`,
      long_url: hidden ? null : row.long_url,
      created: iso(row.created),
      clicks: row.clicks,
      bots: row.bots,
      from,
      to,
      days,
      sources: names.source,
      devices: names.device,
      browsers: names.browser,
      os: names.os,
      countries: names.country,
      // For a link with rules or a split (SPEC §2a), even before its first visit; also for one that had them in the window.
      ...(!hidden && (names.destination.length > 0 || row.rules || row.split)
        ? { destinations: names.destination }
        : {}),
    }
  }
  return { stats }
}
