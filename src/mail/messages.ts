// Temporary mail's storage behind one async interface, on either engine (issue 22, SPEC §11): what SMTP intake,
// messages.json / message.json, the signed downloads of raw messages and attachments, the deletions and the
// sweep of expired mailboxes need. The SQLite implementation below wraps today's store (store.ts: rows) and
// spool (spool.ts: files under data_dir/mail, or mail_inline for a small message) as they are; the PostgreSQL
// one is messages-postgres.ts, which keeps the bytes in the database too (mail_bodies), so that mail taken by
// any node is read through every node. One test suite (test/db/mail-messages.test.ts) runs against both.
//
// What both promise:
// - storeMessage keeps a message with its bytes in ONE commit, never a row without its bytes; each mailbox
//   is checked again inside that transaction (live, and below maxMessages), so two nodes storing into a
//   mailbox with one place left store exactly one message; none that can take it: [] and nothing is kept.
// - a deletion (of messages, of a mailbox, by the sweep) removes the rows first, then the bytes of every
//   blob no row names any more (a blob is shared by the mailboxes of one delivery); a crash in between leaves
//   bytes without rows, which sweepOrphans removes, never rows without bytes.
// - every deletion checks the mailbox again inside its transaction: taken over by another account, or
//   renewed (for the sweep), since the caller read it means nothing is deleted.
//
// - getOrCreate decides inside its transaction: the address read again (locked on PostgreSQL) — the
//   caller's live mailbox is renewed, another account's live one is 'taken', an expired one not yet swept is
//   deleted with its mail and the address made anew; two nodes asking for one free address at once make ONE
//   mailbox (the address is UNIQUE: the second finds the first's and decides again).
// - storeMessage's `within(tx, stored)` runs in the delivery's transaction (the mail.received events through
//   queue.enqueue(tx, …)): it throws to undo the delivery. On SQLite it runs synchronously in the write
//   group's savepoint (Tx: the Db) and may run more than once (db/write-group.ts): database work only.
//
// The service (service.ts) talks to mail's storage only through this interface; the synchronous store and
// spool are this file's (and the SMTP intake's, for the incoming file) alone.
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { stored, type Db } from '../db/sqlite'
import { createWalSync } from '../db/sqlite/wal-sync'
import { createWriteGroup } from '../db/sqlite/write-group'
import type { Spool, Taken } from './spool'
import { createMailStore, type AttachmentRow, type MailboxRow, type MessageBody, type MessageRow, type MessageSummaryRow, type ParsedFields } from './store'

/** A message's bytes as a response body: a file (sent without reading it into memory), bytes, or a stream of chunks. */
export type MailBytes = Blob | Uint8Array | ReadableStream<Uint8Array>

/** A message this small (raw, body and attachments together) is kept in the database, not in files (SQLite). */
export const INLINE_BYTES = 256 * 1024

/** The part number of a message's raw bytes (attachments are 1, 2, … as in mail_attachments.part). */
export const RAW_PART = 0

export interface NewMessage {
  /** The mailboxes accepted at RCPT; each is checked again when the message is stored. */
  mailboxIds: number[]
  received: number
  /** mail.max_messages: a mailbox holding this many takes no more. */
  maxMessages: number
  /** The message as received: in memory, or the incoming file (which storing may move or read). */
  taken: Taken
  fields: ParsedFields
  /** JSON of MessageBody. */
  body: string
  /** The decoded attachments, in the order of fields.attachments. */
  parts: Uint8Array[]
}

export interface StoredMessage {
  mailboxId: number
  id: number
  accountId: number
  address: string
}

/** mailbox.json's question: this address (or, `address` null, a free one `draw` makes up) for this account. */
export interface MailboxWanted {
  /** The address asked for; null: a random one, drawn with `draw` until one is free. */
  address: string | null
  draw: () => string
  accountId: number
  now: number
  /** The expiry it gets (made, or the caller's renewed). */
  expires: number
}

/**
 * The caller's mailbox — made, or theirs renewed — and the id of an expired one (not yet swept) that was at the
 * address and was deleted with its mail to make room (null: none); or 'taken': another account's live mailbox.
 */
export type MailboxGot = { mailbox: MailboxRow; replaced: number | null } | 'taken'

/** A mailbox as the dashboard lists it: with its unread messages. */
export type MailboxListed = MailboxRow & { unread: number }

