// In-process events that later features (webhooks, metrics) subscribe to, so the link and mail
// services never need to know who listens.
import { log as rootLog, type Logger } from './log'
export interface EventMap {
  'link.created': { link: Record<string, unknown>; accountId: number | null }
  'link.updated': { link: Record<string, unknown>; accountId: number | null }
  'link.deleted': { hex: string; domain: string; accountId: number | null }
  'link.clicked': { hex: string; linkId: number; accountId: number | null; at: number }
  /** A message stored in a mailbox (once per mailbox it went to); `message` is its messages.json entry plus the address. */
  'mail.received': { accountId: number; message: Record<string, unknown> }
}

type Listener<K extends keyof EventMap> = (payload: EventMap[K]) => void

export function createEvents(log: Pick<Logger, 'fault'> = rootLog) {
  const listeners = new Map<keyof EventMap, Listener<any>[]>()
  return {
    on<K extends keyof EventMap>(type: K, listener: Listener<K>) {
      listeners.set(type, [...(listeners.get(type) ?? []), listener])
    },
    has(type: keyof EventMap) {
      return (listeners.get(type)?.length ?? 0) > 0
    },
    emit<K extends keyof EventMap>(type: K, payload: EventMap[K]) {
      for (const l of listeners.get(type) ?? []) {
        try {
          l(payload)
        } catch (err) {
          log.fault(`event listener for ${type} failed`, err)
        }
      }
    },
  }
}
export type Events = ReturnType<typeof createEvents>
