// The mail service itself on PostgreSQL (issue 22): two nodes, each a mail service with its own pool
// (postgresStorages), its own change feed and its own SMTP receiver on a real socket, share one database. A
// message sent to node B's SMTP port is listed, read and downloaded through node A, its attachments byte for
// byte; a messages.json?wait=N held on node A and a live view open on node A hear of it (the change feed's
// 'mail' topic), and its mail.received event is written in the delivery's commit. Nothing of the message is in
// either node's data_dir once it is stored.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { SQL } from 'bun'
import type { Caller } from '../../src/kernel/caller'
import type { ChangeFeed } from '../../src/db/changes'
import { postgresChangeFeed } from '../../src/db/postgres/changes'
import { postgresStorages } from '../../src/app/storages-postgres'
import { createEvents } from '../../src/kernel/events'
import { createFaultLog } from '../../src/web/fault-log'
import { createMailService, type MailService } from '../../src/mail/service'
import { startSmtp, type SmtpReceiver } from '../../src/mail/smtp'
import { createSpool } from '../../src/mail/spool'
import { createLinkSigner } from '../../src/kernel/signing'
import { postgresSigningSecret } from '../../src/db/postgres/signing'
import { testConfig } from '../support/app'
import { engineHarness, type PostgresDatabase } from '../support/engines'
import { EVERY_BYTE, seededBytes } from '../support/bytes'

const engines = engineHarness()
const DOMAIN = 'mail.test'

/** 3 MiB and some, not a multiple of the chunk size (several chunks of mail_bodies). */
const BIG = seededBytes(3 * 1024 * 1024 + 4321, 0x1234567)

function eml(to: string, subject: string, attachments: Record<string, Uint8Array>): Buffer {
  const lines = [
    'From: Ann Sender <ann@example.org>',
    `To: ${to}`,
    `Subject: ${subject}`,
    'Date: Mon, 01 Jun 2026 11:59:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b-1"',
    '',
    '--b-1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'See the files, and https://example.com/report',
  ]
  for (const [name, data] of Object.entries(attachments)) {
    lines.push(
      '--b-1',
      `Content-Type: application/octet-stream; name="${name}"`,
      `Content-Disposition: attachment; filename="${name}"`,
    )
    lines.push(
      'Content-Transfer-Encoding: base64',
      '',
      (
        Buffer.from(data)
          .toString('base64')
          .match(/.{1,76}/g) ?? []
      ).join('\r\n'),
    )
  }
  lines.push('--b-1--', '')
  return Buffer.from(lines.join('\r\n'))
}

interface Node {
  mail: MailService
  smtp: SmtpReceiver
  feed: ChangeFeed
  dir: string
  faults: unknown[]
}

async function startNode(sql: SQL): Promise<Node> {
  const dir = engines.tracked('linkbox-mail-node-')
  const config = testConfig(dir, { mail: { domains: [DOMAIN], smtp_host: '127.0.0.1' } })
  const storages = postgresStorages(sql)
  const feed = await postgresChangeFeed(sql)
  const faults: unknown[] = []
  const log = { error: (...a: unknown[]) => faults.push(a), fault: (...a: unknown[]) => faults.push(a) }
  const mail = createMailService({
    messages: storages.messages,
    queue: storages.queue,
    config,
    signer: createLinkSigner(await postgresSigningSecret(sql)()),
    events: createEvents(log),
    clock: Date.now,
    // Every account listens: the events are written when an endpoint of theirs subscribes (the queue decides).
    outbox: { wanted: () => true, wake: () => {} },
    changes: feed,
  })
  const smtp = await startSmtp(
    { ...config, mail: { ...config.mail, smtp_port: 0 } },
    mail,
    createSpool(dir),
    createFaultLog(log),
  )
  return { mail, smtp, feed, dir, faults }
}

async function stopNode(n: Node) {
  n.mail.release()
  await n.smtp.close()
  await n.mail.settle()
  await n.feed.close()
}

async function bytesOf(body: unknown): Promise<Buffer> {
  return Buffer.from(await new Response(body as BodyInit).arrayBuffer())
}

const same = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0

