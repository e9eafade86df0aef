// What the click storage promises on both engines (storage/sqlite.ts, storage/postgres.ts); the design notes
// are in the ARCHITECTURE (clicks). One suite runs it on both: test/db/clicks-contract.test.ts.
import type { Db } from '../../db/sqlite'
import type { ClickBatch, ClickEvent, EncodedBatch } from '../batch'
import { parseDims, type DimNames } from '../names'

/**
 * Links written per transaction. A link's first clicks of a day cost 60-100 µs on a 1M-link database (three
 * rows on scattered pages: its totals, its day, its month), so a transaction holds the write lock for 30-50 ms;
 * 2,000 a transaction cost 15-25% less CPU a link but would hold it four times as long.
 */
export const LINKS_PER_COMMIT = 500

/**
 * A batch was not (all) written: `unwritten` holds the part whose transaction failed and the parts after it,
 * `events` the batch's link.clicked events (written with the last part, so never when a part failed).
 */
export class PartialWrite extends Error {
  constructor(
    readonly cause: unknown,
    readonly unwritten: ClickBatch,
    readonly events: ClickEvent[] = [],
  ) {
    super(cause instanceof Error ? cause.message : String(cause))
    this.name = 'PartialWrite'
    const code = (cause as { code?: unknown } | null)?.code
    if (typeof code === 'string') Object.assign(this, { code })
  }
}

export interface ClickCounts {
  /** Adds a batch (link id → day number → counts and names); throws PartialWrite with what was not written. */
  add(batch: ClickBatch): Promise<void>
  /**
   * Adds a batch as the recorder encodes it, decoded a part at a time; its link.clicked events (timestamp
   * and due time: the event's `at`) go in the last part's transaction. Throws PartialWrite with the parts
   * not committed and every event (a batch with events and no counts writes the events alone).
   */
  addEncoded(batch: EncodedBatch): Promise<void>
  /** Human clicks and new-visitor sums per day of the window [from, to] (YYYY-MM-DD), oldest first, days without clicks left out. */
  days(linkId: number, from: string, to: string): Promise<{ day: string; clicks: number; visitors: number }[]>
  /** Every name counted in the window [from, to] (YYYY-MM-DD), per dimension: whole months from their rollups, the edge days from their rows. */
  names(linkId: number, from: string, to: string): Promise<DimNames>
  /**
   * One day of a link (YYYY-MM-DD) and the link's clicks + bots of all time, read together (one snapshot): what
   * says whether the days before it changed; null when the link is gone.
   */
  dayAndTotal(linkId: number, day: string): Promise<DayAndTotal | null>
}

export interface DayAndTotal {
  total: number
  clicks: number
  bots: number
  visitors: number
  names: DimNames
}

/** The row both engines read for dayAndTotal (PostgreSQL's bigints come as text; no day row: nulls). */
export interface DayAndTotalRow {
  total: number | string
  clicks: number | string | null
  bots: number | string | null
  visitors: number | string | null
  dims: string | null
}
export const dayAndTotalOf = (r: DayAndTotalRow | null | undefined): DayAndTotal | null =>
  r
    ? {
        total: Number(r.total),
        clicks: Number(r.clicks ?? 0),
        bots: Number(r.bots ?? 0),
        visitors: Number(r.visitors ?? 0),
        names: parseDims(r.dims ?? '{}'),
      }
    : null

/** Writes one link.clicked event and its deliveries inside the open SQLite transaction; returns the deliveries. */
export type InsertClickEvent = (
  type: 'link.clicked',
  accountId: number,
  at: number,
  data: Record<string, unknown>,
  now: number,
) => number
/**
 * SQLite: prepares the event insert on a connection (the writer thread has its own). The root hands in the
 * webhooks feature's (eventInserts), so clicks write events without importing webhooks.
 */
export type SqliteClickEvents = (db: Db) => InsertClickEvent

export interface DayKeyRows {
  /**
   * The key of `day`: the stored one, or `fresh` stored when there is none (two nodes at once: one wins,
   * both read it). Keys of days before `keepFrom` are deleted.
   */
  ensure(day: number, fresh: Uint8Array, keepFrom: number): Promise<Uint8Array>
  /** The same, at once, where the engine can (SQLite): current() then never answers null. */
  ensureNow?(day: number, fresh: Uint8Array, keepFrom: number): Uint8Array
}

export interface SharedVisitorRows {
  /**
   * In one transaction: the hashes (link id, UTC day number, hash; flat triples) that no node stored yet,
   * and each link-day's visitors added to by those; rows of days before `keepFrom` removed.
   */
  add(triples: number[], keepFrom: number): Promise<void>
}
