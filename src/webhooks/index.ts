export { webhookEventDocs } from './event-docs'