export interface MessageStore<Tx = unknown> {
  mailboxByAddress(address: string): Promise<MailboxRow | null>
  mailboxById(id: number): Promise<MailboxRow | null>
  /** Moves a mailbox's expiry (a read renews it). */
  renew(mailboxId: number, expires: number): Promise<void>
  /** mailbox.json: get, renew or make the mailbox, one decision in one transaction (see the top of this file). */
  getOrCreate(wanted: MailboxWanted): Promise<MailboxGot>
  /** The account's live mailboxes at `now`, newest first, at most `limit`, each with its unread count. */
  mailboxesOf(accountId: number, now: number, limit: number): Promise<MailboxListed[]>
  /** How many live mailboxes the account has at `now`. */
  countOf(accountId: number, now: number): Promise<number>
  /** The unread messages of a mailbox. */
  unread(mailboxId: number): Promise<number>
  /**
   * One message for every mailbox that can still take it, rows and bytes in one commit; [] when none can. With
   * at least one stored, `within` runs in that transaction before the commit (it throws to undo the delivery).
   */
  storeMessage(message: NewMessage, within?: (tx: Tx, stored: StoredMessage[]) => unknown): Promise<StoredMessage[]>
  /** Newest first: the messages of a mailbox with an id above `after`, at most `limit`. */
  list(mailboxId: number, after: number, limit: number): Promise<MessageSummaryRow[]>
  message(id: number): Promise<MessageRow | null>
  attachmentsOf(messageId: number): Promise<Omit<AttachmentRow, 'blob' | 'mailbox_id'>[]>
  attachment(id: number): Promise<AttachmentRow | null>
  /** What message.json shows beyond the list entry; null when the blob is gone. */
  body(blob: string): Promise<MessageBody | null>
  /** The raw message (RAW_PART) or an attachment (its part number); null when the blob is gone. */
  bytes(blob: string, part: number): Promise<MailBytes | null>
  /** The first `maxBytes` of the raw message (the dashboard's source view); null when the blob is gone. */
  head(blob: string, maxBytes: number): Promise<Uint8Array | null>
  markSeen(id: number): Promise<void>
  /** The message's "seen" of this mailbox set; false when the mailbox has no such message. */
  setSeen(id: number, mailboxId: number, seen: boolean): Promise<boolean>
  /** Deletes these messages of the account's mailbox: the ids that were there, in the order given. */
  deleteMessages(mailboxId: number, accountId: number, ids: number[]): Promise<number[]>
  /** Deletes the account's mailbox with its messages and their bytes; false when it was not (or no longer) theirs. */
  deleteMailbox(mailboxId: number, accountId: number): Promise<boolean>
  /** Deletes up to `limit` mailboxes expired at `now` (with their messages and bytes): their ids. */
  sweepExpired(now: number, limit: number): Promise<number[]>
  /** Removes bytes that no row names (a crash between a deletion's commit and its cleanup): how many blobs. */
  sweepOrphans(now?: number): Promise<number>
  totals(): Promise<{ mailboxes: number; messages: number; bytes: number }>
}

/**
 * SQLite: the synchronous store and the spool as the service uses them. A message is stored as the service
 * stores it: a small one (everything under INLINE_BYTES, received in memory) in mail_inline with its rows,
 * a larger one as files, written and fsynced before the rows that name them commit (spool.ts); the rows go in
 * through a write group, and the answer waits for the WAL's fsync.
 */
