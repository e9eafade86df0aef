// The dashboard's public face: what the home page shares with it (the page frame, the
// session, one-time form tokens) and its storage contract.
export type { DashboardFeatureDeps } from './feature'
export { RepeatedForm } from './form-tokens'
export type { Session } from './sessions'
export { cookiesOf } from './page-helpers'
export type { Shell } from './shell'
export type {
  DashboardStorage,
  DashboardStores,
  FlashRows,
  FormTokenRows,
  PendingImportRows,
  SessionRows,
} from './storage/contract'
