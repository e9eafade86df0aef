// Temporary mail's storage contract, both engines: mailboxes, messages and their bytes (the SQLite side keeps larger
// messages' bytes in files beside the database). What both promise is in the notes (ARCHITECTURE).
import { randomBytes } from 'node:crypto'
import type { Taken } from '../spool'

export interface MailboxRow {
  id: number
  address: string
  account_id: number
  created: number
  expires: number
  messages: number
  bytes: number
}

export interface Person {
  address: string
  name: string
}

/** What a delivery stores per mailbox (the parsed fields are the same for every recipient). */
export interface ParsedFields {
  envelope_from: string
  from: Person
  subject: string
  date: number | null
  intro: string
  to: Person[]
  cc: Person[]
  text: string
  html: string | null
  links: string[]
  parse_error: string | null
  attachments: { part: number; filename: string; content_type: string; size: number }[]
}

export interface MessageSummaryRow {
  id: number
  received: number
  size: number
  seen: number
  from_address: string
  from_name: string
  subject: string
  date: number | null
  intro: string
  attachments: number
}

export interface MessageRow extends MessageSummaryRow {
  mailbox_id: number
  blob: string
}

/** What a message shows beyond its list entry: kept in the blob (body.json), once per delivery. */
export interface MessageBody {
  to: Person[]
  cc: Person[]
  text: string
  html: string | null
  links: string[]
}

export interface AttachmentRow {
  id: number
  message_id: number
  part: number
  filename: string
  content_type: string
  size: number
  blob: string
  mailbox_id: number
}

/** A message's bytes as a response body: a file (sent without reading it into memory), bytes, or a stream of chunks. */
export type MailBytes = Blob | Uint8Array | ReadableStream<Uint8Array>

/** The part number of a message's raw bytes (attachments are 1, 2, … as in mail_attachments.part). */
export const RAW_PART = 0

/**
 * A new name for a message's bytes in the database: 32 hex digits, its time in ms then 80 random bits, so that
 * new rows go in at the end of what is keyed by it. Random names put each insert on a page of its own (SQLite,
 * 20,000 messages in groups of 16: 69 µs a message against 22).
 */
export const newBlobName = (now = Date.now()): string =>
  now.toString(16).padStart(12, '0').slice(-12) + randomBytes(10).toString('hex')

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
  /** mailbox.json: get, renew or make the mailbox, one decision in one transaction (two asking at once make one). */
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
