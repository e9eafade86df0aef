// The webhooks feature's public face.
export { eventInserts } from './outbox'
