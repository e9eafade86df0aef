// The SQL of click statistics: how an aggregated batch of clicks is written. The recorder (recorder.ts)
// turns clicks into a ClickBatch (per link, per day, counters and names); this module writes one batch in
// one transaction, so a batch is either all counted or not at all.
import type { Db } from '../db'
import { MAX_NAMES, OTHER } from './classify'

export const DAY_MS = 86_400_000
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

export const DIMENSIONS = ['source', 'device', 'browser', 'os'] as const
export type Dimension = (typeof DIMENSIONS)[number]

/** One link's clicks on one day: human clicks, bot clicks, and the human clicks by name per dimension. */
export interface DayCounts {
  clicks: number
  bots: number
  dims: Record<Dimension, Map<string, number>>
}
/** link id → day number (ms / DAY_MS, UTC) → counts. Plain Maps: a worker receives it by structured clone. */
export type ClickBatch = Map<number, Map<number, DayCounts>>

export const newDayCounts = (): DayCounts => ({
  clicks: 0,
  bots: 0,
  dims: { source: new Map(), device: new Map(), browser: new Map(), os: new Map() },
})
export const bump = (m: Map<string, number>, name: string, n = 1) => m.set(name, (m.get(name) ?? 0) + n)

export function createClickStore(db: Db) {
  // INSERT … SELECT FROM links: a click on a link deleted before the flush is dropped, not an FK error.
  const upsertDay = db.query<unknown, [string, number, number, number]>(
    `INSERT INTO click_days (link_id, day, clicks, bots) SELECT id, ?1, ?2, ?3 FROM links WHERE id = ?4
     ON CONFLICT (link_id, day) DO UPDATE SET clicks = clicks + excluded.clicks, bots = bots + excluded.bots`,
  )
  const upsertDim = db.query<unknown, [string, string, string, number, number]>(
    `INSERT INTO click_dims (link_id, day, dim, name, clicks) SELECT id, ?1, ?2, ?3, ?4 FROM links WHERE id = ?5
     ON CONFLICT (link_id, day, dim, name) DO UPDATE SET clicks = clicks + excluded.clicks`,
  )
  const namesOfDay = db.query<{ name: string }, [number, string, string]>(
    'SELECT name FROM click_dims WHERE link_id = ?1 AND day = ?2 AND dim = ?3',
  )
  const addTotals = db.query<unknown, [number, number, number]>(
    'UPDATE links SET clicks = clicks + ?1, bots = bots + ?2 WHERE id = ?3',
  )

  // At most MAX_NAMES names per link, day and dimension, then OTHER (see classify.ts): a name that has a
  // place keeps it and counts on; a new one takes a free place, the batch's busiest first; the clicks of
  // the rest go to OTHER. Reading the day's names costs at most MAX_NAMES + 1 rows of the primary key.
  function storeNames(linkId: number, day: string, dim: string, counts: Map<string, number>) {
    if (counts.size === 0) return
    const placed = new Set<string>()
    for (const r of namesOfDay.all(linkId, day, dim)) if (r.name !== OTHER) placed.add(r.name)
    const names = placed.size + counts.size > MAX_NAMES ? [...counts].sort((a, b) => b[1] - a[1]) : counts
    let rest = 0
    for (const [name, n] of names) {
      if (name !== OTHER && (placed.has(name) || placed.size < MAX_NAMES)) {
        placed.add(name)
        upsertDim.run(day, dim, name, n, linkId)
      } else rest += n
    }
    if (rest > 0) upsertDim.run(day, dim, OTHER, rest, linkId)
  }

  const write = db.transaction((batch: ClickBatch) => {
    for (const [linkId, days] of batch) {
      let clicks = 0
      let bots = 0
      for (const [dayNumber, d] of days) {
        const day = dayOf(dayNumber * DAY_MS)
        upsertDay.run(day, d.clicks, d.bots, linkId)
        for (const dim of DIMENSIONS) storeNames(linkId, day, dim, d.dims[dim])
        clicks += d.clicks
        bots += d.bots
      }
      addTotals.run(clicks, bots, linkId)
    }
  })

  return {
    /** Writes one batch in one transaction (throws, writing nothing, when the database cannot be written). */
    write: (batch: ClickBatch) => void write(batch),
  }
}
