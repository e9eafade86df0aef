// The account service: accounts and API keys on either engine, each change ONE storage decision with its audit
// row written by `within` in the same transaction; an API request with a cached key never waits on the database.
import { accountTarget, auditRow } from '../audit'
import type { Caller, Scope } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import { accountChanges } from './account-changes'
import type { AccountContext, AccountServiceDeps } from './context'
import { createKeyCache } from './key-cache'
import { keyChanges } from './key-changes'
import { hashKey } from './keys'

/**
 * `by` (each change's last argument) says who makes it: the dashboard's session, the API's caller, the CLI.
 * Without one the row names the service itself (SYSTEM): what tests do to set up accounts.
 */
export function createAccountService<Tx>(deps: AccountServiceDeps<Tx>, clock: () => number = Date.now) {
  const store = deps.accounts
  const cache = createKeyCache(store)
  const context: AccountContext<Tx> = {
    store,
    clock,
    record: (tx, by, entry) => deps.audit.insert(tx, auditRow(by, entry, clock())),
    forgetKeys: cache.forget,
  }
  const lastTouched = new Map<number, number>()

  return {
    ...accountChanges(context),
    ...keyChanges(context),

    /** The caller for a raw key, or null when the key is unknown or revoked. */
    async authenticate(rawKey: string): Promise<Caller | null> {
      if (rawKey.length > 200) return null
      const now = clock()
      const caller = await cache.callerByHash(hashKey(rawKey), now)
      if (!caller) return null
      const id = caller.keyId!
      // last_used is informative: write it at most once a minute per key, not on every request, and never
      // wait for it. Best effort: a database that cannot be written (full disk) must not lock every key out.
      if (now - (lastTouched.get(id) ?? 0) > 60_000) {
        lastTouched.set(id, now)
        store.touchKey(id, now).catch(() => {})
      }
      return caller
    },

    /** The account behind a marketplace user, created on first use; it has the marketplace scopes. */
    async marketplaceCaller(user: string, address = ''): Promise<Caller> {
      const name = `marketplace:${user}`
      let account = await store.accountByName(name)
      if (!account) {
        const made = await store.createAccount(
          { name, passwordHash: null, admin: false, now: clock(), key: null },
          (tx, row) =>
            context.record(
              tx,
              { actor: { kind: 'system', name: 'marketplace' }, address },
              {
                action: 'account.create',
                target: accountTarget(name, row.id),
                detail: 'a marketplace user, on first use',
              },
            ),
        )
        // Made at the same moment by another request: that one is the account.
        account = made.ok ? made.account : await store.accountByName(name)
        if (!account) throw new AppError(503, 'unavailable', 'The marketplace account could not be made: try again.')
      }
      if (account.disabled !== null)
        throw new AppError(403, 'account_disabled', 'This account has been disabled by an administrator.')
      return {
        accountId: account.id,
        accountName: name,
        admin: false,
        scopes: new Set<Scope>(['qr', 'media', 'mail']),
        keyId: null,
        via: 'marketplace',
      }
    },
  }
}
export type AccountService = ReturnType<typeof createAccountService>
