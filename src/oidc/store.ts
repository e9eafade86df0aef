// The SQL of single sign-on (oidc_identities, migration 13): which account a provider's person is.
import type { Db } from '../db/sqlite'

export interface IdentityRow {
  issuer: string
  sub: string
  account_id: number
  created: number
  last_seen: number
}

export function createIdentityStore(db: Db) {
  const find = db.query<IdentityRow, [string, string]>('SELECT * FROM oidc_identities WHERE issuer = ? AND sub = ?')
  const ofAccount = db.query<IdentityRow, [number]>('SELECT * FROM oidc_identities WHERE account_id = ?')
  const insert = db.query<unknown, [string, string, number, number, number]>(
    'INSERT INTO oidc_identities (issuer, sub, account_id, created, last_seen) VALUES (?, ?, ?, ?, ?)',
  )
  const seen = db.query<unknown, [number, string, string]>('UPDATE oidc_identities SET last_seen = ? WHERE issuer = ? AND sub = ?')
  const setAdmin = db.query<unknown, [number, number]>('UPDATE accounts SET admin = ? WHERE id = ?')
  const account = db.query<{ name: string; admin: number; disabled: number | null }, [number]>('SELECT name, admin, disabled FROM accounts WHERE id = ?')
  // In any case (accounts/store.ts nameFolds): the provider's Carol is not made beside a carol.
  const nameTaken = db.query<{ n: number }, [string]>('SELECT count(*) AS n FROM accounts WHERE lower(name) = lower(?)')
  return {
    find: (issuer: string, sub: string) => find.get(issuer, sub),
    ofAccount: (accountId: number) => ofAccount.get(accountId),
    insert: (issuer: string, sub: string, accountId: number, now: number) => insert.run(issuer, sub, accountId, now, now),
    seen: (issuer: string, sub: string, now: number) => seen.run(now, issuer, sub),
    setAdmin: (accountId: number, admin: boolean) => setAdmin.run(admin ? 1 : 0, accountId),
    account: (id: number) => account.get(id),
    nameTaken: (name: string) => nameTaken.get(name)!.n > 0,
  }
}
export type IdentityStore = ReturnType<typeof createIdentityStore>
