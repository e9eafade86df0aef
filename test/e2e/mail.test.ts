// Temporary mail in one process (issue 8, SPEC §8): mail goes in over a real SMTP socket (nodemailer for the
// ordinary cases, a hand-written dialogue over node:net for the edges), and what comes out is checked at
// every layer a user or an operator can see: the SMTP replies, the three methods' answers, the rows in the
// real SQLite file and the files under <data_dir>/mail. Crashes and signals are mail-durability.test.ts's.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { AppOptions } from '../../src/app/app'
import { introOf, INTRO_CHARS, linksOf, safeContentType, safeFilename } from '../../src/mail/parse'
import { MAIL_LINK_TTL_MS } from '../../src/mail/downloads'
import { createLinkSigner, loadSigningSecret } from '../../src/kernel/signing'
import { BASE, makeBox, tempDir, type TestBox } from '../support/app'

// Sockets, files and fsyncs: bun's default of 5 s per test is tight on a slow disk.
setDefaultTimeout(30_000)

const DOMAIN = 'mail.test'
const SENDER = 'sender@example.org'

// ---------------------------------------------------------------------------------------------------------
// Helpers

interface MailBox {
  box: TestBox
  port: number
}

async function mailBox(
  mail: Record<string, unknown> = {},
  more: Record<string, unknown> = {},
  opts: AppOptions = {},
): Promise<MailBox> {
  const box = await makeBox(
    { mail: { domains: [DOMAIN], smtp_host: '127.0.0.1', ...mail }, ...more },
    { smtpPort: 0, ...opts },
  )
  const smtp = await box.startSmtp()
  return { box, port: smtp!.port }
}

/** Calls a mail method with a key (or other headers) and returns status and body. */
function caller(box: TestBox, headers: Record<string, string>) {
  return (method: 'mailbox.json' | 'messages.json' | 'message.json', query: Record<string, string | number> = {}) =>
    box.get(`/api/${method}`, Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])), headers)
}

/** Bytes (and headers) behind a signed link: the link names the configured base URL, the app is asked directly. */
async function download(box: TestBox, url: string) {
  expect(url.startsWith(`${BASE}/mail/`)).toBe(true)
  const res = await box.request(url.slice(BASE.length))
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) }
}

/** Waits for a condition that depends on another party (a socket closing, a file going away); never a timing check. */
async function until(cond: () => boolean, what: string, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(10)
  }
}

/** Every file under a folder, relative and sorted ([] when it does not exist). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return []
  return (readdirSync(dir, { recursive: true }) as string[]).filter((p) => statSync(join(dir, p)).isFile()).sort()
}
const mailDir = (box: TestBox) => join(box.dir, 'mail')
const incoming = (box: TestBox) => filesUnder(join(mailDir(box), 'incoming'))
/** Every stored blob: the folders (<xx>/<blob>) of large messages and the mail_inline rows of small ones. */
const blobFolders = (box: TestBox) => [
  ...[
    ...new Set(
      filesUnder(mailDir(box))
        .map((p) => /^([0-9a-f]{2}\/[0-9a-f]{32})\//.exec(p)?.[1])
        .filter(Boolean),
    ),
  ].sort(),
  ...(box.db.query('SELECT blob FROM mail_inline ORDER BY blob').all() as { blob: string }[]).map(
    (r) => `inline:${r.blob}`,
  ),
]
const isInline = (box: TestBox, blob: string) =>
  box.db.query('SELECT 1 FROM mail_inline WHERE blob = ?').get(blob) !== null
/**
 * What a blob holds, named like the files of a large message's folder (raw.eml, 1.bin, …) whether they are
 * files or, for a small message, rows of mail_inline and mail_inline_parts; [] once it is gone.
 */
function blobContents(box: TestBox, blob: string): string[] {
  if (!isInline(box, blob))
    return filesUnder(join(mailDir(box), blob.slice(0, 2), blob)).filter((f) => f !== 'body.json')
  const parts = box.db.query('SELECT part FROM mail_inline_parts WHERE blob = ? ORDER BY part').all(blob) as {
    part: number
  }[]
  return [...parts.map((p) => `${p.part}.bin`), 'raw.eml'].sort()
}
/** A blob's raw source, from its file or its mail_inline row. */
function rawOf(box: TestBox, blob: string): Buffer {
  const row = box.db.query('SELECT raw FROM mail_inline WHERE blob = ?').get(blob) as { raw: Uint8Array } | null
  return row ? Buffer.from(row.raw) : readFileSync(join(mailDir(box), blob.slice(0, 2), blob, 'raw.eml'))
}

const count = (box: TestBox, table: string, where = '1', ...args: (string | number)[]) =>
  (box.db.query(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get(...args) as { n: number }).n

/** The ids in a 250 reply ("250 2.0.0 OK: stored as 4, 5"). */
const storedIds = (reply: string) => {
  const m = /stored as ([0-9, ]+)\s*$/.exec(reply)
  if (!m) throw new Error(`not a "stored" reply: ${reply}`)
  return m[1]!.split(',').map((s) => Number(s.trim()))
}

/** A small RFC 5322 message with CRLF line ends. */
function eml(to: string, subject: string, body: string, headers = ''): string {
  return (
    `From: Sender <${SENDER}>\r\nTo: <${to}>\r\nSubject: ${subject}\r\nDate: Sat, 31 Jan 2026 09:30:00 +0000\r\n` +
    `Message-ID: <${randomBytes(8).toString('hex')}@example.org>\r\nMIME-Version: 1.0\r\n` +
    `${headers || 'Content-Type: text/plain; charset=utf-8\r\n'}\r\n${body}\r\n`
  )
}

/** A message of exactly `n` bytes: headers, then lines of "a" padded to the length, ending in CRLF. */
function emlOfSize(to: string, n: number): string {
  const head = eml(to, `exactly ${n} bytes`, '').slice(0, -2) // without the empty body's CRLF
  const remaining = n - head.length
  let lines = Math.floor(remaining / 80)
  let last = remaining % 80
  if (last === 1) {
    lines -= 1
    last += 80
  }
  const body = `${'a'.repeat(78)}\r\n`.repeat(lines) + (last ? `${'b'.repeat(last - 2)}\r\n` : '')
  const out = head + body
  if (Buffer.byteLength(out) !== n) throw new Error(`emlOfSize: made ${Buffer.byteLength(out)} bytes, not ${n}`)
  return out
}

/**
 * A message shaped like mailparser's test/fixtures/outofmemory.eml (the fixture is not in its npm package): HTML
 * only, three links whose text mailparser renders as "[image]link", then a <title> of about 1 MB of lines of
 * brackets, angle brackets and punctuation. The junk here is made up, to the same recipe.
 */
function outOfMemoryLike(to: string): string {
  const junk = (word: string) =>
    `%^^%*(()*^%^**(*)*()()**(***}}){**\\:}!{/(-{{}|^%*^)())(<><<>?<?<>??<>?<><?>>?<?<><<>?<?><?>?><<?><><>:":":"><><<|*}})` +
    `${word}[]}^|%/*!?[{{#*_^*}|{}*<[{>|%}}*{/[}_\\)}/^})^*{/{**^*!}^?}*}}}*}]/{*:{}\\{){-}}}}*/_{>^}}^#>*{#|))(}^|^|?{^:}` +
    `:(_-**\\*/{*}[)}})}]){*}*})%?}})})[(}}}!}{*>)%^^\\(}|]^*}{{_^>}!)**})*)){{_{*{>^*{{|)?[%\\}#^}}){**\\:}!{/(-{{}|{}>*(}` +
    `^*/#{^!{}|)}})[\\}\\[/\\^_}*{>*-{_{*{>^*{{|)?[%\\}#^}}){**\\:}!{/(-{{}|^&%*^&*^&*&^)())(<><<>?<?<>??<>?:*!{{/[-*/]\\*`
  const title = Array.from({ length: 2400 }, (_, i) => junk(`word${i}`)).join('\r\n')
  const html =
    '<a href="http://a.example/pro.php?pro-1"><h2>$1 million</h2><img src="http://img.example/o6/a.jpg"></a><br><br>\r\n' +
    '<a href="http://a.example/pro.php?gra-2"><img src="http://img.example/o6/b_uns.jpg"></a><br><br>\r\n' +
    `<a href="http://a.example/pro.php?hin-3" style='display:none'></a>\r\n<title>\r\n${title}\r\nthe-end\r\n</title>\r\n`
  return eml(to, 'Cause out of memory error in the mailparser', html, 'Content-Type: text/html; charset=us-ascii;\r\n')
}

/**
 * A raw SMTP client over node:net: sends lines, reads replies (a reply is every line up to one that has a
 * space after its code). What the server answered is the test; nothing here interprets it.
 */
class RawSmtp {
  private buffer = ''
  private lines: string[] = []
  private replies: string[] = []
  private readers: ((reply: string) => void)[] = []
  closed = false

  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      this.buffer += chunk
      for (let i; (i = this.buffer.indexOf('\r\n')) >= 0; ) {
        const line = this.buffer.slice(0, i)
        this.buffer = this.buffer.slice(i + 2)
        this.lines.push(line)
        if (/^\d{3}(?: |$)/.test(line)) {
          const reply = this.lines.join('\n')
          this.lines = []
          const reader = this.readers.shift()
          if (reader) reader(reply)
          else this.replies.push(reply)
        }
      }
    })
    const end = () => {
      this.closed = true
      for (const r of this.readers.splice(0)) r('(connection closed)')
    }
    socket.on('close', end)
    socket.on('error', end)
  }

  static async open(port: number): Promise<{ client: RawSmtp; greeting: string }> {
    const socket = connect({ host: '127.0.0.1', port })
    const client = new RawSmtp(socket)
    const greeting = await client.read()
    return { client, greeting }
  }

  /** The next whole reply. */
  read(): Promise<string> {
    const ready = this.replies.shift()
    if (ready !== undefined) return Promise.resolve(ready)
    if (this.closed) return Promise.resolve('(connection closed)')
    return new Promise((resolve) => this.readers.push(resolve))
  }

  write(data: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(data, (err) => (err ? reject(err) : resolve())))
  }

  async cmd(line: string): Promise<string> {
    await this.write(`${line}\r\n`)
    return this.read()
  }

  /** After 354: the message, dot-stuffed, and the final "."; resolves with the reply to it. */
  async body(message: string | Buffer): Promise<string> {
    const bytes = typeof message === 'string' ? Buffer.from(message) : message
    const stuffed = Buffer.from(bytes.toString('latin1').replace(/(^|\r\n)\./g, '$1..'), 'latin1')
    await this.write(Buffer.concat([stuffed, Buffer.from('.\r\n')]))
    return this.read()
  }

  async quit() {
    if (!this.closed) await this.cmd('QUIT').catch(() => {})
    this.socket.destroy()
  }
}

