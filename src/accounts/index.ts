// The accounts feature's public face (minimal: what the dashboard needs; issue 37).
export { ACCOUNT_PAGE_MAX, hashKey, printable } from './service'
export type { AccountService } from './service'
export type { AccountStorage } from './storage'
