// A link's statistics as people see them: the window a page asks for, the page body shared by the public and
// dashboard pages, and the CSV downloads — all from one stats() answer (design notes: links).
import statsTpl from '../../assets/stats.html' with { type: 'text' }
import { AppError } from '../kernel/errors'
import { barTable, dayChart, escapeHtml, fill, formatCount, isoTimeHtml } from '../web/render'
import type { LinkService } from './service'

type StatsAnswer = Awaited<ReturnType<LinkService['stats']>>

const DAY_MS = 86_400_000
/** The statistics page's periods in days (?days=N); a year fits stats()'s 366-day window. */
export const STATS_RANGES = [7, 30, 90, 365] as const
export const DEFAULT_RANGE = 30
/** What a date field keeps of what was typed, to show it again next to its error. */
const TYPED_MAX = 20

/** ?days=N when N is one of STATS_RANGES; anything else (absent, 12, "abc", given twice) is the default. */
export function rangeOf(url: string): number {
  const q = url.indexOf('?')
  if (q < 0) return DEFAULT_RANGE
  const values = new URLSearchParams(url.slice(q + 1).split('#')[0]).getAll('days')
  const n = values.length === 1 ? Number(values[0]) : NaN
  return (STATS_RANGES as readonly number[]).includes(n) && /^\d+$/.test(values[0]!) ? n : DEFAULT_RANGE
}

/**
 * The window a statistics URL asks for: from/to (stats.json's parameters, YYYY-MM-DD, UTC days) when
 * either is given and not empty (the other then defaults as in stats.json), else the ?days= period.
 * Dates are passed on as typed (bounded): stats() validates them and names the field it refuses.
 */
export type StatsWindow = { kind: 'period'; days: number } | { kind: 'dates'; from: string; to: string }
export function windowOf(url: string): StatsWindow {
  const q = url.indexOf('?')
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1).split('#')[0])
  const from = (params.get('from') ?? '').trim().slice(0, TYPED_MAX)
  const to = (params.get('to') ?? '').trim().slice(0, TYPED_MAX)
  if (from || to) return { kind: 'dates', from, to }
  return { kind: 'period', days: rangeOf(url) }
}

/** The UTC day of a time, YYYY-MM-DD. */
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/** The from/to of the last `days` UTC days, today included. */
export function lastDays(days: number, now: number): { from: string; to: string } {
  const today = Date.parse(`${new Date(now).toISOString().slice(0, 10)}T00:00:00Z`)
  return {
    from: new Date(today - (days - 1) * DAY_MS).toISOString().slice(0, 10),
    to: new Date(today).toISOString().slice(0, 10),
  }
}

/** A refused date as people read it: 'The parameter "from" is invalid: …' → 'The start date (from) is invalid: …'. */
const DATE_FIELDS: Record<string, string> = { from: 'The start date (from)', to: 'The end date (to)' }
export const humaneRangeError = (message: string) =>
  message.replace(/^The parameter "(from|to)"/, (_, name: string) => DATE_FIELDS[name]!)

/**
 * stats() for a window; a refused from/to (400) gives the default period instead, with the message and the
 * field it names. Other errors (an unknown link) go on up.
 */
export async function statsFor(
  get: (from: string, to: string) => Promise<StatsAnswer>,
  window: StatsWindow,
  now: number,
): Promise<{ s: StatsAnswer; error?: { field: 'from' | 'to'; message: string } }> {
  if (window.kind === 'period') {
    const { from, to } = lastDays(window.days, now)
    return { s: await get(from, to) }
  }
  try {
    return { s: await get(window.from, window.to) }
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'invalid_parameter') throw err
    const field = /^The parameter "to"/.test(err.message) ? 'to' : 'from'
    const { from, to } = lastDays(DEFAULT_RANGE, now)
    return { s: await get(from, to), error: { field, message: humaneRangeError(err.message) } }
  }
}

export interface StatsBodyOptions {
  /** The page's path without a query (/<code>+ or /dashboard/links/<code>/stats), for the period links and the form. */
  path: string
  /** The path of the CSV downloads (a ?table=…&from=…&to=… is added). */
  csvPath: string
  window: StatsWindow
  /** A refused from/to: shown at its field, and the page shows the default period. */
  error?: { field: 'from' | 'to'; message: string }
  /** The latest day the date fields offer (today, UTC). */
  today: string
  /** The link answers 451 (disabled, banned, listed): why its destination is hidden, when it is. */
  stopped?: boolean
}

