// The links feature's public face: what app/, cli/, other features and tests reach links by.
export type { LinkChanges, LinkRow, LinkStorage, NewLink } from './storage/contract'
export type { LinkGuard, LinkStorages, LinksOptions } from './feature'
export {
  containsPattern,
  createLinkService,
  EXPORT_PAGE,
  IMPORTED_CODES_MAX,
  LINK_CACHE_TTL_MS,
  MAX_SEARCH_LENGTH,
  type CreateLinkInput,
  type ImportSummary,
  type LinkDeps,
  type LinkRecord,
  type LinkService,
  type LinkSort,
} from './service'
export { LinkRecordSchema } from './api'
export type { VisitGate } from './visit'
export { reportPath } from './visit-pages'
export type { Verifier } from './password-gate'
export { MAX_URL_LENGTH } from './validate'
export { LINK_EVENT_DOCS } from './event-docs'
export { csvExportResponse } from './export'
export { createPasswordGate } from './password-gate'
export { breakable, csvTableOf, dayOf, statsBody, statsCsv, statsFor, windowOf } from './stats-view'
export { MAX_TAG_LENGTH, MAX_TAGS, MAX_TITLE_LENGTH, MODES } from './validate'
export { MAX_JSON_CHARS, MAX_RULES, MAX_SPLIT, MAX_VISITS, MIN_SPLIT } from './validate-routing'
export type { AnonymousCreations } from './anonymous'
export { IMPORT_FORMATS, importLinks, MAX_IMPORT_BYTES } from './import'
