// The SQL of temporary mail, and nothing else: mailboxes, their messages and the attachments of each.
// The files a message's rows point at are the spool's business (spool.ts).
import type { Db } from '../db/sqlite'
import { lazyStatements } from '../db/sqlite/lazy'

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

const SUMMARY = 'id, received, size, seen, from_address, from_name, subject, date, intro, attachments'

export function createMailStore(db: Db) {
  const lazy = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const q = {
    byAddress: lazy.query<MailboxRow, [string]>('SELECT * FROM mailboxes WHERE address = ?'),
    byId: lazy.query<MailboxRow, [number]>('SELECT * FROM mailboxes WHERE id = ?'),
    insertMailbox: lazy.query<{ id: number }, [string, number, number, number]>(
      'INSERT INTO mailboxes (address, account_id, created, expires) VALUES (?, ?, ?, ?) RETURNING id',
    ),
    renew: lazy.query<unknown, [number, number]>('UPDATE mailboxes SET expires = ? WHERE id = ?'),
    deleteMailbox: lazy.query<unknown, [number]>('DELETE FROM mailboxes WHERE id = ?'),
    blobsOfMailbox: lazy.query<{ blob: string }, [number]>('SELECT DISTINCT blob FROM mail_messages WHERE mailbox_id = ?'),
    expired: lazy.query<{ id: number }, [number, number]>('SELECT id FROM mailboxes WHERE expires <= ? ORDER BY expires LIMIT ?'),
    insertMessage: lazy.query<{ id: number }, any[]>(
      `INSERT INTO mail_messages (mailbox_id, blob, received, size, envelope_from, from_address, from_name, subject, date,
         intro, attachments, parse_error)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ),
    insertAttachment: lazy.query<unknown, [number, number, string, string, number]>(
      'INSERT INTO mail_attachments (message_id, part, filename, content_type, size) VALUES (?, ?, ?, ?, ?)',
    ),
    list: lazy.query<MessageSummaryRow, [number, number, number]>(
      `SELECT ${SUMMARY} FROM mail_messages WHERE mailbox_id = ? AND id > ? ORDER BY id DESC LIMIT ?`,
    ),
    message: lazy.query<MessageRow, [number]>(`SELECT ${SUMMARY}, mailbox_id, blob FROM mail_messages WHERE id = ?`),
    attachmentsOf: lazy.query<Omit<AttachmentRow, 'blob' | 'mailbox_id'>, [number]>(
      'SELECT id, message_id, part, filename, content_type, size FROM mail_attachments WHERE message_id = ? ORDER BY part',
    ),
    attachment: lazy.query<AttachmentRow, [number]>(
      `SELECT a.id, a.message_id, a.part, a.filename, a.content_type, a.size, m.blob, m.mailbox_id
         FROM mail_attachments a JOIN mail_messages m ON m.id = a.message_id WHERE a.id = ?`,
    ),
    markSeen: lazy.query<unknown, [number]>('UPDATE mail_messages SET seen = 1 WHERE id = ? AND seen = 0'),
    setSeen: lazy.query<unknown, [number, number]>('UPDATE mail_messages SET seen = ? WHERE id = ?'),
    deleteMessage: lazy.query<{ blob: string }, [number, number]>('DELETE FROM mail_messages WHERE id = ? AND mailbox_id = ? RETURNING blob'),
    unread: lazy.query<{ n: number }, [number]>('SELECT count(*) AS n FROM mail_messages WHERE mailbox_id = ? AND seen = 0'),
    blobUsed: lazy.query<{ n: number }, [string]>('SELECT EXISTS (SELECT 1 FROM mail_messages WHERE blob = ?) AS n'),
    insertInline: lazy.query<unknown, [string, Uint8Array, string]>('INSERT INTO mail_inline (blob, raw, body) VALUES (?, ?, ?)'),
    insertInlinePart: lazy.query<unknown, [string, number, Uint8Array]>('INSERT INTO mail_inline_parts (blob, part, data) VALUES (?, ?, ?)'),
    inlineRaw: lazy.query<{ raw: Uint8Array }, [string]>('SELECT raw FROM mail_inline WHERE blob = ?'),
    inlineBody: lazy.query<{ body: string }, [string]>('SELECT body FROM mail_inline WHERE blob = ?'),
    inlinePart: lazy.query<{ data: Uint8Array }, [string, number]>('SELECT data FROM mail_inline_parts WHERE blob = ? AND part = ?'),
    // The dashboard's list of an account's live mailboxes (mailboxes_account), with each one's unread count
    // (at most mail.max_messages rows per mailbox, through mail_messages_mailbox).
    mailboxesOf: lazy.query<MailboxRow & { unread: number }, [number, number, number]>(
      `SELECT b.*, (SELECT count(*) FROM mail_messages m WHERE m.mailbox_id = b.id AND m.seen = 0) AS unread
         FROM mailboxes b WHERE b.account_id = ? AND b.expires > ? ORDER BY b.id DESC LIMIT ?`,
    ),
    countOf: lazy.query<{ n: number }, [number, number]>('SELECT count(*) AS n FROM mailboxes WHERE account_id = ? AND expires > ?'),
    totals: lazy.query<{ mailboxes: number; messages: number; bytes: number }, []>(
      'SELECT count(*) AS mailboxes, coalesce(sum(messages), 0) AS messages, coalesce(sum(bytes), 0) AS bytes FROM mailboxes',
    ),
  }

  return {
    byAddress: (address: string) => q.byAddress.get(address),
    byId: (id: number) => q.byId.get(id),
    createMailbox(address: string, accountId: number, created: number, expires: number): number {
      return q.insertMailbox.get(address, accountId, created, expires)!.id
    },
    renew: (id: number, expires: number) => void q.renew.run(expires, id),
    /** Deletes a mailbox with its messages; returns the blobs its messages named (to check and remove). */
    deleteMailbox(id: number): string[] {
      const blobs = q.blobsOfMailbox.all(id).map((r) => r.blob)
      q.deleteMailbox.run(id)
      return blobs
    },
    expiredMailboxes: (now: number, limit: number) => q.expired.all(now, limit).map((r) => r.id),
    insertMessage(mailboxId: number, blob: string, received: number, size: number, f: ParsedFields): number {
      const id = q.insertMessage.get(
        mailboxId, blob, received, size, f.envelope_from, f.from.address, f.from.name, f.subject, f.date, f.intro,
        f.attachments.length, f.parse_error,
      )!.id
      for (const a of f.attachments) q.insertAttachment.run(id, a.part, a.filename, a.content_type, a.size)
      return id
    },
    list: (mailboxId: number, after: number, limit: number) => q.list.all(mailboxId, after, limit),
    message: (id: number) => q.message.get(id),
    attachmentsOf: (messageId: number) => q.attachmentsOf.all(messageId),
    attachment: (id: number) => q.attachment.get(id),
    markSeen: (id: number) => void q.markSeen.run(id),
    setSeen: (id: number, seen: boolean) => void q.setSeen.run(seen ? 1 : 0, id),
    /** Deletes a message of this mailbox (its attachments and, when no other row names them, its inline bytes go with it); its blob, or null when there was none. */
    deleteMessage: (id: number, mailboxId: number) => q.deleteMessage.get(id, mailboxId)?.blob ?? null,
    unread: (mailboxId: number) => q.unread.get(mailboxId)!.n,
    blobUsed: (blob: string) => q.blobUsed.get(blob)!.n > 0,
    totals: () => q.totals.get()!,
    /** An account's live mailboxes, newest first, at most `limit`, each with its unread count. */
    mailboxesOf: (accountId: number, now: number, limit: number) => q.mailboxesOf.all(accountId, now, limit),
    countOf: (accountId: number, now: number) => q.countOf.get(accountId, now)!.n,
    /** A small message's bytes, stored in the same transaction as its rows (see migration 5). */
    insertInline(blob: string, raw: Uint8Array, body: string, parts: Uint8Array[]) {
      q.insertInline.run(blob, raw, body)
      parts.forEach((data, i) => q.insertInlinePart.run(blob, i + 1, data))
    },
    /** Null when the blob is not inline (its bytes are files). */
    inlineRaw: (blob: string) => q.inlineRaw.get(blob)?.raw ?? null,
    inlineBody: (blob: string) => q.inlineBody.get(blob)?.body ?? null,
    inlinePart: (blob: string, part: number) => q.inlinePart.get(blob, part)?.data ?? null,
  }
}
export type MailStore = ReturnType<typeof createMailStore>
