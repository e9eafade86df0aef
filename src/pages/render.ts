// Server-rendered pages from the templates in assets/ (embedded into the binary by the imports).
// {{name}} is HTML-escaped, {{{name}}} is inserted as is (only for markup built here from escaped parts).
import layout from '../../assets/layout.html' with { type: 'text' }
import style from '../../assets/style.css' with { type: 'text' }

export const STYLE_CSS = style as unknown as string

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

export function fill(template: string, vars: Record<string, string | number>): string {
  return template.replace(/\{\{\{(\w+)\}\}\}|\{\{(\w+)\}\}/g, (_, raw: string, esc: string) => {
    const v = vars[raw ?? esc]
    if (v === undefined) throw new Error(`template variable ${raw ?? esc} missing`)
    return raw ? String(v) : escapeHtml(String(v))
  })
}

const BASE_CSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

export interface PageOptions {
  status?: number
  title: string
  bodyClass?: string
  /** Extra CSP sources for frames (the framed destination's origin). */
  frameSrc?: string
  headers?: Record<string, string>
}

export function page(template: string, vars: Record<string, string | number>, opts: PageOptions): Response {
  const html = fill(layout as unknown as string, {
    title: opts.title,
    body_class: opts.bodyClass ?? '',
    content: fill(template, vars),
  })
  const csp = opts.frameSrc ? `${BASE_CSP}; frame-src ${opts.frameSrc}` : BASE_CSP
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
  return `<table><thead><tr><th>${escapeHtml(head)}</th><th class="n">Clicks</th></tr></thead><tbody>${body}</tbody></table>`
}
