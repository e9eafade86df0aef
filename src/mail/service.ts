// Temporary mail: the rules. Mailboxes belong to accounts and live for mail.mailbox_ttl seconds after
// their last use; SMTP delivers into them (smtp.ts), the three methods read them (api.ts), a sweep removes
// them when they expire. Nothing here knows about HTTP or the SMTP dialogue.
//
// On the async storage (issue 22; the recipe is abuse/service.ts's):
// - Async: everything that reads or writes mail's rows or bytes goes through MessageStore (messages.ts), on
//   either engine; callers await it. Each check-then-write is one store decision in its transaction:
//   getOrCreate (taken, expired-not-yet-swept, made), storeMessage (each mailbox live and below max_messages),
//   setSeen, deleteMessages, deleteMailbox (the owner again), sweepExpired (still expired). A delivery's
//   mail.received events go in through storeMessage's `within`, by queue.enqueue(tx, …), in its commit.
// - Sync, in memory: the held messages.json requests and the dashboard's live views (waiters, watchers) and
//   their bounds. They hear of new mail through the change feed's 'mail' topic (keys: mailbox ids), published
//   after each delivery's commit and each deletion of a mailbox — by whichever node took it, so a request held
//   on one node wakes for mail taken by another; on one process the feed calls them at once, as before.
// - The gauges (/metrics is read synchronously) show the totals as last read: after each change of this
//   process and, at most once a second, when scraped (another node's changes show at the next scrape).
// - The incoming message (taken by smtp.ts into memory or data_dir/mail/incoming) is the SMTP intake's: it
//   hands it in and discards it; storing its bytes is the store's.
import { randomBytes } from 'node:crypto'
import type { Caller } from '../kernel/caller'
import type { Config } from '../kernel/config'
import { iso } from '../db/sqlite'
import type { ChangeFeed } from '../db/changes'
import { allWrites } from '../db/sqlite/within'
import { AppError, invalidParameter, notFound, notOwner } from '../kernel/errors'
import type { Events } from '../kernel/events'
import type { LinkSigner } from '../kernel/signing'
import type { Outbox } from '../kernel/outbox'
import type { EventWriter } from '../kernel/outbox'
import { parseMessage } from './parse'
import { takenSource, type Taken } from './spool'
import { RAW_PART, type MailboxRow, type MailBytes, type MessageBody, type MessageStore, type MessageSummaryRow, type StoredMessage } from './storage/contract'

export const MAX_RECIPIENTS = 50
export const MAX_WAIT_SECONDS = 60
/** Signed links to attachments and raw sources work this long after message.json gave them. */
export const MAIL_LINK_TTL_MS = 60 * 60 * 1000
export const LIST_LIMIT = { default: 200, max: 1000 }
const RANDOM_LOCAL_LENGTH = 10
/** Held messages.json requests, in all and per account: each is a socket and a promise, so both are bounded. */
const MAX_WAITERS = 2000
const MAX_WAITERS_PER_ACCOUNT = 100
/** Renewing the expiry is a write: done at most this often per mailbox, however often it is read. */
const RENEW_EVERY_MS = 60_000
/** Open live views of mailboxes (the dashboard's event streams), in all and per account: each is a socket. */
export const MAX_WATCHERS = 1000
export const MAX_WATCHERS_PER_ACCOUNT = 20
/** The most messages one deletion names (the dashboard's selection; a mailbox holds mail.max_messages). */
export const MAX_DELETE_IDS = 1000
const SWEEP_BATCH = 200
/** The gauges' totals are read again at most this often when scraped. */
const TOTALS_EVERY_MS = 1000
/** The change feed's topic for "this mailbox changed" (mail arrived, or it was deleted): keys are mailbox ids. */
export const MAIL_TOPIC = 'mail'

const LOCAL_PART = /^[a-z0-9._-]{1,64}$/

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

export type RecipientCheck =
  | { ok: true; mailboxId: number }
  | { ok: false; reply: SmtpReply }

export interface MailboxAnswer {
  address: string
  created: string
  expires: string
  messages: number
}

function randomLocalPart(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  let out = ''
  while (out.length < RANDOM_LOCAL_LENGTH) {
    for (const b of randomBytes(RANDOM_LOCAL_LENGTH * 2)) {
      // 252 = 7 × 36: rejecting the rest keeps every character equally likely.
      if (b < 252 && out.length < RANDOM_LOCAL_LENGTH) out += alphabet[b % 36]
    }
  }
  return out
}

