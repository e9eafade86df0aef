// Single sign-on's identities on PostgreSQL: link() holds an advisory lock keyed by the person, so two nodes
// seeing one new subject take turns and the second signs in to the first's account. Design notes: ARCHITECTURE (oidc).
import type { SQL, TransactionSQL } from 'bun'
import { lockAccountName } from '../../accounts'
import { int, text, type PgRow } from '../../db/postgres/rows'
import type { IdentityRow, IdentityStorage, Linked } from './contract'

/** The advisory lock class of sign-ins: "oidc" in ASCII. */
export const SIGN_IN_LOCK_CLASS = 0x6f696463

const identity = (r: PgRow): IdentityRow => ({
  issuer: text(r.issuer),
  sub: text(r.sub),
  account_id: int(r.account_id),
  created: int(r.created),
  last_seen: int(r.last_seen),
})

export function postgresIdentityStorage(sql: SQL): IdentityStorage<TransactionSQL> {
  return {
    async find(issuer, sub) {
      const [r] =
        await sql`SELECT issuer, sub, account_id, created, last_seen FROM oidc_identities WHERE issuer = ${issuer} AND sub = ${sub}`
      return r ? identity(r) : null
    },
    async ofAccount(accountId) {
      const [r] =
        await sql`SELECT issuer, sub, account_id, created, last_seen FROM oidc_identities WHERE account_id = ${accountId}`
      return r ? identity(r) : null
    },
    async link(input, within) {
      return sql.begin(async (tx): Promise<Linked> => {
        await tx`SELECT pg_advisory_xact_lock(${SIGN_IN_LOCK_CLASS}::int, hashtext(${`${input.issuer}\n${input.sub}`}))`
        const [known] =
          await tx`SELECT a.id, a.name, a.admin, a.disabled FROM oidc_identities i JOIN accounts a ON a.id = i.account_id
                                 WHERE i.issuer = ${input.issuer} AND i.sub = ${input.sub} FOR NO KEY UPDATE OF a`
        if (known) {
          const accountId = Number(known.id)
          if (known.disabled !== null) return { outcome: 'disabled', accountId, name: known.name }
          await tx`UPDATE oidc_identities SET last_seen = ${input.now} WHERE issuer = ${input.issuer} AND sub = ${input.sub}`
          const adminBefore = Number(known.admin) === 1
          const admin = input.admin ?? adminBefore
          if (admin !== adminBefore) await tx`UPDATE accounts SET admin = ${admin ? 1 : 0} WHERE id = ${accountId}`
          const linked: Linked = { outcome: 'signed_in', accountId, name: known.name, admin, adminBefore }
          if (within) await within(tx, linked)
          return linked
        }
        const admin = input.admin ?? false
        for (let n = 1; ; n++) {
          const name = n === 1 ? input.name : `${input.name}-${n}`
          // Names compare in any case: Carol is taken when carol exists (the lock: another node's Carol waits).
          if (await lockAccountName(tx, name)) continue
          const [made] =
            await tx`INSERT INTO accounts (name, password_hash, admin, created) VALUES (${name}, NULL, ${admin ? 1 : 0}, ${input.now})
                                  ON CONFLICT (name) DO NOTHING RETURNING id`
          if (!made) continue
          const accountId = Number(made.id)
          await tx`INSERT INTO oidc_identities (issuer, sub, account_id, created, last_seen) VALUES (${input.issuer}, ${input.sub}, ${accountId}, ${input.now}, ${input.now})`
          const linked: Linked = { outcome: 'created', accountId, name, admin }
          if (within) await within(tx, linked)
          return linked
        }
      })
    },
  }
}
