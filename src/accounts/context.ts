// What the account service's parts share: the storage, the audit row of a change, the clock and the key cache.
import type { AuditEntry, AuditRows, Who } from '../audit'
import type { Written } from '../db/written'
import type { AccountStorage } from './storage/contract'

/** What the account service is handed: the account storage and the audit log's insert, of one engine. */
export interface AccountServiceDeps<Tx> {
  accounts: AccountStorage<Tx>
  audit: Pick<AuditRows<Tx>, 'insert'>
}

export interface AccountContext<Tx> {
  store: AccountStorage<Tx>
  clock: () => number
  /** The audit row of a change, inside its transaction (on SQLite written, or thrown, before this returns). */
  record(tx: Tx, by: Who, entry: AuditEntry): Written<number>
  /** Drops every cached caller: after a change to keys or accounts has committed. */
  forgetKeys(): void
}

/** The account id of who asks, when it is an account (nobody disables or deletes their own). */
export const actorIdOf = (by: Who) => (by.actor.kind === 'account' ? by.actor.id : null)
