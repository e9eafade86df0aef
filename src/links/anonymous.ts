// Who may create a link without a key (SPEC §12): nobody when links.anonymous is false, else an address at
// most rate.anon_per_day times a UTC day, one count for the API and the home form, kept in the database.
import type { Config } from '../kernel/config'
import { AppError, rateLimited } from '../kernel/errors'
import { rateKeyOf } from '../web/client-ip'
import type { DayKeys } from '../clicks'
import { createSharedDailyLimiter, type DailyCountRows } from '../web/daily-limit'

export const anonymousClosed = () =>
  new AppError(
    401,
    'missing_key',
    'This service does not create links without an API key: send one in the X-Api-Key header.',
  )

export function createAnonymousCreations(
  config: Config,
  clock: () => number,
  deps: { rows: DailyCountRows; dayKeys: DayKeys },
) {
  const perDay = createSharedDailyLimiter({
    rows: deps.rows,
    keyOf: async (day) => (await deps.dayKeys.keyFor(day)).counts,
    scope: 'anon',
    clock,
  })
  let refused = 0
  return {
    /** Throws 401 (closed) or 429 (the day's allowance used up) for an anonymous creation from `clientIp`. */
    async check(clientIp: string): Promise<void> {
      if (!config.links.anonymous) throw anonymousClosed()
      const d = await perDay.hit(rateKeyOf(clientIp), config.rate.anon_per_day)
      if (!d.allowed) {
        refused++
        const err = rateLimited(d.reset)
        throw new AppError(
          429,
          'rate_limited',
          `Too many links created from your address today (${d.limit} a day without a key): try again in ${d.reset} s, or use an API key.`,
          err.headers,
        )
      }
    },
    get refused() {
      return refused
    },
  }
}
export type AnonymousCreations = ReturnType<typeof createAnonymousCreations>
