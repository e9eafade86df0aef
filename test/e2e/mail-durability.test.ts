// Mail across a crash and a shutdown (issue 8, "How it is checked": durability, and what SIGTERM does to
// held requests and open SMTP sessions). The real service as a child process (`bun src/main.ts serve`),
// real SMTP over sockets, the real SQLite file and spool, restarted on the same data directory. What an
// in-process app cannot show: that a 250 means "on disk" to a process that is killed the next instant.
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { Socket } from 'node:net'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type Mail from 'nodemailer/lib/mailer'
import { createLinkbox } from '../../src/app/app'
import { readAnswer, testConfig, type ApiAnswer } from '../support/app'
import {
  createAccount,
  freePort,
  killAllServers,
  removeDir,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
  type TestConfig,
} from '../support/server'

// Real processes, restarts and a few MiB of mail: bun's default of 5 s per test is tight on a slow machine.
setDefaultTimeout(60_000)

const DOMAIN = 'mail.test'
/** The orphan sweep's age limit in the spool (ORPHAN_AGE_MS): younger debris may be a delivery in progress. */
const ORPHAN_AGE_MS = 60 * 60 * 1000

const dirs: string[] = []
afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
})

async function mailConfig(): Promise<TestConfig> {
  const config = writeConfig(tempDir('linkbox-mail-durability-'), {
    mail: { smtp_host: '127.0.0.1', smtp_port: await freePort(), domains: [DOMAIN] },
  })
  dirs.push(config.dir)
  return config
}

interface MailServer extends RunningServer {
  smtpPort: number
}

/** Starts `serve` and waits for its SMTP line too: it is printed after "listening on". */
async function startMail(config: TestConfig): Promise<MailServer> {
  const server = await startServer({ config })
  const deadline = Date.now() + 15_000
  for (;;) {
    const m = server.stdout().match(/SMTP on \S+:(\d+) for /)
    if (m) return Object.assign(server, { smtpPort: Number(m[1]) })
    if (server.proc.exitCode !== null || Date.now() > deadline)
      throw new Error(`no SMTP line\n--- stdout\n${server.stdout()}\n--- stderr\n${server.stderr()}`)
    await Bun.sleep(20)
  }
}

async function api(
  server: RunningServer,
  key: string,
  method: string,
  query: Record<string, string>,
): Promise<ApiAnswer> {
  const res = await fetch(`${server.url}/api/${method}?${new URLSearchParams(query)}`, {
    headers: { 'x-api-key': key },
  })
  return readAnswer(res)
}

/** A signed link names base_url (the config's default); the bytes are fetched from the running server. */
async function download(server: RunningServer, signed: string): Promise<Response> {
  const u = new URL(signed)
  return fetch(`${server.url}${u.pathname}${u.search}`)
}

async function newMailbox(server: RunningServer, key: string, name: string): Promise<string> {
  const r = await api(server, key, 'mailbox.json', { address: name })
  expect(r.status).toBe(200)
  return r.body.return.address
}

// ---------------------------------------------------------------------------------------------------------
// A raw SMTP dialogue: for the moments a client library hides (half a DATA, a session idle at shutdown).

interface Reply {
  code: number
  text: string
  /** performance.now() when the reply's last line arrived. */
  at: number
}

class SmtpClient {
  private pending = ''
  private lines: string[] = []
  private ready: Reply[] = []
  private waiting: ((r: Reply) => void)[] = []
  private ended = false
  readonly closed: Promise<void>

