// Temporary mail: the rules. Mailboxes belong to accounts and live for mail.mailbox_ttl seconds after their last
// use; SMTP delivers into them (delivery.ts), the API reads them; each check-then-write is one store decision.
import type { Caller } from '../kernel/caller'
import type { Config } from '../kernel/config'
import { iso } from '../db/sqlite'
import type { ChangeFeed } from '../db/changes'
import { AppError, notFound, notOwner } from '../kernel/errors'
import type { Events } from '../kernel/events'
import type { LinkSigner } from '../kernel/signing'
import type { EventWriter, Outbox } from '../kernel/outbox'
import { addressNormalizer, randomLocalPart } from './addresses'
import { createDelivery } from './delivery'
import { createDownloads } from './downloads'
import { createMailboxNotices, type WatchEvent } from './live'
import type { MailboxRow, MessageStore } from './storage/contract'
import { summary } from './summary'
import { createTotals } from './totals'

export { MAX_RECIPIENTS, SmtpReply, type RecipientCheck } from './delivery'
export { MAIL_TOPIC, MAX_WATCHERS, MAX_WATCHERS_PER_ACCOUNT } from './live'

export const MAX_WAIT_SECONDS = 60
export const LIST_LIMIT = { default: 200, max: 1000 }
/** Renewing the expiry is a write: done at most this often per mailbox, however often it is read. */
const RENEW_EVERY_MS = 60_000
/** The most messages one deletion names (the dashboard's selection; a mailbox holds mail.max_messages). */
export const MAX_DELETE_IDS = 1000
const SWEEP_BATCH = 200

export interface MailboxAnswer {
  address: string
  created: string
  expires: string
  messages: number
}

export interface MailServiceDeps<Tx> {
  /** Mailboxes, messages and their bytes (storage/contract.ts), and the queue the mail.received events go into. */
  messages: MessageStore<Tx>
  queue: EventWriter<Tx>
  config: Config
  signer: LinkSigner
  events: Events
  clock: () => number
  /** Who listens for mail.received (its index), and the deliverer's wake-up after a commit (absent: no webhooks). */
  outbox?: Pick<Outbox, 'wanted' | 'wake'>
  /** Changes between nodes: mailboxes changed anywhere wake this node's waiters and live views (absent: this process only). */
  changes?: ChangeFeed
}

