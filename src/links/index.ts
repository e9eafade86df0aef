export { LINK_EVENT_DOCS } from './event-docs'
