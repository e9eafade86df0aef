// The SMTP receiver: smtp-server speaks the protocol, this file decides the answers (RCPT checks, size limits);
// 250 only once the message is stored and committed. No AUTH: inbound for its own domains, never a relay.
import { readFileSync } from 'node:fs'
import type { Readable } from 'node:stream'
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server'
import type { Config } from '../kernel/config'
import { ConfigError } from '../kernel/errors'
import type { FaultLog } from '../web/fault-log'
import { MAX_RECIPIENTS, SmtpReply } from './delivery'
import type { MailService } from './service'
import type { Spool } from './spool'

/** Connections at once, in all: beyond it smtp-server answers 421. */
export const MAX_CONNECTIONS = 200
/** How long sessions in DATA may take to finish at shutdown before they are answered 421 and closed. */
const CLOSE_GRACE_MS = 5_000

type Recipient = SMTPServerAddress & { mailboxId?: number }

export interface SmtpReceiver {
  readonly port: number
  readonly connections: number
  /** Stops accepting; lets messages in DATA finish (their 250 waits for the commit), then closes the rest with 421. */
  close(): Promise<void>
}

function readPem(path: string, key: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new ConfigError(`config: "${key}": cannot read ${path}: ${(err as Error).message}`)
  }
}

const tooLarge = (limit: number) => new SmtpReply(552, `5.3.4 the message is larger than the limit of ${limit} bytes`)

export function startSmtp(config: Config, mail: MailService, spool: Spool, faults: FaultLog): Promise<SmtpReceiver> {
  const { smtp_host, smtp_port, max_message_bytes, tls_cert, tls_key, max_connections_per_ip } = config.mail
  const tls =
    tls_cert && tls_key ? { cert: readPem(tls_cert, 'mail.tls_cert'), key: readPem(tls_key, 'mail.tls_key') } : null
  const perIp = new Map<string, number>()
  // Sessions whose message is arriving or being stored: at shutdown these may finish, the others are closed.
  const inData = new Set<string>()
  // Set when the shutdown grace has run out: a message not yet committed is then dropped (421), never half kept.
  let forced = false
  // Messages still arriving, by session: a client that stalls mid-DATA past the grace never ends its stream,
  // so at shutdown the stream is cut here and the partial file removed before the process exits.
  const arriving = new Map<string, { stream: Readable; taken: Promise<unknown> }>()

  const server = new SMTPServer({
    name: mail.domains[0],
    banner: 'linkbox',
    logger: false,
    // EHLO offers SIZE without the number (RFC 1870 allows it): with the number, smtp-server refuses an
    // over-size MAIL FROM SIZE= itself, before onMailFrom, as a bare "552 Error: …" without the 5.3.4 that says
    // why (its enhanced status codes are off, as linkbox writes its own). onMailFrom makes that check; the bytes
    // themselves are counted in onData.
    size: max_message_bytes,
    hideSize: true,
    authOptional: true,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(tls ?? {}),
    maxClients: MAX_CONNECTIONS,
    closeTimeout: CLOSE_GRACE_MS,
    socketTimeout: 60_000,
    // No reverse DNS of every client: it costs a lookup (seconds, when DNS is slow or absent) per connection,
    // and the name is shown nowhere.
    disableReverseLookup: true,

    onConnect(session, callback) {
      const ip = session.remoteAddress
      const n = perIp.get(ip) ?? 0
      if (n >= max_connections_per_ip)
        return callback(new SmtpReply(421, `4.7.0 too many connections from ${ip}; try again later`))
      perIp.set(ip, n + 1)
      ;(session as SMTPServerSession & { counted?: boolean }).counted = true
      callback()
    },
    onClose(session) {
      if (!(session as SMTPServerSession & { counted?: boolean }).counted) return
      const n = (perIp.get(session.remoteAddress) ?? 1) - 1
      if (n > 0) perIp.set(session.remoteAddress, n)
      else perIp.delete(session.remoteAddress)
    },
    onMailFrom(address, _session, callback) {
      // RFC 1870: a size declared over the limit is refused before a byte of the message is sent (552, RFC 3463's
      // 5.3.4). One declared smaller is not believed: the bytes are counted all the same.
      const declared = address.args ? Number(address.args.SIZE ?? 0) : 0
      if (declared > max_message_bytes) return callback(tooLarge(max_message_bytes))
      callback()
    },
    onRcptTo(address: Recipient, session, callback) {
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS)
        return callback(new SmtpReply(452, `4.5.3 too many recipients: at most ${MAX_RECIPIENTS} a message`))
      mail.checkRecipient(address.address).then(
        (check) => {
          if (!check.ok) return callback(check.reply)
          address.mailboxId = check.mailboxId
          callback()
        },
        (err) => {
          faults.fault('mail: a recipient could not be checked', err)
          callback(new SmtpReply(451, '4.3.0 the recipient could not be checked; try again later'))
        },
      )
    },
    onData(stream, session, callback) {
      const ids = [
        ...new Set((session.envelope.rcptTo as Recipient[]).map((r) => r.mailboxId!).filter((id) => id !== undefined)),
      ]
      const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : ''
      inData.add(session.id)
      const answer: typeof callback = (err, message) => {
        inData.delete(session.id)
        callback(err, message)
      }
      const taking = spool.take(stream, max_message_bytes)
      arriving.set(session.id, { stream, taken: taking })
      const arrived = () => void arriving.delete(session.id)
      taking.then(arrived, arrived)
      taking
        .then(async (taken) => {
          if (taken.oversize) {
            await spool.discard(taken)
            throw tooLarge(max_message_bytes)
          }
          if (forced) {
            await spool.discard(taken)
            throw new SmtpReply(421, '4.3.2 the server is shutting down; try again later')
          }
          try {
            const stored = await mail.deliver(taken, from, ids, () => forced)
            answer(null, `2.0.0 OK: stored as ${stored.join(', ')}`)
          } finally {
            // Stored (moved into its blob, or copied into the database) or refused: the incoming file goes.
            await spool.discard(taken)
          }
        })
        .catch((err) => {
          if (err instanceof SmtpReply) return answer(err)
          // The client went away mid-message: nothing was kept, and nobody is left to answer.
          if (
            (err as { code?: string }).code === 'ECONNECTION' ||
            (err as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE'
          )
            return answer(new SmtpReply(451, '4.3.0 connection closed before the end of the message'))
          faults.fault('mail: a message could not be stored', err)
          answer(new SmtpReply(451, '4.3.0 the message could not be stored; try again later'))
        })
    },
  })
  // A socket error (a reset mid-session) must never become an uncaught exception.
  server.on('error', (err) => faults.fault('smtp', err))

  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err)
    server.server.once('error', onError)
    server.listen(smtp_port, smtp_host, () => {
      server.server.off('error', onError)
      const address = server.server.address()
      resolve({
        port: typeof address === 'object' && address ? address.port : smtp_port,
        get connections() {
          return server.connections.size
        },
        close() {
          return new Promise<void>((done) => {
            const timer = setTimeout(() => (forced = true), CLOSE_GRACE_MS - 100)
            server.close(() => {
              clearTimeout(timer)
              const left = [...arriving.values()]
              for (const { stream } of left) stream.destroy()
              void Promise.allSettled(left.map((a) => a.taken)).then(() => done())
            })
            // Connections between messages are told at once; those in DATA get the grace to finish.
            for (const connection of server.connections as Set<{
              id: string
              send(code: number, text: string): void
              close(): void
            }>) {
              if (inData.has(connection.id)) continue
              connection.send(421, '4.3.2 the server is shutting down; try again later')
            }
          })
        },
      })
    })
  })
}
