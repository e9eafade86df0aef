// The links feature's public face: what app/, cli/, other features and tests reach links by.
export type { LinkChanges, LinkRow, LinkStorage, NewLink } from './storage/contract'
export { createLinksFeature, type LinkGuard, type LinkStorages, type LinksOptions } from './feature'
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
export { reportPath, type VisitGate } from './visit'
export type { Verifier } from './password-gate'
export { MAX_URL_LENGTH } from './validate'
export { LINK_EVENT_DOCS } from './event-docs'