describe('the mail service on PostgreSQL, two nodes', () => {
  let db: PostgresDatabase
  let a: Node
  let b: Node
  let alice: Caller

  beforeAll(async () => {
    db = await engines.postgres()
    a = await startNode(db.pool())
    b = await startNode(db.pool())
    const [row] = await db.main.sql`INSERT INTO accounts (name, created) VALUES ('alice', 0) RETURNING id`
    alice = {
      accountId: Number(row.id),
      accountName: 'alice',
      admin: false,
      scopes: new Set(['mail']),
      keyId: null,
      via: 'key',
    }
    await db.main.sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, created)
                      VALUES (${alice.accountId}, 'https://hooks.example/mail', 'mail.received', 'whsec_test', 0)`
  }, 60_000)
  afterAll(async () => {
    await Promise.all([a && stopNode(a), b && stopNode(b)])
    await db?.close()
  })

  test("a message sent to node B's SMTP port: a request held on node A and its live view hear of it; node A lists, reads and downloads it, attachments byte for byte", async () => {
    const box = await a.mail.getOrCreate(alice, 'shared')
    expect(box.address).toBe(`shared@${DOMAIN}`)
    // Node B sees the mailbox node A made (one database), and the address is node B's to take mail for.
    expect(await b.mail.checkRecipient(box.address)).toEqual({ ok: true, mailboxId: expect.any(Number) })

    const heard: string[] = []
    const view = await a.mail.watch(alice, box.address, (e) => heard.push(e))
    const since = Date.now()
    const held = a.mail.listMessages(alice, { address: box.address, wait: 30 })
    await Bun.sleep(100)

    const source = eml(box.address, 'Across nodes', { 'all-bytes.bin': EVERY_BYTE, 'big.bin': BIG })
    const send = nodemailer.createTransport({
      host: '127.0.0.1',
      port: b.smtp.port,
      secure: false,
      ignoreTLS: true,
    } as any)
    try {
      const info = await send.sendMail({ envelope: { from: 'ann@example.org', to: [box.address] }, raw: source })
      expect(info.response).toMatch(/^250 2\.0\.0 OK: stored as \d+$/)
    } finally {
      send.close()
    }

    // Woken by node B's publication, long before its 30 s.
    const list = await held
    expect(Date.now() - since).toBeLessThan(10_000)
    expect(list.address).toBe(box.address)
    expect(list.messages).toEqual([
      expect.objectContaining({ subject: 'Across nodes', size: source.length, seen: false, attachments: 2 }),
    ])
    expect(heard).toContain('mail')
    view.stop()
    const id = list.messages[0]!.id

    const message = await a.mail.readMessage(alice, { address: box.address, id })
    expect(message).toMatchObject({
      id,
      address: box.address,
      subject: 'Across nodes',
      seen: true,
      links: ['https://example.com/report'],
    })
    expect(message.attachments.map((x) => [x.filename, x.size])).toEqual([
      ['all-bytes.bin', 256],
      ['big.bin', BIG.length],
    ])
    const download = (url: string) => {
      const u = new URL(url)
      const [, , kind, idText] = u.pathname.split('/')
      return a.mail.download(
        kind as 'raw' | 'attachment',
        idText!,
        u.searchParams.get('exp'),
        u.searchParams.get('sig'),
      )
    }
    for (const [x, want] of [
      [message.attachments[0]!, EVERY_BYTE],
      [message.attachments[1]!, BIG],
    ] as const) {
      const file = await download(x.url)
      expect({ filename: file.filename, contentType: file.contentType, size: file.size }).toEqual({
        filename: x.filename,
        contentType: 'application/octet-stream',
        size: want.length,
      })
      expect(same(await bytesOf(file.body), want)).toBe(true)
    }
    const raw = await download(message.raw)
    expect(raw.filename).toBe(`message-${id}.eml`)
    expect(same(await bytesOf(raw.body), source)).toBe(true)
    // Read on node A: seen through node B too.
    expect((await b.mail.listMessages(alice, { address: box.address })).messages[0]!.seen).toBe(true)

    // Its mail.received event went in with it: one event, one pending delivery, the messages.json entry as data.
    const events = await db.main.sql`SELECT type, account_id, payload FROM webhook_events`
    expect(events.map((e: any) => [e.type, Number(e.account_id)])).toEqual([['mail.received', alice.accountId]])
    expect(JSON.parse(events[0].payload).data).toEqual({ address: box.address, ...list.messages[0]!, seen: false })
    expect(Number((await db.main.sql`SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'pending'`)[0].n)).toBe(
      1,
    )

    // Nothing of it on either node's disk: the bytes are in the database.
    const files = (dir: string) =>
      existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((f) => !f.isDirectory()) : []
    expect(existsSync(join(b.dir, 'mail', 'incoming'))).toBe(true) // node B took the message (over 1 MiB) into a file there first
    for (const n of [a, b]) expect(files(join(n.dir, 'mail'))).toEqual([])
    expect(a.faults).toEqual([])
    expect(b.faults).toEqual([])
  }, 60_000)

  test("a mailbox deleted through node B: node A's live view hears of it and finds it gone, and node A's download link answers 404", async () => {
    const box = await a.mail.getOrCreate(alice, 'short-lived')
    const send = nodemailer.createTransport({
      host: '127.0.0.1',
      port: b.smtp.port,
      secure: false,
      ignoreTLS: true,
    } as any)
    try {
      await send.sendMail({
        envelope: { from: 'ann@example.org', to: [box.address] },
        raw: eml(box.address, 'soon gone', { 'a.bin': EVERY_BYTE }),
      })
    } finally {
      send.close()
    }
    const [m] = (await a.mail.listMessages(alice, { address: box.address })).messages
    const { raw } = await a.mail.readMessage(alice, { address: box.address, id: m!.id })

    const heard: string[] = []
    const view = await a.mail.watch(alice, box.address, (e) => heard.push(e))
    await b.mail.deleteMailbox(alice, { address: box.address })
    for (let i = 0; i < 100 && heard.length === 0; i++) await Bun.sleep(20)
    expect(heard).toEqual(['mail'])
    view.stop()
    await expect(a.mail.listMessages(alice, { address: box.address })).rejects.toMatchObject({ status: 404 })
    const u = new URL(raw)
    await expect(
      a.mail.download('raw', String(m!.id), u.searchParams.get('exp'), u.searchParams.get('sig')),
    ).rejects.toMatchObject({ status: 404 })
  }, 60_000)
})
