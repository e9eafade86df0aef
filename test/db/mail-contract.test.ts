// Temporary mail's storage contract (src/mail/storage), one suite on both engines: what one "node" (a connection,
// a pool) stores, the other lists and reads, byte for byte. Then the signing secret on both engines.
import { describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { sqliteMessageStore } from '../../src/mail/storage/sqlite'
import { CHUNK_BYTES, postgresMessageStore } from '../../src/mail/storage/postgres'
import {
  RAW_PART,
  type MailBytes,
  type MessageBody,
  type MessageStore,
  type NewMessage,
} from '../../src/mail/storage/contract'
import { parseMessage } from '../../src/mail/parse'
import { createSpool, type Spool } from '../../src/mail/spool'
import { createLinkSigner, fileSigningSecret, SECRET_BYTES, type SigningSecretSource } from '../../src/kernel/signing'
import { postgresSigningSecret } from '../../src/db/postgres/signing'
import type { TransactionSQL } from 'bun'
import type { Db } from '../../src/db/sqlite'
import { engineHarness } from '../support/engines'
import { EVERY_BYTE, seededBytes } from '../support/bytes'

const HOUR = 3_600_000
const NOW = Date.parse('2026-06-01T12:00:00Z')
const MAX_MESSAGES = 200

/** What the suite needs of an engine: the store as two nodes see it, a way in for messages, and its rows. */
interface Engine {
  name: string
  /** The store on a connection (pool) of its own: a second call is a second node. */
  node(): MessageStore<any>
  /** A delivery's input, as smtp.ts and the service make it: the DATA taken by the spool (past 1 MiB into a file), then parsed. */
  message(eml: Buffer, mailboxIds: number[], opts?: { maxMessages?: number; received?: number }): Promise<NewMessage>
  account(name: string): Promise<number>
  mailbox(address: string, accountId: number, expires?: number): Promise<number>
  /** How many blobs have bytes stored (files or mail_inline on SQLite; distinct blobs of mail_bodies on PostgreSQL). */
  blobs(): Promise<number>
  /** Bytes of a blob that no row names, as a crash between a deletion's commit and its cleanup leaves them. */
  orphan(): Promise<void>
  /** Inside a store's transaction (`within`): writes an account row by that name (on SQLite synchronously). */
  mark(tx: unknown, name: string): unknown
  /** Whether an account by that name is committed. */
  marked(name: string): Promise<boolean>
  /** The signing secret as one node reads it (a second call: a second node). */
  secret(): SigningSecretSource
  close(): Promise<void>
}

const engines = engineHarness()

async function taken(
  spool: Spool,
  eml: Buffer,
  mailboxIds: number[],
  opts: { maxMessages?: number; received?: number } = {},
): Promise<NewMessage> {
  const chunks: Buffer[] = []
  for (let at = 0; at < eml.length; at += 64 * 1024) chunks.push(eml.subarray(at, at + 64 * 1024))
  const t = await spool.take(Readable.from(chunks), 50 * 1024 * 1024)
  const parsed = await parseMessage(spool.source(t), 'sender@example.org')
  const f = parsed.fields
  const body = JSON.stringify({ to: f.to, cc: f.cc, text: f.text, html: f.html, links: f.links } satisfies MessageBody)
  return {
    mailboxIds,
    received: opts.received ?? NOW,
    maxMessages: opts.maxMessages ?? MAX_MESSAGES,
    taken: t,
    fields: f,
    body,
    parts: parsed.parts,
  }
}

async function sqliteEngine(): Promise<Engine> {
  const { dir, main, connect, close } = engines.sqlite('linkbox-mailstore-')
  const spool = createSpool(dir)
  return {
    name: 'SQLite',
    node: () => sqliteMessageStore(connect(), createSpool(dir)),
    message: (eml, ids, opts) => taken(spool, eml, ids, opts),
    account: async (name) =>
      (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
    mailbox: async (address, accountId, expires = NOW + HOUR) =>
      (
        main
          .query('INSERT INTO mailboxes (address, account_id, created, expires) VALUES (?, ?, 0, ?) RETURNING id')
          .get(address, accountId, expires) as { id: number }
      ).id,
    async blobs() {
      const root = join(dir, 'mail')
      const files = readdirSync(root)
        .filter((s) => /^[0-9a-f]{2}$/.test(s))
        .flatMap((s) => readdirSync(join(root, s)))
      return files.length + (main.query('SELECT count(*) AS n FROM mail_inline').get() as { n: number }).n
    },
    async orphan() {
      // A blob's folder with no row: what spool.store leaves when the process dies before the commit.
      const t = await spool.take(Readable.from([Buffer.alloc(2 * 1024 * 1024, 'x')]), 50 * 1024 * 1024)
      await spool.store(t, '{}', [])
    },
    mark: (tx, name) => (tx as Db).query('INSERT INTO accounts (name, created) VALUES (?, 0)').run(name),
    marked: async (name) => main.query('SELECT 1 FROM accounts WHERE name = ?').get(name) !== null,
    secret: () => fileSigningSecret(dir),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  // A node still takes DATA into its own data_dir/mail/incoming (in memory up to 1 MiB): only that is per node.
  const spool = createSpool(engines.tracked('linkbox-mailstore-pg-'))
  return {
    name: 'PostgreSQL',
    node: () => postgresMessageStore(pool()),
    message: (eml, ids, opts) => taken(spool, eml, ids, opts),
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    mailbox: async (address, accountId, expires = NOW + HOUR) =>
      Number(
        (
          await main.sql`INSERT INTO mailboxes (address, account_id, created, expires) VALUES (${address}, ${accountId}, 0, ${expires}) RETURNING id`
        )[0].id,
      ),
    blobs: async () => Number((await main.sql`SELECT count(DISTINCT blob) AS n FROM mail_bodies`)[0].n),
    orphan: async () =>
      void (await main.sql`INSERT INTO mail_bodies (blob, part, seq, data) VALUES ('0123456789abcdef0123456789abcdef', 0, 0, ${Buffer.from('x')})`),
    mark: (tx, name) => (tx as TransactionSQL)`INSERT INTO accounts (name, created) VALUES (${name}, 0)`,
    marked: async (name) => (await main.sql`SELECT 1 FROM accounts WHERE name = ${name}`).length > 0,
    secret: () => postgresSigningSecret(pool()),
    close,
  }
}

// ---------------------------------------------------------------------------------------------------------
// Messages

/** 3 MiB and some, not a multiple of the chunk size (several chunks of mail_bodies). */
const BIG = seededBytes(3 * 1024 * 1024 + 12_345, 0x2545f491)

function base64Lines(data: Uint8Array): string {
  return (
    Buffer.from(data)
      .toString('base64')
      .match(/.{1,76}/g) ?? []
  ).join('\r\n')
}

/** A message with a text part and attachments (name → bytes), CRLF as on the wire. */
function eml(
  subject: string,
  attachments: Record<string, Uint8Array> = {},
  text = 'Hello there, see https://example.com/report',
): Buffer {
  const head = [
    'From: Ann Sender <ann@example.org>',
    'To: box@mail.test',
    `Subject: ${subject}`,
    'Date: Mon, 01 Jun 2026 11:59:00 +0000',
    'Message-ID: <1@example.org>',
    'MIME-Version: 1.0',
  ]
  const names = Object.keys(attachments)
  if (names.length === 0)
    return Buffer.from([...head, 'Content-Type: text/plain; charset=utf-8', '', text, ''].join('\r\n'))
  const lines = [
    ...head,
    'Content-Type: multipart/mixed; boundary="b-1"',
    '',
    '--b-1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    text,
  ]
  for (const name of names) {
    lines.push(
      '--b-1',
      `Content-Type: application/octet-stream; name="${name}"`,
      `Content-Disposition: attachment; filename="${name}"`,
    )
    lines.push('Content-Transfer-Encoding: base64', '', base64Lines(attachments[name]!))
  }
  lines.push('--b-1--', '')
  return Buffer.from(lines.join('\r\n'))
}

async function read(bytes: MailBytes | null): Promise<Uint8Array | null> {
  if (bytes === null) return null
  return new Uint8Array(await new Response(bytes as BodyInit).arrayBuffer())
}

const same = (a: Uint8Array | null, b: Uint8Array) =>
  a !== null && a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('mail storage on %s', (_name, makeEngine) => {
  test('a message stored through one node is listed and read through the other: its attachments byte for byte (every byte value; 3 MiB), its source, its body', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const owner = await e.account('ann')
      const box = await e.mailbox('box@mail.test', owner)
      const source = eml('Quarterly report', { 'all-bytes.bin': EVERY_BYTE, 'big.bin': BIG })
      expect(source.length).toBeGreaterThan(4 * 1024 * 1024) // past the spool's 1 MiB: taken into a file
      const input = await e.message(source, [box])
      expect(input.taken.file).not.toBeNull()
      const stored = await a.storeMessage(input)
      expect(stored).toEqual([{ mailboxId: box, id: expect.any(Number), accountId: owner, address: 'box@mail.test' }])
      const id = stored[0]!.id

      const list = await b.list(box, 0, 50)
      expect(list).toEqual([
        {
          id,
          received: NOW,
          size: source.length,
          seen: 0,
          from_address: 'ann@example.org',
          from_name: 'Ann Sender',
          subject: 'Quarterly report',
          date: Date.parse('2026-06-01T11:59:00Z'),
          intro: 'Hello there, see https://example.com/report',
          attachments: 2,
        },
      ])
      expect(await b.list(box, id, 50)).toEqual([])
      const row = (await b.message(id))!
      expect({ mailbox_id: row.mailbox_id, subject: row.subject, size: row.size }).toEqual({
        mailbox_id: box,
        subject: 'Quarterly report',
        size: source.length,
      })
      const body = (await b.body(row.blob))!
      expect(body.to).toEqual([{ address: 'box@mail.test', name: '' }])
      expect(body.text.trim()).toBe('Hello there, see https://example.com/report')
      expect(body.links).toEqual(['https://example.com/report'])

      const parts = await b.attachmentsOf(id)
      expect(parts.map(({ part, filename, content_type, size }) => ({ part, filename, content_type, size }))).toEqual([
        { part: 1, filename: 'all-bytes.bin', content_type: 'application/octet-stream', size: 256 },
        { part: 2, filename: 'big.bin', content_type: 'application/octet-stream', size: BIG.length },
      ])
      for (const [p, want] of [
        [parts[0]!, EVERY_BYTE],
        [parts[1]!, BIG],
      ] as const) {
        const att = (await b.attachment(p.id))!
        expect({ blob: att.blob, mailbox_id: att.mailbox_id, part: att.part }).toEqual({
          blob: row.blob,
          mailbox_id: box,
          part: p.part,
        })
        const got = await read(await b.bytes(att.blob, att.part))
        expect(got?.length).toBe(want.length)
        expect(same(got, want)).toBe(true)
      }
      expect(same(await read(await b.bytes(row.blob, RAW_PART)), source)).toBe(true)
      expect(same(await b.head(row.blob, 100), source.subarray(0, 100))).toBe(true)
      expect(await b.bytes(row.blob, 3)).toBeNull()
      expect(await b.attachment(parts[1]!.id + 1000)).toBeNull()
      expect(await b.message(id + 1000)).toBeNull()

      await b.markSeen(id)
      expect((await a.list(box, 0, 50))[0]!.seen).toBe(1)
      expect(await a.setSeen(id, box, false)).toBe(true)
      expect((await b.message(id))!.seen).toBe(0)
      expect(await a.setSeen(id, box + 1, true)).toBe(false)
      expect((await b.mailboxById(box))!.messages).toBe(1)
      expect((await b.mailboxByAddress('box@mail.test'))!.bytes).toBe(source.length)
      expect(await b.totals()).toEqual({ mailboxes: 1, messages: 1, bytes: source.length })
      expect(await e.blobs()).toBe(1)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('a small message (received in memory) and an empty attachment, read through the other node', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const box = await e.mailbox('small@mail.test', await e.account('sam'))
      const source = eml('Small', { 'empty.txt': new Uint8Array(0), 'all-bytes.bin': EVERY_BYTE })
      const input = await e.message(source, [box])
      expect(input.taken.file).toBeNull()
      const id = (await a.storeMessage(input))[0]!.id
      const row = (await b.message(id))!
      const parts = await b.attachmentsOf(id)
      expect(parts.map((p) => p.size)).toEqual([0, 256])
      expect(await read(await b.bytes(row.blob, 1))).toEqual(new Uint8Array(0))
      expect(same(await read(await b.bytes(row.blob, 2)), EVERY_BYTE)).toBe(true)
      expect(same(await read(await b.bytes(row.blob, RAW_PART)), source)).toBe(true)
      expect((await b.body(row.blob))!.links).toEqual(['https://example.com/report'])
    } finally {
      await e.close()
    }
  })

  test('one delivery to two mailboxes shares its bytes; they go when the last message naming them is deleted, not before', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [ann, bob] = [await e.account('ann'), await e.account('bob')]
      const [one, two] = [await e.mailbox('one@mail.test', ann), await e.mailbox('two@mail.test', ann)]
      const source = eml('Shared', { 'big.bin': BIG })
      const stored = await a.storeMessage(await e.message(source, [one, two]))
      expect(stored.map((s) => s.mailboxId).sort()).toEqual([one, two].sort())
      const first = stored.find((s) => s.mailboxId === one)!.id
      const second = stored.find((s) => s.mailboxId === two)!.id
      const blob = (await b.message(first))!.blob
      expect((await b.message(second))!.blob).toBe(blob)
      expect(await e.blobs()).toBe(1)

      // Another account's deletion, and a message of another mailbox, delete nothing.
      expect(await b.deleteMessages(one, bob, [first])).toEqual([])
      expect(await b.deleteMessages(one, ann, [second, first + second + 1000])).toEqual([])
      expect(await b.message(first)).not.toBeNull()

      expect(await b.deleteMessages(one, ann, [first, first])).toEqual([first])
      expect(await b.message(first)).toBeNull()
      expect((await a.mailboxById(one))!.messages).toBe(0)
      expect(same(await read(await a.bytes(blob, 1)), BIG)).toBe(true) // still named by the other mailbox's row
      expect(await e.blobs()).toBe(1)

      expect(await a.deleteMailbox(two, bob)).toBe(false)
      expect(await a.deleteMailbox(two, ann)).toBe(true)
      expect(await a.deleteMailbox(two, ann)).toBe(false)
      expect(await b.mailboxById(two)).toBeNull()
      expect(await b.message(second)).toBeNull()
      expect(await b.bytes(blob, 1)).toBeNull()
      expect(await b.bytes(blob, RAW_PART)).toBeNull()
      expect(await b.body(blob)).toBeNull()
      expect(await b.head(blob, 10)).toBeNull()
      expect(await e.blobs()).toBe(0)
      expect(await b.totals()).toEqual({ mailboxes: 1, messages: 0, bytes: 0 })
    } finally {
      await e.close()
    }
  }, 60_000)

  test('the sweep deletes expired mailboxes with their messages and bytes, a renewed one stays; orphaned bytes are swept', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      const old = await e.mailbox('old@mail.test', ann, NOW + 10)
      const renewed = await e.mailbox('renewed@mail.test', ann, NOW + 10)
      const live = await e.mailbox('live@mail.test', ann)
      await a.storeMessage(await e.message(eml('To all', { 'all-bytes.bin': EVERY_BYTE }), [old, renewed, live]))
      await a.storeMessage(await e.message(eml('Big', { 'big.bin': BIG }), [old]))
      expect(await e.blobs()).toBe(2)
      await b.renew(renewed, NOW + HOUR)
      expect(await a.sweepExpired(NOW + 20, 10)).toEqual([old])
      expect(await b.mailboxById(old)).toBeNull()
      expect((await b.list(renewed, 0, 10)).length).toBe(1)
      expect(await e.blobs()).toBe(1) // the big one went; the shared one is still named
      expect(await b.sweepExpired(NOW + 20, 10)).toEqual([])

      await e.orphan()
      expect(await e.blobs()).toBe(2)
      // Files count as orphans after an hour (a delivery may be writing them); rows as soon as they are committed.
      expect(await b.sweepOrphans(Date.now() + 2 * HOUR)).toBe(1)
      expect(await e.blobs()).toBe(1)
      const [row] = await a.list(live, 0, 10)
      expect((await a.body((await a.message(row!.id))!.blob))!.text.trim()).toBe(
        'Hello there, see https://example.com/report',
      )
    } finally {
      await e.close()
    }
  }, 60_000)

  test('a mailbox with one place left, two nodes storing into it at once: exactly one is stored, the other keeps nothing (10 rounds)', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      const max = 3
      for (let round = 0; round < 10; round++) {
        const box = await e.mailbox(`full${round}@mail.test`, ann)
        for (let i = 0; i < max - 1; i++)
          expect((await a.storeMessage(await e.message(eml(`fill ${i}`), [box], { maxMessages: max }))).length).toBe(1)
        const before = await e.blobs()
        // Small ones most rounds (two short transactions that overlap all along), large ones (several chunks
        // written before the mailbox is locked) every third.
        const attachments: Record<string, Uint8Array> =
          round % 3 === 2 ? { 'big.bin': BIG } : { 'all-bytes.bin': EVERY_BYTE }
        const [x, y] = await Promise.all([
          e.message(eml('from node a', attachments), [box], { maxMessages: max }),
          e.message(eml('from node b', attachments), [box], { maxMessages: max }),
        ])
        const results = await Promise.all([a.storeMessage(x), b.storeMessage(y)])
        expect(results.map((r) => r.length).sort()).toEqual([0, 1])
        expect((await a.mailboxById(box))!.messages).toBe(max)
        expect((await b.list(box, 0, 10)).length).toBe(max)
        expect(await e.blobs()).toBe(before + 1)
      }
    } finally {
      await e.close()
    }
  }, 120_000)

  test('two deliveries to the same two mailboxes (each with one place left), named in opposite orders, at once: one message each, no deadlock', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      for (let round = 0; round < 5; round++) {
        const [p, q] = [await e.mailbox(`p${round}@mail.test`, ann), await e.mailbox(`q${round}@mail.test`, ann)]
        await a.storeMessage(await e.message(eml('fill'), [p, q], { maxMessages: 2 }))
        const [x, y] = await Promise.all([
          e.message(eml('a', { 'big.bin': BIG }), [p, q], { maxMessages: 2 }),
          e.message(eml('b', { 'big.bin': BIG }), [q, p], { maxMessages: 2 }),
        ])
        const results = await Promise.all([a.storeMessage(x), b.storeMessage(y)])
        expect(results.flat().length).toBe(2)
        expect((await a.mailboxById(p))!.messages).toBe(2)
        expect((await a.mailboxById(q))!.messages).toBe(2)
      }
    } finally {
      await e.close()
    }
  }, 120_000)

  test('an expired mailbox, or one gone before the commit, takes nothing: [] and no bytes kept', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const ann = await e.account('ann')
      const expired = await e.mailbox('expired@mail.test', ann, NOW - 1)
      expect(await a.storeMessage(await e.message(eml('late', { 'big.bin': BIG }), [expired]))).toEqual([])
      expect(await a.storeMessage(await e.message(eml('small'), [expired, 987654]))).toEqual([])
      expect(await e.blobs()).toBe(0)
      expect((await a.mailboxById(expired))!.messages).toBe(0)
    } finally {
      await e.close()
    }
  }, 60_000)

  // ---------------------------------------------------------------------------------------------------------
  // Mailboxes: getOrCreate, the dashboard's list, and the delivery's `within`

  test("getOrCreate: made, the owner's renewed, another account's taken, an expired one replaced with its mail gone, a random name drawn again when taken", async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [ann, bob] = [await e.account('ann'), await e.account('bob')]
      const ask = (address: string | null, accountId: number, now = NOW, draw = () => 'never@mail.test') => ({
        address,
        draw,
        accountId,
        now,
        expires: now + HOUR,
      })
      const made = await a.getOrCreate(ask('new@mail.test', ann))
      expect(made).toEqual({
        mailbox: {
          id: expect.any(Number),
          address: 'new@mail.test',
          account_id: ann,
          created: NOW,
          expires: NOW + HOUR,
          messages: 0,
          bytes: 0,
        },
        replaced: null,
      })
      const id = (made as { mailbox: { id: number } }).mailbox.id
      // The owner again, later, on the other node: the same mailbox, renewed.
      const again = await b.getOrCreate(ask('new@mail.test', ann, NOW + 1000))
      expect(again).toEqual({
        mailbox: expect.objectContaining({ id, created: NOW, expires: NOW + 1000 + HOUR }),
        replaced: null,
      })
      expect((await a.mailboxById(id))!.expires).toBe(NOW + 1000 + HOUR)
      expect(await a.getOrCreate(ask('new@mail.test', bob))).toBe('taken')
      expect((await b.mailboxById(id))!.account_id).toBe(ann)

      // Expired, not yet swept, with a message: another account gets the address anew, the old mail is gone.
      const old = await e.mailbox('old@mail.test', ann, NOW - 1)
      const stored = await b.storeMessage(
        await e.message(eml('old mail', { 'big.bin': BIG }), [old], { received: NOW - 10 }),
      )
      expect(stored.length).toBe(1)
      expect(await e.blobs()).toBe(1)
      const taken = await a.getOrCreate(ask('old@mail.test', bob))
      expect(taken).toEqual({
        mailbox: expect.objectContaining({ address: 'old@mail.test', account_id: bob, messages: 0 }),
        replaced: old,
      })
      expect((taken as { mailbox: { id: number } }).mailbox.id).not.toBe(old)
      expect(await b.mailboxById(old)).toBeNull()
      expect(await b.message(stored[0]!.id)).toBeNull()
      expect(await e.blobs()).toBe(0)

      // A random name: drawn until one is free (a live one is skipped, whoever owns it).
      const names = ['new@mail.test', 'new@mail.test', 'free@mail.test']
      const random = await b.getOrCreate(ask(null, bob, NOW, () => names.shift()!))
      expect(random).toEqual({
        mailbox: expect.objectContaining({ address: 'free@mail.test', account_id: bob }),
        replaced: null,
      })
      expect(names).toEqual([])
    } finally {
      await e.close()
    }
  }, 60_000)

  test('two nodes asking for one free address at once get one mailbox: one account each → one has it, the other is refused; the same account → the same mailbox (10 rounds)', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [ann, bob] = [await e.account('ann'), await e.account('bob')]
      const ask = (address: string, accountId: number) => ({
        address,
        draw: () => 'x@mail.test',
        accountId,
        now: NOW,
        expires: NOW + HOUR,
      })
      for (let round = 0; round < 10; round++) {
        const contested = await Promise.all([
          a.getOrCreate(ask(`race${round}@mail.test`, ann)),
          b.getOrCreate(ask(`race${round}@mail.test`, bob)),
        ])
        const won = contested.filter((g) => g !== 'taken')
        expect(won.length).toBe(1)
        expect(contested.filter((g) => g === 'taken').length).toBe(1)
        expect((await a.mailboxByAddress(`race${round}@mail.test`))!.id).toBe(
          (won[0] as { mailbox: { id: number } }).mailbox.id,
        )

        const shared = await Promise.all([
          a.getOrCreate(ask(`same${round}@mail.test`, ann)),
          b.getOrCreate(ask(`same${round}@mail.test`, ann)),
        ])
        const ids = shared.map((g) => (g as { mailbox: { id: number } }).mailbox.id)
        expect(ids[0]).toBe(ids[1]!)

        // Over an expired one: it is replaced once, and one mailbox is there after.
        const expired = await e.mailbox(`stale${round}@mail.test`, bob, NOW - 1)
        const over = await Promise.all([
          a.getOrCreate(ask(`stale${round}@mail.test`, ann)),
          b.getOrCreate(ask(`stale${round}@mail.test`, ann)),
        ])
        expect(over.map((g) => (g as { replaced: number | null }).replaced).sort()).toEqual([expired, null].sort())
        const overIds = over.map((g) => (g as { mailbox: { id: number } }).mailbox.id)
        expect(overIds[0]).toBe(overIds[1]!)
        expect((await a.mailboxByAddress(`stale${round}@mail.test`))!.account_id).toBe(ann)
      }
      expect((await a.totals()).mailboxes).toBe(30)
    } finally {
      await e.close()
    }
  }, 60_000)

  test("the dashboard's list: an account's live mailboxes, newest first, with unread counts; how many; a mailbox's unread", async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [ann, bob] = [await e.account('ann'), await e.account('bob')]
      const one = await e.mailbox('one@mail.test', ann)
      const two = await e.mailbox('two@mail.test', ann)
      await e.mailbox('gone@mail.test', ann, NOW - 1)
      await e.mailbox('bobs@mail.test', bob)
      const [first] = await a.storeMessage(await e.message(eml('first'), [one, two]))
      await a.storeMessage(await e.message(eml('second'), [one]))
      await b.markSeen(first!.id)
      expect(await b.unread(one)).toBe(1)
      expect(await b.unread(two)).toBe(1)
      expect(await b.countOf(ann, NOW)).toBe(2)
      expect(await b.countOf(ann, NOW - 10)).toBe(3)
      const listed = await b.mailboxesOf(ann, NOW, 10)
      expect(listed.map((m) => [m.address, m.messages, m.unread])).toEqual([
        ['two@mail.test', 1, 1],
        ['one@mail.test', 2, 1],
      ])
      expect(listed[0]).toEqual({
        id: two,
        address: 'two@mail.test',
        account_id: ann,
        created: 0,
        expires: NOW + HOUR,
        messages: 1,
        bytes: expect.any(Number),
        unread: 1,
      })
      expect((await b.mailboxesOf(ann, NOW, 1)).map((m) => m.id)).toEqual([two])
      expect(await a.mailboxesOf(bob, NOW, 10)).toEqual([
        expect.objectContaining({ address: 'bobs@mail.test', unread: 0 }),
      ])
    } finally {
      await e.close()
    }
  })

  test("storeMessage's within runs in the delivery's transaction: its write commits with the message; a throw undoes both (no rows, no bytes); not run when nothing is stored", async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      const box = await e.mailbox('within@mail.test', ann)
      const full = await e.mailbox('full@mail.test', ann, NOW - 1)
      let seen: unknown = null
      const stored = await a.storeMessage(
        await e.message(eml('kept', { 'all-bytes.bin': EVERY_BYTE }), [box, full]),
        (tx, rows) => {
          seen = rows
          return e.mark(tx, 'with-the-message')
        },
      )
      expect(seen).toEqual(stored)
      expect(stored).toEqual([{ mailboxId: box, id: expect.any(Number), accountId: ann, address: 'within@mail.test' }])
      expect(await e.marked('with-the-message')).toBe(true)
      expect(await e.blobs()).toBe(1)

      // A refusal after its write (as the service's "closing" check): nothing of either is kept, small or large.
      for (const attachments of [{ 'all-bytes.bin': EVERY_BYTE }, { 'big.bin': BIG }] as Record<string, Uint8Array>[]) {
        const refused = a.storeMessage(await e.message(eml('refused', attachments), [box]), (tx) => {
          const write = e.mark(tx, 'refused')
          if (write instanceof Promise) write.catch(() => {})
          throw new Error('refused in within')
        })
        await expect(refused).rejects.toThrow('refused in within')
        expect(await e.marked('refused')).toBe(false)
        expect((await b.list(box, 0, 10)).length).toBe(1)
        expect((await b.mailboxById(box))!.messages).toBe(1)
        expect(await e.blobs()).toBe(1)
      }

      let called = false
      expect(await a.storeMessage(await e.message(eml('nobody'), [full]), () => void (called = true))).toEqual([])
      expect(called).toBe(false)
    } finally {
      await e.close()
    }
  }, 60_000)

  // ---------------------------------------------------------------------------------------------------------
  // The signing secret

  test('an async `within` of storeMessage throws and stores nothing: SQLite refuses it, PostgreSQL rolls back what it wrote before the throw', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      const box = await e.mailbox('late@mail.test', ann)
      for (const attachments of [{ 'all-bytes.bin': EVERY_BYTE }, { 'big.bin': BIG }] as Record<string, Uint8Array>[]) {
        const late = a.storeMessage(await e.message(eml('late', attachments), [box]), async (tx) => {
          await e.mark(tx, 'late')
          throw new Error('thrown after an await')
        })
        await expect(late).rejects.toThrow()
        expect(await e.marked('late')).toBe(false)
        expect(await b.list(box, 0, 10)).toEqual([])
        expect((await b.mailboxById(box))!.messages).toBe(0)
        expect(await e.blobs()).toBe(0)
      }
    } finally {
      await e.close()
    }
  })

  test('the signing secret: two nodes asking at once get one secret of 32 random bytes; a link signed on one verifies on the other', async () => {
    const e = await makeEngine()
    const other = await makeEngine()
    try {
      const [one, two] = await Promise.all([e.secret()(), e.secret()()])
      expect(one.length).toBe(SECRET_BYTES)
      expect(Buffer.compare(one, two)).toBe(0)
      expect(Buffer.compare(await e.secret()(), one)).toBe(0) // read again: the same, not remade
      expect(one.equals(Buffer.alloc(SECRET_BYTES))).toBe(false)
      // Another installation makes its own.
      expect(Buffer.compare(await other.secret()(), one)).not.toBe(0)

      const signedOn = createLinkSigner(one)
      const checkedOn = createLinkSigner(two)
      const link = signedOn.sign('mail-attachment-7', NOW + HOUR)
      expect(checkedOn.check('mail-attachment-7', String(link.exp), link.sig, NOW)).toBe('ok')
      expect(checkedOn.check('mail-attachment-8', String(link.exp), link.sig, NOW)).toBe('tampered')
      expect(createLinkSigner(await other.secret()()).check('mail-attachment-7', String(link.exp), link.sig, NOW)).toBe(
        'tampered',
      )
    } finally {
      await e.close()
      await other.close()
    }
  })
})