/** One message by the raw dialogue: the reply to each RCPT, to DATA, and to the final "." (when DATA got 354). */
async function rawSend(port: number, rcpts: string[], message: string | Buffer) {
  const { client, greeting } = await RawSmtp.open(port)
  try {
    expect(greeting).toStartWith('220 ')
    expect(await client.cmd('EHLO client.example.org')).toStartWith('250')
    expect(await client.cmd(`MAIL FROM:<${SENDER}>`)).toStartWith('250')
    const rcpt: string[] = []
    for (const r of rcpts) rcpt.push(await client.cmd(`RCPT TO:<${r}>`))
    const data = await client.cmd('DATA')
    const final = data.startsWith('354') ? await client.body(message) : null
    return { rcpt, data, final }
  } finally {
    await client.quit()
  }
}

function transport(port: number, extra: Record<string, unknown> = {}) {
  return nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, ...extra } as any)
}

// ---------------------------------------------------------------------------------------------------------
// 1. Ordinary mail from a real client

describe('ordinary mail, sent with nodemailer', () => {
  let m: MailBox
  let api: ReturnType<typeof caller>
  let send: ReturnType<typeof transport>
  const address = (name: string) => `${name}@${DOMAIN}`

  beforeAll(async () => {
    m = await mailBox()
    api = caller(m.box, { 'x-api-key': await m.box.account('alice') })
    send = transport(m.port)
  })
  afterAll(async () => {
    send.close()
    await m.box.cleanup()
  })

  async function mailbox(name: string) {
    const r = await api('mailbox.json', { address: name })
    expect(r.status).toBe(200)
    expect(r.body.return).toMatchObject({ address: address(name), messages: 0 })
    return r.body.return.address as string
  }

  test('plain text: 250 names the stored id, and the text, sender and subject come back', async () => {
    const to = await mailbox('plain')
    const info = await send.sendMail({
      from: `"Plain Sender" <${SENDER}>`,
      to,
      subject: 'Hello plain',
      text: 'Just some text.\nSecond line.',
    })
    expect(info.response).toMatch(/^250 2\.0\.0 OK: stored as \d+$/)
    const [id] = storedIds(info.response)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    expect(msg).toMatchObject({
      id,
      address: to,
      from: { address: SENDER, name: 'Plain Sender' },
      to: [{ address: to, name: '' }],
      cc: [],
      subject: 'Hello plain',
      html: null,
      attachments: [],
      links: [],
    })
    expect(msg.text.trimEnd()).toBe('Just some text.\nSecond line.')
    // The row and the raw source behind it (a small message's is in mail_inline): the message as it came.
    const row = m.box.db.query('SELECT size, blob FROM mail_messages WHERE id = ?').get(id!) as {
      size: number
      blob: string
    }
    expect(isInline(m.box, row.blob)).toBe(true)
    const raw = rawOf(m.box, row.blob)
    expect(raw.length).toBe(row.size)
    expect(raw.toString()).toContain('Subject: Hello plain')
    const dl = await download(m.box, msg.raw)
    expect(dl.status).toBe(200)
    expect(dl.bytes.equals(raw)).toBe(true)
    expect(dl.headers.get('content-disposition')).toStartWith('attachment;')
  })

  test('HTML only: html as sent, text made from it, links from the HTML', async () => {
    const to = await mailbox('htmlonly')
    const html = '<p>Welcome! <a href="https://example.com/confirm?u=1&amp;t=abc">Confirm</a></p>'
    const info = await send.sendMail({ from: SENDER, to, subject: 'HTML only', html })
    const [id] = storedIds(info.response)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    // As sent, up to the line end the MIME body closes with.
    expect(msg.html.trimEnd()).toBe(html)
    expect(msg.text).toContain('Welcome!')
    expect(msg.text).not.toContain('<p>')
    expect(msg.links).toEqual(['https://example.com/confirm?u=1&t=abc'])
  })

  test('multipart with two attachments: each downloads byte-identical as an attachment', async () => {
    const to = await mailbox('attach')
    const binary = Buffer.from(Array.from({ length: 256 * 4 }, (_, i) => i % 256)) // every byte value, 4 times
    const utfName = 'Rechnung März – 請求書.txt'
    const utfContent = Buffer.from('Grüße, ünïcödé inside\r\n')
    const info = await send.sendMail({
      from: SENDER,
      to,
      subject: 'Two files',
      text: 'See the attached files.',
      html: '<p>See the attached files.</p>',
      attachments: [
        { filename: 'bytes.bin', content: binary, contentType: 'application/octet-stream' },
        { filename: utfName, content: utfContent, contentType: 'text/plain' },
      ],
    })
    const [id] = storedIds(info.response)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    expect(msg.attachments.map((a: any) => [a.filename, a.content_type, a.size])).toEqual([
      ['bytes.bin', 'application/octet-stream', binary.length],
      [utfName, 'text/plain', utfContent.length],
    ])
    const [bin, utf] = msg.attachments
    const a = await download(m.box, bin.url)
    expect(a.status).toBe(200)
    expect(a.bytes.equals(binary)).toBe(true)
    expect(a.headers.get('content-disposition')).toBe(`attachment; filename="bytes.bin"; filename*=UTF-8''bytes.bin`)
    expect(a.headers.get('x-content-type-options')).toBe('nosniff')
    const b = await download(m.box, utf.url)
    expect(b.status).toBe(200)
    expect(b.bytes.equals(utfContent)).toBe(true)
    const disposition = b.headers.get('content-disposition')!
    expect(disposition).toStartWith('attachment; filename="')
    // The real name, percent-encoded as RFC 5987 says (decoded here, so the check does not depend on which
    // characters the encoder leaves alone).
    expect(decodeURIComponent(/filename\*=UTF-8''(.+)$/.exec(disposition)![1]!)).toBe(utfName)
    // One row per attachment and the decoded bytes of each beside the raw source.
    expect(count(m.box, 'mail_attachments', 'message_id = ?', id!)).toBe(2)
    const blob = (m.box.db.query('SELECT blob FROM mail_messages WHERE id = ?').get(id!) as { blob: string }).blob
    expect(blobContents(m.box, blob)).toEqual(['1.bin', '2.bin', 'raw.eml'])
    // The list counts them.
    const list = (await api('messages.json', { address: to })).body.return.messages
    expect(list[0]).toMatchObject({ id, attachments: 2 })
  })

  test('non-ASCII subject, display name and UTF-8 body come back as the same text', async () => {
    const to = await mailbox('unicode')
    const subject = 'Ünïcödé ✓ 日本語のテスト — ok'
    const text = 'Привет, мир! Grüße 👋 and a long line of ä ö ü ß to force encoding.\n'
    const info = await send.sendMail({ from: { name: 'Zoë Ångström 山田', address: SENDER }, to, subject, text })
    const [id] = storedIds(info.response)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    expect(msg.subject).toBe(subject)
    expect(msg.from).toEqual({ address: SENDER, name: 'Zoë Ångström 山田' })
    expect(msg.text).toBe(text)
    // The raw message really was encoded (the test would prove nothing if the client sent 8-bit headers).
    const raw = (await download(m.box, msg.raw)).bytes.toString('latin1')
    expect(raw).toMatch(/Subject: =\?UTF-8\?[BQ]\?/i)
  })

  test('ISO-8859-1 with quoted-printable body and encoded-word subject is decoded', async () => {
    const to = await mailbox('latin1')
    const raw =
      `From: =?ISO-8859-1?Q?J=FCrgen_M=FCller?= <${SENDER}>\r\nTo: ${to}\r\nSubject: =?ISO-8859-1?Q?Gr=FC=DFe_aus_K=F6ln?=\r\n` +
      'MIME-Version: 1.0\r\nContent-Type: text/plain; charset=ISO-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n' +
      'Sch=F6ne Gr=FC=DFe, =E9t=E9 =E0 Z=FCrich.\r\nEin sehr langer Satz, der umbrochen wird, weil quoted-printable =\r\nZeilen k=FCrzt.\r\n'
    const info = await send.sendMail({ envelope: { from: SENDER, to: [to] }, raw })
    const [id] = storedIds(info.response)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    expect(msg.subject).toBe('Grüße aus Köln')
    expect(msg.from).toEqual({ address: SENDER, name: 'Jürgen Müller' })
    expect(msg.text).toBe(
      'Schöne Grüße, été à Zürich.\nEin sehr langer Satz, der umbrochen wird, weil quoted-printable Zeilen kürzt.\n',
    )
  })

  test('messages.json: newest first, intro of at most 160 characters, seen false then true', async () => {
    const to = await mailbox('listing')
    const long = `Dear user, ${'this sentence is long enough to be cut. '.repeat(12)}The end.`
    const ids: number[] = []
    for (const [i, text] of ['first body', 'second body', long].entries())
      ids.push(storedIds((await send.sendMail({ from: SENDER, to, subject: `n${i}`, text })).response)[0]!)
    const r = await api('messages.json', { address: to })
    expect(r.status).toBe(200)
    const list = r.body.return.messages
    expect(list.map((x: any) => x.id)).toEqual([...ids].reverse())
    expect(list.map((x: any) => x.subject)).toEqual(['n2', 'n1', 'n0'])
    expect(list.every((x: any) => x.seen === false && x.attachments === 0)).toBe(true)
    expect(list[2].intro).toBe('first body')
    expect([...list[0].intro].length).toBeLessThanOrEqual(INTRO_CHARS)
    expect([...list[0].intro].length).toBeGreaterThan(INTRO_CHARS - 10)
    expect(list[0].intro).toStartWith('Dear user, this sentence is long')
    expect(list[0].from).toEqual({ address: SENDER, name: '' })
    // Reading one marks it, and only it, seen.
    expect((await api('message.json', { address: to, id: ids[1]! })).body.return.seen).toBe(true)
    const again = (await api('messages.json', { address: to })).body.return.messages
    expect(again.map((x: any) => x.seen)).toEqual([false, true, false])
    expect(count(m.box, 'mail_messages', 'id = ? AND seen = 1', ids[1]!)).toBe(1)
    // mailbox.json counts them.
    expect((await api('mailbox.json', { address: to })).body.return.messages).toBe(3)
  })

  test('links: from text and HTML, &amp; decoded, each once, in order', async () => {
    const to = await mailbox('links')
    const text =
      'Confirm here: https://example.com/confirm?a=1&b=2. Or (see https://en.wikipedia.org/wiki/Foo_(bar)).\n' +
      'Again: https://example.com/confirm?a=1&b=2\nNot a web link: ftp://example.com/x mailto:x@example.com'
    const html =
      '<p><a href="https://example.com/confirm?a=1&amp;b=2">Confirm</a> ' +
      "<a href='https://example.com/unsubscribe?list=7&amp;u=9'>Unsubscribe</a> " +
      '<a href="javascript:alert(1)">x</a> Visit http://plain.example/written-out too.</p>'
    const info = await send.sendMail({ from: SENDER, to, subject: 'Links', text, html })
    const [id] = storedIds(info.response)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    expect(msg.links).toEqual([
      'https://example.com/confirm?a=1&b=2',
      'https://en.wikipedia.org/wiki/Foo_(bar)',
      'https://example.com/unsubscribe?list=7&u=9',
      'http://plain.example/written-out',
    ])
  })

  test('links: "[http://a…/x.jpg]http://b…/y" in a text body is two links; brackets and quotes end a URL, pairs stay', async () => {
    const to = await mailbox('brackets')
    const text =
      '[http://a.example/x.jpg]http://b.example/y\n' +
      'Angle <https://c.example/angle>, quoted "https://d.example/quoted", a list https://e.example/l?ids[]=1&ids[]=2 ' +
      'and (https://f.example/paren). Open [https://g.example/open and {https://h.example/w}.'
    const info = await send.sendMail({ from: SENDER, to, subject: 'Brackets', text })
    const [id] = storedIds(info.response)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    expect(msg.links).toEqual([
      'http://a.example/x.jpg',
      'http://b.example/y',
      'https://c.example/angle',
      'https://d.example/quoted',
      'https://e.example/l?ids[]=1&ids[]=2',
      'https://f.example/paren',
      'https://g.example/open',
      'https://h.example/w',
    ])
  })

  test('links: an HTML-only message lists its <a href> and <area href>, not its images or tracking pixel', async () => {
    const to = await mailbox('pixel')
    const tracker = 'https://track.example/open.gif?u=9&m=4'
    const html =
      '<p>Welcome! <a href="https://shop.example/confirm?t=1&amp;u=2">Confirm</a></p>' +
      '<img src="https://cdn.example/banner.png" usemap="#m" alt="Banner">' +
      '<map name="m"><area shape="rect" coords="0,0,10,10" href="https://shop.example/offer" alt="Offer"></map>' +
      '<p><a href="https://shop.example/home"><img src="https://cdn.example/logo.png" alt="Logo"></a></p>' +
      `<img src="${tracker.replace('&', '&amp;')}" width="1" height="1" alt="">`
    const info = await send.sendMail({ from: SENDER, to, subject: 'Pixel', html })
    const [id] = storedIds(info.response)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    // The text mailparser makes of the HTML shows each image's address; none of them is a link.
    expect(msg.text).toContain(`[${tracker}]`)
    expect(msg.text).toContain('[https://cdn.example/logo.png]https://shop.example/home')
    expect(msg.links).toEqual([
      'https://shop.example/confirm?t=1&u=2',
      'https://shop.example/home',
      'https://shop.example/offer',
    ])
  })

  test("links: a message shaped like mailparser's outofmemory.eml (1 MB of brackets in an HTML title) gives its three links", async () => {
    const to = await mailbox('outofmemory')
    const r = await rawSend(m.port, [to], outOfMemoryLike(to))
    expect(r.final).toMatch(/^250 /)
    const msg = (await api('message.json', { address: to, id: storedIds(r.final!)[0]! })).body.return
    expect(msg.text).toContain('[http://img.example/o6/b_uns.jpg]http://a.example/pro.php?gra-2')
    expect(msg.text).toContain('the-end')
    expect(msg.links).toEqual([
      'http://a.example/pro.php?pro-1',
      'http://a.example/pro.php?gra-2',
      'http://a.example/pro.php?hin-3',
    ])
  })

  test('links: a message built to make link finding slow (runs of brackets, tags left open) is stored at once', async () => {
    const to = await mailbox('slowlinks')
    const text = `Start: https://a.example/${')'.repeat(40_000)}\r\nend`
    const html =
      '<p><a href="https://c.example/ok">ok</a></p>' +
      `<p>${'<a '.repeat(40_000)}></p>${'<script>'.repeat(20_000)}${'<'.repeat(100_000)}`
    const boundary = 'b-slow-links'
    const message = eml(
      to,
      'slow links',
      `--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${text}\r\n` +
        `--${boundary}\r\nContent-Type: text/html; charset=utf-8\r\n\r\n${html}\r\n--${boundary}--`,
      `Content-Type: multipart/alternative; boundary="${boundary}"\r\n`,
    )
    const started = Date.now()
    const r = await rawSend(m.port, [to], message)
    // Each shape took the old patterns time in the square of its length: over a minute here, all on the event loop.
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(r.final).toMatch(/^250 /)
    const msg = (await api('message.json', { address: to, id: storedIds(r.final!)[0]! })).body.return
    expect(msg.links).toEqual(['https://a.example/', 'https://c.example/ok'])
  })

  test('without tls_cert and tls_key, STARTTLS is not offered (and a client that requires it gives up)', async () => {
    const { client } = await RawSmtp.open(m.port)
    const ehlo = await client.cmd('EHLO client.example.org')
    await client.quit()
    expect(ehlo).toStartWith('250')
    expect(ehlo).not.toContain('STARTTLS')
    expect(ehlo).toContain('PIPELINING')
    const strict = transport(m.port, { ignoreTLS: false, requireTLS: true })
    try {
      await expect(strict.sendMail({ from: SENDER, to: address('plain'), subject: 'x', text: 'x' })).rejects.toThrow()
    } finally {
      strict.close()
    }
  })
})

