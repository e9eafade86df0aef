// The day keys on PostgreSQL (see day-keys.ts): two nodes making the same day's key at once both insert with
// ON CONFLICT DO NOTHING (the second waits for the first's commit and does nothing), then both read the one row.
import type { SQL } from 'bun'
import type { DayKeyRows } from './day-keys'

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
