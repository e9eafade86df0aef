// link.clicked events: at each flush, the link-days of accounts with a subscribed endpoint become one event per
// account, carried with the batch and committed in its last transaction; kept across failed writes, folded.
import { CLICK_ITEMS_PER_EVENT, DAY_MS, dayOf, type ClickEvent, type ClickItem } from './batch'
import type { Tally } from './tally'

/** What the recorder needs of the webhook outbox (app.ts wires it to webhooks/outbox.ts). */
export interface ClickWebhooks {
  /** Cheap: whether an enabled endpoint of the account subscribes to link.clicked. */
  wanted(accountId: number): boolean
  /** After a batch that carried events committed: wakes the deliverer. */
  written(): void
  /** The events' timestamp (the app's clock). */
  now(): number
}

/**
 * The link.clicked events of a tally: its link-days' clicks not yet reported, for the accounts that want
 * them, one event per account (split at CLICK_ITEMS_PER_EVENT items). The look-up is made once per account.
 */
export function clickEvents(t: Tally, hooks: ClickWebhooks): ClickEvent[] {
  let wanted: Map<number, ClickItem[] | null> | null = null
  for (const e of t.entries.values()) {
    if (e.account < 0) continue
    wanted ??= new Map()
    let items = wanted.get(e.account)
    if (items === undefined) wanted.set(e.account, (items = hooks.wanted(e.account) ? [] : null))
    if (items === null) continue
    const clicks = e.clicks - e.heldClicks
    const bots = e.bots - e.heldBots
    if (clicks + bots > 0) items.push({ hex: e.code, clicks, bots, day: dayOf(e.day * DAY_MS) })
  }
  const events: ClickEvent[] = []
  if (!wanted) return events
  const at = hooks.now()
  for (const [accountId, items] of wanted)
    for (let i = 0; items && i < items.length; i += CLICK_ITEMS_PER_EVENT)
      events.push({ accountId, at, clicks: items.slice(i, i + CLICK_ITEMS_PER_EVENT) })
  return events
}

/**
 * Events kept across failed writes, folded into one per account (split at CLICK_ITEMS_PER_EVENT items) with
 * each link-day's counts summed, at the time of the latest: while writes keep failing, what is kept
 * grows with the link-days clicked, not with the number of attempts.
 */
export function foldEvents(events: ClickEvent[]): ClickEvent[] {
  const byAccount = new Map<number, { at: number; items: Map<string, ClickItem> }>()
  for (const e of events) {
    let acc = byAccount.get(e.accountId)
    if (!acc) byAccount.set(e.accountId, (acc = { at: e.at, items: new Map() }))
    acc.at = Math.max(acc.at, e.at)
    for (const item of e.clicks) {
      const key = `${item.hex}\u0000${item.day}`
      const held = acc.items.get(key)
      if (held) {
        held.clicks += item.clicks
        held.bots += item.bots
      } else acc.items.set(key, { ...item })
    }
  }
  const out: ClickEvent[] = []
  for (const [accountId, { at, items }] of byAccount) {
    const all = [...items.values()]
    for (let i = 0; i < all.length; i += CLICK_ITEMS_PER_EVENT)
      out.push({ accountId, at, clicks: all.slice(i, i + CLICK_ITEMS_PER_EVENT) })
  }
  return out
}
