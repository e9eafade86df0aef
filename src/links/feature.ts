// Links as a feature of the composition root: the link service, the visit routes (the redirect answered before
// the router, visit.ts `hot`), the link API and their metrics. Abuse handling is handed in (LinkGuard).
import type { ClickCounts, ClickRecorder, DayKeys } from '../clicks'
import type { EventWriter, Outbox } from '../kernel/outbox'
import type { DailyCountRows } from '../web/daily-limit'
import type { Feature, Shared } from '../web/feature'
import { createAnonymousCreations } from './anonymous'
import { linkApi } from './api'
import type { MetadataOptions } from './metadata'
import type { Verifier } from './password-gate'
import { createLinkService, type LinkService } from './service'
import type { LinkRow, LinkStorage } from './storage/contract'
import { createVisitRoutes, type VisitGate } from './visit'

export interface LinksOptions {
  /** Link password checks (tests wrap the real one to count concurrent checks). */
  verifyPassword?: Verifier
  /** Hashes link passwords (tests pass a slow one to drive races through the await). */
  hashPassword?: (password: string) => Promise<string>
  /** The title fetch's timings (tests shorten them; metadata.ts). */
  metadata?: Pick<MetadataOptions, 'pollMs' | 'leaseMs' | 'retryMs' | 'giveUpMs'>
}

/** What links asks of abuse handling (app.ts hands abuse's in): refused destinations, and links that answer 451. */
export interface LinkGuard extends VisitGate {
  /** Refuses a destination that is banned or on a blocklist, with invalid_url. */
  checkDestination(url: string): void
}

/** The storages links is built on, of one engine (app/storages.ts). */
export interface LinkStorages<Tx> {
  links: LinkStorage<Tx>
  counts: ClickCounts
  queue: EventWriter<Tx>
  dailyCounts: DailyCountRows
}

export function createLinksFeature<Tx>(
  shared: Shared,
  deps: { storages: LinkStorages<Tx>; outbox: Outbox; recorder: ClickRecorder; dayKeys: DayKeys; guard?: LinkGuard },
  opts: LinksOptions = {},
) {
  const { config, events, clock, metrics, clientIp, geo, changes } = shared
  const { storages, outbox, guard } = deps
  const metaCount = metrics.counter(
    'linkbox_link_title_fetches_total',
    "Fetches of new links' destination titles (links.fetch_metadata), by outcome.",
    'outcome',
  )
  const links: LinkService = createLinkService({
    links: storages.links,
    counts: storages.counts,
    queue: storages.queue,
    config,
    recorder: deps.recorder,
    events,
    clock,
    hashPassword: opts.hashPassword,
    outbox,
    changes,
    checkDestination: guard && ((url) => guard.checkDestination(url)),
    stopped: guard && ((row: LinkRow) => guard.stops(row)),
    gateGeneration: guard && (() => guard.generation?.() ?? 0),
    // Countries for rules with a country condition: the app's one Geo (statistics ask it too).
    country: (address) => geo.country(address),
    splitKey: (day) => deps.dayKeys.current(day)?.split ?? null,
    metadata: {
      ...opts.metadata,
      guard: shared.guard,
      onOutcome: (outcome) => metaCount.inc(outcome),
      fault: (what, err) => shared.faults.fault(what, err),
    },
  })
  // Creations without a key (links.anonymous, rate.anon_per_day): the API's and the home form's, one count.
  const anonymous = createAnonymousCreations(config, clock, { rows: storages.dailyCounts, dayKeys: deps.dayKeys })
  const visitCount = metrics.counter(
    'linkbox_visits_total',
    'Visits of short links and their pages, by outcome.',
    'outcome',
  )
  const visits = createVisitRoutes({
    config,
    links,
    clientIp,
    clock,
    count: (outcome) => visitCount.inc(outcome),
    verifyPassword: opts.verifyPassword,
    gate: guard,
  })
  const feature: Feature = {
    hot: [visits.hot],
    routes: visits.routes,
    api: linkApi(links, anonymous, () => config.links.import_max_rows),
    metrics(m) {
      // Read from the storage's counters before each scrape (metrics.refresh).
      let stored = 0
      m.refreshing(async () => {
        stored = await links.total()
      })
      m.sampled('linkbox_links', 'Short links stored.', () => stored)
      m.sampled(
        'linkbox_link_cache_rows',
        'Rows of visited links held in memory (the redirect reads no others).',
        () => links.cachedRows,
      )
      m.sampled(
        'linkbox_link_creation_commits_total',
        'Transactions that committed new links (one per group of creations).',
        () => links.creationCommits.commits,
        'counter',
      )
      m.sampled(
        'linkbox_links_created_total',
        'Links created since start.',
        () => links.creationCommits.links,
        'counter',
      )
    },
    // The title fetch runs while the service listens, on every node.
    listen: () => links.metadata.start(),
    // Creations still waiting for their group's commit; the links' subscription to changes; the title fetches.
    close: async () => {
      links.close()
      await Promise.all([links.flushCreations(), links.metadata.stop()])
    },
  }
  return { feature, links, anonymous }
}
