// The daily counts on PostgreSQL (../daily-counts.ts): a use is one upsert, so two nodes racing for the last
// use of a day give it once (the second waits for the first's row lock and then sees its count).
import type { SQL } from 'bun'
import type { DailyCountRows } from '../daily-counts'

export function postgresDailyCountRows(sql: SQL): DailyCountRows {
  return {
    async hit(scope, who, day, limit) {
      const [r] = await sql`INSERT INTO daily_counts (scope, who, day, count) VALUES (${scope}, ${who}, ${day}, 1)
        ON CONFLICT (scope, who, day) DO UPDATE SET count = daily_counts.count + 1 WHERE daily_counts.count < ${limit}
        RETURNING count`
      return r ? Number(r.count) : null
    },
    async sweep(day) {
      return (
        await sql`DELETE FROM daily_counts WHERE (scope, who, day) IN
          (SELECT scope, who, day FROM daily_counts WHERE day < ${day} LIMIT 5000 FOR UPDATE SKIP LOCKED)`
      ).count
    },
  }
}
