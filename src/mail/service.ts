// Temporary mail: the rules. Mailboxes belong to accounts and live for mail.mailbox_ttl seconds after
// their last use; SMTP delivers into them (smtp.ts), the three methods read them (api.ts), a sweep removes
// them when they expire. Nothing here knows about HTTP or the SMTP dialogue.
import { randomBytes } from 'node:crypto'
import type { Caller } from '../accounts/service'
import type { Config } from '../config'
import { iso, stored, type Db } from '../db'
import { createWalSync } from '../db/wal-sync'
import { createWriteGroup } from '../db/write-group'
import { AppError, invalidParameter, notFound, notOwner } from '../errors'
import type { Events } from '../events'
import type { LinkSigner } from '../signing'
import type { Outbox } from '../webhooks/outbox'
import { parseMessage } from './parse'
import type { Spool, Taken } from './spool'
import { readFile } from 'node:fs/promises'
import { createMailStore, type MailboxRow, type MessageBody, type MessageSummaryRow } from './store'

export const MAX_RECIPIENTS = 50
export const MAX_WAIT_SECONDS = 60
/** Signed links to attachments and raw sources work this long after message.json gave them. */
export const MAIL_LINK_TTL_MS = 60 * 60 * 1000
export const LIST_LIMIT = { default: 200, max: 1000 }
/** A message this small (raw, body and attachments together) is kept in the database, not in files. */
export const INLINE_BYTES = 256 * 1024
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

export interface MailServiceDeps {
  db: Db
  config: Config
  spool: Spool
  signer: LinkSigner
  events: Events
  clock: () => number
  /** Webhook events (mail.received) are written here, in the delivery's transaction (absent: no webhooks). */
  outbox?: Outbox
}

/** A stored message as messages.json lists it, from what delivery knows (no read back). */
function summaryOf(id: number, now: number, size: number, f: Awaited<ReturnType<typeof parseMessage>>['fields']): MessageSummaryRow {
  return {
    id, received: now, size, seen: 0, from_address: f.from.address, from_name: f.from.name,
    subject: f.subject, date: f.date, intro: f.intro, attachments: f.attachments.length,
  }
}