const summary = (r: MessageSummaryRow) => ({
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

export interface MailServiceDeps<Tx> {
  /** Mailboxes, messages and their bytes (messages.ts), and the queue the mail.received events go into. */
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

/** A signed download: its bytes and how to name them. */
export interface MailDownload {
  body: MailBytes
  filename: string
  contentType: string
  size: number
}

/** A stored message as messages.json lists it, from what delivery knows (no read back). */
function summaryOf(id: number, now: number, size: number, f: Awaited<ReturnType<typeof parseMessage>>['fields']): MessageSummaryRow {
  return {
    id, received: now, size, seen: 0, from_address: f.from.address, from_name: f.from.name,
    subject: f.subject, date: f.date, intro: f.intro, attachments: f.attachments.length,
  }
}

export function createMailService<Tx>({ messages, queue, config, signer, events, clock, outbox, changes }: MailServiceDeps<Tx>) {
  const { domains, mailbox_ttl, max_messages } = config.mail
  const ttlMs = mailbox_ttl * 1000
  const base = config.server.base_url

  // ---------------------------------------------------------------------------------------------------
  // Addresses and mailboxes

  /** The address a mailbox.json `address` names: empty → null (a random one), a bare name → the default domain. */
  function normalizeAddress(input: string): string {
    const value = input.trim().toLowerCase()
    const at = value.lastIndexOf('@')
    const local = at < 0 ? value : value.slice(0, at)
    const domain = at < 0 ? domains[0]! : value.slice(at + 1)
    if (!LOCAL_PART.test(local))
      throw invalidParameter('address', 'the part before "@" must be 1 to 64 characters of a-z, 0-9, ".", "_" and "-"')
    if (!domains.includes(domain))
      throw invalidParameter('address', `the domain must be one this service receives mail for: ${domains.join(', ')}`)
    return `${local}@${domain}`
  }

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
    const wanted = input && input.trim() ? normalizeAddress(input) : null
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

  // ---------------------------------------------------------------------------------------------------
  // Waiting for mail (messages.json?wait=N)

  const waiters = new Map<number, Set<() => void>>()
  const waitersByAccount = new Map<number, number>()
  let waiting = 0
  let closing = false

  function wake(mailboxId: number) {
    const set = waiters.get(mailboxId)
    if (!set) return
    waiters.delete(mailboxId)
    for (const w of set) w()
  }

  /** Resolves when mail arrives for the mailbox, after `ms`, when the request goes away, or at shutdown. */
  function waitForMail(mailboxId: number, accountId: number, ms: number, signal: AbortSignal): Promise<void> {
    if (closing || ms <= 0 || signal.aborted) return Promise.resolve()
    if (waiting >= MAX_WAITERS || (waitersByAccount.get(accountId) ?? 0) >= MAX_WAITERS_PER_ACCOUNT)
      throw new AppError(503, 'busy', 'Too many requests are waiting for mail; try again in a moment.', { 'Retry-After': '1' })
    waiting++
    waitersByAccount.set(accountId, (waitersByAccount.get(accountId) ?? 0) + 1)
    return new Promise<void>((resolve) => {
      let set = waiters.get(mailboxId)
      if (!set) waiters.set(mailboxId, (set = new Set()))
      const done = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        waiters.get(mailboxId)?.delete(done)
        if (waiters.get(mailboxId)?.size === 0) waiters.delete(mailboxId)
        waiting--
        const left = (waitersByAccount.get(accountId) ?? 1) - 1
        if (left > 0) waitersByAccount.set(accountId, left)
        else waitersByAccount.delete(accountId)
        resolve()
      }
      const timer = setTimeout(done, ms)
      signal.addEventListener('abort', done, { once: true })
      set.add(done)
    })
  }

  // ---------------------------------------------------------------------------------------------------
  // Watching a mailbox (the dashboard's live view): told of every change until it stops watching

  /** 'mail': a message arrived; 'gone': the mailbox was deleted; 'closing': the server stops. */
  type WatchEvent = 'mail' | 'gone' | 'closing'
  const watchers = new Map<number, Set<(e: WatchEvent) => void>>()
  const watchersByAccount = new Map<number, number>()
  let watching = 0

  /**
   * Calls `listener` on every change of one of the caller's mailboxes until the returned stop is called
   * (at most once per listener, safe to call twice). Bounded in all and per account: past either, 503 busy.
   * At shutdown every listener hears 'closing' and is stopped.
   */
  async function watch(caller: Caller, address: string, listener: (e: WatchEvent) => void): Promise<{ mailbox: MailboxRow; stop: () => void }> {
    const box = await owned(caller, address)
    if (closing) throw new AppError(503, 'busy', 'The service is shutting down.', { 'Retry-After': '1' })
    const accountId = caller.accountId
    if (watching >= MAX_WATCHERS || (watchersByAccount.get(accountId) ?? 0) >= MAX_WATCHERS_PER_ACCOUNT)
      throw new AppError(503, 'busy', 'Too many mailboxes are open at once; close some pages and try again.', { 'Retry-After': '5' })
    let set = watchers.get(box.id)
    if (!set) watchers.set(box.id, (set = new Set()))
    const own = set
    own.add(listener)
    watching++
    watchersByAccount.set(accountId, (watchersByAccount.get(accountId) ?? 0) + 1)
    let stopped = false
    const stop = () => {
      if (stopped) return
      stopped = true
      own.delete(listener)
      if (own.size === 0 && watchers.get(box.id) === own) watchers.delete(box.id)
      watching--
      const left = (watchersByAccount.get(accountId) ?? 1) - 1
      if (left > 0) watchersByAccount.set(accountId, left)
      else watchersByAccount.delete(accountId)
    }
    return { mailbox: box, stop }
  }

  function tellWatchers(mailboxId: number, e: WatchEvent) {
    for (const w of [...(watchers.get(mailboxId) ?? [])]) w(e)
  }

  /** A mailbox changed (mail arrived, or it went), here or on another node: its held requests and live views read again. */
  function mailboxChanged(mailboxId: number) {
    wake(mailboxId)
    tellWatchers(mailboxId, 'mail')
  }
  const unsubscribe = changes?.subscribe(
    MAIL_TOPIC,
    (keys) => keys.forEach((key) => mailboxChanged(Number(key))),
    // Anything may have changed: every held request and live view reads again (and finds what is new, or nothing).
    () => {
      for (const id of [...waiters.keys()]) wake(id)
      for (const id of [...watchers.keys()]) tellWatchers(id, 'mail')
    },
  )
  /** After a commit that changed these mailboxes: every node (this one before this returns) hears of it. */
  function announce(mailboxIds: number[]) {
    if (mailboxIds.length === 0) return
    if (changes) changes.publish(MAIL_TOPIC, mailboxIds.map(String))
    else mailboxIds.forEach(mailboxChanged)
  }
  /** Mailboxes deleted here (by the owner, the sweep, or made anew after expiry): open pages hear 'gone', other nodes' read again. */
  function mailboxGone(ids: number[]) {
    for (const id of ids) tellWatchers(id, 'gone')
    announce(ids)
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

  function signedUrl(path: string, id: string, now: number) {
    return `${base}${path}?${signer.sign(id, now + MAIL_LINK_TTL_MS).query}`
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
    if (!(await messages.setSeen(input.id, box.id, input.seen))) throw notFound(`There is no message ${input.id} in ${box.address}.`)
    return { id: input.id, seen: input.seen }
  }

  /**
   * mailbox.json action=delete: the mailbox with its messages and their bytes; the address is free again
   * at once. The store checks the owner again in its transaction; the bytes go after the commit.
   */
  async function deleteMailbox(caller: Caller, input: { address: string }) {
    const box = await owned(caller, input.address)
    if (!(await messages.deleteMailbox(box.id, caller.accountId))) throw notFound(`There is no mailbox ${box.address} (it may have expired).`)
    // Held messages.json requests answer (with nothing), and open pages of it are told it is gone (on every node).
    wake(box.id)
    mailboxGone([box.id])
    totalsChanged()
    return { address: box.address, deleted: true as const }
  }

  /**
   * A signed download: the bytes and how to name them, or an AppError (403 tampered, 410 expired, 404 gone).
   * The signature is checked before anything is looked up, so a guessed id learns nothing.
   */
  async function download(kind: 'raw' | 'attachment', idText: string, exp: string | null, sig: string | null): Promise<MailDownload> {
    if (!/^[1-9][0-9]{0,15}$/.test(idText)) throw notFound('There is no such file.')
    const check = signer.check(`mail-${kind}-${idText}`, exp, sig, clock())
    if (check === 'tampered') throw new AppError(403, 'invalid_signature', 'This link is not valid: its signature does not match.')
    if (check === 'expired') throw new AppError(410, 'expired', 'This link has expired: ask message.json for a new one.')
    const id = Number(idText)
    const now = clock()
    if (kind === 'raw') {
      const row = await messages.message(id)
      const box = row && (await messages.mailboxById(row.mailbox_id))
      if (!row || !live(box, now)) throw notFound('This message no longer exists.')
      const body = await messages.bytes(row.blob, RAW_PART)
      if (!body) throw notFound('This file no longer exists.')
      return { body, filename: `message-${row.id}.eml`, contentType: 'message/rfc822', size: row.size }
    }
    const a = await messages.attachment(id)
    const box = a && (await messages.mailboxById(a.mailbox_id))
    if (!a || !live(box, now)) throw notFound('This attachment no longer exists.')
    const body = await messages.bytes(a.blob, a.part)
    if (!body) throw notFound('This file no longer exists.')
    return { body, filename: a.filename, contentType: a.content_type, size: a.size }
  }

  // ---------------------------------------------------------------------------------------------------
  // Delivery (called by smtp.ts)

  function domainOf(address: string) {
    return address.slice(address.lastIndexOf('@') + 1).toLowerCase()
  }

  /** RCPT TO: a live mailbox with room → its id; else the reply (550 unknown or foreign, 452 full). */
  async function checkRecipient(rawAddress: string): Promise<RecipientCheck> {
    const address = rawAddress.toLowerCase()
    if (!domains.includes(domainOf(address)))
      return { ok: false, reply: new SmtpReply(550, `5.1.1 <${address}>: this server does not receive mail for that domain`) }
    const row = await messages.mailboxByAddress(address)
    if (!live(row, clock())) return { ok: false, reply: new SmtpReply(550, `5.1.1 <${address}>: no such mailbox here`) }
    if (row.messages >= max_messages) return { ok: false, reply: new SmtpReply(452, `4.2.2 <${address}>: mailbox full`) }
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
  async function deliver(taken: Taken, envelopeFrom: string, mailboxIds: number[], abandon: () => boolean): Promise<number[]> {
    const work = (async () => {
      const parsed = await parseMessage(takenSource(taken), envelopeFrom)
      if (abandon()) throw shuttingDown()
      const f = parsed.fields
      const body = JSON.stringify({ to: f.to, cc: f.cc, text: f.text, html: f.html, links: f.links } satisfies MessageBody)
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
          heard = wanted.length > 0
          return allWrites(wanted.map((s) => queue.enqueue(tx, { type: 'mail.received', accountId: s.accountId, at: now, data: eventOf(s) }, now)))
        },
      )
      if (stored.length === 0) throw new SmtpReply(452, '4.2.2 the mailbox filled up or expired while the message arrived')
      if (heard) outbox?.wake()
      received += stored.length
      announce(stored.map((s) => s.mailboxId))
      totalsChanged()
      if (events.has('mail.received')) for (const s of stored) events.emit('mail.received', { accountId: s.accountId, message: eventOf(s) })
      return stored.map((s) => s.id)
    })()
    inFlight.add(work)
    work.then(
      () => inFlight.delete(work),
      () => inFlight.delete(work),
    )
    return work
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
    const [total, rows] = await Promise.all([messages.countOf(caller.accountId, now), messages.mailboxesOf(caller.accountId, now, limit)])
    return { total, mailboxes: rows.map((r) => ({ ...answer(r), unread: r.unread })) }
  }

  // The gauges' totals, as last read: after each change of this process, and when scraped (at most once a
  // second: what other nodes changed). One read at a time; a change during a read asks for one more after it.
  let totalsKnown = { mailboxes: 0, messages: 0, bytes: 0 }
  let totalsAt = -Infinity
  let totalsReading: Promise<void> | null = null
  let totalsAgain = false
  function refreshTotals(): Promise<void> {
    if (totalsReading) {
      totalsAgain = true
      return totalsReading
    }
    totalsAt = Date.now()
    totalsReading = messages
      .totals()
      .then((t) => void (totalsKnown = t))
      .catch(() => {}) // the last value stays; the next change or scrape reads again
      .finally(() => {
        totalsReading = null
        if (totalsAgain) {
          totalsAgain = false
          void refreshTotals()
        }
      })
    return totalsReading
  }
  function totalsChanged() {
    void refreshTotals()
  }
  const ready = refreshTotals()

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
    checkRecipient,
    deliver,
    sweep,
    /** Resolves once the gauges' totals have been read the first time. */
    ready,
    /** The totals read now (the store's count). */
    totals: () => messages.totals(),
    /** For the gauges (read synchronously): the totals as last read; a scrape asks for a new read when these are over a second old. */
    totalsKnown(): { mailboxes: number; messages: number; bytes: number } {
      if (Date.now() - totalsAt > TOTALS_EVERY_MS) void refreshTotals()
      return totalsKnown
    },
    get received() {
      return received
    },
    get waiting() {
      return waiting
    },
    /** Live views open (the dashboard's event streams). */
    get watching() {
      return watching
    },
    /** Shutdown, first step: every held messages.json request is answered now, and none is held from here on. */
    release() {
      closing = true
      unsubscribe?.()
      for (const id of [...waiters.keys()]) wake(id)
      for (const id of [...watchers.keys()]) tellWatchers(id, 'closing')
    },
    /** Shutdown, last step: waits for deliveries in progress to commit (or give up, see deliver). */
    async settle() {
      await Promise.allSettled([...inFlight])
      await totalsReading
    },
  }
}
export type MailService = ReturnType<typeof createMailService<unknown>>
