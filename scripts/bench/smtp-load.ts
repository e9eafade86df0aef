// The mail bench's load generator: a raw SMTP client over node:net, written for the bench because a real
// client library (nodemailer) spends more per message than the servers under test would, and its cost
// would hide theirs. C connections, each sending one message after another on its own connection:
// MAIL, RCPT and DATA written at once (PIPELINING), then the ~1 KB message with its final ".". The latency
// of a message is from the moment the final "\r\n.\r\n" was written to the moment its reply arrived.
import { connect, type Socket } from 'node:net'

export interface Reply {
  code: number
  /** The text of every line, joined by "\n", without the codes. */
  text: string
  /** performance.now() when the reply's last line arrived. */
  at: number
}

/**
 * Splits what the server sends into replies: "250-..." lines continue a reply, "250 ..." ends it; a line
 * may arrive in pieces. Pure apart from the clock, so that a wrong split (which would time the wrong reply)
 * can be tested.
 */
export function replyReader(now: () => number = () => performance.now()) {
  let pending = ''
  let lines: string[] = []
  return (chunk: string): Reply[] => {
    pending += chunk
    const out: Reply[] = []
    for (let eol = pending.indexOf('\n'); eol >= 0; eol = pending.indexOf('\n')) {
      const line = pending.slice(0, eol).replace(/\r$/, '')
      pending = pending.slice(eol + 1)
      const m = /^(\d{3})([ -]?)(.*)$/.exec(line)
      if (!m) throw new Error(`smtp: not a reply line: ${JSON.stringify(line)}`)
      lines.push(m[3]!)
      if (m[2] === '-') continue
      out.push({ code: Number(m[1]), text: lines.join('\n'), at: now() })
      lines = []
    }
    return out
  }
}

/** One SMTP connection: write commands, await replies in order. */
class Connection {
  private queue: Reply[] = []
  private waiter: ((r: Reply | Error) => void) | null = null
  private failure: Error | null = null

  constructor(private socket: Socket) {
    const read = replyReader()
    socket.setEncoding('latin1')
    socket.setNoDelay(true)
    socket.on('data', (chunk: string) => {
      let replies: Reply[]
      try {
        replies = read(chunk)
      } catch (err) {
        return this.fail(err as Error)
      }
      for (const r of replies) this.deliver(r)
    })
    socket.on('error', (err) => this.fail(err))
    socket.on('close', () => this.fail(new Error('smtp: the server closed the connection')))
  }

  static open(host: string, port: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port }, () => {
        socket.off('error', reject)
        resolve(new Connection(socket))
      })
      socket.once('error', reject)
    })
  }

  private deliver(r: Reply | Error) {
    const w = this.waiter
    if (w) {
      this.waiter = null
      w(r)
    } else if (!(r instanceof Error)) this.queue.push(r)
  }

  private fail(err: Error) {
    if (this.failure) return
    this.failure = err
    this.deliver(err)
  }

  reply(): Promise<Reply> {
    const r = this.queue.shift()
    if (r) return Promise.resolve(r)
    if (this.failure) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => (this.waiter = (x) => (x instanceof Error ? reject(x) : resolve(x))))
  }

  write(text: string) {
    this.socket.write(text, 'latin1')
  }

  close() {
    this.socket.removeAllListeners('close')
    this.socket.on('error', () => {})
    this.socket.end('QUIT\r\n')
    this.socket.destroy()
  }
}

const FILLER =
  'Hello, this is a sign-up confirmation sent by the linkbox bench. Please confirm your address by opening ' +
  'the link below; it works for one day. If you did not ask for an account, ignore this message and nothing ' +
  'will happen.'

/**
 * A plain-text message of about 1 KB, different each time (subject, id, link), as sign-up mail is: headers
 * a parser reads, a body with a link in it. No line starts with "." (nothing to dot-stuff).
 */
