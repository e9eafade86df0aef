// Temporary mail on PostgreSQL (the contract: contract.ts), for any number of nodes: every byte in mail_bodies, in
// chunks; each write locks the mailboxes it depends on (ascending id) and decides on what the lock returned.
import type { SQL, TransactionSQL } from 'bun'
import { int, intOrNull, text, type PgRow } from '../../db/postgres/rows'
import {
  newBlobName,
  RAW_PART,
  type AttachmentRow,
  type MailboxGot,
  type MailboxRow,
  type MailBytes,
  type MessageBody,
  type MessageRow,
  type MessageStore,
  type MessageSummaryRow,
  type StoredMessage,
} from './contract'

export { RAW_PART } from './contract'

/** The most bytes in one row of mail_bodies. */
export const CHUNK_BYTES = 1024 * 1024
/** The part number of a message's body JSON (text, HTML, recipients, links). */
export const BODY_PART = -1

const mailbox = (r: PgRow): MailboxRow => ({
  id: int(r.id),
  address: text(r.address),
  account_id: int(r.account_id),
  created: int(r.created),
  expires: int(r.expires),
  messages: int(r.messages),
  bytes: int(r.bytes),
})

const summary = (r: PgRow): MessageSummaryRow => ({
  id: int(r.id),
  received: int(r.received),
  size: int(r.size),
  seen: int(r.seen),
  from_address: text(r.from_address),
  from_name: text(r.from_name),
  subject: text(r.subject),
  date: intOrNull(r.date),
  intro: text(r.intro),
  attachments: int(r.attachments),
})

const attachmentMeta = (r: PgRow): Omit<AttachmentRow, 'blob' | 'mailbox_id'> => ({
  id: int(r.id),
  message_id: int(r.message_id),
  part: int(r.part),
  filename: text(r.filename),
  content_type: text(r.content_type),
  size: int(r.size),
})

/** Thrown inside a delivery's transaction when no mailbox can take the message: rolls its bytes back. */
class NoTaker extends Error {}

/**
 * One part's bytes as rows of at most CHUNK_BYTES; an empty part is one empty row (so it exists). Also what
 * `migrate --to` (db/copy.ts) writes a SQLite data_dir's message with, so both write one layout.
 */
export async function writeBodyPart(tx: SQL, blob: string, part: number, data: Uint8Array) {
  let seq = 0
  for (let at = 0; at === 0 || at < data.length; at += CHUNK_BYTES)
    await tx`INSERT INTO mail_bodies (blob, part, seq, data) VALUES (${blob}, ${part}, ${seq++}, ${data.subarray(at, at + CHUNK_BYTES)})`
}

/** A part held in a file (a message larger than spool's in-memory bound, a data_dir's blob): read one chunk at a time. */
export async function writeBodyFile(tx: SQL, blob: string, part: number, path: string) {
  const file = Bun.file(path)
  const size = file.size
  let seq = 0
  for (let at = 0; at === 0 || at < size; at += CHUNK_BYTES) {
    const data = new Uint8Array(await file.slice(at, at + CHUNK_BYTES).arrayBuffer())
    await tx`INSERT INTO mail_bodies (blob, part, seq, data) VALUES (${blob}, ${part}, ${seq++}, ${data})`
  }
}

/** Attempts of getOrCreate at one address another node keeps making and deleting meanwhile (never in practice). */
const MAX_ATTEMPTS = 100

