// The daily counts' rows on both engines and the limiter over them, in one import for test/db/state-storage.test.ts.
export { createSharedDailyLimiter, type DailyCountRows } from '../../src/web/daily-limit'
export { sqliteDailyCountRows } from '../../src/db/sqlite/daily-counts'
export { postgresDailyCountRows } from '../../src/db/postgres/daily-counts'
