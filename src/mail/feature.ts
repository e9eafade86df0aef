// Temporary mail as a feature of the composition root: the service, the SMTP intake's spool and receiver (started
// after listen()), the mail API and download routes, the gauges and the minute's sweep of expired mailboxes.
import type { Config } from '../kernel/config'
import type { EventWriter, Outbox } from '../kernel/outbox'
import type { Feature, Shared } from '../web/feature'
import { createMailRoutes, mailApi } from './api'
import { createMailService } from './service'
import type { SmtpReceiver } from './smtp'
import { createSpool } from './spool'
import type { MessageStore } from './storage/contract'

/** What the root hands in: the mail store and the webhook queue (either engine), and the outbox. */
export interface MailDeps<Tx> {
  messages: MessageStore<Tx>
  queue: EventWriter<Tx>
  outbox: Outbox
}

export function createMailFeature<Tx>(shared: Shared, deps: MailDeps<Tx>, opts: { smtpPort?: number } = {}) {
  const { config, signer, events, clock, changes } = shared
  const { messages, queue, outbox } = deps
  // The SMTP intake's: messages arriving (data_dir/mail/incoming). The stored bytes are the message store's.
  const spool = createSpool(config.data_dir)
  const mail = createMailService({ messages, queue, config, signer, events, clock, outbox, changes })
  let smtp: SmtpReceiver | null = null
  let smtpClosed: Promise<void> = Promise.resolve()
  let sweeps = 0

  // The three mail gauges of a scrape from one read (made before the scrape: see totals.ts).
  const totals = () => mail.totalsKnown()

  const feature: Feature = {
    routes: createMailRoutes(mail),
    // A held messages.json outlives the idle timeout of its connection: it is told to wait longer.
    api: mailApi(mail, { holdOpen: (request, seconds) => shared.server()?.timeout(request, seconds) }),
    metrics(m) {
      m.refreshing(() => mail.refreshTotals())
      m.sampled(
        'linkbox_mailboxes',
        'Temporary mailboxes stored (live, or expired and not yet swept).',
        () => totals().mailboxes,
      )
      m.sampled('linkbox_mail_messages', 'Messages stored in mailboxes.', () => totals().messages)
      m.sampled(
        'linkbox_mail_bytes',
        'Bytes of the stored messages as received (the raw .eml files; attachments are kept decoded beside them).',
        () => totals().bytes,
      )
      m.sampled(
        'linkbox_mail_received_total',
        'Messages stored since start (once per mailbox they went to).',
        () => mail.received,
        'counter',
      )
      m.sampled('linkbox_mail_waiting', 'messages.json requests held until mail arrives (wait=N).', () => mail.waiting)
      m.sampled(
        'linkbox_mail_live_views',
        'Mailbox pages open in the dashboard with a live view (event streams).',
        () => mail.watching,
      )
      m.sampled('linkbox_smtp_connections', 'Open SMTP connections.', () => smtp?.connections ?? 0)
    },
    jobs: [{ name: 'mail sweep', everyMs: 60_000, run: () => mail.sweep({ orphans: sweeps++ % 60 === 0 }) }],
    // Held messages.json requests are answered first and the dashboard's event streams of mailboxes end,
    // or the HTTP server would wait out their `wait` (and wait for ever for the streams).
    stopping() {
      mail.release()
      smtpClosed = smtp?.close() ?? Promise.resolve()
    },
    async close() {
      await smtpClosed
      smtp = null
      await mail.settle()
    },
  }

  return {
    feature,
    mail,
    spool,
    get smtp() {
      return smtp
    },
    /** Starts the SMTP receiver on mail.smtp_host:smtp_port (0: none; `opts.smtpPort` instead, for tests). */
    async startSmtp(): Promise<SmtpReceiver | null> {
      if (opts.smtpPort === undefined && config.mail.smtp_port === 0) return null
      const { startSmtp } = await import('./smtp')
      const at: Config =
        opts.smtpPort === undefined ? config : { ...config, mail: { ...config.mail, smtp_port: opts.smtpPort } }
      smtp = await startSmtp(at, mail, spool, shared.faults)
      return smtp
    },
  }
}
