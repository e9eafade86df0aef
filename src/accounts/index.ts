// The accounts feature's public face: the account service, key rules and the storage contract.
export { ACCOUNT_PAGE_MAX } from './account-changes'
export type { AccountServiceDeps } from './context'
export {
  hashKey,
  MAX_ACTIVE_KEYS,
  MAX_LABEL_LENGTH,
  parseScopes,
  printable,
  randomBase62,
  REVOKED_KEYS_KEPT,
  validateLabel,
} from './keys'
export { createAccountService, type AccountService } from './service'
export { ACCOUNT_TOPIC, nameFolds } from './storage/contract'
export type {
  AccountReads,
  AccountRow,
  AccountStorage,
  AccountSummaryRow,
  Disabled,
  KeyRow,
  KeyWithAccount,
  NewAccount,
  NewKey,
  Refusal,
} from './storage/contract'
export { ACCOUNT_NAME_LOCK_CLASS, lockAccountName } from './storage/name-lock'