  private constructor(private socket: Socket) {
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => {
      this.pending += chunk.toString('latin1')
      for (let i = this.pending.indexOf('\r\n'); i >= 0; i = this.pending.indexOf('\r\n')) {
        const line = this.pending.slice(0, i)
        this.pending = this.pending.slice(i + 2)
        this.lines.push(line)
        if (/^\d{3}(?: |$)/.test(line)) {
          const reply = {
            code: Number(line.slice(0, 3)),
            text: this.lines.map((l) => l.slice(4)).join('\n'),
            at: performance.now(),
          }
          this.lines = []
          const w = this.waiting.shift()
          if (w) w(reply)
          else this.ready.push(reply)
        }
      }
    })
    socket.on('error', () => {})
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        this.ended = true
        for (const w of this.waiting.splice(0)) w({ code: 0, text: 'connection closed', at: performance.now() })
        resolve()
      }),
    )
  }

  /** Connects and reads the 220 greeting. */
  static async open(port: number): Promise<SmtpClient> {
    const socket = new Socket()
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject)
      socket.connect(port, '127.0.0.1', () => {
        socket.off('error', reject)
        resolve()
      })
    })
    const client = new SmtpClient(socket)
    const greeting = await client.next()
    if (greeting.code !== 220) throw new Error(`greeting: ${greeting.code} ${greeting.text}`)
    return client
  }

  /** The next reply; code 0 when the server closed the connection instead. */
  next(): Promise<Reply> {
    const r = this.ready.shift()
    if (r) return Promise.resolve(r)
    if (this.ended) return Promise.resolve({ code: 0, text: 'connection closed', at: performance.now() })
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  async write(data: string | Uint8Array): Promise<void> {
    if (this.socket.destroyed) return
    if (!this.socket.write(data))
      await new Promise<void>((resolve) => this.socket.once('drain', resolve).once('close', resolve))
  }

  async command(line: string): Promise<Reply> {
    await this.write(`${line}\r\n`)
    return this.next()
  }

  /** EHLO, MAIL FROM, RCPT TO, DATA: ready for the message (asserts each step). */
  async begin(from: string, to: string): Promise<void> {
    expect((await this.command('EHLO client.example.org')).code).toBe(250)
    expect((await this.command(`MAIL FROM:<${from}>`)).code).toBe(250)
    expect((await this.command(`RCPT TO:<${to}>`)).code).toBe(250)
    expect((await this.command('DATA')).code).toBe(354)
  }

  /** One whole message: the DATA dialogue, the bytes dot-stuffed, the final dot. Returns the reply. */
  async send(from: string, to: string, message: Buffer): Promise<Reply> {
    await this.begin(from, to)
    await this.write(dotStuff(message))
    return this.command('.')
  }

  destroy() {
    this.socket.destroy()
  }
}

/** SMTP transparency (RFC 5321 §4.5.2): a line that starts with "." gets another one on the wire. */
function dotStuff(message: Buffer): Buffer {
  return Buffer.from(message.toString('latin1').replace(/(^|\r\n)\./g, '$1..'), 'latin1')
}

/** The message ids a 250 names ("250 2.0.0 OK: stored as 3, 4"). */
function storedIds(text: string): number[] {
  const m = /stored as ([\d, ]+)/.exec(text)
  if (!m) throw new Error(`not a "stored as" reply: ${text}`)
  return m[1]!.split(',').map((s) => Number(s.trim()))
}

// ---------------------------------------------------------------------------------------------------------
// Messages with known bytes, and the check that the spool holds what the rows name

interface Outgoing {
  subject: string
  from: string
  raw: Buffer
  attachments: { filename: string; bytes: Buffer }[]
}

/** Composes a message with nodemailer (the bytes that will go over the wire, ending in CRLF). */
async function compose(options: Mail.Options): Promise<Buffer> {
  const builder = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' })
  const info = await builder.sendMail(options)
  const bytes = info.message as Buffer
  return bytes.subarray(-2).toString() === '\r\n' ? bytes : Buffer.concat([bytes, Buffer.from('\r\n')])
}

async function outgoing(to: string, i: number, attachmentSizes: number[]): Promise<Outgoing> {
  const from = `sender${i}@example.org`
  const subject = `Durable ${i}: grüße`
  const attachments = attachmentSizes.map((size, n) => ({ filename: `part-${i}-${n}.bin`, bytes: randomBytes(size) }))
  const raw = await compose({
    from,
    to,
    subject,
    // A line that starts with a dot: on the wire it is stuffed, on disk it must not be.
    text: `Message ${i}.\n.a line that starts with a dot\n..and one with two\nÄrger über Öl.\n`,
    attachments: attachments.map((a) => ({
      filename: a.filename,
      content: a.bytes,
      contentType: 'application/octet-stream',
    })),
  })
  return { subject, from, raw, attachments }
}

