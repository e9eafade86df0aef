// Who is calling: an account reached through an API key, the marketplace route or a dashboard session. The
// API pipeline (web/api.ts) asks an Authenticator for it; the accounts feature is the one that answers.
export const SCOPES = ['links', 'qr', 'media', 'mail', 'webhooks'] as const
export type Scope = (typeof SCOPES)[number]

/** Who is calling: an account reached through a key or the marketplace route. */
export interface Caller {
  accountId: number
  accountName: string
  admin: boolean
  scopes: ReadonlySet<Scope>
  keyId: number | null
  /** dashboard: a signed-in browser session (all scopes of its account). */
  via: 'key' | 'marketplace' | 'dashboard'
}

/** What the API pipeline needs of accounts: a caller from a key, or from the marketplace's user header. */
export interface Authenticator {
  authenticate(rawKey: string): Promise<Caller | null>
  marketplaceCaller(user: string, address?: string): Promise<Caller>
}
