// The stores of issue 36 item 2 and the services over them, in one import for test/state-storage.test.ts.
export { createFlash } from '../../src/dashboard/flash'
export { sqliteFlashRows, type FlashRows } from '../../src/dashboard/flash-rows'
export { postgresFlashRows } from '../../src/dashboard/flash-rows-postgres'
export { createSharedDailyLimiter, type DailyCountRows } from '../../src/web/daily-limit'
export { sqliteDailyCountRows } from '../../src/db/sqlite/daily-counts'
export { postgresDailyCountRows } from '../../src/db/postgres/daily-counts'
