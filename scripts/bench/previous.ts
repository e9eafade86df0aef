// The regression guard (issue 39): the hot-code and 1,000-code rows against the floor also give their ratio to
// the value the committed bench/RESULTS.md holds, read before a full run overwrites it. RESULTS.md carries its
// figures by id in a comment at its end; an older file without it is read by its table's labels. Pure.
import { formatValue, type Figure } from './results'

/** The rows the guard watches. */
export const GUARDED = ['redirect-hot-floor-ratio', 'redirect-1k-floor-ratio']

// The comment of results.ts's figuresComment.
const COMMENT = /<!-- bench figures: (\{.*\}) -->/

/** Splits a Markdown table row into its cells, a `\|` staying inside its cell. */
export function tableCells(row: string): string[] {
  const inner = row.trim().replace(/^\|/, '').replace(/\|$/, '')
  return inner.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'))
}

/** The number a "now" cell starts with ("0.79× (rounds 0.75–0.82×)" → 0.79, "98,979 req/s" → 98979); NaN for "n/a". */
export function leadingNumber(cell: string): number {
  const m = cell.match(/^-?[\d,]*\.?\d+/)
  return m ? Number(m[0].replace(/,/g, '')) : NaN
}

/**
 * A RESULTS.md's figures: by id from its comment, and by label from its table (the "figure" and "now" columns,
 * "now" being headed "now" alone: the before column's head names the before binary).
 */
export function previousFigures(markdown: string): { byId: Map<string, number>; byLabel: Map<string, number> } {
  const byId = new Map<string, number>()
  const byLabel = new Map<string, number>()
  const comment = markdown.match(COMMENT)
  if (comment)
    try {
      for (const [id, v] of Object.entries(JSON.parse(comment[1]!) as Record<string, unknown>))
        if (typeof v === 'number' && Number.isFinite(v)) byId.set(id, v)
    } catch {}
  let figure = -1
  let now = -1
  for (const line of markdown.split('\n')) {
    if (!line.trim().startsWith('|')) {
      figure = now = -1
      continue
    }
    const cells = tableCells(line)
    if (cells[0] === 'figure') {
      figure = 0
      now = cells.indexOf('now')
      continue
    }
    if (figure < 0 || now < 0 || cells.every((c) => /^-+$/.test(c))) continue
    const value = leadingNumber(cells[now] ?? '')
    if (Number.isFinite(value) && !byLabel.has(cells[figure]!)) byLabel.set(cells[figure]!, value)
  }
  return { byId, byLabel }
}

/**
 * The guard's words for a figure: its ratio to the previous value, or "no previous". Also put into the figure's
 * baseline cell. Null for a figure the guard does not watch.
 */
export function applyGuard(f: Figure, previous: ReturnType<typeof previousFigures> | null): string | null {
  if (!GUARDED.includes(f.id)) return null
  const old = previous?.byId.get(f.id) ?? previous?.byLabel.get(f.label)
  const words =
    old === undefined || !Number.isFinite(f.value) || old === 0
      ? 'no previous bench/RESULTS.md value'
      : `÷ previous bench/RESULTS.md (${formatValue(old, f.unit)}): ${(f.value / old).toFixed(2)}`
  f.baseline = f.baseline ? `${f.baseline}; regression guard: ${words}` : `regression guard: ${words}`
  return `regression guard: ${f.label}: ${formatValue(f.value, f.unit)} now, ${words}`
}
