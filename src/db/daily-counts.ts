// rate.anon_per_day counted in the database (daily_counts, migration 20): one row per scope, caller and UTC day.
// The limiter over it is web/daily-limit.ts; the rows are db/sqlite/daily-counts.ts and db/postgres/daily-counts.ts.
export interface DailyCountRows {
  /** One more use of (scope, who, day) while under `limit`: the count after it, or null (refused, not counted). */
  hit(scope: string, who: string, day: number, limit: number): Promise<number | null>
  /** Rows of days before `day` (up to 5,000 a call); how many. */
  sweep(day: number): Promise<number>
}
