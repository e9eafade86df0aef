export { MAIL_EVENT_DOCS } from './event-docs'
