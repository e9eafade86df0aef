// Distinct visitors counted once across nodes (SPEC §11, issue 36): on PostgreSQL several nodes count the
// visitors of one link-day, each in its own memory (visitors.ts), so a visitor seen by two nodes would count
// twice. With the day's key shared (day-keys.ts) a visitor has one hash on every node, and the hashes new to
// a node while its link-day is counted exactly (the first EXACT_MAX) go here instead of to the click batch:
// every second they are inserted into visitor_hashes (migration 20) with ON CONFLICT DO NOTHING, and each
// link-day's visitors grow by the rows that were new to the database, in the same transaction. Past
// EXACT_MAX a link-day's visitors are estimated per node and added (a visitor of a busy link-day seen by two
// nodes may count twice, never less). Hashes of days before yesterday are deleted (their key is gone too).
// Bounded: at most `max` hashes wait; past that (the database away for long) a node counts its own.
// SQLite has one node, whose memory already counts exactly: this is made on PostgreSQL only.
import type { Logger } from '../kernel/log'
import { DAY_MS } from './day-keys'

export interface SharedVisitorRows {
  /**
   * In one transaction: the hashes (link id, UTC day number, hash; flat triples) that no node stored yet,
   * and each link-day's visitors added to by those; rows of days before `keepFrom` removed.
   */
  add(triples: number[], keepFrom: number): Promise<void>
}

export function createSharedVisitors(deps: { rows: SharedVisitorRows; clock: () => number; log: Logger; max?: number; everyMs?: number }) {
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
      if (!failing) deps.log.warn('shared visitor counts could not be written; retrying', { error: err instanceof Error ? err.message : String(err) })
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
