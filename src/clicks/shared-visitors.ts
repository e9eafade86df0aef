// Distinct visitors counted once across nodes (PostgreSQL): hashes new to a node go to visitor_hashes every
// second (ARCHITECTURE, clicks). SQLite has one node, whose memory already counts exactly.
import type { Logger } from '../kernel/log'
import { DAY_MS } from './day-keys'
import type { SharedVisitorRows } from './storage/contract'

export function createSharedVisitors(deps: {
  rows: SharedVisitorRows
  clock: () => number
  log: Logger
  max?: number
  everyMs?: number
}) {
  const max = (deps.max ?? 100_000) * 3
  let pending: number[] = []
  let timer: ReturnType<typeof setInterval> | null = null
  let running: Promise<void> | null = null
  let failing = false

  async function write(): Promise<void> {
    if (pending.length === 0) return
    const batch = pending
    pending = []
    try {
      await deps.rows.add(batch, Math.floor(deps.clock() / DAY_MS) - 1)
      if (failing) deps.log.info('shared visitor counts are written again')
      failing = false
    } catch (err) {
      // Kept for the next attempt, within the bound (what does not fit is lost: an under-count of visitors only).
      pending = batch.concat(pending).slice(0, max)
      if (!failing)
        deps.log.warn('shared visitor counts could not be written; retrying', {
          error: err instanceof Error ? err.message : String(err),
        })
      failing = true
    }
  }
  const flush = () => (running ??= write().finally(() => (running = null)))

  return {
    /** Takes a visitor new to this node for the shared count; false when the queue is full (count it here). */
    take(linkId: number, day: number, hash: number): boolean {
      if (pending.length >= max) return false
      pending.push(linkId, day, hash)
      return true
    },
    flush,
    start() {
      timer ??= setInterval(() => void flush(), deps.everyMs ?? 1000)
      timer.unref?.()
    },
    async stop() {
      if (timer) clearInterval(timer)
      timer = null
      await running
      await flush()
    },
    get pending() {
      return pending.length / 3
    },
  }
}
export type SharedVisitors = ReturnType<typeof createSharedVisitors>
