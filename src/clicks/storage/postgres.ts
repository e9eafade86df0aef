// Click counts, day keys and shared visitor hashes on PostgreSQL, for any number of nodes writing at once: every
// count an increment in the statement, names read under row locks taken in one order (ARCHITECTURE, clicks).
import type { SQL, TransactionSQL } from 'bun'
import type { EventWriter } from '../../kernel/outbox'
import {
  DAY_MS,
  dayOf,
  decodeInParts,
  inParts,
  mergeBatch,
  newDayCounts,
  type ClickBatch,
  type ClickEvent,
  type DayCounts,
} from '../batch'
import {
  bump,
  DIMENSIONS,
  parseDims,
  placeByVolume,
  placeNames,
  stringifyDims,
  wholeMonths,
  type StoredNames,
} from '../names'
import {
  dayAndTotalOf,
  LINKS_PER_COMMIT,
  PartialWrite,
  type ClickCounts,
  type DayAndTotalRow,
  type DayKeyRows,
  type SharedVisitorRows,
} from './contract'

const hasNames = (d: DayCounts) => DIMENSIONS.some((dim) => d.dims[dim].size > 0)

/** `queue`: where link.clicked events are written in the last part's transaction (the root hands in webhooks'). */
export function postgresClickCounts(sql: SQL, queue: EventWriter<TransactionSQL>): ClickCounts {
  async function writeLinks(tx: TransactionSQL, part: ClickBatch) {
    for (const linkId of [...part.keys()].sort((a, b) => a - b)) {
      const days = part.get(linkId)!
      let clicks = 0
      let bots = 0
      for (const d of days.values()) {
        clicks += d.clicks
        bots += d.bots
      }
      const [live] =
        await tx`UPDATE links SET clicks = clicks + ${clicks}, bots = bots + ${bots} WHERE id = ${linkId} RETURNING id`
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
   * Each part in a transaction of its own, the events in the last one's (as storage/sqlite.ts writeParts): one part
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
              await queue.enqueue(
                tx,
                { type: 'link.clicked', accountId: e.accountId, at: e.at, data: { clicks: e.clicks } },
                e.at,
              )
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
      const rows =
        await sql`SELECT day, clicks, visitors FROM click_days WHERE link_id = ${linkId} AND day BETWEEN ${from} AND ${to} ORDER BY day`
      // bigint comes back as text from Bun.SQL; a day's clicks stay far below 2^53.
      return rows.map((r: { day: string; clicks: string; visitors: string }) => ({
        day: r.day,
        clicks: Number(r.clicks),
        visitors: Number(r.visitors),
      }))
    },
    async names(linkId, from, to) {
      const out = parseDims('{}')
      const [firstMonth, lastMonth] = wholeMonths(from, to)
      // The rows storage/sqlite.ts reads, in one round trip: the whole months inside the window, and the days before
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
    async dayAndTotal(linkId, day) {
      const [row] = await sql`
        SELECT l.clicks + l.bots AS total, d.clicks, d.bots, d.visitors, d.dims
          FROM links l LEFT JOIN click_days d ON d.link_id = l.id AND d.day = ${day} WHERE l.id = ${linkId}`
      return dayAndTotalOf(row as DayAndTotalRow | undefined)
    },
  }
}

// Two nodes making the same day's key at once both insert with ON CONFLICT DO NOTHING, then read the one row.
export function postgresDayKeyRows(sql: SQL): DayKeyRows {
  return {
    async ensure(day, fresh, keepFrom) {
      await sql`DELETE FROM day_keys WHERE day < ${keepFrom}`
      await sql`INSERT INTO day_keys (day, key) VALUES (${day}, ${fresh}) ON CONFLICT (day) DO NOTHING`
      const [r] = await sql`SELECT key FROM day_keys WHERE day = ${day}`
      return new Uint8Array(r.key as Uint8Array)
    },
  }
}

// Rows inserted, and click_days added to, in (link, day, hash) order, as the click writer takes link-days in
// (link, day) order, so that two nodes writing at once wait for each other rather than deadlock.
export function postgresSharedVisitorRows(sql: SQL): SharedVisitorRows {
  return {
    async add(triples, keepFrom) {
      const links: number[] = []
      const days: number[] = []
      const hashes: number[] = []
      for (let i = 0; i < triples.length; i += 3) {
        links.push(triples[i]!)
        days.push(triples[i + 1]!)
        hashes.push(triples[i + 2]!)
      }
      await sql.begin(async (tx) => {
        const fresh = await tx`
          INSERT INTO visitor_hashes (link_id, day, hash)
            SELECT u.link_id, u.day, u.hash FROM unnest(${links}::bigint[], ${days}::bigint[], ${hashes}::bigint[]) AS u(link_id, day, hash)
            JOIN links l ON l.id = u.link_id ORDER BY 1, 2, 3
          ON CONFLICT DO NOTHING RETURNING link_id, day`
        const counts = new Map<string, { link: number; day: string; n: number }>()
        for (const r of fresh) {
          const day = dayOf(Number(r.day) * DAY_MS)
          const key = `${r.link_id} ${day}`
          const c = counts.get(key)
          if (c) c.n++
          else counts.set(key, { link: Number(r.link_id), day, n: 1 })
        }
        const rows = [...counts.values()].sort((a, b) => a.link - b.link || (a.day < b.day ? -1 : 1))
        for (const c of rows)
          await tx`INSERT INTO click_days (link_id, day, visitors) VALUES (${c.link}, ${c.day}, ${c.n})
                   ON CONFLICT (link_id, day) DO UPDATE SET visitors = click_days.visitors + excluded.visitors`
        await tx`DELETE FROM visitor_hashes WHERE day < ${keepFrom}`
      })
    },
  }
}
