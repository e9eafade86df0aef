// Faults (errors nobody expected) are logged with their stack for the operator — but a client that can
// trigger one at will must not be able to fill the disk with them: at most `perMinute` are written a
// minute, and the next line written says how many were left out meanwhile.
import type { Logger } from '../kernel/log'

/** The fault log of one app, written into its log at level error, with the stack (see log.ts fault()). */
export function createFaultLog(
  log: Pick<Logger, 'error' | 'fault'>,
  opts: { perMinute?: number; clock?: () => number } = {},
) {
  const perMinute = opts.perMinute ?? 10
  const clock = opts.clock ?? Date.now
  let windowStart = 0
  let written = 0
  let suppressed = 0
  return {
    fault(what: string, err: unknown) {
      const now = clock()
      if (now - windowStart >= 60_000) {
        windowStart = now
        written = 0
      }
      if (written >= perMinute) {
        suppressed++
        return
      }
      written++
      if (suppressed > 0) {
        log.error(`(${suppressed} more faults were not logged in the last minute)`)
        suppressed = 0
      }
      log.fault(what, err)
    },
    get suppressed() {
      return suppressed
    },
  }
}
export type FaultLog = ReturnType<typeof createFaultLog>
