// The abuse feature's public face: what app/, cli/, other features and tests reach abuse by.
export { BAN_TOPIC, CLOSE_ACTIONS, LINK_LIST_SHOWS, LINK_LIST_SORTS, REPORT_REASONS } from './storage/contract'
export type {
  AbuseRows,
  BanRow,
  CloseAction,
  LinkListQuery,
  LinkListShow,
  LinkListSort,
  ListedLink,
  OpenReport,
  ReportReason,
  ReportRow,
} from './storage/contract'
export { createAbuseService, MAX_REPORT_TEXT, type AbuseService, type Verdict } from './service'
export { ABUSE_EVENT_DOCS } from './event-docs'
export { loadBlocklist } from './blocklist'