export function postgresMessageStore(sql: SQL): MessageStore<TransactionSQL> {
  /** After the commit that deleted rows: the bytes of each blob no row names any more. A failure is left to sweepOrphans. */
  async function dropBytes(blobs: Iterable<string>) {
    for (const blob of new Set(blobs)) {
      await sql`DELETE FROM mail_bodies WHERE blob = ${blob} AND NOT EXISTS (SELECT 1 FROM mail_messages WHERE blob = ${blob})`.catch(
        () => {},
      )
    }
  }

  async function chunk(blob: string, part: number, seq: number): Promise<Uint8Array | null> {
    const [row] = await sql`SELECT data FROM mail_bodies WHERE blob = ${blob} AND part = ${part} AND seq = ${seq}`
    return row ? (row.data as Uint8Array) : null
  }

  return {
    async mailboxByAddress(address) {
      const [row] = await sql`SELECT * FROM mailboxes WHERE address = ${address}`
      return row ? mailbox(row) : null
    },
    async mailboxById(id) {
      const [row] = await sql`SELECT * FROM mailboxes WHERE id = ${id}`
      return row ? mailbox(row) : null
    },
    async renew(id, expires) {
      await sql`UPDATE mailboxes SET expires = ${expires} WHERE id = ${id}`
    },

    async getOrCreate({ address, draw, accountId, now, expires }) {
      let freed: string[] = []
      const got: MailboxGot = await sql.begin(async (tx) => {
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const at = address ?? draw()
          // Locked: a renewal, a sweep or a deletion on another node waits for this decision, or this one for it.
          const [found] = await tx`SELECT * FROM mailboxes WHERE address = ${at} FOR UPDATE`
          let replaced: number | null = null
          if (found) {
            const box = mailbox(found)
            if (box.expires > now) {
              if (address === null) continue // a random name that is taken: draw again
              if (box.account_id !== accountId) return 'taken'
              await tx`UPDATE mailboxes SET expires = ${expires} WHERE id = ${box.id}`
              return { mailbox: { ...box, expires }, replaced: null }
            }
            // Expired, not yet swept: it goes with its mail (the bytes after the commit).
            freed = (await tx`SELECT DISTINCT blob FROM mail_messages WHERE mailbox_id = ${box.id}`).map(
              (r: { blob: string }) => r.blob,
            )
            await tx`DELETE FROM mailboxes WHERE id = ${box.id}`
            replaced = box.id
          }
          // ON CONFLICT waits for another node's insert of this address to commit or roll back: committed, it
          // makes nothing here, and the next round reads (a new statement, a new snapshot) and decides on it.
          const [made] = await tx`
            INSERT INTO mailboxes (address, account_id, created, expires) VALUES (${at}, ${accountId}, ${now}, ${expires})
            ON CONFLICT (address) DO NOTHING RETURNING *`
          if (made) return { mailbox: mailbox(made), replaced }
        }
        throw new Error(`mailbox ${address}: no decision after ${MAX_ATTEMPTS} attempts`)
      })
      if (freed.length) await dropBytes(freed)
      return got
    },

    async mailboxesOf(accountId, now, limit) {
      const rows = await sql`
        SELECT b.*, (SELECT count(*) FROM mail_messages m WHERE m.mailbox_id = b.id AND m.seen = 0) AS unread
          FROM mailboxes b WHERE b.account_id = ${accountId} AND b.expires > ${now} ORDER BY b.id DESC LIMIT ${limit}`
      return rows.map((r: PgRow) => ({ ...mailbox(r), unread: int(r.unread) }))
    },
    async countOf(accountId, now) {
      const [row] = await sql`SELECT count(*) AS n FROM mailboxes WHERE account_id = ${accountId} AND expires > ${now}`
      return int(row.n)
    },
    async unread(mailboxId) {
      const [row] = await sql`SELECT count(*) AS n FROM mail_messages WHERE mailbox_id = ${mailboxId} AND seen = 0`
      return int(row.n)
    },

    async storeMessage({ mailboxIds, received, maxMessages, taken, fields: f, body, parts }, within) {
      const ids = [...new Set(mailboxIds)].sort((a, b) => a - b)
      if (ids.length === 0) return []
      const blob = newBlobName(received)
      try {
        return await sql.begin(async (tx) => {
          // The bytes first, the locks after: a mailbox is held only while its rows are written.
          await writeBodyPart(tx, blob, BODY_PART, Buffer.from(body))
          if (taken.bytes) await writeBodyPart(tx, blob, RAW_PART, taken.bytes)
          else await writeBodyFile(tx, blob, RAW_PART, taken.file!)
          for (let i = 0; i < parts.length; i++) await writeBodyPart(tx, blob, i + 1, parts[i]!)
          const boxes = await tx`SELECT * FROM mailboxes WHERE id IN ${tx(ids)} ORDER BY id FOR NO KEY UPDATE`
          const out: StoredMessage[] = []
          for (const box of boxes.map(mailbox)) {
            if (box.expires <= received || box.messages >= maxMessages) continue
            const [row] = await tx`
              INSERT INTO mail_messages (mailbox_id, blob, received, size, envelope_from, from_address, from_name, subject, date,
                intro, attachments, parse_error)
              VALUES (${box.id}, ${blob}, ${received}, ${taken.size}, ${f.envelope_from}, ${f.from.address}, ${f.from.name}, ${f.subject},
                ${f.date}, ${f.intro}, ${f.attachments.length}, ${f.parse_error})
              RETURNING id`
            const id = int(row.id)
            for (const a of f.attachments)
              await tx`INSERT INTO mail_attachments (message_id, part, filename, content_type, size) VALUES (${id}, ${a.part}, ${a.filename}, ${a.content_type}, ${a.size})`
            out.push({ mailboxId: box.id, id, accountId: box.account_id, address: box.address })
          }
          if (out.length === 0) throw new NoTaker()
          if (within) await within(tx, out)
          return out
        })
      } catch (err) {
        if (err instanceof NoTaker) return []
        throw err
      }
    },

    async list(mailboxId, after, limit) {
      const rows = await sql`
        SELECT id, received, size, seen, from_address, from_name, subject, date, intro, attachments
          FROM mail_messages WHERE mailbox_id = ${mailboxId} AND id > ${after} ORDER BY id DESC LIMIT ${limit}`
      return rows.map(summary)
    },
    async message(id) {
      const [row] = await sql`
        SELECT id, received, size, seen, from_address, from_name, subject, date, intro, attachments, mailbox_id, blob
          FROM mail_messages WHERE id = ${id}`
      return row ? ({ ...summary(row), mailbox_id: int(row.mailbox_id), blob: row.blob } satisfies MessageRow) : null
    },
    async attachmentsOf(messageId) {
      const rows =
        await sql`SELECT id, message_id, part, filename, content_type, size FROM mail_attachments WHERE message_id = ${messageId} ORDER BY part`
      return rows.map(attachmentMeta)
    },
    async attachment(id) {
      const [row] = await sql`
        SELECT a.id, a.message_id, a.part, a.filename, a.content_type, a.size, m.blob, m.mailbox_id
          FROM mail_attachments a JOIN mail_messages m ON m.id = a.message_id WHERE a.id = ${id}`
      return row
        ? ({ ...attachmentMeta(row), blob: row.blob, mailbox_id: int(row.mailbox_id) } satisfies AttachmentRow)
        : null
    },

    async body(blob) {
      const rows = await sql`SELECT data FROM mail_bodies WHERE blob = ${blob} AND part = ${BODY_PART} ORDER BY seq`
      if (rows.length === 0) return null
      return JSON.parse(Buffer.concat(rows.map((r: { data: Uint8Array }) => r.data)).toString('utf8')) as MessageBody
    },

    async bytes(blob, part): Promise<MailBytes | null> {
      const [count] = await sql`SELECT count(*) AS n FROM mail_bodies WHERE blob = ${blob} AND part = ${part}`
      const chunks = int(count.n)
      if (chunks === 0) return null
      if (chunks === 1) return chunk(blob, part, 0)
      // One chunk per pull: a slow client holds one chunk in memory and no transaction open. A message deleted
      // meanwhile ends the stream with an error (the response is cut short, never filled with other bytes).
      let seq = 0
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          const data = await chunk(blob, part, seq)
          if (!data) return controller.error(new Error('the message was deleted while it was being sent'))
          controller.enqueue(data)
          if (++seq === chunks) controller.close()
        },
      })
    },

    async head(blob, maxBytes) {
      const held: Uint8Array[] = []
      let size = 0
      for (let seq = 0; size < maxBytes || seq === 0; seq++) {
        const data = await chunk(blob, RAW_PART, seq)
        if (!data) break
        held.push(data)
        size += data.length
      }
      if (held.length === 0) return null
      return new Uint8Array(Buffer.concat(held).subarray(0, maxBytes))
    },

    async markSeen(id) {
      await sql`UPDATE mail_messages SET seen = 1 WHERE id = ${id} AND seen = 0`
    },

    async setSeen(id, mailboxId, seen) {
      const rows =
        await sql`UPDATE mail_messages SET seen = ${seen ? 1 : 0} WHERE id = ${id} AND mailbox_id = ${mailboxId} RETURNING id`
      return rows.length > 0
    },

    async deleteMessages(mailboxId, accountId, ids) {
      const wanted = [...new Set(ids)]
      if (wanted.length === 0) return []
      const rows: { id: string; blob: string }[] = await sql.begin(async (tx) => {
        // The mailbox again, locked: taken over (expired, deleted, made again by another account) means nothing goes.
        const [box] =
          await tx`SELECT id FROM mailboxes WHERE id = ${mailboxId} AND account_id = ${accountId} FOR NO KEY UPDATE`
        if (!box) return []
        return tx`DELETE FROM mail_messages WHERE mailbox_id = ${mailboxId} AND id IN ${tx(wanted)} RETURNING id, blob`
      })
      await dropBytes(rows.map((r) => r.blob))
      const gone = new Set(rows.map((r) => int(r.id)))
      return wanted.filter((id) => gone.has(id))
    },

    async deleteMailbox(mailboxId, accountId) {
      const blobs: string[] | null = await sql.begin(async (tx) => {
        const [box] =
          await tx`SELECT id FROM mailboxes WHERE id = ${mailboxId} AND account_id = ${accountId} FOR UPDATE`
        if (!box) return null
        // Read under the lock: a delivery into it has committed (its blob is listed) or will find it gone.
        const rows = await tx`SELECT DISTINCT blob FROM mail_messages WHERE mailbox_id = ${mailboxId}`
        await tx`DELETE FROM mailboxes WHERE id = ${mailboxId}`
        return rows.map((r: { blob: string }) => r.blob)
      })
      if (blobs === null) return false
      await dropBytes(blobs)
      return true
    },

    async sweepExpired(now, limit) {
      const candidates = (
        await sql`SELECT id FROM mailboxes WHERE expires <= ${now} ORDER BY expires LIMIT ${limit}`
      ).map((r: { id: string }) => int(r.id))
      if (candidates.length === 0) return []
      const { ids, blobs } = await sql.begin(async (tx) => {
        // Locked and checked again: one renewed since the read (by a read on any node) stays; one another node
        // swept meanwhile is not there any more.
        const locked = (
          await tx`SELECT id FROM mailboxes WHERE id IN ${tx(candidates)} AND expires <= ${now} ORDER BY id FOR UPDATE`
        ).map((r: { id: string }) => int(r.id))
        if (locked.length === 0) return { ids: [] as number[], blobs: [] as string[] }
        const rows = await tx`SELECT DISTINCT blob FROM mail_messages WHERE mailbox_id IN ${tx(locked)}`
        await tx`DELETE FROM mailboxes WHERE id IN ${tx(locked)}`
        return { ids: locked, blobs: rows.map((r: { blob: string }) => r.blob) }
      })
      await dropBytes(blobs)
      return ids
    },

    async sweepOrphans() {
      // Chunks of a delivery in progress are not committed, so not seen here: any age is safe to remove.
      const rows = await sql`
        DELETE FROM mail_bodies b WHERE NOT EXISTS (SELECT 1 FROM mail_messages m WHERE m.blob = b.blob) RETURNING blob`
      return new Set(rows.map((r: { blob: string }) => r.blob)).size
    },

    async totals() {
      const [row] =
        await sql`SELECT count(*) AS mailboxes, coalesce(sum(messages), 0) AS messages, coalesce(sum(bytes), 0) AS bytes FROM mailboxes`
      return { mailboxes: int(row.mailboxes), messages: int(row.messages), bytes: int(row.bytes) }
    },
  }
}
