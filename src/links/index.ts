// The links feature's public face: what app/, cli/, other features and tests reach links by.
export type { LinkChanges, LinkRow, LinkStorage, NewLink } from './storage/contract'
export type { LinkGuard, LinkStorages, LinksOptions } from './feature'
export { createLinkService, type LinkService } from './service'
export type { LinkRecord } from './record'
export { LINK_CACHE_TTL_MS } from './cache'
export { codeKey, createDomains, type Domains } from './domains'
export { containsPattern, EXPORT_PAGE, MAX_FILTER_TAGS, MAX_SEARCH_LENGTH, type LinkSort } from './listing'
export type { LinkOrder, TagSummary } from './storage/contract'
export { TAG_CHANGE_MAX, TAGS_LISTED } from './tags'
export { IMPORTED_CODES_MAX, type CreateLinkInput, type ImportSummary, type LinkDeps } from './service-inputs'
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
export {
  CONDITIONS,
  DEVICES,
  MAX_CONDITION_VALUES,
  MAX_JSON_CHARS,
  MAX_RULES,
  MAX_SPLIT,
  MAX_VISITS,
  MAX_WEIGHT,
  MIN_SPLIT,
  OS_NAMES,
  type Rule,
  type SplitArm,
} from './validate-routing'
export type { Checked, CheckedParam } from './check'
export type { AnonymousCreations } from './anonymous'
export {
  DEFAULT_IMPORT_MAX_ROWS,
  detectFormat,
  IMPORT_FORMATS,
  importLinks,
  MAX_IMPORT_BYTES,
  previewImport,
  recognisedFormat,
  SKIPPED_LISTED,
  type ImportFormat,
  type ImportResult,
  type PreviewRow,
  type Skipped,
} from './import'
export { csvField, csvLine, csvRecords } from './csv'
export { MAX_UTM_LENGTH, mergeUtm, UTM_PARAMS, type UtmParam, utmValuesOf } from './utm'
export { MAX_OG_DESCRIPTION_LENGTH, MAX_OG_TITLE_LENGTH } from './preview'
export { OG_IMAGE_MAX_BYTES } from './og-image'
