// One import at a time per account, on every node (SPEC §2a): the import lock of the link service, and the
// one links.imported event written in the transaction that frees it.
import type { Caller } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import type { EventType } from '../kernel/outbox'
import { IMPORTED_CODES_MAX, type ImportSummary } from './service-inputs'
import type { LinkStorage } from './storage/contract'

interface EventWriter<Tx> {
  write(tx: Tx, type: EventType, accountId: number | null, data: () => Record<string, unknown>, at: number): unknown
  wake(): void
}

export function importLock<Tx>(deps: {
  store: LinkStorage<Tx>
  clock: () => number
  eventWriter: () => EventWriter<Tx>
}) {
  const { store, clock, eventWriter } = deps
  return {
    /**
     * One import at a time per account, on every node (SPEC §2a): the account's import lock taken for
     * `holder` for `leaseMs`, or 429 rate_limited with Retry-After while another import holds it.
     */
    async claimImport(caller: Caller, holder: string, leaseMs: number) {
      const now = clock()
      if (await store.claimImport(caller.accountId, holder, now + leaseMs, now)) return
      const until = (await store.importUntil(caller.accountId)) ?? now + 1000
      // The lease's end is only a bound (an import of 50,000 rows takes a few seconds): at most 10 s.
      const wait = Math.min(Math.max(1, Math.ceil((until - now) / 1000)), 10)
      throw new AppError(
        429,
        'rate_limited',
        `Another import of this account is under way: one import at a time; try again in ${wait} s.`,
        { 'Retry-After': String(wait) },
      )
    },
    /** Keeps the lock while the import runs; false when it was lost (its lease ran out and another took it). */
    renewImport: (caller: Caller, holder: string, leaseMs: number) =>
      store.renewImport(caller.accountId, holder, clock() + leaseMs),
    /** Frees the lock and, in the same transaction, writes the import's one links.imported event (SPEC §9). */
    async finishImport(caller: Caller, holder: string, summary: ImportSummary | null) {
      const event = eventWriter()
      const at = clock()
      await store.releaseImport(
        caller.accountId,
        holder,
        summary
          ? (tx) =>
              event.write(
                tx,
                'links.imported',
                caller.accountId,
                () => ({
                  account: caller.accountName,
                  created: summary.created,
                  skipped: summary.skipped,
                  codes: summary.codes.slice(0, IMPORTED_CODES_MAX),
                }),
                at,
              )
          : undefined,
      )
      event.wake()
    },
  }
}
