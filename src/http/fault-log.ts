// Faults (errors nobody expected) are logged with their stack for the operator — but a client that can
// trigger one at will must not be able to fill the disk with them: at most `perMinute` are written a
// minute, and the next line written says how many were left out meanwhile.
import { log } from '../log'
export function createFaultLog(opts: { perMinute?: number; clock?: () => number; write?: (...args: unknown[]) => void } = {}) {
  const perMinute = opts.perMinute ?? 10
  const clock = opts.clock ?? Date.now
  // By default into the service's log at level error, with the stack (see log.ts fault()).
  const write = opts.write ?? ((what: unknown, err?: unknown) => (err === undefined ? log.error(String(what)) : log.fault(String(what).replace(/:$/, ''), err)))
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
        write(`(${suppressed} more faults were not logged in the last minute)`)
        suppressed = 0
      }
      write(`${what}:`, err)
    },
    get suppressed() {
      return suppressed
    },
  }
}
export type FaultLog = ReturnType<typeof createFaultLog>

/** The process's fault log: every unexpected error an answer hides goes through it. */
export const faultLog = createFaultLog()
