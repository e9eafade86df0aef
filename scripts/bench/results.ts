// The bench's figures against the issue's targets, and bench/RESULTS.md: machine, versions, commands, and
// a table with the "before" figures of bench/before.json beside this run's. Pure functions, except the
// few lines that read the machine.
import { cpus, homedir, release, tmpdir, totalmem } from 'node:os'

export interface Target {
  op: '>=' | '<='
  value: number
}

/** One measured figure. `id` is stable across runs: the "before" column is matched by it. */
export interface Figure {
  id: string
  label: string
  value: number
  unit: string
  target?: Target
  /** The baseline beside it, in words ("bare Bun.serve 302: 41,200 req/s"). */
  baseline?: string
  /**
   * The figure in each round, when `value` is their median: the table shows their range, and a verdict
   * that not every round agrees with is marked, so that a machine disturbed while it ran is seen as such.
   */
  rounds?: number[]
}

export interface Run {
  /** Which binary: "this checkout (dist/linkbox)" or the label of LINKBOX_BENCH_BINARY. */
  binary: string
  version: string
  /** The checkout the bench ran from (its loader and scripts), not the binary's: that is `binary`. */
  commit: string
  date: string
  machine: string
  figures: Figure[]
}

export const met = (f: Pick<Figure, 'value' | 'target'>): boolean | null =>
  !f.target || !Number.isFinite(f.value)
    ? null
    : f.target.op === '>='
      ? f.value >= f.target.value
      : f.value <= f.target.value

/** A figure's value with its unit, to a sensible precision: ratios 2 decimals, ms 1–2, sizes whole. */
export function formatValue(value: number, unit: string): string {
  if (!Number.isFinite(value)) return 'n/a'
  if (unit === '×') return `${value.toFixed(2)}×`
  if (unit === 'ms') return `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`
  if (unit === 'µs') return `${value.toFixed(1)} µs`
  return `${Math.round(value).toLocaleString('en-US')} ${unit}`
}

const formatTarget = (t: Target | undefined, unit: string) =>
  t ? `${t.op === '>=' ? '≥' : '≤'} ${formatValue(t.value, unit)}` : '—'

/** The value, and the range of its rounds when there are several: "0.49× (rounds 0.27–0.78×)". */
export function formatFigure(f: Pick<Figure, 'value' | 'unit' | 'rounds'>): string {
  const value = formatValue(f.value, f.unit)
  const rounds = (f.rounds ?? []).filter(Number.isFinite)
  if (rounds.length < 2) return value
  const suffix = f.unit === '×' ? '×' : ` ${f.unit}`
  const low = formatValue(Math.min(...rounds), f.unit)
  return `${value} (rounds ${low.endsWith(suffix) ? low.slice(0, -suffix.length) : low}–${formatValue(Math.max(...rounds), f.unit)})`
}

/** Whether the rounds disagree on the target: some meet it and some miss it (null: no target or rounds). */
export function roundsDisagree(f: Pick<Figure, 'target' | 'rounds'>): boolean | null {
  const rounds = (f.rounds ?? []).filter(Number.isFinite)
  if (!f.target || rounds.length < 2) return null
  const verdicts = new Set(rounds.map((value) => met({ value, target: f.target })))
  return verdicts.size > 1
}

function verdict(f: Figure): string {
  const v = met(f)
  if (v === null) return '—'
  if (!roundsDisagree(f)) return v ? 'met' : '**missed**'
  return v ? 'met (not in every round)' : '**missed** (met in some rounds)'
}

/**
 * Issue 39's rows (the redirect against the floor, as a new user runs it: the default config, request lines
 * on), in the order of its table, each followed by the row against bare that issue 21 judged; the table shows
 * them first, then the other figures in the order they were measured.
 */
export const HEADLINE = [
  'redirect-hot-floor-ratio',
  'redirect-hot-cpu-ratio',
  'redirect-log-cost',
  'redirect-hot-ratio',
  'redirect-1k-floor-ratio',
  'redirect-1k-floor-p99',
  'redirect-1k-ratio',
  'redirect-1k-p99',
  'redirect-100k-floor-ratio',
  'redirect-100k-ratio',
  'rss-peak-redirect-100k',
  'create-ratio',
  'startup-serve',
  'mail-maildev-ratio',
]

export function headlineFirst(figures: Figure[]): Figure[] {
  const rank = (f: Figure) => (HEADLINE.includes(f.id) ? HEADLINE.indexOf(f.id) : HEADLINE.length)
  return figures
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
    .map(({ f }) => f)
}

/** The Markdown table: one row a figure (issue 21's first), the before column when a before run is given. */
export function resultsTable(figures: Figure[], before?: Run): string {
  const old = new Map(before?.figures.map((f) => [f.id, f]) ?? [])
  const head = before
    ? ['figure', 'target', `before (${before.binary})`, 'now', 'met now', 'baseline in this run']
    : ['figure', 'target', 'now', 'met', 'baseline in this run']
  const rows = headlineFirst(figures).map((f) => {
    const b = old.get(f.id)
    const beforeCell = b ? `${formatValue(b.value, b.unit)}${met(b) === false ? ' (missed)' : ''}` : 'not measured'
    const cells = [f.label, formatTarget(f.target, f.unit), formatFigure(f), verdict(f), f.baseline ?? '']
    if (before) cells.splice(2, 0, beforeCell)
    return cells
  })
  const line = (cells: string[]) => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n')
}

