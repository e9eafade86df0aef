// A message as messages.json lists it: from its row, or (a delivery, no read back) from what was parsed.
import { iso } from '../db/sqlite'
import type { ParsedFields, MessageSummaryRow } from './storage/contract'

export const summary = (r: MessageSummaryRow) => ({
  id: r.id,
  from: { address: r.from_address, name: r.from_name },
  subject: r.subject,
  date: iso(r.date),
  received: iso(r.received)!,
  size: r.size,
  seen: r.seen === 1,
  intro: r.intro,
  attachments: r.attachments,
})

/** A stored message as messages.json lists it, from what delivery knows (no read back). */
export function summaryOf(id: number, now: number, size: number, f: ParsedFields): MessageSummaryRow {
  return {
    id,
    received: now,
    size,
    seen: 0,
    from_address: f.from.address,
    from_name: f.from.name,
    subject: f.subject,
    date: f.date,
    intro: f.intro,
    attachments: f.attachments.length,
  }
}