/** Rows whose files are missing or of another size: a message half stored. Empty when all is well. */
/** Rows whose bytes are missing or of the wrong size, in files (large messages) or in mail_inline (small ones). */
function spoolProblems(config: TestConfig): string[] {
  const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
  const problems: string[] = []
  try {
    const rows = db.query('SELECT id, blob, size FROM mail_messages').all() as {
      id: number
      blob: string
      size: number
    }[]
    for (const row of rows) {
      const parts = db.query('SELECT part, size FROM mail_attachments WHERE message_id = ?').all(row.id) as {
        part: number
        size: number
      }[]
      // A small message's bytes are in the database (mail_inline), committed with its row.
      const inline = db.query('SELECT length(raw) AS size FROM mail_inline WHERE blob = ?').get(row.blob) as {
        size: number
      } | null
      if (inline) {
        if (inline.size !== row.size)
          problems.push(`message ${row.id}: the inline source has ${inline.size} bytes, the row says ${row.size}`)
        for (const p of parts) {
          const part = db
            .query('SELECT length(data) AS size FROM mail_inline_parts WHERE blob = ? AND part = ?')
            .get(row.blob, p.part) as { size: number } | null
          if (!part) problems.push(`message ${row.id}: no inline part ${p.part}`)
          else if (part.size !== p.size) problems.push(`message ${row.id}: inline part ${p.part} has the wrong size`)
        }
        continue
      }
      const dir = join(config.dataDir, 'mail', row.blob.slice(0, 2), row.blob)
      const raw = join(dir, 'raw.eml')
      if (!existsSync(raw)) problems.push(`message ${row.id}: no raw.eml`)
      else if (statSync(raw).size !== row.size)
        problems.push(`message ${row.id}: raw.eml has ${statSync(raw).size} bytes, the row says ${row.size}`)
      for (const p of parts) {
        const file = join(dir, `${p.part}.bin`)
        if (!existsSync(file)) problems.push(`message ${row.id}: no ${p.part}.bin`)
        else if (statSync(file).size !== p.size) problems.push(`message ${row.id}: ${p.part}.bin has the wrong size`)
      }
    }
  } finally {
    db.close()
  }
  return problems
}

function messageCount(config: TestConfig): number {
  const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
  try {
    return (db.query('SELECT count(*) AS n FROM mail_messages').get() as { n: number }).n
  } finally {
    db.close()
  }
}

const incomingDir = (config: TestConfig) => join(config.dataDir, 'mail', 'incoming')
const incomingFiles = (config: TestConfig) => (existsSync(incomingDir(config)) ? readdirSync(incomingDir(config)) : [])

/** Reads message `id` through the API and checks its raw source and attachments byte for byte. */
async function expectStoredExactly(server: RunningServer, key: string, address: string, id: number, sent: Outgoing) {
  const r = await api(server, key, 'message.json', { address, id: String(id) })
  expect(r.status).toBe(200)
  const m = r.body.return
  expect(m.subject).toBe(sent.subject)
  expect(m.from.address).toBe(sent.from)
  expect(m.size).toBe(sent.raw.length)

  const raw = await download(server, m.raw)
  expect(raw.status).toBe(200)
  const rawBytes = Buffer.from(await raw.arrayBuffer())
  expect(rawBytes.length).toBe(sent.raw.length)
  expect(rawBytes.equals(sent.raw)).toBe(true)

  expect(m.attachments.map((a: { filename: string }) => a.filename)).toEqual(sent.attachments.map((a) => a.filename))
  for (const [n, a] of (m.attachments as { url: string; size: number }[]).entries()) {
    const want = sent.attachments[n]!.bytes
    expect(a.size).toBe(want.length)
    const file = await download(server, a.url)
    expect(file.status).toBe(200)
    expect(file.headers.get('content-disposition')).toStartWith('attachment;')
    const got = Buffer.from(await file.arrayBuffer())
    expect(got.length).toBe(want.length)
    expect(got.equals(want)).toBe(true)
  }
}

// ---------------------------------------------------------------------------------------------------------

