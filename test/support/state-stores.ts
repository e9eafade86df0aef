// The stores of issue 36 item 2 and the services over them, in one import for test/state-storage.test.ts.
export { createDayKeys, sqliteDayKeyRows, type DayKeyRows } from '../../src/clicks/day-keys'
export { postgresDayKeyRows } from '../../src/clicks/day-keys-postgres'
export { createSharedDailyLimiter, sqliteDailyCountRows, type DailyCountRows } from '../../src/web/daily-limit'
export { postgresDailyCountRows } from '../../src/web/daily-limit-postgres'
