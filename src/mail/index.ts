// The mail feature's public face: the feature, the service, its webhook event docs and the storage contract.
export { createMailFeature } from './feature'
export { MAIL_EVENT_DOCS } from './event-docs'
export { MAIL_LINK_TTL_MS, type MailService } from './service'
export type { MailboxRow, MessageStore } from './storage/contract'