describe('the signing secret on PostgreSQL', () => {
  test('many nodes racing for it, 5 times over on fresh tables: all end up with the first one stored, one row', async () => {
    const { main, pool, close } = await engines.postgres()
    const pools = Array.from({ length: 4 }, () => pool(2))
    try {
      for (let round = 0; round < 5; round++) {
        await main.sql`DELETE FROM secrets`
        const got = await Promise.all(pools.flatMap((p) => [postgresSigningSecret(p)(), postgresSigningSecret(p)()]))
        const [row, ...more] = await main.sql`SELECT name, value, created FROM secrets`
        expect(more).toEqual([])
        expect(row.name).toBe('signing')
        for (const s of got) expect(Buffer.compare(s, Buffer.from(row.value))).toBe(0)
      }
    } finally {
      await close()
    }
  })

  test('a stored secret shorter than 32 bytes is refused, not used', async () => {
    const { main, close } = await engines.postgres()
    try {
      await main.sql`INSERT INTO secrets (name, value, created) VALUES ('signing', ${Buffer.alloc(8, 1)}, 0)`
      await expect(postgresSigningSecret(main.sql)()).rejects.toThrow('shorter than 32 bytes')
    } finally {
      await close()
    }
  })
})

test('the chunk size is what the PostgreSQL store writes: the 3 MiB attachment is 4 rows, the every-byte one 1', async () => {
  const { main, close } = await engines.postgres()
  const dir = engines.tracked('linkbox-mailstore-chunks-')
  try {
    const store = postgresMessageStore(main.sql)
    const [acc] = await main.sql`INSERT INTO accounts (name, created) VALUES ('ann', 0) RETURNING id`
    const [box] =
      await main.sql`INSERT INTO mailboxes (address, account_id, created, expires) VALUES ('c@mail.test', ${acc.id}, 0, ${NOW + HOUR}) RETURNING id`
    const id = (
      await store.storeMessage(
        await taken(createSpool(dir), eml('c', { 'a.bin': EVERY_BYTE, 'big.bin': BIG }), [Number(box.id)]),
      )
    )[0]!.id
    const rows =
      await main.sql`SELECT b.part, count(*) AS n, sum(length(b.data)) AS bytes, max(length(b.data)) AS largest
      FROM mail_bodies b JOIN mail_messages m ON m.blob = b.blob WHERE m.id = ${id} GROUP BY b.part ORDER BY b.part`
    const byPart = Object.fromEntries(
      rows.map((r: any) => [Number(r.part), { n: Number(r.n), bytes: Number(r.bytes), largest: Number(r.largest) }]),
    )
    expect(byPart[1]).toEqual({ n: 1, bytes: 256, largest: 256 })
    expect(byPart[2]).toEqual({ n: Math.ceil(BIG.length / CHUNK_BYTES), bytes: BIG.length, largest: CHUNK_BYTES })
    expect(byPart[2]!.n).toBe(4)
    expect(byPart[0]!.largest).toBe(CHUNK_BYTES)
    expect(byPart[-1]!.n).toBe(1)
  } finally {
    await close()
  }
})

