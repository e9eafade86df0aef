// The shared visitor hashes on PostgreSQL (see shared-visitors.ts). The rows are inserted, and click_days
// added to, in (link, day, hash) order, as the click writer takes link-days in (link, day) order, so that two
// nodes writing at once wait for each other rather than deadlock. A link deleted meanwhile is skipped.
import type { SQL } from 'bun'
import { dayOf } from './store'
import { DAY_MS } from './day-keys'
import type { SharedVisitorRows } from './shared-visitors'

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
