// Single sign-on's public face: the provider client, the accounts of its people and the identity storage contract.
export {
  accountNameFrom,
  createProviderAccounts,
  groupsOf,
  type LinkResult,
  type ProviderAccounts,
  type ProviderClaims,
  type ProviderStorages,
} from './accounts'
export * from './client'
export type { IdentityRow, IdentityStorage, Linked, SignIn } from './storage/contract'
