// Click counts on PostgreSQL (see counts.ts for the contract), for any number of nodes writing at once.
//
// Counts are increments in the statement itself (INSERT … ON CONFLICT … DO UPDATE SET clicks = t.clicks +
// excluded.clicks; UPDATE links SET clicks = clicks + n): the server adds to the latest committed value, so
// two nodes flushing the same link-day both count. The names of a day or month (the `dims` JSON, capped by
// placeNames/placeByVolume) cannot be added by the server: they are decided here, read then written, so the
// read must be made under a lock that every other writer of the row waits for, held to commit. It is, twice
// over: the link's row in `links` is locked first (the increment), so the writers of one link take turns;
// and the day's or month's upsert locks that row and reads its `dims` with RETURNING, the newest committed
// version. Read any earlier (a plain SELECT before the locks), two nodes adding names to one day each
// write back what they read plus their own, one overwrites the other, and the day's names no longer add
// up to its clicks (test/db/click-counts.test.ts, "two nodes add new names to one link-day at once", fails so).
//
// Lock order, the same in every writer so that two of them never wait on each other in a circle: links by id,
// and per link its row in `links` first (the increment locks it: a concurrent delete of the link waits for
// this transaction, and a link already deleted updates no row and its clicks are dropped), then its days,
// then its months, each in ascending order; last, in the transaction of a batch's last part, the endpoints
// its link.clicked events are enqueued for (FOR KEY SHARE, queue-postgres.ts). store.ts (SQLite, one
// writer at a time) writes the events first; the rows written are the same.
//
// A month's names are summed from its days in the batch's order of days, as store.ts does, though the rows
// are locked in ascending order: placeByVolume breaks ties between equally busy names by that order, and
// the same batches must leave the same names on both engines.
import type { SQL, TransactionSQL } from 'bun'
import { postgresWebhookQueue } from '../webhooks/storage/postgres'
import type { ClickCounts } from './counts'
import {
  bump,
  DAY_MS,
  dayOf,
  decodeInParts,
  DIMENSIONS,
  LINKS_PER_COMMIT,
  mergeBatch,
  newDayCounts,
  parseDims,
  PartialWrite,
  placeByVolume,
  placeNames,
  stringifyDims,
  wholeMonths,
  type ClickBatch,
  type ClickEvent,
  type DayCounts,
  type StoredNames,
} from './store'

const hasNames = (d: DayCounts) => DIMENSIONS.some((dim) => d.dims[dim].size > 0)

function* inParts(batch: ClickBatch, links: number): Generator<ClickBatch> {
  const all = [...batch]
  for (let at = 0; at < all.length; at += links) yield new Map(all.slice(at, at + links))
}

export function postgresClickCounts(sql: SQL): ClickCounts {
  const queue = postgresWebhookQueue(sql)

  async function writeLinks(tx: TransactionSQL, part: ClickBatch) {
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
      // What each day stored of the batch's names (placed names and OTHER), for its month to add up.
      const placed = new Map<number, StoredNames>()
      for (const dayNumber of [...days.keys()].sort((a, b) => a - b)) {
        const d = days.get(dayNumber)!
        const day = dayOf(dayNumber * DAY_MS)
        const [row] = await tx`
          INSERT INTO click_days (link_id, day, clicks, bots, visitors) VALUES (${linkId}, ${day}, ${d.clicks}, ${d.bots}, ${d.visitors})
          ON CONFLICT (link_id, day) DO UPDATE SET clicks = click_days.clicks + excluded.clicks, bots = click_days.bots + excluded.bots,
            visitors = click_days.visitors + excluded.visitors
          RETURNING dims`
        if (!hasNames(d)) continue
        const held = parseDims(row.dims)
        const stored = {} as StoredNames
        for (const dim of DIMENSIONS) stored[dim] = placeNames(held[dim], d.dims[dim])
        placed.set(dayNumber, stored)
        await tx`UPDATE click_days SET dims = ${stringifyDims(held)} WHERE link_id = ${linkId} AND day = ${day}`
      }
      const months = new Map<string, DayCounts>()
      for (const [dayNumber, d] of days) {
        const key = dayOf(dayNumber * DAY_MS).slice(0, 7)
        let month = months.get(key)
        if (!month) months.set(key, (month = newDayCounts()))
        month.clicks += d.clicks
        month.bots += d.bots
        const stored = placed.get(dayNumber)
        if (stored) for (const dim of DIMENSIONS) for (const [name, n] of stored[dim]) bump(month.dims[dim], name, n)
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
  }

  /**
   * Each part in a transaction of its own, the events in the last one's (see store.ts writeParts): one part
   * ahead, to know which is the last. A part that fails is thrown with the parts after it and every event.
   */
  async function writeParts(parts: Generator<ClickBatch>, events: ClickEvent[] = []) {
    let next = parts.next()
    if (next.done && events.length > 0) next = { done: false, value: new Map() } // events alone
    while (!next.done) {
      const part = next.value
      next = parts.next()
      const last = next.done === true
      try {
        await sql.begin(async (tx) => {
          await writeLinks(tx, part)
          if (last)
            for (const e of events)
              await queue.enqueue(tx, { type: 'link.clicked', accountId: e.accountId, at: e.at, data: { clicks: e.clicks } }, e.at)
        })
      } catch (err) {
        if (!last) {
          mergeBatch(part, next.value)
          for (const rest of parts) mergeBatch(part, rest)
        }
        throw new PartialWrite(err, part, events)
      }
    }
  }

  return {
    add: (batch) => writeParts(inParts(batch, LINKS_PER_COMMIT)),
    addEncoded: (batch) => writeParts(decodeInParts(batch, LINKS_PER_COMMIT), batch.events),
    async days(linkId, from, to) {
      const rows = await sql`SELECT day, clicks, visitors FROM click_days WHERE link_id = ${linkId} AND day BETWEEN ${from} AND ${to} ORDER BY day`
      // bigint comes back as text from Bun.SQL; a day's clicks stay far below 2^53.
      return rows.map((r: { day: string; clicks: string; visitors: string }) => ({ day: r.day, clicks: Number(r.clicks), visitors: Number(r.visitors) }))
    },
    async names(linkId, from, to) {
      const out = parseDims('{}')
      const [firstMonth, lastMonth] = wholeMonths(from, to)
      // The rows store.ts reads, in one round trip: the whole months inside the window, and the days before
      // the first ('-00' sorts before every day of a month) and after the last ('-32' after every one).
      const rows: { dims: string }[] =
        firstMonth > lastMonth
          ? await sql`SELECT dims FROM click_days WHERE link_id = ${linkId} AND day BETWEEN ${from} AND ${to}`
          : await sql`
              SELECT dims FROM click_months WHERE link_id = ${linkId} AND month BETWEEN ${firstMonth} AND ${lastMonth}
              UNION ALL SELECT dims FROM click_days WHERE link_id = ${linkId} AND day BETWEEN ${from} AND ${`${firstMonth}-00`}
              UNION ALL SELECT dims FROM click_days WHERE link_id = ${linkId} AND day BETWEEN ${`${lastMonth}-32`} AND ${to}`
      for (const r of rows) parseDims(r.dims, out)
      return out
    },
  }
}
