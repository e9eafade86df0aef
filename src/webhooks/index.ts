// The webhooks feature's public face (minimal: what the dashboard needs; issue 37).
export { MAX_ENDPOINTS } from './service'
export type { WebhookService } from './service'