/** The comment RESULTS.md ends with: every figure's value by id, read by the next run's guard (previous.ts). */
export const figuresComment = (figures: Figure[]): string =>
  `<!-- bench figures: ${JSON.stringify(Object.fromEntries(figures.filter((f) => Number.isFinite(f.value)).map((f) => [f.id, f.value])))} -->`

export function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU'
  return `${cpu}, ${navigator.hardwareConcurrency} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Linux ${release()}`
}

/**
 * The file is committed: the checkout's folder becomes ".", the home folder "~" and the temporary folder
 * "$TMPDIR", so that no path of the machine that ran it lands in the repository.
 */
export function withoutMachinePaths(text: string, root: string): string {
  const swaps: [string, string][] = [
    [root, '.'],
    [homedir(), '~'],
    [tmpdir(), '$TMPDIR'],
  ]
  let out = text
  for (const [from, to] of swaps) if (from && from !== '/') out = out.split(from).join(to)
  return out
}

export function resultsMarkdown(opts: {
  run: Run
  before?: Run
  commands: string[]
  sections: { title: string; lines: string[] }[]
  seconds: number
  rounds: number
  /** The rounds of the redirect and spread sections (more than the others', to lower their noise). */
  headRounds?: number
  totalSeconds: number
}): string {
  const { run, before } = opts
  const met_ = run.figures.filter((f) => met(f) === true).length
  const missed = run.figures.filter((f) => met(f) === false)
  const unsettled = run.figures.filter((f) => roundsDisagree(f) === true)
  return [
    '# Bench results',
    '',
    `Written by \`bun run bench\` (scripts/bench.ts) on ${run.date}; the whole run took ${Math.round(opts.totalSeconds)} s.`,
    'Targets are the ones of issue 7 (links), issue 8 (mail), issue 9 (media), issue 10 (webhooks), issue 21 (the redirect path with every feature on)',
    'and issue 39, whose rows come first: the redirect against **the floor** (scripts/bench/bare-reads.ts, a bare Bun.serve that reads what a',
    'redirect must read and sends its three headers; for 1,000 and 100,000 codes it serves the same codes from a Map): one hot code ≥ 0.85 of the',
    "floor, server CPU per redirect ≤ 1.2× the floor's (from /proc, all threads), request lines on ÷ off ≥ 0.95, 1,000 codes ≥ 0.85 of the floor",
    "with p99 ≤ 2× the floor's, 100,000 codes on 1M links ≥ 0.6 of the floor, RSS peak there ≤ 160 MiB, creations (getLink.json, keyed) ≥ 0.3",
    'of a bare JSON answer, `serve` to first answer at 100k links / 10M clicks ≤ 60 ms, and mail ingested durably ≥ 1.0 of maildev. Where issue 39',
    'replaced an older target, the older row stays without it. The hot-code and 1,000-code rows against the floor also give their ratio to the',
    'previous RESULTS.md (the regression guard). Ratios compare figures measured in the same run, alternately, so that both sides see the same',
    "machine load; the load generator (wrk, or for mail the bench's own SMTP client, scripts/bench/smtp-load.ts, for media curl) and the server",
    'share the CPUs.',
    '',
    `- Machine: ${run.machine}`,
    `- Bun ${Bun.version} (runs the bench and built the binary); linkbox ${run.version}; git ${run.commit}`,
    `- Binary: ${run.binary}`,
    `- Rounds: ${opts.rounds} of ${opts.seconds} s per figure (median of the rounds); ${opts.headRounds ?? opts.rounds} for the first two sections (the redirect against the floor)`,
    before
      ? `- Before: ${before.binary}, linkbox ${before.version}, measured ${before.date} on ${before.machine} by the bench of ${before.commit} (bench/before.json)`
      : '- Before: no bench/before.json',
    '',
    `${met_} of ${run.figures.filter((f) => f.target).length} targets met in this run${missed.length ? `; missed: ${missed.map((f) => f.label).join('; ')}` : ''}.`,
    ...(unsettled.length
      ? [
          '',
          `${unsettled.length} of these ${unsettled.length === 1 ? 'verdicts rests' : 'verdicts rest'} on rounds that disagree (some rounds met the target, some missed it): the machine's load moved while they ran, and another run may turn them: ${unsettled.map((f) => f.label).join('; ')}.`,
        ]
      : []),
    '',
    resultsTable(run.figures, before),
    '',
    '## Each section as printed',
    '',
    ...opts.sections.flatMap((s) => [`### ${s.title}`, '', '```', ...s.lines, '```', '']),
    '## Commands',
    '',
    "Ports and temporary paths are those of this run; `$KEY` is the bench account's key.",
    '',
    '```',
    ...[...new Set(opts.commands)],
    '```',
    '',
    figuresComment(run.figures),
    '',
  ].join('\n')
}