describe('mail acknowledged with 250 survives a SIGKILL', () => {
  test('every acknowledged message is listed after a restart, its source and attachments byte-identical', async () => {
    const config = await mailConfig()
    const key = await createAccount(config.configPath, 'alice')
    let server = await startMail(config)
    const address = await newMailbox(server, key, 'inbox')

    // 24 messages: a third with small attachments, one with an attachment of 1.5 MiB (so the message goes
    // through the spool's incoming file instead of memory), the rest plain.
    const N = 24
    const messages = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        outgoing(address, i, i === 5 ? [1536 * 1024, 3000] : i % 3 === 0 ? [1 + ((i * 7919) % 200_000), 17] : []),
      ),
    )
    expect(messages[5]!.raw.length).toBeGreaterThan(1024 * 1024)

    // Half through nodemailer (a pooled client, raw bytes so the source is known exactly), half through raw
    // dialogues; all at once, so that deliveries overlap and commit in groups.
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.smtpPort,
      secure: false,
      ignoreTLS: true,
      pool: true,
      maxConnections: 4,
    })
    const viaNodemailer = messages
      .filter((_, i) => i % 2 === 0)
      .map(async (m) => {
        const info = await transport.sendMail({ envelope: { from: m.from, to: [address] }, raw: m.raw })
        expect(info.response).toStartWith('250 ')
        return { m, ids: storedIds(info.response) }
      })
    const rawClients = await Promise.all([1, 2, 3].map(() => SmtpClient.open(server.smtpPort)))
    const rawOnes = messages.filter((_, i) => i % 2 === 1)
    const viaRaw = rawClients.map(async (client, c) => {
      const out: { m: Outgoing; ids: number[] }[] = []
      for (let i = c; i < rawOnes.length; i += rawClients.length) {
        const m = rawOnes[i]!
        const reply = await client.send(m.from, address, m.raw)
        expect(reply.code).toBe(250)
        out.push({ m, ids: storedIds(reply.text) })
        if (i + rawClients.length < rawOnes.length) expect((await client.command('RSET')).code).toBe(250)
      }
      return out
    })
    const acknowledged = [...(await Promise.all(viaNodemailer)), ...(await Promise.all(viaRaw)).flat()]
    // The moment the last 250 is in: no shutdown handler, no flush, no checkpoint.
    await server.kill()
    expect(server.proc.signalCode).toBe('SIGKILL')
    transport.close()
    rawClients.forEach((c) => c.destroy())

    expect(acknowledged.length).toBe(N)
    for (const a of acknowledged) expect(a.ids.length).toBe(1)
    expect(spoolProblems(config)).toEqual([])

    server = await startMail(config)
    try {
      const listed = await api(server, key, 'messages.json', { address, limit: '1000' })
      expect(listed.status).toBe(200)
      const ids = (listed.body.return.messages as { id: number }[]).map((m) => m.id).sort((a, b) => a - b)
      expect(ids).toEqual(acknowledged.map((a) => a.ids[0]!).sort((a, b) => a - b))
      for (const { m, ids } of acknowledged) await expectStoredExactly(server, key, address, ids[0]!, m)
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})

