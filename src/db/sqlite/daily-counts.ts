// SQLite's daily counts (../daily-counts.ts): a use is one statement, so a refused use is not counted.
import type { Db } from './index'
import { lazyStatements } from './lazy'
import type { DailyCountRows } from '../daily-counts'

export function sqliteDailyCountRows(db: Db): DailyCountRows {
  const q = lazyStatements(db)
  const hit = q.query<{ count: number }, [string, string, number, number]>(
    `INSERT INTO daily_counts (scope, who, day, count) VALUES (?, ?, ?, 1)
     ON CONFLICT (scope, who, day) DO UPDATE SET count = count + 1 WHERE daily_counts.count < ?4 RETURNING count`,
  )
  const sweep = q.query<unknown, [number]>(
    'DELETE FROM daily_counts WHERE (scope, who, day) IN (SELECT scope, who, day FROM daily_counts WHERE day < ? LIMIT 5000)',
  )
  return {
    hit: async (scope, who, day, limit) => hit.get(scope, who, day, limit)?.count ?? null,
    sweep: async (day) => sweep.run(day).changes,
  }
}
