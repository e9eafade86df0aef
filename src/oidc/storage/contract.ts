// Single sign-on's identities (oidc_identities) on either engine: which account a provider's person is. link()
// finds or makes it in ONE transaction (two nodes, one new subject: one account); `within` runs there after the
// writes (synchronous on SQLite). Design notes: ARCHITECTURE (oidc).

export interface IdentityRow {
  issuer: string
  sub: string
  account_id: number
  created: number
  last_seen: number
}

export interface SignIn {
  issuer: string
  sub: string
  /** The name wanted for a new account (accountNameFrom): taken as it is when free, else with -2, -3, … */
  name: string
  /** What the provider's groups say (null: no admin_groups: admin left as it is; a new account is not one). */
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