/** A date input of the range form, with what was typed kept and its error tied to it. */
function dateField(
  name: 'from' | 'to',
  label: string,
  value: string,
  max: string,
  error?: { field: string; message: string },
): string {
  const mine = error?.field === name
  return `<div class="range-field"><label for="range-${name}">${label}</label>
<input id="range-${name}" name="${name}" type="date" min="1970-01-01" max="${escapeHtml(max)}" value="${escapeHtml(value)}"${mine ? ` aria-invalid="true" aria-describedby="range-error"` : ''}></div>`
}

// Country names in English, like the rest of the pages, from the runtime's own data (no request made). Made
// at the first name asked for, not when the module loads: serve's first answer does not wait for its data.
let regionNames: Intl.DisplayNames | undefined

/** A country code's flag: its two regional indicator letters, drawn by the reader's own emoji font. */
export function flagOf(code: string): string {
  if (!/^[A-Z]{2}$/.test(code)) return ''
  return String.fromCodePoint(0x1f1e6 + code.charCodeAt(0) - 65, 0x1f1e6 + code.charCodeAt(1) - 65)
}

/** "Netherlands" for "NL"; "Unknown" for addresses not located; "Other countries" for the rest. */
export function countryName(code: string): string {
  if (code === 'unknown') return 'Unknown'
  if (code === 'other') return 'Other countries'
  if (!/^[A-Z]{2}$/.test(code)) return code
  try {
    return (regionNames ??= new Intl.DisplayNames(['en'], { type: 'region', fallback: 'code' })).of(code) ?? code
  } catch {
    return code
  }
}

/** A countries table cell: the flag (decoration), the name, and the code. */
function countryCell(code: string): string {
  const flag = flagOf(code)
  const shown = countryName(code)
  return `${flag ? `<span class="flag" aria-hidden="true">${flag}</span>` : ''}${escapeHtml(shown)}${shown !== code && /^[A-Z]{2}$/.test(code) ? `<span class="country-code">${escapeHtml(code)}</span>` : ''}`
}

/** The body of a statistics page (assets/stats.html), every string from the answer escaped. */
export function statsBody(s: StatsAnswer, opts: StatsBodyOptions): string {
  const w = opts.error ? ({ kind: 'period', days: DEFAULT_RANGE } as const) : opts.window
  const days = w.kind === 'period' ? w.days : s.days.length
  const windowClicks = s.days.reduce((sum, d) => sum + d.clicks, 0)
  const path = opts.path
  const ranges = STATS_RANGES.map(
    (n) =>
      `<a href="${escapeHtml(n === DEFAULT_RANGE ? path : `${path}?days=${n}`)}"${w.kind === 'period' && n === w.days ? ' aria-current="page"' : ''}>${n === 365 ? '1 year' : `${n} days`}</a>`,
  ).join('')
  const destination =
    s.long_url === null
      ? `<p class="dest muted">The destination is hidden: ${opts.stopped ? 'the administrator of this service has disabled the link' : 'the link is password-protected'}.</p>`
      : `<p class="dest"><span class="visually-hidden">Destination: </span>${breakable(s.long_url)}</p>`
  const none =
    w.kind === 'dates'
      ? 'No clicks in these days.'
      : days === 365
        ? 'No clicks in the last year.'
        : `No clicks in the last ${days} days.`
  // The form shows the dates as typed when one was refused; else the window shown.
  const typed = opts.error && opts.window.kind === 'dates' ? opts.window : { from: s.from, to: s.to }
  const rangeForm = `<form class="range-form" method="get" action="${escapeHtml(path)}" aria-label="Custom dates">
${dateField('from', 'From', typed.from, opts.today, opts.error)}
${dateField('to', 'To', typed.to, opts.today, opts.error)}
<button type="submit" class="secondary small">Show</button>
${opts.error ? `<p class="range-error" id="range-error" role="alert">${escapeHtml(opts.error.message)} The last ${DEFAULT_RANGE} days are shown.</p>` : ''}
</form>`
  const csv = (table: 'days' | 'breakdowns') =>
    escapeHtml(`${opts.csvPath}?${new URLSearchParams({ table, from: s.from, to: s.to })}`)
  const downloads = `<p class="downloads csv">Download as CSV: <a class="button secondary small" href="${csv('days')}" download>Clicks and visitors by day<span class="visually-hidden">, ${escapeHtml(s.from)} to ${escapeHtml(s.to)}</span></a> <a class="button secondary small" href="${csv('breakdowns')}" download>Sources, devices, browsers, systems, countries<span class="visually-hidden">, ${escapeHtml(s.from)} to ${escapeHtml(s.to)}</span></a></p>`
  // A link with rules or a split: where its visits went, the default destination included.
  const destinations = s.destinations
    ? `<section class="panel" aria-labelledby="h-destinations"><h2 id="h-destinations">Destinations</h2>${barTable(s.destinations, 'Destination', none, breakable)}</section>`
    : ''
  return fill(statsTpl as unknown as string, {
    short_url: s.url,
    code: s.hex,
    destination,
    ranges,
    range_form: rangeForm,
    window_label: w.kind === 'dates' ? 'Clicks in these days' : `Clicks, last ${days} days`,
    busiest_visitors: formatCount(Math.max(0, ...s.days.map((d) => d.visitors))),
    window_clicks: formatCount(windowClicks),
    clicks: formatCount(s.clicks),
    bots: formatCount(s.bots),
    created: isoTimeHtml(s.created),
    from: s.from,
    to: s.to,
    days: dayChart(s.days),
    sources: barTable(s.sources, 'Source', none),
    devices: barTable(s.devices, 'Device', none),
    browsers: barTable(s.browsers, 'Browser', none),
    os: barTable(s.os, 'System', none),
    countries: barTable(s.countries, 'Country', none, countryCell),
    destinations,
    downloads,
  })
}

