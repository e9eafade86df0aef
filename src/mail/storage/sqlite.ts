// Temporary mail on SQLite (the contract: contract.ts): rows in the database; a small message's bytes in mail_inline
// with its rows, a larger one's as files of the spool, fsynced before the rows that name them commit.
import { readFile } from 'node:fs/promises'
import { stored, type Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import { createWalSync } from '../../db/sqlite/wal-sync'
import { syncWithin } from '../../db/sqlite/within'
import { createWriteGroup } from '../../db/sqlite/write-group'
import type { Spool } from '../spool'
import {
  newBlobName,
  RAW_PART,
  type AttachmentRow,
  type MailboxGot,
  type MailboxListed,
  type MailboxRow,
  type MessageBody,
  type MessageRow,
  type MessageStore,
  type MessageSummaryRow,
  type ParsedFields,
  type StoredMessage,
} from './contract'

// The SQLite store's files: the root (storages.ts) makes the spool of data_dir/mail with it.
export { createSpool } from '../spool'

/** A message this small (raw, body and attachments together) is kept in the database, not in files. */
export const INLINE_BYTES = 256 * 1024

const SUMMARY = 'id, received, size, seen, from_address, from_name, subject, date, intro, attachments'

function mailStatements(db: Db) {
  const lazy = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  return {
    byAddress: lazy.query<MailboxRow, [string]>('SELECT * FROM mailboxes WHERE address = ?'),
    byId: lazy.query<MailboxRow, [number]>('SELECT * FROM mailboxes WHERE id = ?'),
    insertMailbox: lazy.query<{ id: number }, [string, number, number, number]>(
      'INSERT INTO mailboxes (address, account_id, created, expires) VALUES (?, ?, ?, ?) RETURNING id',
    ),
    renew: lazy.query<unknown, [number, number]>('UPDATE mailboxes SET expires = ? WHERE id = ?'),
    deleteMailbox: lazy.query<unknown, [number]>('DELETE FROM mailboxes WHERE id = ?'),
    blobsOfMailbox: lazy.query<{ blob: string }, [number]>(
      'SELECT DISTINCT blob FROM mail_messages WHERE mailbox_id = ?',
    ),
    expired: lazy.query<{ id: number }, [number, number]>(
      'SELECT id FROM mailboxes WHERE expires <= ? ORDER BY expires LIMIT ?',
    ),
    insertMessage: lazy.query<
      { id: number },
      [number, string, number, number, string, string, string, string, number | null, string, number, string | null]
    >(
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
    // Its attachments and, when no other row names them, its inline bytes go with it (see migration 5).
    deleteMessage: lazy.query<{ blob: string }, [number, number]>(
      'DELETE FROM mail_messages WHERE id = ? AND mailbox_id = ? RETURNING blob',
    ),
    unread: lazy.query<{ n: number }, [number]>(
      'SELECT count(*) AS n FROM mail_messages WHERE mailbox_id = ? AND seen = 0',
    ),
    blobUsed: lazy.query<{ n: number }, [string]>('SELECT EXISTS (SELECT 1 FROM mail_messages WHERE blob = ?) AS n'),
    insertInline: lazy.query<unknown, [string, Uint8Array, string]>(
      'INSERT INTO mail_inline (blob, raw, body) VALUES (?, ?, ?)',
    ),
    insertInlinePart: lazy.query<unknown, [string, number, Uint8Array]>(
      'INSERT INTO mail_inline_parts (blob, part, data) VALUES (?, ?, ?)',
    ),
    inlineRaw: lazy.query<{ raw: Uint8Array }, [string]>('SELECT raw FROM mail_inline WHERE blob = ?'),
    inlineBody: lazy.query<{ body: string }, [string]>('SELECT body FROM mail_inline WHERE blob = ?'),
    inlinePart: lazy.query<{ data: Uint8Array }, [string, number]>(
      'SELECT data FROM mail_inline_parts WHERE blob = ? AND part = ?',
    ),
    // The dashboard's list of an account's live mailboxes (mailboxes_account), with each one's unread count
    // (at most mail.max_messages rows per mailbox, through mail_messages_mailbox).
    mailboxesOf: lazy.query<MailboxListed, [number, number, number]>(
      `SELECT b.*, (SELECT count(*) FROM mail_messages m WHERE m.mailbox_id = b.id AND m.seen = 0) AS unread
         FROM mailboxes b WHERE b.account_id = ? AND b.expires > ? ORDER BY b.id DESC LIMIT ?`,
    ),
    countOf: lazy.query<{ n: number }, [number, number]>(
      'SELECT count(*) AS n FROM mailboxes WHERE account_id = ? AND expires > ?',
    ),
    totals: lazy.query<{ mailboxes: number; messages: number; bytes: number }, []>(
      'SELECT count(*) AS mailboxes, coalesce(sum(messages), 0) AS messages, coalesce(sum(bytes), 0) AS bytes FROM mailboxes',
    ),
  }
}

/**
 * SQLite's mail store on `db` and the spool of its files. A message goes in through a write group (its `within`
 * runs in the group's savepoint, synchronously, and may run more than once), and its answer waits for the WAL's fsync.
 */
export function sqliteMessageStore(db: Db, spool: Spool): MessageStore<Db> {
  const q = mailStatements(db)
  // A group closes when no fsync of the WAL is under way (see afterSync): one commit per fsync under load.
  const walSync = createWalSync(db.filename, () => group.commits)
  const group = createWriteGroup(db, (flush) => walSync.afterSync(flush))
  const live = (row: MailboxRow | null | undefined, now: number): row is MailboxRow => !!row && row.expires > now
  const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT'

  /** Deletes a mailbox with its messages; the blobs its messages named (to check and remove after the commit). */
  function deleteMailboxRows(id: number): string[] {
    const blobs = q.blobsOfMailbox.all(id).map((r) => r.blob)
    q.deleteMailbox.run(id)
    return blobs
  }

  function insertMessage(mailboxId: number, blob: string, received: number, size: number, f: ParsedFields): number {
    const id = q.insertMessage.get(
      mailboxId,
      blob,
      received,
      size,
      f.envelope_from,
      f.from.address,
      f.from.name,
      f.subject,
      f.date,
      f.intro,
      f.attachments.length,
      f.parse_error,
    )!.id
    for (const a of f.attachments) q.insertAttachment.run(id, a.part, a.filename, a.content_type, a.size)
    return id
  }

  async function dropBlobs(blobs: Iterable<string>) {
    for (const blob of new Set(blobs)) if (q.blobUsed.get(blob)!.n === 0) await spool.remove(blob).catch(() => {})
  }

  return {
    mailboxByAddress: async (address) => q.byAddress.get(address) ?? null,
    mailboxById: async (id) => q.byId.get(id) ?? null,
    renew: async (id, expires) => stored(db, () => void q.renew.run(expires, id)),

    async getOrCreate({ address, draw, accountId, now, expires }) {
      let freed: string[] = []
      const got = stored(db, () =>
        db.transaction((): MailboxGot => {
          for (;;) {
            const at = address ?? draw()
            const existing: MailboxRow | null = q.byAddress.get(at) ?? null
            if (existing && existing.expires > now) {
              if (address === null) continue // a random name that is taken: draw again
              if (existing.account_id !== accountId) return 'taken'
              q.renew.run(expires, existing.id)
              return { mailbox: { ...existing, expires }, replaced: null }
            }
            let replaced: number | null = null
            if (existing) {
              freed = deleteMailboxRows(existing.id) // expired, not yet swept: its mail goes
              replaced = existing.id
            }
            const id = q.insertMailbox.get(at, accountId, now, expires)!.id
            return { mailbox: q.byId.get(id)!, replaced }
          }
        })(),
      )
      if (freed.length) await dropBlobs(freed)
      return got
    },

    mailboxesOf: async (accountId, now, limit) => q.mailboxesOf.all(accountId, now, limit),
    countOf: async (accountId, now) => q.countOf.get(accountId, now)!.n,
    unread: async (mailboxId) => q.unread.get(mailboxId)!.n,

    async storeMessage({ mailboxIds, received, maxMessages, taken, fields, body, parts }, within) {
      const bytes = taken.size + Buffer.byteLength(body) + parts.reduce((n, p) => n + p.length, 0)
      const inline = taken.bytes !== null && bytes <= INLINE_BYTES
      const name = inline ? newBlobName(received) : await spool.store(taken, body, parts)
      let kept = false
      try {
        const out = await group.run(() => {
          const rows: StoredMessage[] = []
          for (const mailboxId of mailboxIds) {
            const row = q.byId.get(mailboxId)
            if (!live(row, received) || row.messages >= maxMessages) continue
            const id = insertMessage(mailboxId, name, received, taken.size, fields)
            rows.push({ mailboxId, id, accountId: row.account_id, address: row.address })
          }
          if (inline && rows.length > 0) {
            q.insertInline.run(name, taken.bytes!, body)
            parts.forEach((data, i) => q.insertInlinePart.run(name, i + 1, data))
          }
          if (rows.length > 0) syncWithin(within?.(db, rows))
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

    list: async (mailboxId, after, limit) => q.list.all(mailboxId, after, limit),
    message: async (id) => q.message.get(id) ?? null,
    attachmentsOf: async (messageId) => q.attachmentsOf.all(messageId),
    attachment: async (id) => q.attachment.get(id) ?? null,

    async body(blob) {
      const inline = q.inlineBody.get(blob)?.body ?? null
      if (inline !== null) return JSON.parse(inline) as MessageBody
      try {
        return JSON.parse(await readFile(spool.bodyPath(blob), 'utf8')) as MessageBody
      } catch (err) {
        if (missing(err)) return null
        throw err
      }
    },

    async bytes(blob, part) {
      const inline =
        part === RAW_PART ? (q.inlineRaw.get(blob)?.raw ?? null) : (q.inlinePart.get(blob, part)?.data ?? null)
      if (inline !== null) return inline
      const file = Bun.file(part === RAW_PART ? spool.rawPath(blob) : spool.partPath(blob, part))
      return (await file.exists()) ? file : null
    },

    async head(blob, maxBytes) {
      const inline = q.inlineRaw.get(blob)?.raw ?? null
      if (inline !== null) return inline.subarray(0, maxBytes)
      try {
        return new Uint8Array(await Bun.file(spool.rawPath(blob)).slice(0, maxBytes).arrayBuffer())
      } catch (err) {
        if (missing(err)) return null
        throw err
      }
    },

    markSeen: async (id) => stored(db, () => void q.markSeen.run(id)),

    async setSeen(id, mailboxId, seen) {
      return stored(db, () =>
        db.transaction(() => {
          const row = q.message.get(id)
          if (!row || row.mailbox_id !== mailboxId) return false
          q.setSeen.run(seen ? 1 : 0, id)
          return true
        })(),
      )
    },

    async deleteMessages(mailboxId, accountId, ids) {
      const gone: number[] = []
      const blobs: string[] = []
      stored(db, () =>
        db.transaction(() => {
          const box = q.byId.get(mailboxId)
          if (!box || box.account_id !== accountId) return
          for (const id of new Set(ids)) {
            const blob = q.deleteMessage.get(id, mailboxId)?.blob ?? null
            if (blob === null) continue
            gone.push(id)
            blobs.push(blob)
          }
        })(),
      )
      await dropBlobs(blobs)
      return gone
    },

    async deleteMailbox(mailboxId, accountId) {
      let blobs: string[] | null = null
      stored(db, () =>
        db.transaction(() => {
          const box = q.byId.get(mailboxId)
          if (box && box.account_id === accountId) blobs = deleteMailboxRows(mailboxId)
        })(),
      )
      if (blobs === null) return false
      await dropBlobs(blobs)
      return true
    },

    async sweepExpired(now, limit) {
      const ids = q.expired.all(now, limit).map((r) => r.id)
      const deleted: number[] = []
      let blobs: string[] = []
      stored(db, () =>
        db.transaction(() => {
          for (const id of ids) {
            // Checked again in the transaction: renewed since the read means it stays.
            const row = q.byId.get(id)
            if (row && row.expires <= now) {
              blobs = blobs.concat(deleteMailboxRows(id))
              deleted.push(id)
            }
          }
        })(),
      )
      await dropBlobs(blobs)
      return deleted
    },

    sweepOrphans: (now) => spool.sweepOrphans((blob) => q.blobUsed.get(blob)!.n > 0, now),
    totals: async () => q.totals.get()!,
  }
}