export function createMailService({ db, config, spool, signer, events, clock, outbox }: MailServiceDeps) {
  const store = createMailStore(db)
  const { domains, mailbox_ttl, max_messages } = config.mail
  const ttlMs = mailbox_ttl * 1000
  const base = config.server.base_url
  // Deliveries are committed in groups (the messages that finished in one turn of the event loop), and the
  // WAL is then fsynced off the event loop (db/wal-sync.ts): on disk before any of them hears 250, not
  // merely in the OS's cache, and without holding up the other sessions while the disk works.
  const group = createWriteGroup(db)
  const walSync = createWalSync(db.filename)

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
  function bestEffort(write: () => void): boolean {
    try {
      stored(db, write)
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

  /** Blobs left without a row after a deletion are removed (after the commit: the rows went first). */
  async function dropBlobs(blobs: string[]) {
    for (const blob of blobs) if (!store.blobUsed(blob)) await spool.remove(blob).catch(() => {})
  }

  /** The caller's live mailbox at `address`; renews its expiry (at most once a minute). */
  function owned(caller: Caller, input: string): MailboxRow {
    const address = normalizeAddress(input)
    const now = clock()
    const row = store.byAddress(address)
    if (!live(row, now)) throw notFound(`There is no mailbox ${address} (it may have expired).`)
    if (row.account_id !== caller.accountId) throw notOwner('mailbox')
    if (row.expires - now < ttlMs - RENEW_EVERY_MS) {
      // A read must work on a database that cannot be written: the renewal then waits for a later read.
      if (bestEffort(() => store.renew(row.id, now + ttlMs))) row.expires = now + ttlMs
    }
    return row
  }

  /**
   * mailbox.json: the caller's mailbox at `address`, made when there is none (or only an expired one, whose
   * messages go with it). Everything between the read and the write is synchronous, in one transaction:
   * two accounts asking for one name at once cannot both get it.
   */
  function getOrCreate(caller: Caller, input: string | undefined, randomDomain?: string): MailboxAnswer {
    const wanted = input && input.trim() ? normalizeAddress(input) : null
    // A random name goes on the default domain, or on `randomDomain` (the dashboard's domain choice) when it is one of ours.
    const domain = randomDomain && domains.includes(randomDomain) ? randomDomain : domains[0]!
    const now = clock()
    let freed: string[] = []
    let gone: number | null = null
    const row = stored(db, () => db.transaction((): MailboxRow => {
      for (let attempt = 0; ; attempt++) {
        const address = wanted ?? `${randomLocalPart()}@${domain}`
        const existing = store.byAddress(address)
        if (live(existing, now)) {
          if (wanted === null) continue // a random name that is taken: draw again
          if (existing.account_id !== caller.accountId)
            throw new AppError(403, 'address_taken', `The address ${address} belongs to another account.`)
          existing.expires = now + ttlMs
          store.renew(existing.id, existing.expires)
          return existing
        }
        if (existing as MailboxRow | null) {
          freed = store.deleteMailbox(existing!.id) // expired, not yet swept: its mail goes
          gone = existing!.id
        }
        const id = store.createMailbox(address, caller.accountId, now, now + ttlMs)
        return store.byId(id)!
      }
    })())
    if (gone !== null) tellWatchers(gone, 'gone')
    if (freed.length) void dropBlobs(freed)
    return answer(row)
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
  function watch(caller: Caller, address: string, listener: (e: WatchEvent) => void): { mailbox: MailboxRow; stop: () => void } {
    const box = owned(caller, address)
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

  // ---------------------------------------------------------------------------------------------------
  // Reading

  async function listMessages(
    caller: Caller,
    input: { address: string; after?: number; limit?: number; wait?: number; signal?: AbortSignal },
  ) {
    const after = input.after ?? 0
    const limit = input.limit ?? LIST_LIMIT.default
    let box = owned(caller, input.address)
    let rows = store.list(box.id, after, limit)
    if (rows.length === 0 && input.wait) {
      await waitForMail(box.id, caller.accountId, input.wait * 1000, input.signal ?? new AbortController().signal)
      // The mailbox may have gone (swept, or taken over after expiry) while we waited: read it again.
      const again = store.byId(box.id)
      if (again && again.account_id === caller.accountId) {
        box = again
        rows = store.list(box.id, after, limit)
      }
    }
    return { address: box.address, messages: rows.map(summary) }
  }

  function signedUrl(path: string, id: string, now: number) {
    return `${base}${path}?${signer.sign(id, now + MAIL_LINK_TTL_MS).query}`
  }

  async function readMessage(caller: Caller, input: { address: string; id: number }) {
    const box = owned(caller, input.address)
    const row = store.message(input.id)
    if (!row || row.mailbox_id !== box.id) throw notFound(`There is no message ${input.id} in ${box.address}.`)
    const attachments = store.attachmentsOf(row.id)
    let body: MessageBody
    try {
      body = JSON.parse(store.inlineBody(row.blob) ?? (await readFile(spool.bodyPath(row.blob), 'utf8'))) as MessageBody
    } catch (err) {
      // Deleted meanwhile (swept, or the mailbox taken over): gone, like the row.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !store.message(row.id)) throw notFound(`There is no message ${input.id} in ${box.address}.`)
      throw err
    }
    bestEffort(() => store.markSeen(row.id))
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
  function unread(caller: Caller, address: string): number {
    return store.unread(owned(caller, address).id)
  }

  /**
   * The message as received, at most `maxBytes` of it (the dashboard shows its source and headers): the
   * bytes, its whole size, and whether they were cut.
   */
  async function source(caller: Caller, input: { address: string; id: number }, maxBytes: number) {
    const box = owned(caller, input.address)
    const row = store.message(input.id)
    if (!row || row.mailbox_id !== box.id) throw notFound(`There is no message ${input.id} in ${box.address}.`)
    let bytes: Uint8Array | null = store.inlineRaw(row.blob)
    if (!bytes) {
      try {
        const file = Bun.file(spool.rawPath(row.blob))
        bytes = new Uint8Array(await file.slice(0, maxBytes).arrayBuffer())
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !store.message(row.id)) throw notFound(`There is no message ${input.id} in ${box.address}.`)
        throw err
      }
    }
    return { bytes: bytes.subarray(0, maxBytes), size: row.size, truncated: row.size > maxBytes }
  }

  /**
   * Deletes messages of one of the caller's mailboxes; the ids that were there (and are gone now). Rows
   * first, in one transaction that reads each again; files after the commit, of blobs no row names any
   * more (a crash between leaves files without rows, which the sweep removes, never rows without files).
   */
  async function deleteMessages(caller: Caller, input: { address: string; ids: number[] }): Promise<number[]> {
    const box = owned(caller, input.address)
    const ids = [...new Set(input.ids)].slice(0, MAX_DELETE_IDS)
    const gone: number[] = []
    const blobs = new Set<string>()
    stored(db, () => db.transaction(() => {
      // The mailbox again, inside the write: swept or taken over since the read means nothing is deleted.
      const again = store.byId(box.id)
      if (!again || again.account_id !== caller.accountId) return
      for (const id of ids) {
        const blob = store.deleteMessage(id, box.id)
        if (blob === null) continue
        gone.push(id)
        blobs.add(blob)
      }
    })())
    if (blobs.size) await dropBlobs([...blobs])
    return gone
  }

  /** message.json action=delete: `{id, deleted: true}`, or 404 when the mailbox has no such message. */
  async function deleteMessage(caller: Caller, input: { address: string; id: number }) {
    const gone = await deleteMessages(caller, { address: input.address, ids: [input.id] })
    if (gone.length === 0) throw notFound(`There is no message ${input.id} in ${normalizeAddress(input.address)}.`)
    return { id: input.id, deleted: true as const }
  }

  /** message.json action=seen / unseen: `{id, seen}`. */
  function setSeen(caller: Caller, input: { address: string; id: number; seen: boolean }) {
    const box = owned(caller, input.address)
    stored(db, () => db.transaction(() => {
      const row = store.message(input.id)
      if (!row || row.mailbox_id !== box.id) throw notFound(`There is no message ${input.id} in ${box.address}.`)
      store.setSeen(row.id, input.seen)
    })())
    return { id: input.id, seen: input.seen }
  }

  /**
   * mailbox.json action=delete: the mailbox with its messages and their files; the address is free again
   * at once. Rows first (one transaction, which checks the owner again), then the files.
   */
  async function deleteMailbox(caller: Caller, input: { address: string }) {
    const box = owned(caller, input.address)
    let blobs: string[] = []
    stored(db, () => db.transaction(() => {
      const again = store.byId(box.id)
      if (!again || again.account_id !== caller.accountId) throw notFound(`There is no mailbox ${box.address} (it may have expired).`)
      blobs = store.deleteMailbox(box.id)
    })())
    // Held messages.json requests answer (with nothing), and open pages of it are told it is gone.
    wake(box.id)
    tellWatchers(box.id, 'gone')
    await dropBlobs([...new Set(blobs)])
    return { address: box.address, deleted: true as const }
  }

  /**
   * A signed download: the file and how to name it, or an AppError (403 tampered, 410 expired, 404 gone).
   * The signature is checked before anything is looked up, so a guessed id learns nothing.
   */
  function download(kind: 'raw' | 'attachment', idText: string, exp: string | null, sig: string | null) {
    if (!/^[1-9][0-9]{0,15}$/.test(idText)) throw notFound('There is no such file.')
    const check = signer.check(`mail-${kind}-${idText}`, exp, sig, clock())
    if (check === 'tampered') throw new AppError(403, 'invalid_signature', 'This link is not valid: its signature does not match.')
    if (check === 'expired') throw new AppError(410, 'expired', 'This link has expired: ask message.json for a new one.')
    const id = Number(idText)
    const now = clock()
    if (kind === 'raw') {
      const row = store.message(id)
      const box = row && store.byId(row.mailbox_id)
      if (!row || !live(box, now)) throw notFound('This message no longer exists.')
      const file = { path: spool.rawPath(row.blob), bytes: store.inlineRaw(row.blob) }
      return { ...file, filename: `message-${row.id}.eml`, contentType: 'message/rfc822', size: row.size }
    }
    const a = store.attachment(id)
    const box = a && store.byId(a.mailbox_id)
    if (!a || !live(box, now)) throw notFound('This attachment no longer exists.')
    const file = { path: spool.partPath(a.blob, a.part), bytes: store.inlinePart(a.blob, a.part) }
    return { ...file, filename: a.filename, contentType: a.content_type, size: a.size }
  }

  // ---------------------------------------------------------------------------------------------------
  // Delivery (called by smtp.ts)

  function domainOf(address: string) {
    return address.slice(address.lastIndexOf('@') + 1).toLowerCase()
  }

  /** RCPT TO: a live mailbox with room → its id; else the reply (550 unknown or foreign, 452 full). */
  function checkRecipient(rawAddress: string): RecipientCheck {
    const address = rawAddress.toLowerCase()
    if (!domains.includes(domainOf(address)))
      return { ok: false, reply: new SmtpReply(550, `5.1.1 <${address}>: this server does not receive mail for that domain`) }
    const row = store.byAddress(address)
    if (!live(row, clock())) return { ok: false, reply: new SmtpReply(550, `5.1.1 <${address}>: no such mailbox here`) }
    if (row.messages >= max_messages) return { ok: false, reply: new SmtpReply(452, `4.2.2 <${address}>: mailbox full`) }
    return { ok: true, mailboxId: row.id }
  }

  let received = 0
  const inFlight = new Set<Promise<unknown>>()

  /**
   * Stores a message for the mailboxes accepted at RCPT and resolves once it is on disk and committed;
   * only then may the client hear 250. Each mailbox is checked again inside the transaction (it may have
   * expired or filled while the message arrived); when none can take it any more, a 452 is thrown and
   * nothing is kept. `abandon()` true (the server is closing) before the commit: nothing is kept either.
   */
  async function deliver(taken: Taken, envelopeFrom: string, mailboxIds: number[], abandon: () => boolean): Promise<number[]> {
    const work = (async () => {
      let blob: string | null = null
      try {
        const parsed = await parseMessage(spool.source(taken), envelopeFrom)
        if (abandon()) throw new SmtpReply(421, '4.3.2 the server is shutting down; try again later')
        const f = parsed.fields
        const body = JSON.stringify({ to: f.to, cc: f.cc, text: f.text, html: f.html, links: f.links } satisfies MessageBody)
        const bytes = taken.size + Buffer.byteLength(body) + parsed.parts.reduce((n, p) => n + p.length, 0)
        const inline = taken.bytes !== null && bytes <= INLINE_BYTES
        const name = inline ? randomBytes(16).toString('hex') : await spool.store(taken, body, parsed.parts)
        if (!inline) blob = name
        if (abandon()) throw new SmtpReply(421, '4.3.2 the server is shutting down; try again later')
        const now = clock()
        const ids = await group.run(() => {
          const out: { mailboxId: number; id: number }[] = []
          for (const mailboxId of mailboxIds) {
            const row = store.byId(mailboxId)
            if (!live(row, now) || row.messages >= max_messages) continue
            const id = store.insertMessage(mailboxId, name, now, taken.size, f)
            out.push({ mailboxId, id })
            // mail.received, once per mailbox, with what events.emit sends below; in this write's savepoint.
            outbox?.enqueue('mail.received', row.account_id, { address: row.address, ...summary(summaryOf(id, now, taken.size, f)) }, now)
          }
          if (inline && out.length > 0) store.insertInline(name, taken.bytes!, body, parsed.parts)
          return out
        })
        // Committed rows name the files from here on: a failing fsync below must not remove them.
        if (ids.length > 0) blob = null
        await walSync()
        if (ids.length === 0) {
          throw new SmtpReply(452, '4.2.2 the mailbox filled up or expired while the message arrived')
        }
        received += ids.length
        for (const { mailboxId, id } of ids) {
          wake(mailboxId)
          tellWatchers(mailboxId, 'mail')
          const box = events.has('mail.received') ? store.byId(mailboxId) : null
          if (box) events.emit('mail.received', { accountId: box.account_id, message: { address: box.address, ...summary(summaryOf(id, now, taken.size, parsed.fields)) } })
        }
        return ids.map((x) => x.id)
      } finally {
        await spool.discard(taken)
        if (blob) await spool.remove(blob).catch(() => {})
      }
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

  /** Deletes expired mailboxes (with their messages and files) and files a crash left behind. */
  async function sweep(opts: { orphans?: boolean } = {}): Promise<{ mailboxes: number; orphans: number }> {
    let mailboxes = 0
    for (;;) {
      const now = clock()
      const ids = store.expiredMailboxes(now, SWEEP_BATCH)
      if (ids.length === 0) break
      let blobs: string[] = []
      const deleted: number[] = []
      db.transaction(() => {
        for (const id of ids) {
          // Checked again in the transaction: renewed since the read means it stays.
          const row = store.byId(id)
          if (row && row.expires <= now) {
            blobs = blobs.concat(store.deleteMailbox(id))
            deleted.push(id)
          }
        }
      })()
      for (const id of deleted) tellWatchers(id, 'gone')
      mailboxes += ids.length
      await dropBlobs([...new Set(blobs)])
      if (ids.length < SWEEP_BATCH) break
    }
    const orphans = opts.orphans ? await spool.sweepOrphans((blob) => store.blobUsed(blob)) : 0
    return { mailboxes, orphans }
  }

  /** The dashboard's list: the caller's live mailboxes, newest first, at most `limit`, with unread counts; and how many in all. */
  function mailboxesOf(caller: Caller, limit: number) {
    const now = clock()
    return {
      total: store.countOf(caller.accountId, now),
      mailboxes: store.mailboxesOf(caller.accountId, now, limit).map((r) => ({ ...answer(r), unread: r.unread })),
    }
  }

  return {
    domains,
    normalizeAddress,
    mailboxesOf,
    /** One of the caller's live mailboxes (renewed like any use), or 404 / 403 not_owner. */
    mailbox: (caller: Caller, address: string): MailboxAnswer => answer(owned(caller, address)),
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
    totals: () => store.totals(),
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
      for (const id of [...waiters.keys()]) wake(id)
      for (const id of [...watchers.keys()]) tellWatchers(id, 'closing')
    },
    /** Shutdown, last step: waits for deliveries in progress to commit (or give up, see deliver). */
    async settle() {
      await Promise.allSettled([...inFlight])
    },
  }
}
export type MailService = ReturnType<typeof createMailService>
