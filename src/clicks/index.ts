export { CLICK_EVENT_DOCS } from './event-docs'
