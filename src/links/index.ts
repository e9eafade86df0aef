// The links feature's public face (minimal: what the dashboard and pages need; issue 37).
export { csvExportResponse } from './export'
export { createPasswordGate } from './password-gate'
export type { Verifier } from './password-gate'
export { MAX_SEARCH_LENGTH } from './service'
export type { LinkRecord, LinkService, LinkSort } from './service'
export { breakable, csvTableOf, dayOf, statsBody, statsCsv, statsFor, windowOf } from './stats-view'
export {
  MAX_JSON_CHARS,
  MAX_RULES,
  MAX_SPLIT,
  MAX_TAG_LENGTH,
  MAX_TAGS,
  MAX_TITLE_LENGTH,
  MAX_VISITS,
  MIN_SPLIT,
  MODES,
} from './validate'
export type { AnonymousCreations } from './anonymous'