export function createMailService<Tx>({
  messages,
  queue,
  config,
  signer,
  events,
  clock,
  outbox,
  changes,
}: MailServiceDeps<Tx>) {
  const { domains, mailbox_ttl } = config.mail
  const ttlMs = mailbox_ttl * 1000
  const base = config.server.base_url
  const notices = createMailboxNotices(changes)
  const { wake, waitForMail, announce, mailboxGone } = notices
  const totals = createTotals(messages)
  const totalsChanged = totals.changed
  const delivery = createDelivery({ messages, queue, config, events, clock, outbox, announce, totalsChanged })

  // ---------------------------------------------------------------------------------------------------
  // Addresses and mailboxes

  const normalizeAddress = addressNormalizer(domains)

  /** A write that a read does on the side (renewal, "seen"): a storage failure skips it, is remembered, and the read goes on. */
  async function bestEffort(write: () => Promise<unknown>): Promise<boolean> {
    try {
      await write()
      return true
    } catch (err) {
      if (err instanceof AppError && err.code === 'storage_unavailable') return false
      throw err
    }
  }

  const live = (row: MailboxRow | null | undefined, now: number): row is MailboxRow => !!row && row.expires > now

  const answer = (row: MailboxRow): MailboxAnswer => ({
    address: row.address,
    created: iso(row.created)!,
    expires: iso(row.expires)!,
    messages: row.messages,
  })

  const { signedUrl, download } = createDownloads({ messages, signer, clock, base, live })

  /** The caller's live mailbox at `address`; renews its expiry (at most once a minute). */
  async function owned(caller: Caller, input: string): Promise<MailboxRow> {
    const address = normalizeAddress(input)
    const now = clock()
    const row = await messages.mailboxByAddress(address)
    if (!live(row, now)) throw notFound(`There is no mailbox ${address} (it may have expired).`)
    if (row.account_id !== caller.accountId) throw notOwner('mailbox')
    if (row.expires - now < ttlMs - RENEW_EVERY_MS) {
      // A read must work on a database that cannot be written: the renewal then waits for a later read.
      if (await bestEffort(() => messages.renew(row.id, now + ttlMs))) row.expires = now + ttlMs
    }
    return row
  }

  /**
   * mailbox.json: the caller's mailbox at `address`, made when there is none (or only an expired one, whose
   * messages go with it). One decision of the store, in one transaction: two accounts (or two nodes) asking
   * for one name at once cannot both get it.
   */
  async function getOrCreate(caller: Caller, input: string | undefined, randomDomain?: string): Promise<MailboxAnswer> {
    const wanted = input?.trim() ? normalizeAddress(input) : null
    // A random name goes on the default domain, or on `randomDomain` (the dashboard's domain choice) when it is one of ours.
    const domain = randomDomain && domains.includes(randomDomain) ? randomDomain : domains[0]!
    const now = clock()
    const got = await messages.getOrCreate({
      address: wanted,
      draw: () => `${randomLocalPart()}@${domain}`,
      accountId: caller.accountId,
      now,
      expires: now + ttlMs,
    })
    if (got === 'taken') throw new AppError(403, 'address_taken', `The address ${wanted} belongs to another account.`)
    if (got.replaced !== null) mailboxGone([got.replaced])
    totalsChanged()
    return answer(got.mailbox)
  }

  /** The dashboard's live view of one of the caller's mailboxes: `listener` hears of every change until stop(). */
  async function watch(
    caller: Caller,
    address: string,
    listener: (e: WatchEvent) => void,
  ): Promise<{ mailbox: MailboxRow; stop: () => void }> {
    const box = await owned(caller, address)
    return { mailbox: box, stop: notices.watch(box.id, caller.accountId, listener) }
  }

  // ---------------------------------------------------------------------------------------------------
  // Reading

  async function listMessages(
    caller: Caller,
    input: { address: string; after?: number; limit?: number; wait?: number; signal?: AbortSignal },
  ) {
    const after = input.after ?? 0
    const limit = input.limit ?? LIST_LIMIT.default
    let box = await owned(caller, input.address)
    let rows = await messages.list(box.id, after, limit)
    if (rows.length === 0 && input.wait) {
      await waitForMail(box.id, caller.accountId, input.wait * 1000, input.signal ?? new AbortController().signal)
      // The mailbox may have gone (swept, or taken over after expiry) while we waited: read it again.
      const again = await messages.mailboxById(box.id)
      if (again && again.account_id === caller.accountId) {
        box = again
        rows = await messages.list(box.id, after, limit)
      }
    }
    return { address: box.address, messages: rows.map(summary) }
  }

  /** What a message's row names is gone (null from the store): deleted meanwhile means 404, like the row; else a fault. */
  async function vanished(messageId: number, address: string, what: string): Promise<never> {
    if (!(await messages.message(messageId))) throw notFound(`There is no message ${messageId} in ${address}.`)
    throw new Error(`mail: the ${what} of message ${messageId} is missing`)
  }

  async function readMessage(caller: Caller, input: { address: string; id: number }) {
    const box = await owned(caller, input.address)
    const row = await messages.message(input.id)
    if (!row || row.mailbox_id !== box.id) throw notFound(`There is no message ${input.id} in ${box.address}.`)
    const [attachments, body] = await Promise.all([messages.attachmentsOf(row.id), messages.body(row.blob)])
    // Deleted meanwhile (swept, or the mailbox taken over): gone, like the row.
    if (!body) return vanished(row.id, box.address, 'body')
    await bestEffort(() => messages.markSeen(row.id))
    const now = clock()
    const { id, from, subject, date, received, size } = summary(row)
    return {
      id,
      address: box.address,
      from,
      to: body.to,
      cc: body.cc,
      subject,
      date,
      received,
      size,
      seen: true,
      text: body.text,
      html: body.html,
      attachments: attachments.map((a) => ({
        id: a.id,
        filename: a.filename,
        content_type: a.content_type,
        size: a.size,
        url: signedUrl(`/mail/attachment/${a.id}`, `mail-attachment-${a.id}`, now),
      })),
      raw: signedUrl(`/mail/raw/${row.id}`, `mail-raw-${row.id}`, now),
      links: body.links,
    }
  }

  /** The number of unread messages in one of the caller's mailboxes (the dashboard's title). */
  async function unread(caller: Caller, address: string): Promise<number> {
    return messages.unread((await owned(caller, address)).id)
  }

  /**
   * The message as received, at most `maxBytes` of it (the dashboard shows its source and headers): the
   * bytes, its whole size, and whether they were cut.
   */
  async function source(caller: Caller, input: { address: string; id: number }, maxBytes: number) {
    const box = await owned(caller, input.address)
    const row = await messages.message(input.id)
    if (!row || row.mailbox_id !== box.id) throw notFound(`There is no message ${input.id} in ${box.address}.`)
    const bytes = await messages.head(row.blob, maxBytes)
    if (!bytes) return vanished(row.id, box.address, 'source')
    return { bytes: bytes.subarray(0, maxBytes), size: row.size, truncated: row.size > maxBytes }
  }

  /**
   * Deletes messages of one of the caller's mailboxes; the ids that were there (and are gone now). The store
   * checks the mailbox again inside its transaction (swept or taken over since the read: nothing is deleted),
   * deletes the rows, and after the commit the bytes no row names any more.
   */
  async function deleteMessages(caller: Caller, input: { address: string; ids: number[] }): Promise<number[]> {
    const box = await owned(caller, input.address)
    const ids = [...new Set(input.ids)].slice(0, MAX_DELETE_IDS)
    const gone = await messages.deleteMessages(box.id, caller.accountId, ids)
    if (gone.length) totalsChanged()
    return gone
  }

  /** message.json action=delete: `{id, deleted: true}`, or 404 when the mailbox has no such message. */
  async function deleteMessage(caller: Caller, input: { address: string; id: number }) {
    const gone = await deleteMessages(caller, { address: input.address, ids: [input.id] })
    if (gone.length === 0) throw notFound(`There is no message ${input.id} in ${normalizeAddress(input.address)}.`)
    return { id: input.id, deleted: true as const }
  }

  /** message.json action=seen / unseen: `{id, seen}`. */
  async function setSeen(caller: Caller, input: { address: string; id: number; seen: boolean }) {
    const box = await owned(caller, input.address)
    if (!(await messages.setSeen(input.id, box.id, input.seen)))
      throw notFound(`There is no message ${input.id} in ${box.address}.`)
    return { id: input.id, seen: input.seen }
  }

  /**
   * mailbox.json action=delete: the mailbox with its messages and their bytes; the address is free again
   * at once. The store checks the owner again in its transaction; the bytes go after the commit.
   */
  async function deleteMailbox(caller: Caller, input: { address: string }) {
    const box = await owned(caller, input.address)
    if (!(await messages.deleteMailbox(box.id, caller.accountId)))
      throw notFound(`There is no mailbox ${box.address} (it may have expired).`)
    // Held messages.json requests answer (with nothing), and open pages of it are told it is gone (on every node).
    wake(box.id)
    mailboxGone([box.id])
    totalsChanged()
    return { address: box.address, deleted: true as const }
  }

  // ---------------------------------------------------------------------------------------------------
  // Housekeeping

  /** Deletes expired mailboxes (with their messages and bytes) and bytes a crash left behind. */
  async function sweep(opts: { orphans?: boolean } = {}): Promise<{ mailboxes: number; orphans: number }> {
    let mailboxes = 0
    for (;;) {
      // Each candidate is checked again in the store's transaction: renewed since the read means it stays.
      const deleted = await messages.sweepExpired(clock(), SWEEP_BATCH)
      if (deleted.length === 0) break
      mailboxGone(deleted)
      mailboxes += deleted.length
      if (deleted.length < SWEEP_BATCH) break
    }
    if (mailboxes > 0) totalsChanged()
    const orphans = opts.orphans ? await messages.sweepOrphans() : 0
    return { mailboxes, orphans }
  }

  /** The dashboard's list: the caller's live mailboxes, newest first, at most `limit`, with unread counts; and how many in all. */
  async function mailboxesOf(caller: Caller, limit: number) {
    const now = clock()
    const [total, rows] = await Promise.all([
      messages.countOf(caller.accountId, now),
      messages.mailboxesOf(caller.accountId, now, limit),
    ])
    return { total, mailboxes: rows.map((r) => ({ ...answer(r), unread: r.unread })) }
  }

  return {
    domains,
    normalizeAddress,
    mailboxesOf,
    /** One of the caller's live mailboxes (renewed like any use), or 404 / 403 not_owner. */
    mailbox: async (caller: Caller, address: string): Promise<MailboxAnswer> => answer(await owned(caller, address)),
    getOrCreate,
    listMessages,
    readMessage,
    unread,
    source,
    deleteMessage,
    deleteMessages,
    setSeen,
    deleteMailbox,
    watch,
    download,
    checkRecipient: delivery.checkRecipient,
    deliver: delivery.deliver,
    sweep,
    /** Resolves once the gauges' totals have been read the first time. */
    ready: totals.ready,
    /** The totals read now (the store's count). */
    totals: () => messages.totals(),
    /** For the gauges (read synchronously): the totals as last read, after refreshTotals() before a scrape. */
    totalsKnown: totals.known,
    refreshTotals: totals.refresh,
    get received() {
      return delivery.received
    },
    get waiting() {
      return notices.waiting
    },
    /** Live views open (the dashboard's event streams). */
    get watching() {
      return notices.watching
    },
    /** Shutdown, first step: every held messages.json request is answered now, and none is held from here on. */
    release: notices.release,
    /** Shutdown, last step: waits for deliveries in progress to commit (or give up, see deliver). */
    async settle() {
      await delivery.settled()
      await totals.reading()
    },
  }
}
export type MailService = ReturnType<typeof createMailService<unknown>>