export function sqliteMessageStore(db: Db, spool: Spool): MessageStore<Db> {
  const store = createMailStore(db)
  const group = createWriteGroup(db)
  const walSync = createWalSync(db.filename)
  const live = (row: MailboxRow | null | undefined, now: number): row is MailboxRow => !!row && row.expires > now

  async function dropBlobs(blobs: Iterable<string>) {
    for (const blob of new Set(blobs)) if (!store.blobUsed(blob)) await spool.remove(blob).catch(() => {})
  }

  const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT'

  return {
    mailboxByAddress: async (address) => store.byAddress(address) ?? null,
    mailboxById: async (id) => store.byId(id) ?? null,
    renew: async (id, expires) => stored(db, () => store.renew(id, expires)),

    async getOrCreate({ address, draw, accountId, now, expires }) {
      let freed: string[] = []
      const got = stored(db, () => db.transaction((): MailboxGot => {
        for (;;) {
          const at = address ?? draw()
          const existing: MailboxRow | null = store.byAddress(at) ?? null
          if (existing && existing.expires > now) {
            if (address === null) continue // a random name that is taken: draw again
            if (existing.account_id !== accountId) return 'taken'
            store.renew(existing.id, expires)
            return { mailbox: { ...existing, expires }, replaced: null }
          }
          let replaced: number | null = null
          if (existing) {
            freed = store.deleteMailbox(existing.id) // expired, not yet swept: its mail goes
            replaced = existing.id
          }
          const id = store.createMailbox(at, accountId, now, expires)
          return { mailbox: store.byId(id)!, replaced }
        }
      })())
      if (freed.length) await dropBlobs(freed)
      return got
    },

    mailboxesOf: async (accountId, now, limit) => store.mailboxesOf(accountId, now, limit),
    countOf: async (accountId, now) => store.countOf(accountId, now),
    unread: async (mailboxId) => store.unread(mailboxId),

    async storeMessage({ mailboxIds, received, maxMessages, taken, fields, body, parts }, within) {
      const bytes = taken.size + Buffer.byteLength(body) + parts.reduce((n, p) => n + p.length, 0)
      const inline = taken.bytes !== null && bytes <= INLINE_BYTES
      const name = inline ? randomBytes(16).toString('hex') : await spool.store(taken, body, parts)
      let kept = false
      try {
        const out = await group.run(() => {
          const rows: StoredMessage[] = []
          for (const mailboxId of mailboxIds) {
            const row = store.byId(mailboxId)
            if (!live(row, received) || row.messages >= maxMessages) continue
            const id = store.insertMessage(mailboxId, name, received, taken.size, fields)
            rows.push({ mailboxId, id, accountId: row.account_id, address: row.address })
          }
          if (inline && rows.length > 0) store.insertInline(name, taken.bytes!, body, parts)
          if (rows.length > 0) within?.(db, rows)
          return rows
        })
        // Committed: from here the files are named by rows, whatever the WAL's fsync says.
        kept = out.length > 0
        await walSync()
        return out
      } finally {
        if (!inline && !kept) await spool.remove(name).catch(() => {})
      }
    },

    list: async (mailboxId, after, limit) => store.list(mailboxId, after, limit),
    message: async (id) => store.message(id) ?? null,
    attachmentsOf: async (messageId) => store.attachmentsOf(messageId),
    attachment: async (id) => store.attachment(id) ?? null,

    async body(blob) {
      const inline = store.inlineBody(blob)
      if (inline !== null) return JSON.parse(inline) as MessageBody
      try {
        return JSON.parse(await readFile(spool.bodyPath(blob), 'utf8')) as MessageBody
      } catch (err) {
        if (missing(err)) return null
        throw err
      }
    },

    async bytes(blob, part) {
      const inline = part === RAW_PART ? store.inlineRaw(blob) : store.inlinePart(blob, part)
      if (inline !== null) return inline
      const file = Bun.file(part === RAW_PART ? spool.rawPath(blob) : spool.partPath(blob, part))
      return (await file.exists()) ? file : null
    },

    async head(blob, maxBytes) {
      const inline = store.inlineRaw(blob)
      if (inline !== null) return inline.subarray(0, maxBytes)
      try {
        return new Uint8Array(await Bun.file(spool.rawPath(blob)).slice(0, maxBytes).arrayBuffer())
      } catch (err) {
        if (missing(err)) return null
        throw err
      }
    },

    markSeen: async (id) => stored(db, () => store.markSeen(id)),

    async setSeen(id, mailboxId, seen) {
      return stored(db, () => db.transaction(() => {
        const row = store.message(id)
        if (!row || row.mailbox_id !== mailboxId) return false
        store.setSeen(id, seen)
        return true
      })())
    },

    async deleteMessages(mailboxId, accountId, ids) {
      const gone: number[] = []
      const blobs: string[] = []
      stored(db, () => db.transaction(() => {
        const box = store.byId(mailboxId)
        if (!box || box.account_id !== accountId) return
        for (const id of new Set(ids)) {
          const blob = store.deleteMessage(id, mailboxId)
          if (blob === null) continue
          gone.push(id)
          blobs.push(blob)
        }
      })())
      await dropBlobs(blobs)
      return gone
    },

    async deleteMailbox(mailboxId, accountId) {
      let blobs: string[] | null = null
      stored(db, () => db.transaction(() => {
        const box = store.byId(mailboxId)
        if (box && box.account_id === accountId) blobs = store.deleteMailbox(mailboxId)
      })())
      if (blobs === null) return false
      await dropBlobs(blobs)
      return true
    },

    async sweepExpired(now, limit) {
      const ids = store.expiredMailboxes(now, limit)
      const deleted: number[] = []
      let blobs: string[] = []
      stored(db, () => db.transaction(() => {
        for (const id of ids) {
          // Checked again in the transaction: renewed since the read means it stays.
          const row = store.byId(id)
          if (row && row.expires <= now) {
            blobs = blobs.concat(store.deleteMailbox(id))
            deleted.push(id)
          }
        }
      })())
      await dropBlobs(blobs)
      return deleted
    },

    sweepOrphans: (now) => spool.sweepOrphans((blob) => store.blobUsed(blob), now),
    totals: async () => store.totals(),
  }
}
