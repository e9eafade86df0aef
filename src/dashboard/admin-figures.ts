// The numbers of the Admin section's health page as people read them: counts, sizes, durations, bar tables drawn
// in SVG with presentation attributes (the CSP forbids inline styles), and the metrics snapshot read by name.
import { statSync } from 'node:fs'
import { join } from 'node:path'
import type { MetricFamily } from '../kernel/metrics'
import { escapeHtml } from '../web/render'

// Made at the first number shown, not when the module loads: the first Intl.NumberFormat loads its locale
// data (~3 ms), which serve's first answer should not wait for.
let integer: Intl.NumberFormat | undefined
export const count = (n: number) => (integer ??= new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })).format(n)

/** 1536 → "1.5 KiB". */
export function bytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB']
  let v = n
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return u === 0 ? `${count(v)} bytes` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`
}

/** 93784 → "1 d 2 h"; 125 → "2 min 5 s". The two largest units. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds))
  const parts: [number, string][] = [
    [Math.floor(s / 86400), 'd'],
    [Math.floor((s % 86400) / 3600), 'h'],
    [Math.floor((s % 3600) / 60), 'min'],
    [s % 60, 's'],
  ]
  const first = parts.findIndex(([v]) => v > 0)
  if (first < 0) return '0 s'
  return parts
    .slice(first, first + 2)
    .filter(([v]) => v > 0)
    .map(([v, unit]) => `${v} ${unit}`)
    .join(' ')
}

// Drawing

export interface Bar {
  label: string
  value: number
  /** Colour: the accent (default), the warning colour or the danger colour. */
  tone?: 'warn' | 'danger'
}

/**
 * A labelled counter as a table of bars: the label, an SVG bar (its width a presentation attribute, in
 * a 0–100 box stretched to the cell) and the number. A table, so that screen readers read label and
 * number together; the bars themselves are decoration.
 */
export function barTable(caption: string, bars: Bar[], head: string): string {
  const drawn = barRows(bars)
  if (drawn.length === 0)
    return `<div class="metric-bars-empty"><p class="metric-bars-caption">${escapeHtml(caption)}</p><p class="empty">Nothing counted yet.</p></div>`
  const rows = drawn
    .map(
      (b) =>
        `<tr><th scope="row">${escapeHtml(b.label)}</th><td class="bar-cell"><svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false"><rect class="track" x="0" y="0" width="100" height="10"/><rect class="fill${b.tone ? ` ${b.tone}` : ''}" x="0" y="0" width="${b.width}" height="10"/></svg></td><td class="n">${b.count}</td></tr>`,
    )
    .join('')
  return `<table class="metric-bars"><caption>${escapeHtml(caption)}</caption><thead class="visually-hidden"><tr><th scope="col">${escapeHtml(head)}</th><th scope="col">Share of the largest</th><th scope="col">Count</th></tr></thead><tbody>${rows}</tbody></table>`
}

/** The rows of a bar table as drawn (none when nothing was counted): the page's and the live JSON's. */
export function barRows(bars: Bar[]): { label: string; width: string; count: string; tone: Bar['tone'] | null }[] {
  if (bars.every((b) => b.value === 0)) return []
  const max = Math.max(1, ...bars.map((b) => b.value))
  return bars.map((b) => ({
    label: b.label,
    width: (b.value === 0 ? 0 : Math.max(1, (100 * b.value) / max)).toFixed(2),
    count: count(b.value),
    tone: b.tone ?? null,
  }))
}

export interface Stat {
  /** What the live page knows it by (data-stat). */
  key: string
  label: string
  value: string
  note?: string
  tone?: 'warn' | 'danger'
}
export function stats(items: Stat[]): string {
  return `<dl class="big-numbers">${items
    .map(
      (s) =>
        `<div class="stat${s.tone ? ` ${s.tone}` : ''}" data-stat="${escapeHtml(s.key)}"><dt>${escapeHtml(s.label)}</dt><dd><span class="stat-value">${escapeHtml(s.value)}</span>${s.note ? `<span class="stat-note">${escapeHtml(s.note)}</span>` : ''}</dd></div>`,
    )
    .join('')}</dl>`
}

/** A bar table with what the live page needs to draw it again (data-bars: its key). */
export interface Bars {
  key: string
  caption: string
  head: string
  bars: Bar[]
}
export const barBlock = (b: Bars) =>
  `<div class="metric-bars-live" data-bars="${escapeHtml(b.key)}">${barTable(b.caption, b.bars, b.head)}</div>`

// The metrics, read from a snapshot

/** Reads a metrics snapshot: one value a family (summed over labels), or sums by one label. */
export function reader(families: MetricFamily[]) {
  const byName = new Map(families.map((f) => [f.name, f]))
  return {
    has: (name: string) => byName.has(name),
    value(name: string): number | null {
      const f = byName.get(name)
      return f ? f.samples.reduce((a, s) => a + s.value, 0) : null
    },
    by(name: string, label: string, key: (v: string) => string = (v) => v): Map<string, number> {
      const out = new Map<string, number>()
      for (const s of byName.get(name)?.samples ?? []) {
        const k = key(s.labels[label] ?? '')
        out.set(k, (out.get(k) ?? 0) + s.value)
      }
      return out
    },
  }
}

export const VISIT_LABELS: Record<string, string> = {
  redirect: 'Redirected',
  frame: 'Shown in a frame',
  preview: 'Preview page',
  password_form: 'Password form',
  password_wrong: 'Wrong password',
  password_limited: 'Password attempts limited',
  password_busy: 'Password check busy',
  not_found: 'Not found',
  expired: 'Expired',
  stats_page: 'Statistics page',
  stats_limited: 'Statistics limited',
  unavailable: 'Stopped: disabled, banned or listed (451)',
  card: 'Social preview card (crawlers)',
}
export const VISIT_TONES: Record<string, Bar['tone']> = {
  unavailable: 'warn',
  password_wrong: 'warn',
  password_limited: 'warn',
  password_busy: 'danger',
  not_found: 'warn',
  expired: 'warn',
  stats_limited: 'warn',
}
export const MEDIA_TONES: Record<string, Bar['tone']> = {
  unsupported: 'warn',
  private: 'warn',
  invalid: 'warn',
  upstream: 'danger',
  timeout: 'danger',
  busy: 'danger',
}
export const DELIVERY_LABELS: Record<string, string> = {
  ok: 'Delivered',
  failed: 'Failed for good',
  retry: 'Failed, retry planned',
  gone: 'Gone (410): endpoint disabled',
  private: 'Refused: private address',
}
export const DELIVERY_TONES: Record<string, Bar['tone']> = {
  failed: 'danger',
  retry: 'warn',
  gone: 'warn',
  private: 'warn',
}

export function barsOf(
  m: Map<string, number>,
  labels: Record<string, string> = {},
  tones: Record<string, Bar['tone']> = {},
): Bar[] {
  return [...m]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, value]) => ({ label: labels[k] ?? k, value, tone: tones[k] }))
}

/**
 * The size of the SQLite database on disk: the file and its write-ahead log. Null (the page shows "—") when it
 * cannot be read, and when there is none: on PostgreSQL, data_dir holds no database file.
 */
export function databaseBytes(dataDir: string): number | null {
  try {
    const main = statSync(join(dataDir, 'linkbox.db')).size
    let wal = 0
    try {
      wal = statSync(join(dataDir, 'linkbox.db-wal')).size
    } catch {}
    return main + wal
  } catch {
    return null
  }
}
