// Delivery, as smtp.ts calls it: the recipients checked at RCPT, then a message stored for them (and its
// mail.received events enqueued in the same commit) before the client may hear 250.
import type { Config } from '../kernel/config'
import { allWritten, onWritten } from '../db/written'
import type { Events } from '../kernel/events'
import type { EventWriter, Outbox } from '../kernel/outbox'
import { parseMessage } from './parse'
import { takenSource, type Taken } from './spool'
import type { MailboxRow, MessageBody, MessageStore, StoredMessage } from './storage/contract'
import { summary, summaryOf } from './summary'

export const MAX_RECIPIENTS = 50

/** An SMTP reply for a refused recipient or message: the code and the text after it (enhanced code first). */
export class SmtpReply extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message)
    this.name = 'SmtpReply'
  }
}

export type RecipientCheck = { ok: true; mailboxId: number } | { ok: false; reply: SmtpReply }

export interface DeliveryDeps<Tx> {
  messages: MessageStore<Tx>
  queue: EventWriter<Tx>
  config: Config
  events: Events
  clock: () => number
  outbox?: Pick<Outbox, 'wanted' | 'wake'>
  /** After a commit that stored mail into these mailboxes (the held requests and live views, on every node). */
  announce: (mailboxIds: number[]) => void
  /** After any change of the totals (the gauges read them again). */
  totalsChanged: () => void
}

function domainOf(address: string) {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase()
}

export function createDelivery<Tx>({
  messages,
  queue,
  config,
  events,
  clock,
  outbox,
  announce,
  totalsChanged,
}: DeliveryDeps<Tx>) {
  const { domains, max_messages } = config.mail
  const live = (row: MailboxRow | null | undefined, now: number): row is MailboxRow => !!row && row.expires > now

  /** RCPT TO: a live mailbox with room → its id; else the reply (550 unknown or foreign, 452 full). */
  async function checkRecipient(rawAddress: string): Promise<RecipientCheck> {
    const address = rawAddress.toLowerCase()
    if (!domains.includes(domainOf(address)))
      return {
        ok: false,
        reply: new SmtpReply(550, `5.1.1 <${address}>: this server does not receive mail for that domain`),
      }
    const row = await messages.mailboxByAddress(address)
    if (!live(row, clock())) return { ok: false, reply: new SmtpReply(550, `5.1.1 <${address}>: no such mailbox here`) }
    if (row.messages >= max_messages)
      return { ok: false, reply: new SmtpReply(452, `4.2.2 <${address}>: mailbox full`) }
    return { ok: true, mailboxId: row.id }
  }

  let received = 0
  const inFlight = new Set<Promise<unknown>>()
  const shuttingDown = () => new SmtpReply(421, '4.3.2 the server is shutting down; try again later')

  /**
   * Stores a message for the mailboxes accepted at RCPT and resolves once it is durable and committed; only
   * then may the client hear 250. Each mailbox is checked again inside the store's transaction (it may have
   * expired or filled while the message arrived); when none can take it any more, a 452 is thrown and nothing
   * is kept. `abandon()` true (the server is closing) before the commit: nothing is kept either. The caller
   * (smtp.ts) discards the incoming message afterwards, whatever happened.
   */
  async function deliver(
    taken: Taken,
    envelopeFrom: string,
    mailboxIds: number[],
    abandon: () => boolean,
  ): Promise<number[]> {
    const work = (async () => {
      const parsed = await parseMessage(takenSource(taken), envelopeFrom)
      if (abandon()) throw shuttingDown()
      const f = parsed.fields
      const body = JSON.stringify({
        to: f.to,
        cc: f.cc,
        text: f.text,
        html: f.html,
        links: f.links,
      } satisfies MessageBody)
      const now = clock()
      /** mail.received, once per mailbox, with what events.emit sends below. */
      const eventOf = (s: StoredMessage) => ({ address: s.address, ...summary(summaryOf(s.id, now, taken.size, f)) })
      let heard = false
      const stored = await messages.storeMessage(
        { mailboxIds, received: now, maxMessages: max_messages, taken, fields: f, body, parts: parsed.parts },
        // In the delivery's transaction, before its commit (the bytes are written by then): closing meanwhile
        // undoes it; the events of the accounts that listen commit with the messages.
        (tx, rows) => {
          if (abandon()) throw shuttingDown()
          const wanted = rows.filter((s) => outbox?.wanted('mail.received', s.accountId))
          const writes = allWritten(
            wanted.map((s) =>
              queue.enqueue(tx, { type: 'mail.received', accountId: s.accountId, at: now, data: eventOf(s) }, now),
            ),
          )
          // Heard when deliveries were written (on PostgreSQL `wanted` may say yes to an account nobody listens for).
          return onWritten(writes, (ns) => void (heard = ns.some((n) => Number(n) > 0)))
        },
      )
      if (stored.length === 0)
        throw new SmtpReply(452, '4.2.2 the mailbox filled up or expired while the message arrived')
      if (heard) outbox?.wake()
      received += stored.length
      announce(stored.map((s) => s.mailboxId))
      totalsChanged()
      if (events.has('mail.received'))
        for (const s of stored) events.emit('mail.received', { accountId: s.accountId, message: eventOf(s) })
      return stored.map((s) => s.id)
    })()
    inFlight.add(work)
    work.then(
      () => inFlight.delete(work),
      () => inFlight.delete(work),
    )
    return work
  }

  return {
    checkRecipient,
    deliver,
    /** Messages stored since start (once per mailbox). */
    get received() {
      return received
    },
    /** Waits for deliveries in progress to commit (or give up, see deliver). */
    settled: () => Promise.allSettled([...inFlight]),
  }
}
