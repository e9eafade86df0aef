// Links as a feature of the composition root: the link service (create, change, resolve, statistics), the
// visit routes with the redirect answered before the router (visit.ts `hot`), the link API and their
// metrics. Clicks go to the clicks feature's recorder; link events to the outbox.
import { createReportRoutes, visitGate } from '../abuse/routes'
import { createAbuseService } from '../abuse/service'
import type { ClickRecorder, DayKeys } from '../clicks'
import type { Feature, Shared } from '../web/feature'
import { createAnonymousCreations } from './anonymous'
import { linkApi } from './api'
import type { Verifier } from './password-gate'
import { createLinkService, type LinkService } from './service'
import { createVisitRoutes } from './visit'

export interface LinksOptions {
  /** Link password checks (tests wrap the real one to count concurrent checks). */
  verifyPassword?: Verifier
  /** Hashes link passwords (tests pass a slow one to drive races through the await). */
  hashPassword?: (password: string) => Promise<string>
}

export function createLinksFeature(shared: Shared, deps: { recorder: ClickRecorder; dayKeys: DayKeys }, opts: LinksOptions = {}) {
  const { config, events, clock, outbox, metrics, clientIp, geo, changes, storages } = shared
  const links: LinkService = createLinkService({
    links: storages.links, counts: storages.counts, queue: storages.queue,
    config, recorder: deps.recorder, events, clock, hashPassword: opts.hashPassword, outbox, changes,
    checkDestination: (url) => abuse.checkDestination(url),
    stopped: (row) => abuse.verdict(row) !== null,
    // Countries for rules with a country condition: the app's one Geo (statistics ask it too).
    country: (address) => geo.country(address),
    splitKey: (day) => deps.dayKeys.current(day)?.split ?? null,
  })
  // Reports, bans, disabled links and blocklists (SPEC §3, §12): a 451 verdict per link, kept beside its cached row.
  // Its rows through the async storages (Shared.storages: SQLite's today; PostgreSQL's are handed in the same way).
  const abuse = createAbuseService({ rows: storages.abuse, audit: storages.audit, queue: storages.queue, config, links, clock, outbox, changes })
  // Creations without a key (links.anonymous, rate.anon_per_day): the API's and the home form's, one count.
  const anonymous = createAnonymousCreations(config, clock, { rows: storages.dailyCounts, dayKeys: deps.dayKeys })
  const visitCount = metrics.counter('linkbox_visits_total', 'Visits of short links and their pages, by outcome.', 'outcome')
  const visits = createVisitRoutes({
    config, links, clientIp, clock, count: (outcome) => visitCount.inc(outcome), verifyPassword: opts.verifyPassword, gate: visitGate(abuse),
  })
  const feature: Feature = {
    hot: [visits.hot],
    // The report form before the visit routes' /:code.
    routes: createReportRoutes({ config, abuse, links, clientIp }).use(visits.routes),
    api: linkApi(links, anonymous, () => config.links.import_max_rows),
    metrics(m) {
      m.sampled('linkbox_link_reports_total', 'Reports of links sent by visitors since start.', () => abuse.counts.reports, 'counter')
      m.sampled('linkbox_link_reports_open', 'Reports no admin has closed yet.', () => abuse.openReportsKnown())
      m.sampled('linkbox_destinations_refused_total', 'Link creations and changes refused: a banned host.', () => abuse.counts.refusedBanned, 'counter')
      m.sampled('linkbox_destinations_listed_total', 'Link creations and changes refused: a host on a blocklist.', () => abuse.counts.refusedListed, 'counter')
      m.sampled('linkbox_blocklist_hosts', 'Hosts in the loaded blocklist files.', () => abuse.blocklist().set.size)
      // Read from the storage's counters before each scrape (metrics.refresh).
      let stored = 0
      m.refreshing(async () => {
        stored = await links.total()
      })
      m.sampled('linkbox_links', 'Short links stored.', () => stored)
      m.sampled('linkbox_link_cache_rows', 'Rows of visited links held in memory (the redirect reads no others).', () => links.cachedRows)
      m.sampled('linkbox_link_creation_commits_total', 'Transactions that committed new links (one per group of creations).', () => links.creationCommits.commits, 'counter')
      m.sampled('linkbox_links_created_total', 'Links created since start.', () => links.creationCommits.links, 'counter')
    },
    // Creations still waiting for their group's commit; the abuse service's reads of disabled accounts; the
    // links' subscription to changes.
    close: () => {
      abuse.close()
      links.close()
      return links.flushCreations()
    },
  }
  return { feature, links, abuse, anonymous }
}
