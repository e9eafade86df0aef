// Server-rendered pages from the templates in assets/ (embedded into the binary by the imports).
// {{name}} is HTML-escaped, {{{name}}} is inserted as is (only for markup built here from escaped parts).
import layout from '../../assets/layout.html' with { type: 'text' }
import favicon from '../../assets/favicon.svg' with { type: 'text' }
import style from '../../assets/style.css' with { type: 'text' }
import appJs from '../../assets/app.js' with { type: 'text' }

export const STYLE_CSS = style as unknown as string
/** Served at /favicon.ico, which browsers ask for on every page (a 404 page each time, before). */
export const FAVICON_SVG = favicon as unknown as string
/** Part of the stylesheet's URL: a new release's CSS gets a new URL, so it can be cached for a year. */
export const STYLE_VERSION = new Bun.CryptoHasher('sha256').update(STYLE_CSS).digest('hex').slice(0, 12)
/** The one script (copy buttons and other small improvements); pages work without it. */
export const APP_JS = appJs as unknown as string
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
export const BASE_CSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
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
}

export function page(template: string, vars: Record<string, string | number>, opts: PageOptions): Response {
  const html = fill(layout as unknown as string, {
    title: opts.title,
    style_version: STYLE_VERSION,
    body_class: opts.bodyClass ?? '',
    // The URL is escaped for the attribute; after "url=" the browser takes the rest of it as the URL.
    head:
      (opts.refreshTo ? `<meta http-equiv="refresh" content="0;url=${escapeHtml(opts.refreshTo)}">` : '') +
      (opts.script ? SCRIPT_TAG : ''),
    content: fill(template, vars),
  })
  const csp = opts.frame ? FRAME_CSP : opts.script ? SCRIPT_CSP : BASE_CSP
  return new Response(html, {
    status: opts.status ?? 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': csp,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'private, no-cache',
      ...opts.headers,
    },
  })
}

/** A table of name/count rows, escaped. */
export function countTable(rows: { name?: string; date?: string; clicks: number }[], head: string): string {
  if (rows.length === 0) return '<p class="muted">No clicks yet.</p>'
  const body = rows
    .map((r) => `<tr><td>${escapeHtml(r.name ?? r.date ?? '')}</td><td class="n">${r.clicks}</td></tr>`)
    .join('')
  return `<table><thead><tr><th scope="col">${escapeHtml(head)}</th><th scope="col" class="n">Clicks</th></tr></thead><tbody>${body}</tbody></table>`
}

/**
 * Clicks by day as an inline SVG bar chart, drawn here: no script, no third-party library, and no inline
 * styles (the page's CSP forbids them; SVG presentation attributes are not styles). Each bar has a
 * <title> for its exact count; the table under it keeps the numbers readable without the picture.
 */
export function dayChart(days: { date: string; clicks: number }[]): string {
  const width = 640
  const height = 160
  const top = 16
  const bottom = 20
  const max = Math.max(1, ...days.map((d) => d.clicks))
  const step = width / Math.max(1, days.length)
  const bar = Math.max(1, step * 0.8)
  const bars = days
    .map((d, i) => {
      const h = Math.round(((height - top - bottom) * d.clicks) / max)
      const x = (i * step + (step - bar) / 2).toFixed(1)
      return `<rect class="bar" x="${x}" y="${height - bottom - h}" width="${bar.toFixed(1)}" height="${Math.max(h, d.clicks ? 1 : 0)}"><title>${escapeHtml(d.date)}: ${d.clicks}</title></rect>`
    })
    .join('')
  const first = days[0]?.date ?? ''
  const last = days[days.length - 1]?.date ?? ''
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="Clicks by day, ${escapeHtml(first)} to ${escapeHtml(last)}, at most ${max} a day">
<line class="axis" x1="0" y1="${height - bottom}" x2="${width}" y2="${height - bottom}"/>
<text x="0" y="11">${max}</text>${bars}
<text x="0" y="${height - 4}">${escapeHtml(first)}</text><text x="${width}" y="${height - 4}" text-anchor="end">${escapeHtml(last)}</text>
</svg>
<details><summary>Every day as a table</summary>${countTable(days, 'Day')}</details>`
}
