// Clicks as a feature of the composition root: the recorder that writes clicks every second (on its writer
// thread), its metrics, the last write at close; link.clicked events through the outbox the root hands in.
import type { Outbox } from '../kernel/outbox'
import type { Feature, Shared } from '../web/feature'
import { createDayKeys } from './day-keys'
import { createClickRecorder, type ClickRecorderOptions } from './recorder'
import { createSharedVisitors } from './shared-visitors'
import type { DayKeyRows, SharedVisitorRows, SqliteClickEvents } from './storage/contract'

/** What the root hands the clicks feature: its storage members and the webhook outbox (clicks import no webhooks). */
export interface ClicksDeps {
  dayKeys: DayKeyRows
  /** PostgreSQL's shared visitor hashes; null on SQLite (one node counts exactly). */
  visitorHashes: SharedVisitorRows | null
  outbox: Pick<Outbox, 'wanted' | 'wake'>
  /** SQLite: how link.clicked rows are written on the main thread (the thread's entry names its own). */
  eventRows?: SqliteClickEvents
  /** SQLite: starts the writer thread (app/click-write-worker.ts). */
  spawnWriter?: () => Worker
}

export function createClicksFeature(shared: Shared, deps: ClicksDeps, opts: ClickRecorderOptions = {}) {
  const { db, clock, geo } = shared
  const { outbox } = deps
  // The day's key every node shares (day-keys.ts): distinct visitors here, A/B splits and daily counts in links.
  const dayKeys = createDayKeys({ rows: deps.dayKeys, clock, log: (line) => shared.log.warn(line) })
  // Several nodes (PostgreSQL): a visitor counts once whichever nodes saw them (shared-visitors.ts).
  const rows = deps.visitorHashes
  const sharedVisitors = rows ? createSharedVisitors({ rows, clock, log: shared.log }) : null
  const recorder = createClickRecorder(db, {
    ...(sharedVisitors ? { sharedVisitors } : {}),
    log: (line) => shared.log.error(line),
    geo,
    ...(deps.eventRows ? { eventRows: deps.eventRows } : {}),
    ...(deps.spawnWriter ? { spawnWriter: deps.spawnWriter } : {}),
    ...opts,
    visitors: { dayKey: (day) => dayKeys.current(day)?.visitors ?? null, ...opts.visitors },
    webhooks: {
      wanted: (accountId) => outbox.wanted('link.clicked', accountId),
      written: () => outbox.wake(),
      now: clock,
    },
  })
  let keyRead: ReturnType<typeof setTimeout> | undefined
  const feature: Feature = {
    metrics(m) {
      m.sampled(
        'linkbox_clicks_written_total',
        'Clicks (human and bot) written to the database since start.',
        () => recorder.flushed,
        'counter',
      )
      m.sampled('linkbox_click_buffer', 'Clicks waiting in memory for the next write.', () => recorder.pending)
      m.sampled(
        'linkbox_clicks_dropped_total',
        'Clicks dropped because writes kept failing and the buffer was full.',
        () => recorder.dropped,
        'counter',
      )
      m.sampled(
        'linkbox_visitor_link_days',
        "Link-days whose distinct visitors are tracked in memory (today's).",
        () => recorder.visitors.tracked,
      )
      m.sampled(
        'linkbox_visitor_memory_bytes',
        'Memory the distinct-visitor trackers take, as their bound counts it.',
        () => recorder.visitors.bytes,
      )
      m.sampled(
        'linkbox_visitor_link_days_dropped_total',
        'Link-days whose visitor tracker was dropped to stay within the memory bound (their later visitors that day are counted again).',
        () => recorder.visitors.dropped,
        'counter',
      )
    },
    // Today's key at the start and tomorrow's ahead of midnight, so that no visit waits for the database.
    jobs: [{ name: 'day keys', everyMs: 5 * 60_000, run: () => dayKeys.refresh() }],
    listen: () => {
      // Read on the next turn, like the writer's start: a visit before it reads the key itself (current()).
      keyRead = setTimeout(() => dayKeys.refresh().catch(() => {}), 0) // logged by day-keys.ts; current() tries again
      recorder.start()
      sharedVisitors?.start()
    },
    // Throws ClicksNotWritten when the last write fails (the root closes the database all the same).
    close: async () => {
      clearTimeout(keyRead)
      try {
        await recorder.stop()
      } finally {
        await sharedVisitors?.stop()
      }
    },
  }
  return { feature, recorder, dayKeys }
}
