// The features on one engine's stores, in order (a later one may use an earlier one's service): what crosses
// between them is handed in here — the click recorder to links, abuse's guard to links, every service to the dashboard.
import { ABUSE_EVENT_DOCS } from '../abuse'
import { createAbuseFeature } from '../abuse/feature'
import type { AccountService } from '../accounts'
import { createAuditReader } from '../audit'
import { CLICK_EVENT_DOCS, type BatchWriter, type ClickRecorder } from '../clicks'
import { createClicksFeature } from '../clicks/feature'
import { createDashboardFeature } from '../dashboard/feature'
import type { DatabaseCheck } from '../db/health'
import type { Outbox } from '../kernel/outbox'
import { LINK_EVENT_DOCS, type LinkGuard } from '../links'
import { createLinksFeature } from '../links/feature'
import { MAIL_EVENT_DOCS } from '../mail'
import { createMailFeature } from '../mail/feature'
import { createMediaFeature } from '../media/feature'
import { createPagesFeature } from '../pages/feature'
import { createQrFeature } from '../qr/feature'
import type { Shared } from '../web/feature'
import { webhookEventDocs } from '../webhooks'
import { createWebhooksFeature } from '../webhooks/feature'
import { eventInserts } from '../webhooks/storage/sqlite'
import type { AppOptions } from './options'
import type { Storages } from './storages'

// The click writer thread; scripts/build.ts makes its entry one of the binary's, beside this chunk.
const spawnClickWriter = () => new Worker(new URL('./click-write-worker.ts', import.meta.url).href)

export interface FeatureParts {
  outbox: Outbox
  accounts: AccountService
  /** Where click batches go instead of SQLite's writer thread (PostgreSQL). */
  clickWriter?: BatchWriter
  databaseCheck: (recorder: ClickRecorder) => DatabaseCheck
  /** The data directory's signing secret (media derives its cookies' key from it). */
  signingSecret: Buffer
  opts: AppOptions
}

export function createFeatures<Tx>(shared: Shared, storages: Storages<Tx>, parts: FeatureParts) {
  const { outbox, accounts, opts } = parts
  const clicks = createClicksFeature(
    shared,
    {
      dayKeys: storages.dayKeys,
      visitorHashes: storages.visitorHashes,
      outbox,
      eventRows: eventInserts,
      spawnWriter: spawnClickWriter,
    },
    { ...(parts.clickWriter ? { writer: parts.clickWriter } : {}), ...opts.clicks },
  )
  const webhooks = createWebhooksFeature(
    shared,
    { endpoints: storages.endpoints, queue: storages.queue, audit: storages.audit, outbox },
    { schedule: opts.webhookSchedule },
  )
  // Links and abuse need each other: links asks abuse's guard (at request time), abuse reads links' rows.
  const guard: LinkGuard = {
    checkDestination: (url) => abuse.guard.checkDestination(url),
    stops: (row) => abuse.guard.stops(row),
    generation: () => abuse.guard.generation?.() ?? 0,
    unavailable: (row) => abuse.guard.unavailable(row),
  }
  const links = createLinksFeature(
    shared,
    { storages, outbox, recorder: clicks.recorder, dayKeys: clicks.dayKeys, guard },
    opts,
  )
  const abuse = createAbuseFeature(shared, { storages, outbox, links: links.links })
  const qr = createQrFeature(shared, { links: links.links }, { renderer: opts.qrRenderer })
  const mail = createMailFeature(
    shared,
    { messages: storages.messages, queue: storages.queue, outbox },
    { smtpPort: opts.smtpPort },
  )
  const media = createMediaFeature(shared, {
    tickets: storages.tickets,
    cookies: storages.cookies,
    signingSecret: parts.signingSecret,
    audit: storages.audit,
  })
  const database = parts.databaseCheck(clicks.recorder)
  const audit = createAuditReader(storages.audit, shared.clock)
  const dashboard = createDashboardFeature(shared, {
    storages,
    accounts,
    audit,
    links: links.links,
    mail: mail.mail,
    media: media.media,
    webhooks: webhooks.webhooks,
    qr: qr.qr,
    abuse: abuse.abuse,
    cookies: media.cookies,
    databaseProblem: () => database.known().reason,
  })
  const methods = [links, qr, media, mail, webhooks].flatMap((f) => f.feature.api ?? [])
  // Each feature documents its own webhook events; webhooks adds its test event and puts them in order.
  const eventDocs = webhookEventDocs([LINK_EVENT_DOCS, CLICK_EVENT_DOCS, ABUSE_EVENT_DOCS, MAIL_EVENT_DOCS])
  const shell = dashboard.shell
  const pages = createPagesFeature(shared, {
    links: links.links,
    methods,
    database,
    shell,
    anonymous: links.anonymous,
    eventDocs,
  })
  const features = [clicks, webhooks, abuse, links, qr, mail, media, dashboard, pages].map((f) => f.feature)
  return { clicks, webhooks, abuse, links, mail, media, dashboard, audit, methods, features }
}