describe('SIGTERM', () => {
  test('messages.json requests held with wait=30 are answered (200, empty) and the process exits 0 at once', async () => {
    const config = await mailConfig()
    const key = await createAccount(config.configPath, 'bob')
    const server = await startMail(config)
    const a = await newMailbox(server, key, 'first')
    const b = await newMailbox(server, key, 'second')
    const held = [a, b].map(async (address) => {
      const r = await api(server, key, 'messages.json', { address, wait: '30' })
      return { status: r.status, body: r.body, at: performance.now() }
    })
    // Both must really be held before the signal: the gauge counts them.
    for (;;) {
      const metrics = await (await fetch(`${server.url}/metrics`)).text()
      if (/^linkbox_mail_waiting 2$/m.test(metrics)) break
      await Bun.sleep(20)
    }
    const signalled = performance.now()
    expect(await server.stop('SIGTERM', 30_000)).toBe(0)
    const exited = performance.now()
    for (const [i, r] of (await Promise.all(held)).entries()) {
      expect(r.status).toBe(200)
      expect(r.body.return).toEqual({ address: [a, b][i], messages: [] })
      expect(r.at).toBeLessThan(exited)
    }
    // "Well before 30 s": no wait is sat out. The bound is the 5 s shutdown grace, with room for a slow machine.
    expect(exited - signalled).toBeLessThan(10_000)
    expect(server.stdout()).toContain('SIGTERM')
  })

  test('a session in DATA may finish (250, kept) while an idle session is told 421 at once', async () => {
    const config = await mailConfig()
    const key = await createAccount(config.configPath, 'carol')
    let server = await startMail(config)
    const address = await newMailbox(server, key, 'inbox')

    // An idle session: one message delivered, then nothing (between messages when the signal comes).
    const idle = await SmtpClient.open(server.smtpPort)
    const first = await outgoing(address, 1, [])
    expect((await idle.send(first.from, address, first.raw)).code).toBe(250)

    // A session in the middle of DATA: half a message (with an attachment) is on the wire.
    const busy = await SmtpClient.open(server.smtpPort)
    const second = await outgoing(address, 2, [40_000])
    const wire = dotStuff(second.raw)
    const half = Math.floor(wire.length / 2)
    await busy.begin(second.from, address)
    await busy.write(wire.subarray(0, half))

    const signalled = performance.now()
    const exited = server.stop('SIGTERM', 20_000)
    const told = await idle.next()
    expect(told.code).toBe(421)
    expect(told.text).toStartWith('4.3.2 ') // linkbox's own 421, not smtp-server's at the end of the grace
    expect(told.at - signalled).toBeLessThan(4_000) // the grace is 5 s: "at once" is well inside it
    await idle.closed // 421 closes the channel

    // The rest of the message after the signal: 250 and kept, or 421 and not kept; never 250 and lost.
    await busy.write(wire.subarray(half))
    const reply = await busy.command('.')
    expect([250, 421]).toContain(reply.code)
    if (reply.code === 250) await busy.command('QUIT')
    expect(await exited).toBe(0)
    expect(spoolProblems(config)).toEqual([])
    expect(incomingFiles(config)).toEqual([])

    server = await startMail(config)
    try {
      const listed = await api(server, key, 'messages.json', { address })
      const subjects = (listed.body.return.messages as { subject: string }[]).map((m) => m.subject)
      if (reply.code === 250) {
        const [id] = storedIds(reply.text)
        expect(subjects).toEqual([second.subject, first.subject])
        await expectStoredExactly(server, key, address, id!, second)
      } else expect(subjects).toEqual([first.subject])
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('a session that never finishes its DATA: cut at the end of the grace, nothing of it kept', async () => {
    const config = await mailConfig()
    const key = await createAccount(config.configPath, 'dave')
    let server = await startMail(config)
    const address = await newMailbox(server, key, 'inbox')

    // Over 1 MiB arrives, so the spool has started an incoming file for it; then the client stalls.
    const stalled = await SmtpClient.open(server.smtpPort)
    const message = await outgoing(address, 3, [2 * 1024 * 1024])
    const wire = dotStuff(message.raw)
    await stalled.begin(message.from, address)
    await stalled.write(wire.subarray(0, Math.floor(wire.length * 0.75)))
    for (let deadline = Date.now() + 10_000; incomingFiles(config).length === 0; ) {
      if (Date.now() > deadline) throw new Error('no incoming file appeared')
      await Bun.sleep(10)
    }

    const signalled = performance.now()
    expect(await server.stop('SIGTERM', 20_000)).toBe(0)
    expect(performance.now() - signalled).toBeLessThan(12_000) // the 5 s grace, then the session is cut
    const reply = await stalled.next()
    expect(reply.code === 0 || reply.code === 421).toBe(true)
    expect(messageCount(config)).toBe(0)
    expect(incomingFiles(config)).toEqual([]) // the partial message was removed, not left for the orphan sweep
    expect(spoolProblems(config)).toEqual([])

    server = await startMail(config)
    try {
      expect((await api(server, key, 'messages.json', { address })).body.return.messages).toEqual([])
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})

describe('SIGKILL while a 5 MiB message is streaming', () => {
  test('no row without its files after a restart; the partial file stays for the orphan sweep, which removes it when old', async () => {
    const config = await mailConfig()
    const key = await createAccount(config.configPath, 'erin')
    let server = await startMail(config)
    const address = await newMailbox(server, key, 'inbox')

    // One message acknowledged before the crash, with an attachment: it must come through whole.
    const before = await outgoing(address, 1, [300_000])
    const client = await SmtpClient.open(server.smtpPort)
    const first = await client.send(before.from, address, before.raw)
    expect(first.code).toBe(250)
    expect((await client.command('RSET')).code).toBe(250)

    // Then 5 MiB, of which a little over half is sent: the spool is writing it to mail/incoming.
    const big = await outgoing(address, 2, [4 * 1024 * 1024])
    const wire = dotStuff(big.raw)
    expect(wire.length).toBeGreaterThan(5 * 1024 * 1024)
    await client.begin(big.from, address)
    const sent = Math.floor(wire.length * 0.55)
    for (let at = 0; at < sent; at += 64 * 1024) await client.write(wire.subarray(at, Math.min(at + 64 * 1024, sent)))
    const incomingSize = () =>
      incomingFiles(config).reduce((n, f) => n + statSync(join(incomingDir(config), f)).size, 0)
    for (let deadline = Date.now() + 10_000; incomingSize() < 2 * 1024 * 1024; ) {
      if (Date.now() > deadline) throw new Error(`the incoming file did not grow past 2 MiB (${incomingSize()} bytes)`)
      await Bun.sleep(10)
    }
    await server.kill()
    expect(server.proc.signalCode).toBe('SIGKILL')
    client.destroy()

    // What the crash left: the acknowledged message whole, and the partial one only as an incoming file.
    expect(messageCount(config)).toBe(1)
    expect(spoolProblems(config)).toEqual([])
    const leftover = incomingFiles(config)
    expect(leftover.length).toBe(1)

    server = await startMail(config)
    try {
      const listed = await api(server, key, 'messages.json', { address })
      expect((listed.body.return.messages as { id: number }[]).map((m) => m.id)).toEqual(storedIds(first.text))
      await expectStoredExactly(server, key, address, storedIds(first.text)[0]!, before)
    } finally {
      expect(await server.stop()).toBe(0)
    }
    expect(spoolProblems(config)).toEqual([])
    // The sweep at start-up ran, but left it: under an hour old it could be a delivery in progress.
    expect(incomingFiles(config)).toEqual(leftover)

    // The sweep itself, in-process on this data directory, with the debris made old. Beside it: an old blob
    // no row names (a crash between the files and the commit), a young orphan, and the real message's blob
    // made old too, which a row names and so must stay.
    const box = createLinkbox(testConfig(config.dataDir, { mail: { domains: [DOMAIN] } }))
    try {
      const past = new Date(Date.now() - ORPHAN_AGE_MS - 60_000)
      const old = join(incomingDir(config), leftover[0]!)
      utimesSync(old, past, past)
      const ghost = join(config.dataDir, 'mail', 'ab', `ab${'0'.repeat(30)}`)
      mkdirSync(ghost, { recursive: true })
      writeFileSync(join(ghost, 'raw.eml'), 'Subject: never committed\r\n\r\n')
      utimesSync(ghost, past, past)
      const young = join(incomingDir(config), 'young.eml')
      writeFileSync(young, 'Subject: arriving\r\n')
      const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
      const { blob } = db.query('SELECT blob FROM mail_messages').get() as { blob: string }
      db.close()
      const kept = join(config.dataDir, 'mail', blob.slice(0, 2), blob)
      utimesSync(kept, past, past)

      expect(await box.mail.sweep({ orphans: true })).toEqual({ mailboxes: 0, orphans: 2 })
      expect(existsSync(old)).toBe(false)
      expect(existsSync(ghost)).toBe(false)
      expect(existsSync(young)).toBe(true)
      expect(existsSync(join(kept, 'raw.eml'))).toBe(true)
      expect(existsSync(join(kept, '1.bin'))).toBe(true)
    } finally {
      await box.close()
    }
    expect(spoolProblems(config)).toEqual([])
  })
})
