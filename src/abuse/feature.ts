// Abuse handling as a feature (SPEC §3, §12): the service, the visitor's report form (before the visit routes'
// /:code), its metrics, and the guard app.ts hands links (refused destinations, the 451 page).
import type { LinkGuard, LinkService } from '../links'
import type { AuditRows } from '../audit'
import type { EventWriter, Outbox } from '../kernel/outbox'
import type { Feature, Shared } from '../web/feature'
import { createReportRoutes, visitGate } from './routes'
import { createAbuseService } from './service'
import type { AbuseRows } from './storage/contract'

export function createAbuseFeature<Tx>(
  shared: Shared,
  deps: {
    storages: { abuse: AbuseRows<Tx>; audit: AuditRows<Tx>; queue: EventWriter<Tx> }
    outbox: Outbox
    links: LinkService
  },
) {
  const { config, clock, changes, clientIp } = shared
  const { storages, outbox, links } = deps
  const abuse = createAbuseService({
    rows: storages.abuse,
    audit: storages.audit,
    queue: storages.queue,
    config,
    links,
    clock,
    outbox,
    changes,
  })
  const gate = visitGate(abuse)
  const guard: LinkGuard = { ...gate, checkDestination: (url) => abuse.checkDestination(url) }
  const feature: Feature = {
    routes: createReportRoutes({ config, abuse, links, clientIp }),
    metrics(m) {
      m.sampled(
        'linkbox_link_reports_total',
        'Reports of links sent by visitors since start.',
        () => abuse.counts.reports,
        'counter',
      )
      m.sampled('linkbox_link_reports_open', 'Reports no admin has closed yet.', () => abuse.openReportsKnown())
      m.sampled(
        'linkbox_destinations_refused_total',
        'Link creations and changes refused: a banned host.',
        () => abuse.counts.refusedBanned,
        'counter',
      )
      m.sampled(
        'linkbox_destinations_listed_total',
        'Link creations and changes refused: a host on a blocklist.',
        () => abuse.counts.refusedListed,
        'counter',
      )
      m.sampled('linkbox_blocklist_hosts', 'Hosts in the loaded blocklist files.', () => abuse.blocklist().set.size)
    },
    // The service's reads of disabled accounts and bans stop before the database closes.
    close: () => abuse.close(),
  }
  return { feature, abuse, guard }
}
