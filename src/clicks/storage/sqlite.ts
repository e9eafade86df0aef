// Click counts on SQLite: one writer at a time (the writer thread, or the main thread), statements run directly.
// The synchronous writer (sqliteClickWriter) is kept for the writer thread; the rest is the async contract.
import type { Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import {
  DAY_MS,
  dayOf,
  decodeInParts,
  inParts,
  mergeBatch,
  type ClickBatch,
  type ClickEvent,
  type EncodedBatch,
} from '../batch'
import {
  DIMENSIONS,
  emptyDims,
  monthOf,
  parseDims,
  placeByVolume,
  placedAsTheyCome,
  placeNames,
  stringifyDims,
  sumNames,
  wholeMonths,
  type StoredNames,
} from '../names'
import {
  LINKS_PER_COMMIT,
  PartialWrite,
  type ClickCounts,
  dayAndTotalOf,
  type DayAndTotalRow,
  type DayKeyRows,
  type InsertClickEvent,
  type SqliteClickEvents,
} from './contract'

/** The statements that write batches, and writeParts over them; `events` writes link.clicked rows (absent: a batch with events throws). */
function clickWrites(db: Db, events?: SqliteClickEvents) {
  const dayDims = db.query<{ dims: string }, [number, string]>(
    'SELECT dims FROM click_days WHERE link_id = ?1 AND day = ?2',
  )
  // Visitors are added as an increment, like clicks: the same statement works with several writers.
  const putDay = db.query<unknown, [number, string, number, number, number, string]>(
    `INSERT INTO click_days (link_id, day, clicks, bots, visitors, dims) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
     ON CONFLICT (link_id, day) DO UPDATE SET clicks = clicks + excluded.clicks, bots = bots + excluded.bots,
       visitors = visitors + excluded.visitors, dims = excluded.dims`,
  )
  const monthDims = db.query<{ dims: string }, [number, string]>(
    'SELECT dims FROM click_months WHERE link_id = ?1 AND month = ?2',
  )
  const putMonth = db.query<unknown, [number, string, number, number, string]>(
    `INSERT INTO click_months (link_id, month, clicks, bots, dims) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (link_id, month) DO UPDATE SET clicks = clicks + excluded.clicks, bots = bots + excluded.bots, dims = excluded.dims`,
  )
  const addTotals = db.query<unknown, [number, number, number]>(
    'UPDATE links SET clicks = clicks + ?1, bots = bots + ?2 WHERE id = ?3',
  )

  // Prepared on the first batch that carries events: most connections never write one.
  let insertEvent: InsertClickEvent | null = null
  const writeEvents = (list: ClickEvent[]) => {
    if (!events) throw new Error('clicks: link.clicked events to write and no event writer was given')
    insertEvent ??= events(db)
    for (const e of list) insertEvent('link.clicked', e.accountId, e.at, { clicks: e.clicks }, e.at)
  }

  const write = db.transaction((batch: ClickBatch, events: ClickEvent[]) => {
    if (events.length > 0) writeEvents(events)
    for (const [linkId, days] of batch) {
      let clicks = 0
      let bots = 0
      for (const d of days.values()) {
        clicks += d.clicks
        bots += d.bots
      }
      // A click on a link deleted before the flush is dropped (its rows went with it): its totals change no
      // row. One statement finds that out and adds the totals (no look-up of the link first).
      if (addTotals.run(clicks, bots, linkId).changes === 0) continue
      // Per month of the link's days (almost always one): its counts and what each day stored of its names.
      const months = new Map<string, { clicks: number; bots: number; placed: StoredNames[] }>()
      for (const [dayNumber, d] of days) {
        const day = dayOf(dayNumber * DAY_MS)
        const stored = dayDims.get(linkId, day)
        let placed: StoredNames
        let dims: string
        if (stored === null && placedAsTheyCome(d.dims)) {
          // The link-day's first write, as placeNames would place it on an empty day: every name as it came.
          placed = d.dims
          dims = stringifyDims(d.dims)
        } else {
          const held = parseDims(stored?.dims ?? '{}')
          placed = {} as StoredNames
          for (const dim of DIMENSIONS) placed[dim] = placeNames(held[dim], d.dims[dim])
          dims = stringifyDims(held)
        }
        putDay.run(linkId, day, d.clicks, d.bots, d.visitors, dims)
        const key = monthOf(day)
        const month = months.get(key)
        if (month === undefined) months.set(key, { clicks: d.clicks, bots: d.bots, placed: [placed] })
        else {
          month.clicks += d.clicks
          month.bots += d.bots
          month.placed.push(placed)
        }
      }
      for (const [key, m] of months) {
        const held = parseDims(monthDims.get(linkId, key)?.dims ?? '{}')
        for (const dim of DIMENSIONS)
          placeByVolume(held[dim], m.placed.length === 1 ? m.placed[0]![dim] : sumNames(m.placed, dim))
        putMonth.run(linkId, key, m.clicks, m.bots, stringifyDims(held))
      }
    }
  })

  /**
   * Writes a batch part by part, each part in its own transaction, so that the write lock is never held
   * for long: a link created on the main connection meanwhile waits for one short transaction, not for a
   * batch of a hundred thousand links. When one fails, it and the parts after it are thrown with the error
   * (PartialWrite.unwritten); what was committed before stays committed and counted once.
   */
  function writeParts(parts: Iterator<ClickBatch> & Iterable<ClickBatch>, events: ClickEvent[] = []) {
    // One part ahead, to know which one is the last: the events go in its transaction.
    let next = parts.next()
    if (next.done && events.length > 0) next = { done: false, value: new Map() } // events alone (a retry)
    while (!next.done) {
      const part = next.value
      next = parts.next()
      const last = next.done === true
      try {
        write(part, last ? events : [])
      } catch (err) {
        if (!last) {
          mergeBatch(part, next.value)
          for (const rest of parts) mergeBatch(part, rest)
        }
        throw new PartialWrite(err, part, events)
      }
    }
  }

  return writeParts
}

/** The synchronous writer of the writer thread and of the main-thread writer: throws PartialWrite with what was not committed. */
export function sqliteClickWriter(db: Db, events?: SqliteClickEvents) {
  const writeParts = clickWrites(db, events)
  return {
    write: (batch: ClickBatch) => writeParts(inParts(batch, LINKS_PER_COMMIT)),
    /** The same for an encoded batch, decoded a part at a time (see decodeInParts). */
    writeEncoded: (e: EncodedBatch) => writeParts(decodeInParts(e, LINKS_PER_COMMIT), e.events),
  }
}
export type SqliteClickWriter = ReturnType<typeof sqliteClickWriter>

export function sqliteClickCounts(db: Db, events?: SqliteClickEvents): ClickCounts {
  const writeParts = clickWrites(db, events)
  const days = db.query<{ day: string; clicks: number; visitors: number }, [number, string, string]>(
    'SELECT day, clicks, visitors FROM click_days WHERE link_id = ?1 AND day BETWEEN ?2 AND ?3 ORDER BY day',
  )
  const daysDims = db.query<{ dims: string }, [number, string, string]>(
    'SELECT dims FROM click_days WHERE link_id = ?1 AND day BETWEEN ?2 AND ?3',
  )
  const monthsDims = db.query<{ dims: string }, [number, string, string]>(
    'SELECT dims FROM click_months WHERE link_id = ?1 AND month BETWEEN ?2 AND ?3',
  )
  const dayAndTotal = db.query<DayAndTotalRow, [number, string]>(
    `SELECT l.clicks + l.bots AS total, d.clicks, d.bots, d.visitors, d.dims
       FROM links l LEFT JOIN click_days d ON d.link_id = l.id AND d.day = ?2 WHERE l.id = ?1`,
  )

  return {
    add: async (batch) => writeParts(inParts(batch, LINKS_PER_COMMIT)),
    addEncoded: async (batch) => writeParts(decodeInParts(batch, LINKS_PER_COMMIT), batch.events),
    days: async (linkId, from, to) => days.all(linkId, from, to),
    /** Whole months inside the window from click_months, the days at its edges from click_days (at most 60 rows). */
    async names(linkId, from, to) {
      const out = emptyDims()
      const [firstMonth, lastMonth] = wholeMonths(from, to)
      if (firstMonth > lastMonth) {
        for (const r of daysDims.all(linkId, from, to)) parseDims(r.dims, out)
        return out
      }
      for (const r of monthsDims.all(linkId, firstMonth, lastMonth)) parseDims(r.dims, out)
      if (from < `${firstMonth}-01`)
        for (const r of daysDims.all(linkId, from, `${firstMonth}-00`)) parseDims(r.dims, out)
      if (to > `${lastMonth}-31`) for (const r of daysDims.all(linkId, `${lastMonth}-32`, to)) parseDims(r.dims, out)
      return out
    },
    dayAndTotal: async (linkId, day) => dayAndTotalOf(dayAndTotal.get(linkId, day)),
  }
}

export function sqliteDayKeyRows(db: Db): DayKeyRows {
  const q = lazyStatements(db)
  const insert = q.query<unknown, [number, Uint8Array]>(
    'INSERT INTO day_keys (day, key) VALUES (?, ?) ON CONFLICT (day) DO NOTHING',
  )
  const read = q.query<{ key: Uint8Array }, [number]>('SELECT key FROM day_keys WHERE day = ?')
  const old = q.query<unknown, [number]>('DELETE FROM day_keys WHERE day < ?')
  const ensureNow = (day: number, fresh: Uint8Array, keepFrom: number) =>
    db.transaction(() => {
      old.run(keepFrom)
      insert.run(day, fresh)
      return new Uint8Array(read.get(day)!.key)
    })()
  return { ensure: async (day, fresh, keepFrom) => ensureNow(day, fresh, keepFrom), ensureNow }
}
