// The mail feature's public face (minimal: what the dashboard and pages need; issue 37).
export { MAIL_LINK_TTL_MS } from './service'
export type { MailService } from './service'
