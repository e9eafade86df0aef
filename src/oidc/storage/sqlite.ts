// Single sign-on's identities on SQLite (oidc_identities, migration 13): link() is one synchronous transaction.
import type { Db } from '../../db/sqlite'
import { syncWithin } from '../../db/sqlite/within'
import type { IdentityRow, IdentityStorage, Linked } from './contract'

export function sqliteIdentityStorage(db: Db): IdentityStorage<Db> {
  const find = db.query<IdentityRow, [string, string]>('SELECT * FROM oidc_identities WHERE issuer = ? AND sub = ?')
  const ofAccount = db.query<IdentityRow, [number]>('SELECT * FROM oidc_identities WHERE account_id = ?')
  const insert = db.query<unknown, [string, string, number, number, number]>(
    'INSERT INTO oidc_identities (issuer, sub, account_id, created, last_seen) VALUES (?, ?, ?, ?, ?)',
  )
  const seen = db.query<unknown, [number, string, string]>(
    'UPDATE oidc_identities SET last_seen = ? WHERE issuer = ? AND sub = ?',
  )
  const insertAccount = db.query<{ id: number }, [string, number, number]>(
    'INSERT INTO accounts (name, password_hash, admin, created) VALUES (?, NULL, ?, ?) RETURNING id',
  )
  const setAdmin = db.query<unknown, [number, number]>('UPDATE accounts SET admin = ? WHERE id = ?')
  const account = db.query<{ name: string; admin: number; disabled: number | null }, [number]>(
    'SELECT name, admin, disabled FROM accounts WHERE id = ?',
  )
  // In any case (accounts' nameFolds): the provider's Carol is not made beside a carol.
  const nameTaken = db.query<{ n: number }, [string]>('SELECT count(*) AS n FROM accounts WHERE lower(name) = lower(?)')

  /** The first free name of base, base-2, base-3, … */
  function freeName(base: string): string {
    if (nameTaken.get(base)!.n === 0) return base
    for (let n = 2; ; n++) {
      const name = `${base}-${n}`
      if (nameTaken.get(name)!.n === 0) return name
    }
  }

  return {
    find: async (issuer, sub) => find.get(issuer, sub) ?? null,
    ofAccount: async (accountId) => ofAccount.get(accountId) ?? null,
    async link(input, within) {
      return db.transaction((): Linked => {
        const known = find.get(input.issuer, input.sub)
        if (known) {
          const row = account.get(known.account_id)!
          if (row.disabled !== null) return { outcome: 'disabled', accountId: known.account_id, name: row.name }
          seen.run(input.now, input.issuer, input.sub)
          const adminBefore = row.admin === 1
          const admin = input.admin ?? adminBefore
          if (admin !== adminBefore) setAdmin.run(admin ? 1 : 0, known.account_id)
          const linked: Linked = {
            outcome: 'signed_in',
            accountId: known.account_id,
            name: row.name,
            admin,
            adminBefore,
          }
          if (within) syncWithin(within(db, linked))
          return linked
        }
        const name = freeName(input.name)
        const admin = input.admin ?? false
        const accountId = insertAccount.get(name, admin ? 1 : 0, input.now)!.id
        insert.run(input.issuer, input.sub, accountId, input.now, input.now)
        const linked: Linked = { outcome: 'created', accountId, name, admin }
        if (within) syncWithin(within(db, linked))
        return linked
      })()
    },
  }
}
