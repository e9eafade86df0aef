// The webhook events a change can cause, and the outbox a feature writes them to in the change's own
// transaction. The webhooks feature implements the outbox (webhooks/outbox.ts); the root hands it to the
// features that cause events, so none of them imports webhooks.
export const EVENT_TYPES = [
  'link.created',
  'link.updated',
  'link.deleted',
  'link.clicked',
  'link.reported',
  'links.imported',
  'mail.received',
] as const
/** What an endpoint can subscribe to. */
export type SubscribableType = (typeof EVENT_TYPES)[number]
/** `webhook.test` is sent to one endpoint on request (linkbox webhook test), whatever it subscribes to. */
export type EventType = SubscribableType | 'webhook.test'
/** What an endpoint gets when `events` is not given: everything but the (busy, opt-in) clicks. */
export const DEFAULT_EVENTS: SubscribableType[] = EVENT_TYPES.filter((t) => t !== 'link.clicked')

export interface Outbox {
  /**
   * SQLite only. Call INSIDE the transaction of the change: writes the event and its pending deliveries, or
   * nothing when no enabled endpoint of the account subscribes to `type`. `at` is when the change happened
   * (default now).
   */
  enqueue(type: EventType, accountId: number | null, data: Record<string, unknown>, at?: number): void
  /** Cheap, synchronous: whether any enabled endpoint of the account may subscribe to `type` (the click path asks first). */
  wanted(type: EventType, accountId: number | null): boolean
  /** Reads the index again: after an endpoint is created, deleted, enabled or disabled. */
  reload(): void
  /** Called (after the commit, in a microtask) whenever events were enqueued: the deliverer's wake-up. */
  onEnqueued(listener: () => void): void
  /** After a commit that wrote events (or a redelivery): wakes the deliverer. */
  wake(): void
  /** Stops listening and its timers. */
  close(): void
}

/** An event as a change writes it (webhooks/storage stores it with one delivery per subscribed endpoint). */
export interface NewEvent {
  type: EventType
  accountId: number
  at: number
  data: Record<string, unknown>
}

/** What a feature needs of the webhook queue: write an event INSIDE its change's transaction `tx`. */
export interface EventWriter<Tx> {
  enqueue(tx: Tx, event: NewEvent, now: number): Promise<number>
}
