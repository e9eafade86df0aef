// Server-rendered pages from the templates in assets/ (embedded into the binary by the imports).
// {{name}} is HTML-escaped, {{{name}}} is inserted as is (only for markup built here from escaped parts).
import layout from '../../assets/layout.html' with { type: 'text' }
import favicon from '../../assets/favicon.svg' with { type: 'text' }
import style from '../../assets/style.css' with { type: 'text' }
import appJs from '../../assets/app.js' with { type: 'text' }
import appRulesJs from '../../assets/app-rules.js' with { type: 'text' }
import appBulkJs from '../../assets/app-bulk.js' with { type: 'text' }
import appFrontJs from '../../assets/app-front.js' with { type: 'text' }
import appTimesJs from '../../assets/app-times.js' with { type: 'text' }
import appHooksJs from '../../assets/app-hooks.js' with { type: 'text' }
import appUtmJs from '../../assets/app-utm.js' with { type: 'text' }
import appPreviewJs from '../../assets/app-preview.js' with { type: 'text' }
import appMediaJs from '../../assets/app-media.js' with { type: 'text' }

export const STYLE_CSS = style as unknown as string
/** Served at /favicon.ico, which browsers ask for on every page (a 404 page each time, before). */
export const FAVICON_SVG = favicon as unknown as string
/** Part of the stylesheet's URL: a new release's CSS gets a new URL, so it can be cached for a year. */
export const STYLE_VERSION = new Bun.CryptoHasher('sha256').update(STYLE_CSS).digest('hex').slice(0, 12)
/** The one script, served as one file: its parts (assets/app*.js), each a page's small improvements; pages work without it. */
export const APP_JS = [
  appJs,
  appRulesJs,
  appBulkJs,
  appFrontJs,
  appTimesJs,
  appHooksJs,
  appUtmJs,
  appPreviewJs,
  appMediaJs,
]
  .map((part) => part as unknown as string)
  .join(';\n') // a part that starts with ( must not call the one before it
export const APP_JS_VERSION = new Bun.CryptoHasher('sha256').update(APP_JS).digest('hex').slice(0, 12)
/** The script tag for pages that load assets/app.js (deferred: it runs once the page is parsed). */
export const SCRIPT_TAG = `<script src="/assets/app.js?v=${APP_JS_VERSION}" defer></script>`

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

export function fill(template: string, vars: Record<string, string | number>): string {
  return template.replace(/\{\{\{(\w+)\}\}\}|\{\{(\w+)\}\}/g, (_, raw: string, esc: string) => {
    const v = vars[raw ?? esc]
    if (v === undefined) throw new Error(`template variable ${raw ?? esc} missing`)
    return raw ? String(v) : escapeHtml(String(v))
  })
}

// The CSP is a constant: nothing from a request or a link ever goes into it (a frame link to
// "https://a;sandbox/" once added a directive of its own).
export const BASE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
/** Pages with the script: our own file, and fetch() to our own API only. */
export const SCRIPT_CSP = `${BASE_CSP}; script-src 'self'; connect-src 'self'`
// Frame pages allow any web page in their iframe: the destination may redirect to another origin
// (http → https, example.com → www.example.com), and pinning the first origin would block it.
const FRAME_CSP = `${BASE_CSP}; frame-src http: https:`

export interface PageOptions {
  status?: number
  title: string
  bodyClass?: string
  /** The page frames a destination (the CSP then allows http: and https: frames). */
  frame?: boolean
  /** Send the visitor on to this URL once the page has loaded (a meta refresh; no script needed). */
  refreshTo?: string
  /** Load assets/app.js (the CSP then allows scripts from this origin, and fetch() to it). */
  script?: boolean
  headers?: Record<string, string>
  /** The brand header over the page ("linkbox" leading home); 'wide' lines it up with a wide page. */
  brand?: boolean | 'wide'
  /** Links shown in the brand header's navigation, as [href, text]. */
  nav?: [string, string][]
  /** The signed-in person, named in the brand header with a sign-out button (their session's CSRF token). */
  user?: { name: string; csrf: string }
  /**
   * The page's referrer policy (header and meta). no-referrer by default: nothing of a page leaks to the
   * sites it links to. A page whose form POSTs to this service needs 'same-origin': under no-referrer a
   * browser sends "Origin: null" even to its own origin, and the server could not tell it from a cross-site post.
   */
  referrer?: 'no-referrer' | 'same-origin'
}