test('PostgreSQL: a download whose message is deleted while it streams ends in an error, never with other bytes', async () => {
  const { main, pool, close } = await engines.postgres()
  const other = pool(2)
  const dir = engines.tracked('linkbox-mailstore-cut-')
  try {
    const [a, b] = [postgresMessageStore(main.sql), postgresMessageStore(other)]
    const [acc] = await main.sql`INSERT INTO accounts (name, created) VALUES ('ann', 0) RETURNING id`
    const [box] =
      await main.sql`INSERT INTO mailboxes (address, account_id, created, expires) VALUES ('cut@mail.test', ${acc.id}, 0, ${NOW + HOUR}) RETURNING id`
    const id = (
      await a.storeMessage(await taken(createSpool(dir), eml('cut', { 'big.bin': BIG }), [Number(box.id)]))
    )[0]!.id
    const blob = (await a.message(id))!.blob
    const stream = (await a.bytes(blob, 1)) as ReadableStream<Uint8Array>
    expect(stream).toBeInstanceOf(ReadableStream)
    const reader = stream.getReader()
    const first = await reader.read()
    expect(same(first.value!, BIG.subarray(0, CHUNK_BYTES))).toBe(true)
    expect(await b.deleteMailbox(Number(box.id), Number(acc.id))).toBe(true)
    // The stream may have read one chunk ahead; what it gives is the attachment's next bytes, then the error.
    let got = first.value!.length
    const rest = (async () => {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return 'done'
        expect(same(value, BIG.subarray(got, got + value.length))).toBe(true)
        got += value.length
      }
    })()
    await expect(rest).rejects.toThrow('the message was deleted while it was being sent')
    expect(got).toBeLessThan(BIG.length)
  } finally {
    await close()
  }
})
