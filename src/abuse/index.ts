export { ABUSE_EVENT_DOCS } from './event-docs'
