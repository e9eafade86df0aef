// Single sign-on's identities (oidc_identities) behind one async interface, on either engine (issue 22, SPEC
// §11): which account a provider's person is, and the account made at their first sign-in. The SQLite
// implementation wraps the synchronous stores (store.ts, accounts/store.ts) as they are, in the transaction
// of accounts.ts's link(); the PostgreSQL one is identities-postgres.ts. One test suite
// (test/db/account-storage.test.ts) runs against both.
//
// What both promise: link() finds the person's account, or makes it, in ONE transaction; two nodes seeing
// the same new subject at once make one account (the second signs in to it). A new account takes the first
// free name of base, base-2, base-3, … A known person's admin flag is set to `admin` when it is given (the
// provider's groups decide) and left as it is when it is null; a disabled account is not signed in and
// nothing is written. `within` runs in the transaction after the writes (the audit rows; on SQLite it must
// be synchronous).
//
// The service (accounts.ts) uses this interface only, with the audit rows written in `within`.
import type { Db } from '../db/sqlite'
import { createAccountStore } from '../accounts/store'
import { createIdentityStore, type IdentityRow } from './store'

export type { IdentityRow } from './store'

export interface SignIn {
  issuer: string
  sub: string
  /** The name wanted for a new account (accountNameFrom): taken as it is when free, else with -2, -3, … */
  name: string
  /** What the provider's groups say (null: no admin_groups, leave admin as linkbox has it; a new account is not one). */
  admin: boolean | null
  now: number
}

export type Linked =
  | { outcome: 'created'; accountId: number; name: string; admin: boolean }
  | { outcome: 'signed_in'; accountId: number; name: string; admin: boolean; adminBefore: boolean }
  | { outcome: 'disabled'; accountId: number; name: string }

export interface IdentityStorage<Tx> {
  find(issuer: string, sub: string): Promise<IdentityRow | null>
  /** The identity linked to the account (null: none: a password account). */
  ofAccount(accountId: number): Promise<IdentityRow | null>
  /** The person's account, made at the first sign-in; `within` runs for 'created' and 'signed_in'. */
  link(input: SignIn, within?: (tx: Tx, linked: Linked) => unknown): Promise<Linked>
}

/** The SQLite identity store as it is, behind the async interface: link() is accounts.ts's transaction. */
export function sqliteIdentityStorage(db: Db): IdentityStorage<Db> {
  const identities = createIdentityStore(db)
  const accounts = createAccountStore(db)

  function freeName(base: string): string {
    if (!identities.nameTaken(base)) return base
    for (let n = 2; ; n++) {
      const name = `${base}-${n}`
      if (!identities.nameTaken(name)) return name
    }
  }

  return {
    find: async (issuer, sub) => identities.find(issuer, sub) ?? null,
    ofAccount: async (accountId) => identities.ofAccount(accountId) ?? null,
    async link(input, within) {
      return db.transaction((): Linked => {
        const known = identities.find(input.issuer, input.sub)
        if (known) {
          const row = identities.account(known.account_id)!
          if (row.disabled !== null) return { outcome: 'disabled', accountId: known.account_id, name: row.name }
          identities.seen(input.issuer, input.sub, input.now)
          const adminBefore = row.admin === 1
          const admin = input.admin ?? adminBefore
          if (admin !== adminBefore) identities.setAdmin(known.account_id, admin)
          const linked: Linked = { outcome: 'signed_in', accountId: known.account_id, name: row.name, admin, adminBefore }
          within?.(db, linked)
          return linked
        }
        const name = freeName(input.name)
        const admin = input.admin ?? false
        const account = accounts.insertAccount(name, null, admin, input.now)
        identities.insert(input.issuer, input.sub, account.id, input.now)
        const linked: Linked = { outcome: 'created', accountId: account.id, name, admin }
        within?.(db, linked)
        return linked
      })()
    },
  }
}
