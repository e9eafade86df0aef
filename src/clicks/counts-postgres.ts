// Click counts on PostgreSQL (see counts.ts for the contract), for any number of nodes writing at once.
//
// Counts are increments in the statement itself (INSERT … ON CONFLICT … DO UPDATE SET clicks = t.clicks +
// excluded.clicks; UPDATE links SET clicks = clicks + n): the server adds to the latest committed value, so
// two nodes flushing the same link-day both count. The names of a day or month (the `dims` JSON, capped by
// placeNames/placeByVolume) cannot be added by the server: they are merged here, but only after that same
// upsert has locked the row (RETURNING dims reads it under the lock, held to commit), so no other writer
// changes them in between.
//
// Lock order, the same in every writer so that two of them never wait on each other in a circle: links by id,
// and per link its row in `links` first (the increment locks it: a concurrent delete of the link waits for
// this transaction, and a link already deleted updates no row and its clicks are dropped), then its days,
// then its months, each in ascending order.
import type { SQL } from 'bun'
import type { ClickCounts } from './counts'
import {
  bump,
  DAY_MS,
  dayOf,
  DIMENSIONS,
  LINKS_PER_COMMIT,
  mergeBatch,
  newDayCounts,
  parseDims,
  PartialWrite,
  placeByVolume,
  placeNames,
  stringifyDims,
  type ClickBatch,
  type DayCounts,
} from './store'

const hasNames = (d: DayCounts) => DIMENSIONS.some((dim) => d.dims[dim].size > 0)

export function postgresClickCounts(sql: SQL): ClickCounts {
  async function writePart(part: ClickBatch) {
    await sql.begin(async (tx) => {
      for (const linkId of [...part.keys()].sort((a, b) => a - b)) {
        const days = part.get(linkId)!
        let clicks = 0
        let bots = 0
        for (const d of days.values()) {
          clicks += d.clicks
          bots += d.bots
        }
        const [live] = await tx`UPDATE links SET clicks = clicks + ${clicks}, bots = bots + ${bots} WHERE id = ${linkId} RETURNING id`
        if (!live) continue
        const months = new Map<string, DayCounts>()
        for (const dayNumber of [...days.keys()].sort((a, b) => a - b)) {
          const d = days.get(dayNumber)!
          const day = dayOf(dayNumber * DAY_MS)
          const [row] = await tx`
            INSERT INTO click_days (link_id, day, clicks, bots, visitors) VALUES (${linkId}, ${day}, ${d.clicks}, ${d.bots}, ${d.visitors})
            ON CONFLICT (link_id, day) DO UPDATE SET clicks = click_days.clicks + excluded.clicks, bots = click_days.bots + excluded.bots,
              visitors = click_days.visitors + excluded.visitors
            RETURNING dims`
          const key = day.slice(0, 7)
          let month = months.get(key)
          if (!month) months.set(key, (month = newDayCounts()))
          month.clicks += d.clicks
          month.bots += d.bots
          if (!hasNames(d)) continue
          const held = parseDims(row.dims)
          for (const dim of DIMENSIONS) for (const [name, n] of placeNames(held[dim], d.dims[dim])) bump(month.dims[dim], name, n)
          await tx`UPDATE click_days SET dims = ${stringifyDims(held)} WHERE link_id = ${linkId} AND day = ${day}`
        }
        for (const key of [...months.keys()].sort()) {
          const m = months.get(key)!
          const [row] = await tx`
            INSERT INTO click_months (link_id, month, clicks, bots) VALUES (${linkId}, ${key}, ${m.clicks}, ${m.bots})
            ON CONFLICT (link_id, month) DO UPDATE SET clicks = click_months.clicks + excluded.clicks, bots = click_months.bots + excluded.bots
            RETURNING dims`
          if (!hasNames(m)) continue
          const held = parseDims(row.dims)
          for (const dim of DIMENSIONS) placeByVolume(held[dim], m.dims[dim])
          await tx`UPDATE click_months SET dims = ${stringifyDims(held)} WHERE link_id = ${linkId} AND month = ${key}`
        }
      }
    })
  }

  return {
    async add(batch) {
      const links = [...batch]
      for (let at = 0; at < links.length; at += LINKS_PER_COMMIT) {
        const part = new Map(links.slice(at, at + LINKS_PER_COMMIT))
        try {
          await writePart(part)
        } catch (err) {
          throw new PartialWrite(err, mergeBatch(part, new Map(links.slice(at + LINKS_PER_COMMIT))))
        }
      }
    },
    async days(linkId, from, to) {
      const rows = await sql`SELECT day, clicks, visitors FROM click_days WHERE link_id = ${linkId} AND day BETWEEN ${from} AND ${to} ORDER BY day`
      // bigint comes back as text from Bun.SQL; a day's clicks stay far below 2^53.
      return rows.map((r: { day: string; clicks: string; visitors: string }) => ({ day: r.day, clicks: Number(r.clicks), visitors: Number(r.visitors) }))
    },
  }
}