/** The mark: a rounded square with two chain links; colours come from the stylesheet (both themes). */
export const LOGO_SVG =
  '<svg viewBox="0 0 32 32" aria-hidden="true" focusable="false"><rect class="logo-bg" width="32" height="32" rx="8"/>' +
  '<g class="logo-fg" fill="none" stroke-width="3" stroke-linecap="round"><path d="M14 18.5a4.5 4.5 0 0 0 6.4 0l3.2-3.2a4.5 4.5 0 0 0-6.4-6.4l-1.2 1.2"/>' +
  '<path d="M18 13.5a4.5 4.5 0 0 0-6.4 0l-3.2 3.2a4.5 4.5 0 0 0 6.4 6.4l1.2-1.2"/></g></svg>'

// == Theme switch and skip link (issue 24) ==
/**
 * The theme switch (system, light, dark): hidden until assets/app.js shows it and applies the choice kept
 * in this browser's localStorage; without the script the system's theme applies and the switch is not seen.
 */
export const THEME_SWITCH =
  '<div class="theme-switch" hidden><label for="theme-choice">Theme</label><select id="theme-choice" data-theme-switch>' +
  '<option value="system">System</option><option value="light">Light</option><option value="dark">Dark</option></select></div>'
/** The first thing a keyboard reaches: straight to the page's <main id="main">. */
export const SKIP_LINK = '<a class="skip" href="#main">Skip to content</a>'
/** A page template's leading <main> made the skip link's target (focusable by script only, so focus moves there). */
const skipTarget = (template: string) => template.replace(/^<main(?![^>]*\bid=)/, '<main id="main" tabindex="-1"')
// == end of theme switch and skip link ==