// ---------------------------------------------------------------------------------------------------------
// 2. Edges, by the raw dialogue

describe('edges, by a raw SMTP dialogue', () => {
  // Above the 1 MiB that is kept in memory: the limit is met by messages that go through an incoming file.
  const LIMIT = 1024 * 1024 + 300_000
  let m: MailBox
  let api: ReturnType<typeof caller>

  beforeAll(async () => {
    m = await mailBox({ max_message_bytes: LIMIT, max_messages: 2 })
    api = caller(m.box, { 'x-api-key': await m.box.account('edgar') })
  })
  afterAll(() => m.box.cleanup())

  async function mailbox(name: string) {
    const r = await api('mailbox.json', { address: name })
    expect(r.status).toBe(200)
    return r.body.return.address as string
  }
  const messagesIn = (address: string) =>
    count(m.box, 'mail_messages', 'mailbox_id = (SELECT id FROM mailboxes WHERE address = ?)', address)

  test('a message of exactly the limit is stored (250) and one byte more is refused (552 5.3.4), leaving nothing', async () => {
    const to = await mailbox('limit')
    const exact = emlOfSize(to, LIMIT)
    const ok = await rawSend(m.port, [to], exact)
    expect(ok.data).toStartWith('354')
    expect(ok.final).toMatch(/^250 2\.0\.0 OK: stored as \d+$/)
    const [id] = storedIds(ok.final!)
    const row = m.box.db.query('SELECT size, blob FROM mail_messages WHERE id = ?').get(id!) as {
      size: number
      blob: string
    }
    expect(row.size).toBe(LIMIT)
    const raw = await download(m.box, (await api('message.json', { address: to, id: id! })).body.return.raw)
    expect(raw.bytes.equals(Buffer.from(exact))).toBe(true)

    const filesBefore = filesUnder(mailDir(m.box))
    const over = await rawSend(m.port, [to], emlOfSize(to, LIMIT + 1))
    expect(over.data).toStartWith('354')
    expect(over.final).toMatch(/^552 5\.3\.4 /)
    expect(messagesIn(to)).toBe(1)
    expect(incoming(m.box)).toEqual([])
    expect(filesUnder(mailDir(m.box))).toEqual(filesBefore)
  })

  test('MAIL FROM with a SIZE= over the limit gets 552 5.3.4 before a byte is sent; a smaller SIZE= is not believed', async () => {
    const to = await mailbox('declared')
    const { client } = await RawSmtp.open(m.port)
    try {
      // SIZE is offered, so clients declare their size (since the fix without the number: see smtp.ts).
      expect(await client.cmd('EHLO client.example.org')).toMatch(/^250[- ]SIZE\b/m)
      const over = await client.cmd(`MAIL FROM:<${SENDER}> SIZE=${LIMIT + 1}`)
      expect(over).toBe(`552 5.3.4 the message is larger than the limit of ${LIMIT} bytes`)
      expect(await client.cmd(`MAIL FROM:<${SENDER}> SIZE=99999999999999999999`)).toMatch(/^552 5\.3\.4 /)
      // The refusal leaves no transaction open: the next MAIL FROM, exactly at the limit, is taken.
      expect(await client.cmd(`MAIL FROM:<${SENDER}> SIZE=${LIMIT}`)).toStartWith('250 ')
      expect(await client.cmd('RSET')).toStartWith('250 ')
      // A client that declares less than it sends is refused when the bytes are counted, with the same reply.
      expect(await client.cmd(`MAIL FROM:<${SENDER}> SIZE=100`)).toStartWith('250 ')
      expect(await client.cmd(`RCPT TO:<${to}>`)).toStartWith('250 ')
      expect(await client.cmd('DATA')).toStartWith('354')
      expect(await client.body(emlOfSize(to, LIMIT + 1))).toBe(
        `552 5.3.4 the message is larger than the limit of ${LIMIT} bytes`,
      )
    } finally {
      await client.quit()
    }
    expect(messagesIn(to)).toBe(0)
    expect(incoming(m.box)).toEqual([])
  })

  test('51 recipients: the first 50 get 250, the 51st 452 4.5.3, and each of the 50 mailboxes holds the message once', async () => {
    const to: string[] = []
    for (let i = 0; i < 51; i++) to.push(await mailbox(`crowd${i}`))
    const blobsBefore = blobFolders(m.box)
    const r = await rawSend(m.port, to, eml(to[0]!, 'to a crowd', 'hello everyone'))
    expect(r.rcpt.slice(0, 50).every((x) => x.startsWith('250'))).toBe(true)
    expect(r.rcpt[50]).toMatch(/^452 4\.5\.3 /)
    const ids = storedIds(r.final!)
    expect(ids).toHaveLength(50)
    for (const a of to.slice(0, 50)) expect(messagesIn(a)).toBe(1)
    expect(messagesIn(to[50]!)).toBe(0)
    // One copy of the bytes, named by all 50 rows.
    const added = blobFolders(m.box).filter((b) => !blobsBefore.includes(b))
    expect(added).toHaveLength(1)
    const blobs = m.box.db.query(`SELECT DISTINCT blob FROM mail_messages WHERE id IN (${ids.join(',')})`).all()
    expect(blobs).toHaveLength(1)
  })

  test('an unknown mailbox and a foreign domain are refused at RCPT with 550 5.1.1', async () => {
    const known = await mailbox('known')
    const r = await rawSend(m.port, [`nobody@${DOMAIN}`, 'someone@elsewhere.example', known], eml(known, 'mixed', 'x'))
    expect(r.rcpt[0]).toMatch(/^550 5\.1\.1 /)
    expect(r.rcpt[1]).toMatch(/^550 5\.1\.1 .*domain/)
    expect(r.rcpt[2]).toStartWith('250')
    expect(storedIds(r.final!)).toHaveLength(1)
    // Only recipients refused: no DATA at all.
    const none = await rawSend(m.port, [`nobody@${DOMAIN}`], 'x\r\n')
    expect(none.rcpt[0]).toMatch(/^550 5\.1\.1 /)
    expect(none.data).toMatch(/^5\d\d /)
    expect(count(m.box, 'mailboxes', 'address = ?', `nobody@${DOMAIN}`)).toBe(0)
  })

  test('a full mailbox (max_messages 2): the third RCPT gets 452 4.2.2', async () => {
    const to = await mailbox('full')
    for (let i = 0; i < 2; i++) expect((await rawSend(m.port, [to], eml(to, `n${i}`, 'x'))).final).toStartWith('250 ')
    const third = await rawSend(m.port, [to], eml(to, 'n2', 'x'))
    expect(third.rcpt[0]).toMatch(/^452 4\.2\.2 /)
    expect(third.final).toBeNull()
    expect(messagesIn(to)).toBe(2)
  })

  test('a client that disconnects mid-DATA leaves nothing behind, and the next client is served', async () => {
    const to = await mailbox('dropped')
    const blobsBefore = blobFolders(m.box)
    const { client } = await RawSmtp.open(m.port)
    await client.cmd('EHLO client.example.org')
    await client.cmd(`MAIL FROM:<${SENDER}>`)
    expect(await client.cmd(`RCPT TO:<${to}>`)).toStartWith('250')
    expect(await client.cmd('DATA')).toStartWith('354')
    // More than the in-memory part: the server has an incoming file open when the client goes.
    await client.write(emlOfSize(to, 1024 * 1024 + 100_000).slice(0, -2))
    await until(() => incoming(m.box).length === 1, 'the incoming file')
    client.socket.destroy()
    await until(() => incoming(m.box).length === 0, 'the incoming file to be removed')
    expect(messagesIn(to)).toBe(0)
    expect(blobFolders(m.box)).toEqual(blobsBefore)

    const next = await rawSend(m.port, [to], eml(to, 'after the drop', 'still here'))
    expect(next.final).toMatch(/^250 /)
    expect(messagesIn(to)).toBe(1)
    expect(m.box.db.query('SELECT subject FROM mail_messages WHERE id = ?').get(storedIds(next.final!)[0]!)).toEqual({
      subject: 'after the drop',
    })
  })

  test('PIPELINING: MAIL, RCPT, RCPT, DATA in one write are answered in order', async () => {
    const good = await mailbox('piped')
    const { client } = await RawSmtp.open(m.port)
    try {
      const ehlo = await client.cmd('EHLO client.example.org')
      expect(ehlo).toContain('PIPELINING')
      await client.write(`MAIL FROM:<${SENDER}>\r\nRCPT TO:<${good}>\r\nRCPT TO:<ghost@${DOMAIN}>\r\nDATA\r\n`)
      const replies = [await client.read(), await client.read(), await client.read(), await client.read()]
      expect(replies[0]).toStartWith('250')
      expect(replies[1]).toStartWith('250')
      expect(replies[2]).toMatch(/^550 5\.1\.1 /)
      expect(replies[3]).toStartWith('354')
      const final = await client.body(eml(good, 'pipelined', 'in one go'))
      expect(final).toMatch(/^250 /)
      // A second transaction on the same connection, pipelined again from RSET to DATA.
      await client.write(`RSET\r\nMAIL FROM:<${SENDER}>\r\nRCPT TO:<${good}>\r\nDATA\r\n`)
      const second = [await client.read(), await client.read(), await client.read(), await client.read()]
      expect(second.map((r) => r.slice(0, 3))).toEqual(['250', '250', '250', '354'])
      expect(await client.body(eml(good, 'pipelined again', 'twice'))).toMatch(/^250 /)
      expect(messagesIn(good)).toBe(2)
    } finally {
      await client.quit()
    }
  })

  test('a message larger than 1 MiB is streamed to a file, stored, and byte-identical through raw', async () => {
    const to = await mailbox('large')
    // Varied lines (not one repeated byte), with lines that start with "." to exercise dot-stuffing.
    const lines: string[] = []
    let size = 0
    for (let i = 0; size < 1024 * 1024 + 200_000; i++) {
      const line = `${i % 7 === 0 ? '.' : ''}${randomBytes(36).toString('base64')}`
      lines.push(line)
      size += line.length + 2
    }
    const message = eml(to, 'large', lines.join('\r\n'))
    const r = await rawSend(m.port, [to], message)
    expect(r.final).toMatch(/^250 /)
    const [id] = storedIds(r.final!)
    const msg = (await api('message.json', { address: to, id: id! })).body.return
    expect(msg.size).toBe(Buffer.byteLength(message))
    const raw = await download(m.box, msg.raw)
    expect(raw.status).toBe(200)
    expect(raw.headers.get('content-type')).toBe('message/rfc822')
    expect(raw.bytes.equals(Buffer.from(message))).toBe(true)
    expect(msg.text.startsWith('.')).toBe(true) // the first line began with "." and came back unstuffed
    expect(incoming(m.box)).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------------------
// 3. Ownership, keys and the marketplace route

describe('ownership and keys', () => {
  let now = Date.parse('2026-02-01T12:00:00Z')
  let m: MailBox
  let alice: ReturnType<typeof caller>
  let bob: ReturnType<typeof caller>
  let narrow: ReturnType<typeof caller>
  let anonymous: ReturnType<typeof caller>
  const market = (user: string) => ({ 'X-RapidAPI-Proxy-Secret': 's3cret', 'X-RapidAPI-User': user })
  const owned = `owned@${DOMAIN}`
  let ownedId: number

  beforeAll(async () => {
    m = await mailBox({ mailbox_ttl: 3600 }, { marketplace: { proxy_secret: 's3cret' } }, { clock: () => now })
    alice = caller(m.box, { 'x-api-key': await m.box.account('alice') })
    bob = caller(m.box, { 'x-api-key': await m.box.account('bob') })
    narrow = caller(m.box, {
      'x-api-key': (await m.box.accounts.createKey({ account: 'alice', scopes: ['links', 'qr', 'media', 'webhooks'] }))
        .key,
    })
    anonymous = caller(m.box, {})
    expect((await alice('mailbox.json', { address: 'owned' })).status).toBe(200)
    ownedId = storedIds((await rawSend(m.port, [owned], eml(owned, 'for alice only', 'secret code 123456'))).final!)[0]!
  })
  afterAll(() => m.box.cleanup())

  test('another account can neither read (403 not_owner) nor claim (403 address_taken) a mailbox', async () => {
    const list = await bob('messages.json', { address: 'owned' })
    expect(list.status).toBe(403)
    expect(list.body).toMatchObject({ status: 'error', code: 'not_owner' })
    const one = await bob('message.json', { address: owned, id: ownedId })
    expect(one.status).toBe(403)
    expect(one.body.code).toBe('not_owner')
    expect(JSON.stringify(one.body)).not.toContain('123456')
    const claim = await bob('mailbox.json', { address: 'OWNED' }) // letter case does not make it another address
    expect(claim.status).toBe(403)
    expect(claim.body.code).toBe('address_taken')
    expect(
      m.box.db
        .query('SELECT a.name FROM mailboxes m JOIN accounts a ON a.id = m.account_id WHERE m.address = ?')
        .get(owned),
    ).toEqual({ name: 'alice' })
    // The owner still reads it.
    expect((await alice('message.json', { address: owned, id: ownedId })).body.return.text).toContain('123456')
  })

  test('no key → 401 on all three methods', async () => {
    for (const [method, q] of [
      ['mailbox.json', { address: 'owned' }],
      ['messages.json', { address: 'owned' }],
      ['message.json', { address: 'owned', id: ownedId }],
    ] as const) {
      const r = await anonymous(method, q)
      expect([method, r.status]).toEqual([method, 401])
      expect(r.body.status).toBe('error')
    }
  })

  test('a key without the mail scope → 403 scope_denied on all three methods', async () => {
    for (const [method, q] of [
      ['mailbox.json', { address: 'owned' }],
      ['messages.json', { address: 'owned' }],
      ['message.json', { address: 'owned', id: ownedId }],
    ] as const) {
      const r = await narrow(method, q)
      expect([method, r.status, r.body.code]).toEqual([method, 403, 'scope_denied'])
    }
  })

  test('the marketplace route reaches all three methods for its own mailbox, and not for another account', async () => {
    const mp = caller(m.box, market('buyer-7'))
    const made = await mp('mailbox.json', { address: 'market-box' })
    expect(made.status).toBe(200)
    const address = made.body.return.address
    expect(
      m.box.db
        .query('SELECT a.name FROM mailboxes m JOIN accounts a ON a.id = m.account_id WHERE m.address = ?')
        .get(address),
    ).toEqual({
      name: 'marketplace:buyer-7',
    })
    const id = storedIds((await rawSend(m.port, [address], eml(address, 'via marketplace', 'hi'))).final!)[0]!
    const list = await mp('messages.json', { address })
    expect(list.status).toBe(200)
    expect(list.body.return.messages.map((x: any) => x.id)).toEqual([id])
    const one = await mp('message.json', { address, id })
    expect(one.status).toBe(200)
    expect(one.body.return.subject).toBe('via marketplace')
    // Another marketplace user is another account; a wrong secret is no caller at all.
    expect((await caller(m.box, market('buyer-8'))('messages.json', { address })).body.code).toBe('not_owner')
    expect((await caller(m.box, market('buyer-7'))('messages.json', { address: 'owned' })).body.code).toBe('not_owner')
    const wrong = await caller(m.box, { 'X-RapidAPI-Proxy-Secret': 'guess', 'X-RapidAPI-User': 'buyer-7' })(
      'messages.json',
      { address },
    )
    expect(wrong.status).toBe(401)
  })

  test('an expired mailbox taken by another account shows none of the old messages', async () => {
    const address = `lapsed@${DOMAIN}`
    expect((await alice('mailbox.json', { address })).status).toBe(200)
    const old = storedIds((await rawSend(m.port, [address], eml(address, 'old secret', 'reset token 999'))).final!)[0]!
    expect((await alice('messages.json', { address })).body.return.messages).toHaveLength(1)
    now += 3600_000 + 1 // past the TTL since alice last used it
    const taken = await bob('mailbox.json', { address })
    expect(taken.status).toBe(200)
    expect(taken.body.return).toMatchObject({ address, messages: 0 })
    expect((await bob('messages.json', { address })).body.return.messages).toEqual([])
    const peek = await bob('message.json', { address, id: old })
    expect(peek.status).toBe(404)
    expect(JSON.stringify(peek.body)).not.toContain('999')
    expect(count(m.box, 'mail_messages', 'id = ?', old)).toBe(0)
    // And alice has lost it.
    expect((await alice('messages.json', { address })).body.code).toBe('not_owner')
  })
})

// ---------------------------------------------------------------------------------------------------------
// 4. messages.json?wait=N over a real HTTP socket

describe('wait', () => {
  let m: MailBox
  let base: string
  let key: string
  const to = `waiter@${DOMAIN}`

  beforeAll(async () => {
    m = await mailBox({}, { server: { host: '127.0.0.1', port: 0 } })
    const server = m.box.listen()
    base = `http://127.0.0.1:${server.port}`
    key = await m.box.account('walt')
    expect((await caller(m.box, { 'x-api-key': key })('mailbox.json', { address: to })).status).toBe(200)
  })
  afterAll(() => m.box.cleanup())

  const list = (query: string) =>
    fetch(`${base}/api/messages.json?address=${encodeURIComponent(to)}&${query}`, { headers: { 'x-api-key': key } })

  test('a held request returns within 100 ms of the 250 of a delivery', async () => {
    let answeredAt = 0
    const held = list('wait=20').then(async (res) => {
      const body = await res.json()
      answeredAt = performance.now()
      return { status: res.status, body }
    })
    await until(() => m.box.mail.waiting === 1, 'the request to be held')
    const { client } = await RawSmtp.open(m.port)
    try {
      await client.cmd('EHLO client.example.org')
      await client.cmd(`MAIL FROM:<${SENDER}>`)
      await client.cmd(`RCPT TO:<${to}>`)
      await client.cmd('DATA')
      const final = await client.body(eml(to, 'wake up', 'your code is 4711'))
      const okAt = performance.now()
      expect(final).toMatch(/^250 /)
      const answer = await held
      expect(answer.status).toBe(200)
      expect(answer.body.return.messages.map((x: any) => x.id)).toEqual(storedIds(final))
      expect(answeredAt - okAt).toBeLessThan(100)
    } finally {
      await client.quit()
    }
  })

  test('an empty wait=1 answers an empty list after at least 1 s', async () => {
    const newest = (await (await list('')).json()).return.messages[0].id
    const started = performance.now()
    const res = await list(`after=${newest}&wait=1`)
    const body = await res.json()
    const took = performance.now() - started
    expect(res.status).toBe(200)
    expect(body.return).toEqual({ address: to, messages: [] })
    // 1 s by the server's timer; a few ms of slack for timer granularity, never more.
    expect(took).toBeGreaterThanOrEqual(995)
    expect(m.box.mail.waiting).toBe(0)
  })

  test('after lists only newer messages, and a wait with after is held until a newer one comes', async () => {
    const send = async (subject: string) => storedIds((await rawSend(m.port, [to], eml(to, subject, 'x'))).final!)[0]!
    const a = await send('after-1')
    const b = await send('after-2')
    const ids = async (query: string) => (await (await list(query)).json()).return.messages.map((x: any) => x.id)
    expect(await ids(`after=${a}`)).toEqual([b])
    expect(await ids(`after=${b}`)).toEqual([])
    expect((await ids('')).slice(0, 2)).toEqual([b, a])
    // Older messages exist, none newer than b: the request is held, and answers with only the new one.
    const held = ids(`after=${b}&wait=20`)
    await until(() => m.box.mail.waiting === 1, 'the request to be held')
    const c = await send('after-3')
    expect(await held).toEqual([c])
  })
})

// ---------------------------------------------------------------------------------------------------------
// 5–7. Signed links, the sweep, and mail the parser cannot read

describe('signed links, sweep, unreadable mail (movable clock)', () => {
  let now = Date.parse('2026-03-01T08:00:00Z')
  let m: MailBox
  let api: ReturnType<typeof caller>

  beforeAll(async () => {
    m = await mailBox({ mailbox_ttl: 600 }, {}, { clock: () => now })
    api = caller(m.box, { 'x-api-key': await m.box.account('signe') })
  })
  afterAll(() => m.box.cleanup())

  /** A message with one attachment in a fresh mailbox; its message.json answer. */
  async function withAttachment(name: string) {
    const address = (await api('mailbox.json', { address: name })).body.return.address as string
    const send = transport(m.port)
    try {
      const info = await send.sendMail({
        from: SENDER,
        to: address,
        subject: 'with a file',
        text: 'see attached',
        attachments: [{ filename: 'a.txt', content: 'attached text\n' }],
      })
      const id = storedIds(info.response)[0]!
      return (await api('message.json', { address, id })).body.return
    } finally {
      send.close()
    }
  }

  const withQuery = (url: string, key: 'exp' | 'sig', value: string) => {
    const u = new URL(url)
    u.searchParams.set(key, value)
    return u.toString()
  }
  /** The same base64url signature with one character changed. */
  const flip = (sig: string) => sig.slice(0, 10) + (sig[10] === 'A' ? 'B' : 'A') + sig.slice(11)

  test('a changed sig → 403, an exp in the past → 410, a deleted message → 404', async () => {
    const msg = await withAttachment('signed')
    const file = msg.attachments[0].url as string
    for (const url of [file, msg.raw as string]) {
      expect((await download(m.box, url)).status).toBe(200)
      const sig = new URL(url).searchParams.get('sig')!
      const tampered = await download(m.box, withQuery(url, 'sig', flip(sig)))
      expect(tampered.status).toBe(403)
      expect(tampered.bytes.toString()).toContain('signature does not match')
      // A later exp with the old sig is tampering too, not a way to extend a link.
      const exp = Number(new URL(url).searchParams.get('exp'))
      expect((await download(m.box, withQuery(url, 'exp', String(exp + 3600)))).status).toBe(403)
      // An id the link was not signed for.
      expect(
        (
          await download(
            m.box,
            url.replace(/\/(raw|attachment)\/(\d+)/, (_, k, id) => `/${k}/${Number(id) + 1}`),
          )
        ).status,
      ).toBe(403)
    }
    // The link outlives its hour: 410, and a changed sig on an expired link is still 403 (tampered first).
    const saved = now
    now += MAIL_LINK_TTL_MS + 1000
    const late = await download(m.box, file)
    expect(late.status).toBe(410)
    expect(late.bytes.toString()).toContain('has expired')
    expect((await download(m.box, msg.raw)).status).toBe(410)
    expect((await download(m.box, withQuery(file, 'sig', flip(new URL(file).searchParams.get('sig')!)))).status).toBe(
      403,
    )
    now = saved

    // A fresh pair of links, then the message goes: both 404.
    const fresh = (await api('message.json', { address: msg.address, id: msg.id })).body.return
    expect((await download(m.box, fresh.attachments[0].url)).status).toBe(200)
    m.box.db.query('DELETE FROM mail_messages WHERE id = ?').run(msg.id)
    expect((await download(m.box, fresh.attachments[0].url)).status).toBe(404)
    expect((await download(m.box, fresh.raw)).status).toBe(404)
  })

  test('sweep: after expiry the mailbox, its rows and its blob folder are gone; a live one stays', async () => {
    const gone = await withAttachment('sweep-me')
    now += 5 * 60_000
    const kept = await withAttachment('keep-me') // made later: expires later
    const blobOf = (id: number) =>
      (m.box.db.query('SELECT blob FROM mail_messages WHERE id = ?').get(id) as { blob: string }).blob
    const goneBlob = blobOf(gone.id)
    const keptBlob = blobOf(kept.id)
    expect(blobContents(m.box, goneBlob)).toEqual(['1.bin', 'raw.eml'])

    // Not yet expired: nothing goes.
    expect((await m.box.mail.sweep()).mailboxes).toBe(0)
    expect(blobContents(m.box, goneBlob)).toEqual(['1.bin', 'raw.eml'])

    now += 5 * 60_000 + 1 // sweep-me is 10 min past its last use, keep-me 5
    // Expired but not yet swept: its links (signed for an hour) already lead nowhere.
    expect((await download(m.box, gone.raw)).status).toBe(404)
    expect((await download(m.box, gone.attachments[0].url)).status).toBe(404)
    // (Mailboxes of the tests before this one may be due too: the count is whatever has expired.)
    const due = count(m.box, 'mailboxes', 'expires <= ?', now)
    expect(due).toBeGreaterThanOrEqual(1)
    expect(await m.box.mail.sweep()).toEqual({ mailboxes: due, orphans: 0 })
    expect(count(m.box, 'mailboxes', 'expires <= ?', now)).toBe(0)
    expect(count(m.box, 'mailboxes', 'address = ?', gone.address)).toBe(0)
    expect(count(m.box, 'mail_messages', 'id = ?', gone.id)).toBe(0)
    expect(count(m.box, 'mail_attachments', 'message_id = ?', gone.id)).toBe(0)
    expect(blobContents(m.box, goneBlob)).toEqual([])

    expect(count(m.box, 'mailboxes', 'address = ?', kept.address)).toBe(1)
    expect(count(m.box, 'mail_attachments', 'message_id = ?', kept.id)).toBe(1)
    expect(blobContents(m.box, keptBlob)).toEqual(['1.bin', 'raw.eml'])
    expect((await download(m.box, kept.attachments[0].url)).bytes.toString()).toBe('attached text\n')
    // The swept address takes no more mail.
    expect((await rawSend(m.port, [gone.address], eml(gone.address, 'late', 'x'))).rcpt[0]).toMatch(/^550 5\.1\.1 /)
  })

  test('a message mailparser cannot read is kept raw and listed', async () => {
    const address = (await api('mailbox.json', { address: 'broken' })).body.return.address as string
    // Multiparts nested 2000 deep: mailparser gives up ("Max allowed child nodes exceeded").
    const nest = Array.from(
      { length: 2000 },
      (_, i) => `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`,
    ).join('')
    const message = `From: <${SENDER}>\r\nTo: <${address}>\r\nSubject: unreadable\r\nMIME-Version: 1.0\r\n${nest}`
    const r = await rawSend(m.port, [address], message)
    expect(r.final).toMatch(/^250 /)
    const [id] = storedIds(r.final!)
    const row = m.box.db.query('SELECT parse_error FROM mail_messages WHERE id = ?').get(id!) as {
      parse_error: string | null
    }
    expect(row.parse_error).toContain('child nodes')
    const list = (await api('messages.json', { address })).body.return.messages
    expect(list.map((x: any) => [x.id, x.from.address, x.seen])).toEqual([[id, SENDER, false]])
    const msg = (await api('message.json', { address, id: id! })).body.return
    expect(msg).toMatchObject({ id, text: '', html: null, attachments: [], links: [] })
    const raw = await download(m.box, msg.raw)
    expect(raw.status).toBe(200)
    expect(raw.bytes.equals(Buffer.from(message))).toBe(true)
  })
})

// ---------------------------------------------------------------------------------------------------------
// 8. STARTTLS

describe('STARTTLS with a configured certificate', () => {
  let m: MailBox
  let dir: string

  beforeAll(async () => {
    dir = tempDir('linkbox-mail-tls-')
    const cert = join(dir, 'cert.pem')
    const key = join(dir, 'key.pem')
    const made = Bun.spawnSync(
      [
        '/usr/bin/openssl',
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        '/CN=localhost',
        '-days',
        '1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stderr: 'pipe' },
    )
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
    m = await mailBox({ tls_cert: cert, tls_key: key })
  })
  afterAll(async () => {
    await m.box.cleanup()
    rmSync(dir, { recursive: true, force: true })
  })

  test('EHLO offers STARTTLS, and a client that requires TLS delivers', async () => {
    const { client } = await RawSmtp.open(m.port)
    const ehlo = await client.cmd('EHLO client.example.org')
    await client.quit()
    expect(ehlo).toContain('STARTTLS')

    const key = await m.box.account('tess')
    const to = (await caller(m.box, { 'x-api-key': key })('mailbox.json', { address: 'secure' })).body.return.address
    const send = transport(m.port, { ignoreTLS: false, requireTLS: true, tls: { rejectUnauthorized: false } })
    try {
      const info = await send.sendMail({ from: SENDER, to, subject: 'over TLS', text: 'encrypted on the way' })
      expect(info.response).toMatch(/^250 2\.0\.0 OK: stored as \d+$/)
      const [id] = storedIds(info.response)
      expect(m.box.db.query('SELECT subject FROM mail_messages WHERE id = ?').get(id!)).toEqual({ subject: 'over TLS' })
    } finally {
      send.close()
    }
  })
})

// ---------------------------------------------------------------------------------------------------------
// Pure units: what parse.ts makes of strangers' text, and the link signer

describe('linksOf', () => {
  test('text URLs lose the sentence punctuation around them, balanced parentheses stay', () => {
    expect(linksOf('Go to https://a.example/x. Or (https://b.example/y), or "https://c.example/z"!', null)).toEqual([
      'https://a.example/x',
      'https://b.example/y',
      'https://c.example/z',
    ])
    expect(linksOf('see https://en.wikipedia.org/wiki/Foo_(bar) now', null)).toEqual([
      'https://en.wikipedia.org/wiki/Foo_(bar)',
    ])
  })

  test('hrefs are entity-decoded, text comes first, each URL once', () => {
    const html =
      '<a href="https://x.example/c?a=1&amp;b=2">c</a><a href=https://x.example/bare>b</a> https://x.example/t'
    expect(linksOf('https://x.example/t and https://x.example/c?a=1&b=2', html)).toEqual([
      'https://x.example/t',
      'https://x.example/c?a=1&b=2',
      'https://x.example/bare',
    ])
  })

  test('only http(s): javascript:, mailto:, ftp: and relative hrefs are not links; script text is not read', () => {
    const html =
      '<a href="javascript:alert(1)">j</a><a href="mailto:a@b.example">m</a><a href="/relative">r</a>' +
      '<a href="ftp://f.example/x">f</a><script>var u = "https://script.example/no"</script>'
    expect(linksOf('ftp://f.example/y file:///etc/passwd', html)).toEqual([])
  })

  test('a bare scheme or an unparseable URL is not a link', () => {
    expect(linksOf('https:// and http://[::1', null)).toEqual([])
  })

  test('text: a bracket that closes nothing ends a URL, a pair stays, one left open ends it where it opened', () => {
    expect(linksOf('[http://a.example/x.jpg]http://b.example/y', null)).toEqual([
      'http://a.example/x.jpg',
      'http://b.example/y',
    ])
    expect(linksOf('http://a.example/p)q http://b.example/{x}/[y](z) http://c.example/f(o', null)).toEqual([
      'http://a.example/p',
      'http://b.example/{x}/[y](z)',
      'http://c.example/f',
    ])
    // A mismatched closer ends it too, before the bracket it fails to close.
    expect(linksOf('http://a.example/(x]y', null)).toEqual(['http://a.example/'])
    expect(linksOf('http://[::1]:8080/p and xhttp://glued.example/ and <https://c.example/>', null)).toEqual([
      'http://[::1]:8080/p',
      'https://c.example/',
    ])
    // A URL inside another one's query is part of it, not a link of its own.
    expect(linksOf('https://a.example/r?to=https://b.example/x', null)).toEqual([
      'https://a.example/r?to=https://b.example/x',
    ])
  })

  test('HTML: <a href> and <area href> are links; <img src>, poster and background are not, even where the text shows them', () => {
    const html =
      '<a href="https://a.example/go">go</a><area href="https://a.example/area"><img src="https://t.example/p.gif">' +
      '<video poster="https://t.example/poster.jpg"></video><td background="https://t.example/bg.png"></td>' +
      '<img src="https://a.example/also-linked.png"><a href="https://a.example/also-linked.png">full size</a>' +
      '<img src="https://a.example/shown.png"> see https://a.example/shown.png'
    const text =
      '[https://t.example/p.gif] https://t.example/poster.jpg https://t.example/bg.png https://a.example/also-linked.png ' +
      'https://a.example/shown.png https://a.example/text'
    expect(linksOf(text, html)).toEqual([
      'https://a.example/also-linked.png',
      'https://a.example/shown.png',
      'https://a.example/text',
      'https://a.example/go',
      'https://a.example/area',
    ])
  })

  test('HTML is split as a browser splits it: ">" in a quoted value, comments, hidden elements, a tag left open', () => {
    expect(linksOf('', '<a title="1 > 0" href="https://a.example/q">x</a>')).toEqual(['https://a.example/q'])
    expect(linksOf('', "<A HREF=https://a.example/bare>x</A><a href = 'https://a.example/s'>")).toEqual([
      'https://a.example/bare',
      'https://a.example/s',
    ])
    expect(linksOf('', '<a href="https://a.example/first" href="https://a.example/second">')).toEqual([
      'https://a.example/first',
    ])
    expect(
      linksOf(
        '',
        '<!-- <a href="https://no.example/c"> https://no.example/c2 --><style>a{b:url(https://no.example/s)}</style>',
      ),
    ).toEqual([])
    expect(linksOf('', '<title>https://no.example/t</title><p>1 < 2 https://a.example/after</p>')).toEqual([
      'https://a.example/after',
    ])
    expect(linksOf('', '<p>https://a.example/before</p><a href="https://no.example/open')).toEqual([
      'https://a.example/before',
    ])
    expect(linksOf('', '<p>https://a.example/before</p><script>https://no.example/never-closed')).toEqual([
      'https://a.example/before',
    ])
  })

  test('at most 500 links, the first ones', () => {
    const text = Array.from({ length: 600 }, (_, i) => `https://a.example/${i}`).join(' ')
    const links = linksOf(text, `<a href="https://a.example/href">x</a>`)
    expect(links).toHaveLength(500)
    expect(links.at(-1)).toBe('https://a.example/499')
  })

  test('2 MB of each shape that made the old patterns take time in the square of the length is read in linear time', () => {
    const M = 2_000_000
    const shapes: [string, string, string | null, string[]][] = [
      ['unbalanced closers', `https://a.example/${')'.repeat(M)}`, null, ['https://a.example/']],
      ['openers', `https://a.example/${'('.repeat(M)}`, null, ['https://a.example/']],
      ['trailing dots', `https://a.example/x${'.'.repeat(M)}`, null, ['https://a.example/x']],
      ['bracketed URLs', '[https://a.example/x.jpg]'.repeat(M / 25), null, ['https://a.example/x.jpg']],
      ['schemes', 'https://'.repeat(M / 8), null, []],
      ['angle brackets', '', '<'.repeat(M), []],
      ['a tag of attributes', '', `${'<a '.repeat(M / 3)}`, []],
      ['tags', '', '<a>'.repeat(M / 3), []],
      ['scripts', '', '<script>'.repeat(M / 8), []],
      ['comments', '', '<!--'.repeat(M / 4), []],
      ['open quotes', '', '<a href="'.repeat(M / 9), []],
      ['images', '', '<img src="https://t.example/p.gif">'.repeat(M / 35), []],
    ]
    for (const [name, text, html, links] of shapes) {
      const started = performance.now()
      expect({ name, links: linksOf(text, html) }).toEqual({ name, links })
      // Linear takes milliseconds to a few hundred; the old square took minutes to hours for each of these.
      expect({ name, slow: performance.now() - started > 3000 }).toEqual({ name, slow: false })
    }
  })
})

describe('introOf', () => {
  test('whitespace is folded and short text kept whole', () => {
    expect(introOf('  Hello\n\n  world\t!  ')).toBe('Hello world !')
    expect(introOf('')).toBe('')
  })

  test(`long text is cut to ${INTRO_CHARS} characters (counted as characters, not UTF-16 units) with an ellipsis`, () => {
    const long = 'word '.repeat(100)
    const intro = introOf(long)
    expect([...intro].length).toBeLessThanOrEqual(INTRO_CHARS)
    expect(intro.endsWith('…')).toBe(true)
    const emoji = '😀'.repeat(300)
    const cut = introOf(emoji)
    expect([...cut].length).toBe(INTRO_CHARS)
    expect(cut).toBe(`${'😀'.repeat(INTRO_CHARS - 1)}…`) // never half a surrogate pair
    const exact = 'x'.repeat(INTRO_CHARS)
    expect(introOf(exact)).toBe(exact)
  })

  test('the same as folding the whole text, for texts of any shape, one long word of 5 MB too', () => {
    const whole = (t: string) => {
      const chars = [...t.replace(/\s+/g, ' ').trim()]
      return chars.length <= INTRO_CHARS
        ? chars.join('')
        : `${chars
            .slice(0, INTRO_CHARS - 1)
            .join('')
            .trimEnd()}…`
    }
    const texts = [
      ' '.repeat(10_000) + 'late start',
      `${'x'.repeat(INTRO_CHARS - 1)} y`,
      `${'x'.repeat(INTRO_CHARS)} y`,
      `${'😀 '.repeat(200)}`,
      `${'a'.repeat(158)}   😀😀 tail`,
      '\u00a0 non-breaking\u2003spaces\n\ttoo ',
    ]
    for (const t of texts) expect(introOf(t)).toBe(whole(t))
    const huge = `${'word '.repeat(40)}${'z'.repeat(5_000_000)}`
    expect(introOf(huge)).toBe(whole(huge))
    expect(introOf(`${'z'.repeat(5_000_000)}`)).toBe(`${'z'.repeat(INTRO_CHARS - 1)}…`)
  })
})

describe('safeFilename', () => {
  test('folders, leading dots and control characters are removed', () => {
    expect(safeFilename('../../etc/passwd', 1, 'text/plain')).toBe('passwd')
    expect(safeFilename('C:\\Users\\me\\evil.exe', 1, 'application/octet-stream')).toBe('evil.exe')
    expect(safeFilename('.htaccess', 1, 'text/plain')).toBe('htaccess')
    expect(safeFilename('a\r\nContent-Type: x.txt', 1, 'text/plain')).toBe('a Content-Type: x.txt')
    expect(safeFilename('Rechnung März.pdf', 1, 'application/pdf')).toBe('Rechnung März.pdf')
  })

  test('no usable name → attachment-<part> with an extension from the type; long names are bounded', () => {
    expect(safeFilename(undefined, 3, 'image/png')).toBe('attachment-3.png')
    expect(safeFilename('', 2, 'image/svg+xml')).toBe('attachment-2.xml')
    expect(safeFilename('../', 4, 'image/jpeg')).toBe('attachment-4.jpeg')
    expect([...safeFilename(`${'ä'.repeat(400)}.txt`, 1, 'text/plain')].length).toBe(255)
  })
})

describe('safeContentType', () => {
  test('a plain type/subtype is kept, lower-cased; anything else is application/octet-stream', () => {
    expect(safeContentType('TEXT/Plain')).toBe('text/plain')
    expect(safeContentType('image/svg+xml')).toBe('image/svg+xml')
    expect(safeContentType('text/html; charset=utf-8')).toBe('application/octet-stream')
    expect(safeContentType('text/html\r\nX-Evil: 1')).toBe('application/octet-stream')
    expect(safeContentType('nonsense')).toBe('application/octet-stream')
    expect(safeContentType(undefined)).toBe('application/octet-stream')
    expect(safeContentType('')).toBe('application/octet-stream')
  })
})

describe('signing', () => {
  const signer = createLinkSigner(randomBytes(32))
  const t = Date.parse('2026-01-01T00:00:00Z')

  test('a signed id checks ok until its exp, then expired', () => {
    const { exp, sig, query } = signer.sign('mail-raw-7', t + 60_000)
    expect(query).toBe(`exp=${exp}&sig=${sig}`)
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(signer.check('mail-raw-7', String(exp), sig, t)).toBe('ok')
    expect(signer.check('mail-raw-7', String(exp), sig, exp * 1000 - 1)).toBe('ok')
    expect(signer.check('mail-raw-7', String(exp), sig, exp * 1000)).toBe('expired')
  })

  test('tampered comes before expired: another id, exp or sig, or another secret', () => {
    const { exp, sig } = signer.sign('mail-raw-7', t + 60_000)
    const late = exp * 1000 + 1
    const other = sig.slice(0, -1) + (sig.endsWith('A') ? 'B' : 'A')
    for (const now of [t, late]) {
      expect(signer.check('mail-raw-8', String(exp), sig, now)).toBe('tampered')
      expect(signer.check('mail-attachment-7', String(exp), sig, now)).toBe('tampered')
      expect(signer.check('mail-raw-7', String(exp + 1), sig, now)).toBe('tampered')
      expect(signer.check('mail-raw-7', String(exp), other, now)).toBe('tampered')
      expect(signer.check('mail-raw-7', null, sig, now)).toBe('tampered')
      expect(signer.check('mail-raw-7', String(exp), null, now)).toBe('tampered')
      expect(signer.check('mail-raw-7', `${exp}.0`, sig, now)).toBe('tampered')
      expect(createLinkSigner(randomBytes(32)).check('mail-raw-7', String(exp), sig, now)).toBe('tampered')
    }
  })

  test('every changed character of a sig is tampering, the last one too', () => {
    // 32 bytes take 43 base64url characters, and the last carries two spare bits: four spellings of the
    // last character decode to the same bytes. Only the one the signer wrote may pass.
    const { exp, sig } = signer.sign('mail-raw-7', t + 60_000)
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const passing: string[] = []
    for (let i = 0; i < sig.length; i++)
      for (const c of alphabet) {
        if (c === sig[i]) continue
        const changed = sig.slice(0, i) + c + sig.slice(i + 1)
        if (signer.check('mail-raw-7', String(exp), changed, t) !== 'tampered') passing.push(changed)
      }
    expect(passing).toEqual([])
  })

  test('the secret is made once in the data directory, mode 0600, and kept across loads', () => {
    const dir = tempDir('linkbox-signing-')
    try {
      const first = loadSigningSecret(dir)
      expect(first.length).toBeGreaterThanOrEqual(32)
      const path = join(dir, 'secrets', 'signing.key')
      expect(statSync(path).mode & 0o777).toBe(0o600)
      expect(loadSigningSecret(dir).equals(first)).toBe(true)
      const { exp, sig } = createLinkSigner(first).sign('x', t + 1000)
      expect(createLinkSigner(loadSigningSecret(dir)).check('x', String(exp), sig, t)).toBe('ok')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('connections per address, the mail.received event, /metrics', () => {
  let m: MailBox
  let key: string
  beforeAll(async () => {
    m = await mailBox({ max_connections_per_ip: 2 })
    key = await m.box.account('watcher')
  })
  afterAll(() => m.box.cleanup())

  test('past mail.max_connections_per_ip a connection is told 421 at once; a freed place is taken again', async () => {
    const a = await RawSmtp.open(m.port)
    const b = await RawSmtp.open(m.port)
    expect(a.greeting).toStartWith('220 ')
    expect(b.greeting).toStartWith('220 ')
    const c = await RawSmtp.open(m.port)
    expect(c.greeting).toMatch(/^421 4\.7\.0 too many connections from /)
    await until(() => c.client.closed, 'the refused connection to close')
    await a.client.quit()
    await until(() => m.box.smtp!.connections === 1, 'the server to see the first connection go')
    const d = await RawSmtp.open(m.port)
    expect(d.greeting).toStartWith('220 ')
    await Promise.all([b.client.quit(), d.client.quit()])
  })

  test('a stored message is announced once per mailbox on the event bus, and counted in /metrics', async () => {
    const heard: { accountId: number; message: Record<string, unknown> }[] = []
    m.box.events.on('mail.received', (e) => heard.push(e))
    const api = caller(m.box, { 'x-api-key': key })
    const one = (await api('mailbox.json', { address: 'events-1' })).body.return.address
    const two = (await api('mailbox.json', { address: 'events-2' })).body.return.address
    const message = eml(one, 'announced', 'see https://example.com/a')
    const r = await rawSend(m.port, [one, two], message)
    const ids = storedIds(r.final!)
    expect(ids).toHaveLength(2)
    const account = (await m.box.accounts.authenticate(key))!.accountId
    expect(heard.map((e) => [e.accountId, e.message.address, e.message.id, e.message.subject])).toEqual([
      [account, one, ids[0], 'announced'],
      [account, two, ids[1], 'announced'],
    ])
    // The payload is the messages.json entry (plus the address), so webhooks can send what the API shows.
    const listed = (await api('messages.json', { address: one })).body.return.messages[0]
    expect(heard[0]!.message).toEqual({ address: one, ...listed })

    const metrics = await (await m.box.readMetrics()).text()
    const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1])
    expect(value('linkbox_mail_received_total')).toBe(2)
    expect(value('linkbox_mail_messages')).toBe(2)
    expect(value('linkbox_mailboxes')).toBe(2)
    expect(value('linkbox_mail_bytes')).toBe(2 * Buffer.byteLength(message))
    expect(value('linkbox_mail_waiting')).toBe(0)
  })
})
