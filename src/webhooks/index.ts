// The webhooks feature's public face.
export { createOutbox, createQueueOutbox, INDEX_MAX_AGE_MS } from './outbox'
export { webhookEventDocs } from './event-docs'
export { createWebhookService, MAX_ENDPOINTS, type WebhookService } from './service'
export { RETRY_SCHEDULE_MS, type Deliverer } from './deliverer'
// The click writer's thread writes link.clicked events with it, in its own flush's transaction (SQLite).
export { eventInserts } from './storage/sqlite'
export type {
  DeliveryDetail,
  EndpointRow,
  EndpointRows,
  NamedEndpoint,
  NewEvent,
  WebhookQueue,
} from './storage/contract'