/** The brand header: the wordmark leading home, optional links, and who is signed in (escaped here). */
export function brandHeader(
  opts: { wide?: boolean; nav?: [string, string][]; user?: { name: string; csrf: string } } = {},
): string {
  const nav = opts.nav?.length
    ? `<nav aria-label="Site">${opts.nav.map(([href, text]) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`).join('')}</nav>`
    : ''
  const user = opts.user
    ? `<div class="site-user"><span><span class="who-label">Signed in as </span><strong>${escapeHtml(opts.user.name)}</strong></span><form method="post" action="/logout"><input type="hidden" name="_csrf" value="${escapeHtml(opts.user.csrf)}"><button type="submit" class="link">Sign out</button></form></div>`
    : ''
  return `${SKIP_LINK}<header class="site${opts.wide ? ' wide' : ''}"><a class="brand" href="/">${LOGO_SVG}<span>linkbox</span></a>${nav}${user}${THEME_SWITCH}</header>`
}

export function page(template: string, vars: Record<string, string | number>, opts: PageOptions): Response {
  const html = fill(layout as unknown as string, {
    title: opts.title,
    style_version: STYLE_VERSION,
    referrer: opts.referrer ?? 'no-referrer',
    header: opts.brand ? brandHeader({ wide: opts.brand === 'wide', nav: opts.nav, user: opts.user }) : '',
    body_class: opts.bodyClass ?? '',
    // The URL is escaped for the attribute; after "url=" the browser takes the rest of it as the URL.
    head:
      (opts.refreshTo ? `<meta http-equiv="refresh" content="0;url=${escapeHtml(opts.refreshTo)}">` : '') +
      (opts.script ? SCRIPT_TAG : ''),
    content: fill(opts.brand ? skipTarget(template) : template, vars),
  })
  const csp = opts.frame ? FRAME_CSP : opts.script ? SCRIPT_CSP : BASE_CSP
  return new Response(html, {
    status: opts.status ?? 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': csp,
      'x-content-type-options': 'nosniff',
      'referrer-policy': opts.referrer ?? 'no-referrer',
      'cache-control': 'private, no-cache',
      ...opts.headers,
    },
  })
}

/** A time as read without the script: "2026-12-07 05:26 UTC" (or `never` for null), the zone named. */
export function utcText(ms: number | null | undefined, never = 'never'): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return never
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

/**
 * Every time on a page: `<time datetime="ISO">2026-12-07 05:26 UTC</time>`, escaped. assets/app-times.js shows it
 * in the viewer's zone, relative when near, the exact time on hover and focus. `split` lets a narrow cell break
 * between the day and the time of day only; `never` is the (escaped) text for no time at all.
 */
export function timeHtml(ms: number | null | undefined, opts: { never?: string; split?: boolean } = {}): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return escapeHtml(opts.never ?? 'never')
  const text = utcText(ms)
  const inner = opts.split
    ? `<span class="nowrap">${text.slice(0, 10)}</span> <span class="nowrap">${text.slice(11)}</span>`
    : text
  return `<time datetime="${new Date(ms).toISOString()}">${inner}</time>`
}

/** timeHtml of an ISO string from storage (null or unparseable: `never`). */
export const isoTimeHtml = (iso: string | null | undefined, opts: { never?: string; split?: boolean } = {}) =>
  timeHtml(iso ? Date.parse(iso) : null, opts)

/** A table of name/count rows, escaped. */
export function countTable(rows: { name?: string; date?: string; clicks: number }[], head: string): string {
  if (rows.length === 0) return '<p class="muted">No clicks yet.</p>'
  const body = rows
    .map((r) => `<tr><td>${escapeHtml(r.name ?? r.date ?? '')}</td><td class="n">${r.clicks}</td></tr>`)
    .join('')
  return `<table><thead><tr><th scope="col">${escapeHtml(head)}</th><th scope="col" class="n">Clicks</th></tr></thead><tbody>${body}</tbody></table>`
}

/** "1,234" — thousands grouped the same way whatever the server's locale. */
export const formatCount = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')

/** A share as people read it: "42%", "<1%" for a sliver, "0%" for nothing. */
function shareText(part: number, total: number): string {
  if (total <= 0 || part <= 0) return '0%'
  const p = (100 * part) / total
  return p < 1 ? '<1%' : `${Math.round(p)}%`
}

/**
 * A breakdown (sources, devices, …) as a table whose name cells carry a horizontal bar: the bar is a small
 * SVG (presentation attributes only, so the CSP's style-src needs no exception) hidden from screen readers,
 * which read the same numbers from the Clicks and Share columns. Bars are scaled to the busiest row.
 */
export function barTable(
  rows: { name: string; clicks: number }[],
  head: string,
  empty = 'No clicks in this period.',
  /** The name cell's HTML (escaped by it); by default the name, escaped. */
  label: (name: string) => string = escapeHtml,
): string {
  if (rows.length === 0) return `<p class="empty">${escapeHtml(empty)}</p>`
  const total = rows.reduce((sum, r) => sum + r.clicks, 0)
  const max = Math.max(1, ...rows.map((r) => r.clicks))
  const body = rows
    .map((r) => {
      const w = ((100 * r.clicks) / max).toFixed(1)
      return `<tr><td><span class="name">${label(r.name)}</span><svg class="hbar" viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true" focusable="false"><rect class="track" width="100" height="6" rx="3"/><rect class="fill" width="${w}" height="6" rx="3"/></svg></td><td class="n">${formatCount(r.clicks)}</td><td class="n share">${shareText(r.clicks, total)}</td></tr>`
    })
    .join('')
  return `<table class="bars"><thead><tr><th scope="col">${escapeHtml(head)}</th><th scope="col" class="n">Clicks</th><th scope="col" class="n">Share</th></tr></thead><tbody>${body}</tbody></table>`
}

/** "Mar 4" from "2025-03-04" (UTC dates; month names in English, like the rest of the pages). */
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
function shortDate(date: string, withYear: boolean): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date)
  if (!m) return date
  const text = `${MONTHS[Number(m[2]) - 1]} ${Number(m[3])}`
  return withYear ? `${text}, ${m[1]}` : text
}

/**
 * Clicks by day as an inline SVG bar chart, drawn here: no script, no third-party library, and no inline
 * styles (the page's CSP forbids them; SVG presentation attributes are not styles). Each bar has a
 * <title> for its exact count; the table under it keeps the numbers readable without the picture. A year
 * of days still gets one (thin) bar each; the labels are few and large enough to read on a phone.
 */
