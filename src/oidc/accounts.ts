// Who a provider's person is in linkbox: the account linked to the issuer and `sub`, made at the first sign-in
// (never found by name or e-mail); admin_groups, when set, decide admin at each sign-in. Notes: ARCHITECTURE (oidc).
import { accountTarget, auditRow, type AuditRows } from '../audit'
import type { IdentityStorage } from './storage/contract'

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

/** What single sign-on's accounts are handed: the identity storage and the audit log's insert, of one engine. */
export interface ProviderStorages<Tx> {
  identities: IdentityStorage<Tx>
  audit: Pick<AuditRows<Tx>, 'insert'>
}

export function createProviderAccounts<Tx>(deps: {
  storages: ProviderStorages<Tx>
  clock: () => number
  issuer: string
  adminGroups: readonly string[]
}) {
  const { storages, clock, issuer, adminGroups } = deps
  const provider = { kind: 'system' as const, name: 'single sign-on' }

  return {
    /**
     * The account for this person, made (or its admin flag brought in line with the groups) in one decision of
     * the identity storage, with its audit row in the same transaction. A disabled account is not signed in.
     */
    async link(claims: ProviderClaims, address: string): Promise<LinkResult> {
      const groups = groupsOf(claims.groups)
      const admin = adminGroups.length > 0 ? adminGroups.some((g) => groups.includes(g)) : null
      const now = clock()
      const name = accountNameFrom(claims.preferred_username, claims.email)
      const linked = await storages.identities.link({ issuer, sub: claims.sub, name, admin, now }, (tx, l) => {
        if (l.outcome === 'created')
          return storages.audit.insert(
            tx,
            auditRow(
              { actor: { kind: 'account', id: l.accountId, name: l.name }, address },
              {
                action: 'account.create',
                target: accountTarget(l.name, l.accountId),
                detail: `first sign-in with the provider ${issuer}${l.admin ? ', admin by its groups' : ''}`,
              },
              now,
            ),
          )
        if (l.outcome === 'signed_in' && l.admin !== l.adminBefore)
          return storages.audit.insert(
            tx,
            auditRow(
              { actor: provider, address },
              {
                action: 'account.admin',
                target: accountTarget(l.name, l.accountId),
                detail: l.admin
                  ? 'made an admin by its groups at the provider'
                  : 'no longer an admin: not in admin_groups at the provider',
              },
              now,
            ),
          )
      })
      if (linked.outcome === 'disabled') return { ok: false, reason: 'disabled', name: linked.name }
      return {
        ok: true,
        accountId: linked.accountId,
        name: linked.name,
        admin: linked.admin,
        created: linked.outcome === 'created',
      }
    },

    /** Whether an account was made by (is linked to) this provider: its sign-out may offer the provider's. */
    isLinked: async (accountId: number) => (await storages.identities.ofAccount(accountId))?.issuer === issuer,
  }
}
export type ProviderAccounts = ReturnType<typeof createProviderAccounts>