export function smallMessage(n: number, from: string, to: string): string {
  const lines = [
    `Received: from sender.test (sender.test [192.0.2.1]) by bench.test with ESMTP id ${n}; ${new Date().toUTCString()}`,
    `From: Bench Sender <${from}>`,
    `To: <${to}>`,
    `Subject: Confirm your account, message ${n}`,
    `Date: ${new Date().toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: <bench-${n}-${Date.now()}@sender.test>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    'Hi,',
    '',
    ...FILLER.match(/.{1,72}(\s|$)/g)!.map((l) => l.trimEnd()),
    '',
    `https://example.com/confirm?user=${n}&token=${(n * 2654435761) % 4294967296}`,
    '',
    ...FILLER.match(/.{1,72}(\s|$)/g)!.map((l) => l.trimEnd()),
    '',
    '-- ',
    'The bench',
    'You receive this message because someone entered this address on the sign-up page.',
  ]
  return lines.join('\r\n') + '\r\n'
}

export interface LoadOptions {
  host?: string
  port: number
  connections: number
  /** Stop starting new messages after this long; the ones under way finish. */
  seconds: number
  /** Connection i sends to recipients[i % length]. */
  recipients: string[]
  from?: string
}

export interface LoadResult {
  /** Messages answered 250 after their final ".". */
  accepted: number
  /** Messages refused at any step (a non-2xx/354 reply), or lost with a connection. */
  errors: number
  firstError: string | null
  /** From the first connection opened to the last reply. */
  seconds: number
  rate: number
  /** End of DATA → reply, over the accepted messages. */
  p50ms: number
  p99ms: number
}

/** The q-quantile (0..1) of sorted values: the nearest rank. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

/** Runs `connections` clients against an SMTP server for `seconds`; see LoadResult. */
export async function smtpLoad(opts: LoadOptions): Promise<LoadResult> {
  const host = opts.host ?? '127.0.0.1'
  const from = opts.from ?? 'bench@sender.test'
  const latencies: number[] = []
  let accepted = 0
  let errors = 0
  let firstError: string | null = null
  let counter = 0
  const refuse = (what: string, r: Reply | Error) => {
    errors++
    firstError ??= r instanceof Error ? `${what}: ${r.message}` : `${what}: ${r.code} ${r.text}`
  }
  const started = performance.now()
  const deadline = started + opts.seconds * 1000
  let last = started

  async function client(i: number) {
    const to = opts.recipients[i % opts.recipients.length]!
    let c: Connection
    try {
      c = await Connection.open(host, opts.port)
      const banner = await c.reply()
      if (banner.code !== 220) return refuse('connect', banner)
      c.write('EHLO bench.test\r\n')
      const ehlo = await c.reply()
      if (ehlo.code !== 250) return refuse('EHLO', ehlo)
    } catch (err) {
      return refuse('connect', err as Error)
    }
    try {
      while (performance.now() < deadline) {
        c.write(`MAIL FROM:<${from}>\r\nRCPT TO:<${to}>\r\nDATA\r\n`)
        const [mail, rcpt, data] = [await c.reply(), await c.reply(), await c.reply()]
        if (mail.code !== 250 || rcpt.code !== 250 || data.code !== 354) {
          refuse('envelope', [mail, rcpt, data].find((r) => r.code !== 250 && r.code !== 354)!)
          // Back to a session between messages: an empty message ends a DATA that was accepted anyway.
          if (data.code === 354) {
            c.write('.\r\n')
            await c.reply()
          }
          c.write('RSET\r\n')
          await c.reply()
          continue
        }
        c.write(smallMessage(++counter, from, to) + '.\r\n')
        const wrote = performance.now()
        const end = await c.reply()
        last = Math.max(last, end.at)
        if (end.code !== 250) {
          refuse('end of DATA', end)
          continue
        }
        accepted++
        latencies.push(end.at - wrote)
      }
    } catch (err) {
      refuse('mid-session', err as Error)
    } finally {
      c.close()
    }
  }

  await Promise.all(Array.from({ length: opts.connections }, (_, i) => client(i)))
  const seconds = (last - started) / 1000
  latencies.sort((a, b) => a - b)
  return {
    accepted,
    errors,
    firstError,
    seconds,
    rate: seconds > 0 ? accepted / seconds : 0,
    p50ms: quantile(latencies, 0.5),
    p99ms: quantile(latencies, 0.99),
  }
}
