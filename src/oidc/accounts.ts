// Who a provider's person is in linkbox: the account linked to the issuer and `sub` (SPEC §7), made at the
// first sign-in and named from `preferred_username`; never found by name or e-mail (a name can be taken
// over at the provider, or by a password account here). `admin_groups`, when set, decides admin at each
// sign-in of a linked account: in one of the groups, admin; in none, not (an admin removed from the group
// at the provider loses it at the next sign-in). With no admin_groups, admin is left as linkbox has it.
import type { Db } from '../db'
import { createAccountStore } from '../accounts/store'
import { accountTarget, createAuditLog } from '../audit/service'
import { createIdentityStore } from './store'

/** What a sign-in learned from the provider (the ID token's claims, completed by UserInfo). */
export interface ProviderClaims {
  sub: string
  preferred_username?: unknown
  email?: unknown
  groups?: unknown
}

export type LinkResult =
  | { ok: true; accountId: number; name: string; admin: boolean; created: boolean }
  | { ok: false; reason: 'disabled'; name: string }

const MAX_NAME = 64

/**
 * An account name from what the provider calls the person: accents dropped, every character the account
 * rules refuse (letters, digits, . _ @ -, starting with a letter or digit, 64 at most) made a "-", room
 * left for a "-N" suffix. Falls back to the e-mail's local part, then to "user".
 */
export function accountNameFrom(preferred: unknown, email: unknown): string {
  const clean = (v: unknown) =>
    typeof v !== 'string'
      ? ''
      : v
          .normalize('NFKD')
          .replace(/[\u0300-\u036f]/g, '')
          .replace(/[^A-Za-z0-9._@-]+/g, '-')
          .replace(/-{2,}/g, '-')
          .replace(/^[^A-Za-z0-9]+/, '')
          .slice(0, MAX_NAME - 6)
          .replace(/[._@-]+$/, '')
  return clean(preferred) || clean(typeof email === 'string' ? email.split('@')[0] : '') || 'user'
}

/** The `groups` claim as a list of names: providers send a list, some a single string. */
export function groupsOf(claim: unknown): string[] {
  if (typeof claim === 'string') return [claim]
  if (Array.isArray(claim)) return claim.filter((g): g is string => typeof g === 'string')
  return []
}

export function createProviderAccounts(deps: { db: Db; clock: () => number; issuer: string; adminGroups: readonly string[] }) {
  const { db, clock, issuer, adminGroups } = deps
  const identities = createIdentityStore(db)
  const accounts = createAccountStore(db)
  // An account made, or its admin flag changed by the groups, is written to the audit log in the same transaction.
  const audit = createAuditLog(db, clock)
  const provider = { kind: 'system' as const, name: 'single sign-on' }

  /** base, base-2, base-3, …: the first name no account has (checked inside the caller's transaction). */
  function freeName(base: string): string {
    if (!identities.nameTaken(base)) return base
    for (let n = 2; ; n++) {
      const name = `${base}-${n}`
      if (!identities.nameTaken(name)) return name
    }
  }

  return {
    /**
     * The account for this person, made (or its admin flag brought in line with the groups) in one
     * transaction: two first sign-ins at once make one account, and no await sits between the read and
     * the write. A disabled account is not signed in.
     */
    link(claims: ProviderClaims, address: string): LinkResult {
      const groups = groupsOf(claims.groups)
      const admin = adminGroups.some((g) => groups.includes(g))
      const now = clock()
      return db.transaction((): LinkResult => {
        const known = identities.find(issuer, claims.sub)
        if (known) {
          const row = identities.account(known.account_id)!
          if (row.disabled !== null) return { ok: false, reason: 'disabled', name: row.name }
          identities.seen(issuer, claims.sub, now)
          const isAdmin = adminGroups.length > 0 ? admin : row.admin === 1
          if (isAdmin !== (row.admin === 1)) {
            identities.setAdmin(known.account_id, isAdmin)
            audit.record({ actor: provider, address }, { action: 'account.admin', target: accountTarget(row.name, known.account_id), detail: isAdmin ? 'made an admin by its groups at the provider' : 'no longer an admin: not in admin_groups at the provider' })
          }
          return { ok: true, accountId: known.account_id, name: row.name, admin: isAdmin, created: false }
        }
        const name = freeName(accountNameFrom(claims.preferred_username, claims.email))
        const account = accounts.insertAccount(name, null, admin, now)
        identities.insert(issuer, claims.sub, account.id, now)
        audit.record(
          { actor: { kind: 'account', id: account.id, name }, address },
          { action: 'account.create', target: accountTarget(name, account.id), detail: `first sign-in with the provider ${issuer}${admin ? ', admin by its groups' : ''}` },
        )
        return { ok: true, accountId: account.id, name, admin, created: true }
      })()
    },

    /** Whether an account was made by (is linked to) this provider: its sign-out may offer the provider's. */
    isLinked: (accountId: number) => identities.ofAccount(accountId)?.issuer === issuer,
  }
}
export type ProviderAccounts = ReturnType<typeof createProviderAccounts>
