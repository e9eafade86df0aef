// The mail feature's public face: the service, its webhook event docs and the storage contract.
export { MAIL_EVENT_DOCS } from './event-docs'
export { MAIL_LINK_TTL_MS } from './downloads'
export type { MailService } from './service'
export type { MailboxRow, MessageStore } from './storage/contract'