/**
 * A URL escaped for HTML, with a <wbr> after each of / ? & = # . - _ so that a long one breaks at those
 * points rather than anywhere (the CSS still breaks a very long run without one, as a last resort).
 */
export function breakable(url: string): string {
  // Split before escaping (an "&" becomes "&amp;", whose own letters must not get a <wbr>).
  return url
    .split(/(?<=[/?&=#.\-_])/)
    .map((part) => escapeHtml(part))
    .join('<wbr>')
}

// == CSV (RFC 4180: CRLF lines, fields with a quote, comma or line break quoted, quotes doubled) ==

/**
 * One CSV field. Text beginning with = + - @ (or a tab or carriage return, which some spreadsheets skip
 * first) would be taken as a formula by a spreadsheet: it gets a leading apostrophe, shown as text.
 */
export function csvCell(value: string | number): string {
  if (typeof value === 'number') return String(value)
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
}

const csvLines = (rows: (string | number)[][]) => rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n'

export type CsvTable = 'days' | 'breakdowns'
/** ?table=: days (the default) or breakdowns. */
export function csvTableOf(url: string): CsvTable {
  const q = url.indexOf('?')
  const t = new URLSearchParams(q < 0 ? '' : url.slice(q + 1).split('#')[0]).get('table')
  return t === 'breakdowns' ? 'breakdowns' : 'days'
}

/** The days (date, clicks, visitors) or the breakdowns (breakdown, name, clicks) of an answer, as a download. */
export function statsCsv(s: StatsAnswer, table: CsvTable, headers: Record<string, string> = {}): Response {
  const body =
    table === 'days'
      ? csvLines([['date', 'clicks', 'visitors'], ...s.days.map((d) => [d.date, d.clicks, d.visitors])])
      : csvLines([
          ['breakdown', 'name', 'clicks'],
          ...s.sources.map((r) => ['source', r.name, r.clicks]),
          ...s.devices.map((r) => ['device', r.name, r.clicks]),
          ...s.browsers.map((r) => ['browser', r.name, r.clicks]),
          ...s.os.map((r) => ['os', r.name, r.clicks]),
          ...s.countries.map((r) => ['country', r.name, r.clicks]),
          ...(s.destinations ?? []).map((r) => ['destination', r.name, r.clicks]),
        ])
  // Made of the code and the validated dates, and then kept to safe characters whatever they hold.
  const filename = `linkbox-${s.hex}-${table}-${s.from}-to-${s.to}.csv`.replace(/[^A-Za-z0-9._-]/g, '_')
  return new Response(body, {
    headers: {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${filename}"`,
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, no-cache',
      ...headers,
    },
  })
}