export function dayChart(days: { date: string; clicks: number; visitors?: number }[]): string {
  const width = 640
  const height = 190
  const top = 22
  const bottom = 26
  const left = 0
  const plot = height - top - bottom
  const max = Math.max(1, ...days.map((d) => d.clicks))
  const total = days.reduce((sum, d) => sum + d.clicks, 0)
  const step = (width - left) / Math.max(1, days.length)
  // Gaps between bars while they are wide enough to have one; a year's bars touch (1.75 units each).
  const bar = step >= 4 ? step * 0.72 : Math.max(1, step - 0.25)
  // Distinct visitors (when the days carry them) as a darker bar inside each day's clicks bar.
  const withVisitors = days.some((d) => d.visitors !== undefined)
  const bars = days
    .map((d, i) => {
      const h = d.clicks ? Math.max(1.5, (plot * d.clicks) / max) : 0
      const x = (left + i * step + (step - bar) / 2).toFixed(2)
      const title = withVisitors
        ? `${escapeHtml(d.date)}: ${counted(d.clicks, 'click')}, ${counted(d.visitors ?? 0, 'visitor')}`
        : `${escapeHtml(d.date)}: ${d.clicks}`
      const v = Math.min(d.visitors ?? 0, d.clicks)
      const vh = v ? Math.max(1.5, (plot * v) / max) : 0
      const inner = vh
        ? `<rect class="bar-visitors" x="${x}" y="${(top + plot - vh).toFixed(1)}" width="${bar.toFixed(2)}" height="${vh.toFixed(1)}"/>`
        : ''
      return `<g><title>${title}</title><rect class="bar" x="${x}" y="${(top + plot - h).toFixed(1)}" width="${bar.toFixed(2)}" height="${h.toFixed(1)}"/>${inner}</g>`
    })
    .join('')
  const first = days[0]?.date ?? ''
  const last = days[days.length - 1]?.date ?? ''
  const withYear = first.slice(0, 4) !== last.slice(0, 4)
  const mid = days.length >= 14 ? days[Math.floor((days.length - 1) / 2)]!.date : ''
  const label = (x: number, anchor: string, date: string) =>
    `<text x="${x}" y="${height - 6}" text-anchor="${anchor}">${escapeHtml(shortDate(date, withYear))}</text>`
  const emptyNote =
    total === 0
      ? `<text x="${width / 2}" y="${top + plot / 2}" text-anchor="middle">No clicks in this period</text>`
      : ''
  const visitorsNote = withVisitors
    ? `; visitors a day at most ${Math.max(0, ...days.map((d) => d.visitors ?? 0))}`
    : ''
  const table = withVisitors ? dayTable(days) : countTable(days, 'Day')
  const legend = withVisitors
    ? '<p class="chart-legend" aria-hidden="true"><span class="key clicks"></span>Clicks <span class="key visitors"></span>Visitors</p>'
    : ''
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="Clicks by day, ${escapeHtml(first)} to ${escapeHtml(last)}: ${total} in all, at most ${total ? max : 0} a day${visitorsNote}">
<line class="grid-line" x1="0" y1="${top}" x2="${width}" y2="${top}"/>
<line class="axis" x1="0" y1="${top + plot}" x2="${width}" y2="${top + plot}"/>
<text x="0" y="${top - 7}">${total ? `${max} a day` : ''}</text>${bars}${emptyNote}
${label(0, 'start', first)}${mid ? label(width / 2, 'middle', mid) : ''}${label(width, 'end', last)}
</svg>
${legend}<details><summary>Every day as a table</summary>${table}</details>`
}

const counted = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`

/** Days with their clicks and distinct visitors. */
function dayTable(days: { date: string; clicks: number; visitors?: number }[]): string {
  const body = days
    .map(
      (d) =>
        `<tr><td>${escapeHtml(d.date)}</td><td class="n">${d.clicks}</td><td class="n">${d.visitors ?? 0}</td></tr>`,
    )
    .join('')
  return `<table><thead><tr><th scope="col">Day</th><th scope="col" class="n">Clicks</th><th scope="col" class="n">Visitors</th></tr></thead><tbody>${body}</tbody></table>`
}
