// GET /metrics in the Prometheus text format. Counters are plain in-memory numbers bumped where things
// happen (a Map lookup on the redirect path, nothing more); gauges are read when scraped. snapshot()
// gives the same numbers as data (the dashboard's health page draws them).
export type Labels = Record<string, string>

interface Family {
  help: string
  type: 'counter' | 'gauge'
  /** Label text ('' or '{a="b"}') → value. */
  values: Map<string, number>
  /** Label text → the labels it was made from (set once per label set, for snapshot()). */
  labels: Map<string, Labels>
  /** Gauges read at scrape time. */
  read?: () => number
}

// Most label values have nothing to escape: one test instead of three replaces (every API answer counts one).
const NEEDS_ESCAPE = /[\\"\n]/
const escapeLabel = (v: string) =>
  NEEDS_ESCAPE.test(v) ? v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : v
function labelText(labels?: Labels): string {
  let text = ''
  for (const k in labels) text += `${text ? ',' : '{'}${k}="${escapeLabel(labels[k]!)}"`
  return text ? `${text}}` : ''
}

export function createMetrics() {
  const families = new Map<string, Family>()
  // Reads made before a scrape, for gauges whose source is async (a storage's count): see refresh().
  const refreshers: (() => Promise<unknown>)[] = []
  // Label texts kept across counters, bounded: a label value may come from outside.
  let labelCount = 0

  function family(name: string, help: string, type: Family['type']): Family {
    let f = families.get(name)
    if (!f) families.set(name, (f = { help, type, values: new Map(), labels: new Map() }))
    return f
  }

  return {
    /** Declares a counter; `inc` then counts under a single label value (the common case, kept cheap). */
    counter(name: string, help: string, label?: string) {
      const f = family(name, help, 'counter')
      // Label value → its label text, for this counter's one label (the hot path: one Map lookup).
      const keys = new Map<string, string>()
      return {
        inc(value?: string, by = 1) {
          let key = ''
          if (label !== undefined && value !== undefined) {
            const known = keys.get(value)
            if (known !== undefined) key = known
            else {
              key = labelText({ [label]: value })
              if (labelCount < 10_000) keys.set(value, key), labelCount++
            }
          }
          const before = f.values.get(key)
          if (before === undefined)
            f.labels.set(key, label !== undefined && value !== undefined ? { [label]: value } : {})
          f.values.set(key, (before ?? 0) + by)
        },
        /** Counts under several labels (off the hot path). */
        incLabels(labels: Labels, by = 1) {
          const key = labelText(labels)
          const before = f.values.get(key)
          if (before === undefined) f.labels.set(key, { ...labels })
          f.values.set(key, (before ?? 0) + by)
        },
      }
    },
    /** A value read at scrape time: a gauge, or a counter kept by someone else. */
    sampled(name: string, help: string, read: () => number, type: Family['type'] = 'gauge') {
      family(name, help, type).read = read
    },
    /** A read to make before the gauges are (the database's, which is async): it stores what a gauge then reads. */
    refreshing(read: () => Promise<unknown>) {
      refreshers.push(read)
    },
    /** Makes every refreshing read (awaited before render and snapshot); a failed one leaves its gauge as it was. */
    async refresh(): Promise<void> {
      await Promise.all(refreshers.map((read) => read().catch(() => {})))
    },
    render(): string {
      const lines: string[] = []
      for (const [name, f] of families) {
        lines.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`)
        if (f.read) lines.push(`${name} ${f.read()}`)
        else for (const [labels, v] of f.values) lines.push(`${name}${labels} ${v}`)
      }
      return lines.join('\n') + '\n'
    },
    /** Every family with its current values, in declaration order (gauges read now), as data to draw. */
    snapshot(): MetricFamily[] {
      return [...families].map(([name, f]) => ({
        name,
        help: f.help,
        type: f.type,
        samples: f.read
          ? [{ labels: {}, value: f.read() }]
          : [...f.values].map(([key, value]) => ({ labels: { ...f.labels.get(key) }, value })),
      }))
    },
  }
}
export interface MetricSample {
  labels: Labels
  value: number
}
export interface MetricFamily {
  name: string
  help: string
  type: 'counter' | 'gauge'
  samples: MetricSample[]
}

export type Metrics = ReturnType<typeof createMetrics>
export type Counter = ReturnType<Metrics['counter']>

/** The process's own figures: request lines dropped, resident memory, uptime. */
export function processMetrics(metrics: Metrics, log: { readonly dropped: number }, startedAt: number) {
  metrics.sampled(
    'linkbox_log_lines_dropped_total',
    'Request lines dropped because the log output could not keep up (the buffer was full).',
    () => log.dropped,
    'counter',
  )
  metrics.sampled('process_resident_memory_bytes', 'Resident memory of the process.', () => process.memoryUsage.rss())
  metrics.sampled('process_uptime_seconds', 'Seconds since the service started.', () =>
    Math.round((Date.now() - startedAt) / 1000),
  )
}
