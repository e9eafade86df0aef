// Single sign-on's public face (minimal: what the dashboard needs; issue 37).
export { createProviderAccounts } from './accounts'
export { createOidcClient, describe, SignInRefused } from './client'
export type { PendingEntry, PendingSignIns } from './client'
export type { IdentityStorage } from './identities'
