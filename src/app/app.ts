// The composition root: the shared parts (config, database, log, event bus and outbox, guard, accounts),
// then the features in order — each hands back one Feature (feature.ts) — then the API over all their
// methods, the router over all their routes, and the request pipeline in front. Tests build exactly this
// with a temporary data directory; `linkbox serve` builds it and listens.
import { mkdirSync } from 'node:fs'
import { createAccountService } from '../accounts'
import type { Config } from '../kernel/config'
import { databaseUnavailable } from '../kernel/errors'
import { createEvents } from '../kernel/events'
import { createGeo } from '../kernel/geo'
import { log as rootLog } from '../kernel/log'
import { createMetrics, processMetrics } from '../kernel/metrics'
import { reloadConfig, type ReloadOutcome } from '../kernel/reload'
import { createLinkSigner } from '../kernel/signing'
import { createApi } from '../web/api'
import { createClientIp } from '../web/client-ip'
import { faultAnswer } from '../web/fault'
import { createFaultLog } from '../web/fault-log'
import { startJobs, type Shared } from '../web/feature'
import { createPipeline } from '../web/pipeline'
import { createRateLimiter } from '../web/rate-limit'
import { createRouter } from '../web/router'
import { serve, stopGracefully } from '../web/server'
import { createOutbox, createQueueOutbox } from '../webhooks'
import { sqliteBackend, withStorages, type Backend } from './backend-sqlite'
import { createFeatures } from './features'
import type { AppOptions } from './options'

export type { AppOptions, ReloadOutcome }

/**
 * The app on the database its config names: SQLite in data_dir (as createLinkbox), or the PostgreSQL of
 * `[database] url`, connected, migrated and listened to before the app is made (what `serve` uses).
 */
export async function openLinkbox(config: Config, opts: AppOptions = {}) {
  if (opts.backend || !config.database.url) return createLinkbox(config, opts)
  const log = opts.logger ?? rootLog
  const { postgresBackend } = await import('./backend-postgres')
  const faults = createFaultLog(log)
  const backend = await postgresBackend(config.database.url, log, (err) =>
    faults.fault('a subscriber of changes from other nodes failed', err),
  )
  try {
    return createLinkbox(config, { ...opts, backend })
  } catch (err) {
    // Nothing may keep the pool and the listening connection open behind a start that failed.
    await backend.close().catch(() => {})
    throw err
  }
}

export function createLinkbox(config: Config, opts: AppOptions = {}) {
  // The shared parts.
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const log = opts.logger ?? rootLog
  const faults = createFaultLog(log)
  const backend: Backend =
    opts.backend ??
    sqliteBackend(config.data_dir, log, (err) => faults.fault('a subscriber of link changes failed', err))
  const { db, storages } = backend
  const clock = opts.clock ?? Date.now
  const metrics = createMetrics()
  let server: ReturnType<typeof Bun.serve> | null = null
  // Webhook events are written by the services in the transaction of each change (webhooks/outbox.ts); the
  // outbox knows who subscribes and wakes the deliverers (on PostgreSQL every node's, through the feed).
  const outbox =
    backend.engine === 'sqlite'
      ? createOutbox(backend.db, clock, log)
      : createQueueOutbox({ queue: backend.storages.queue, changes: backend.changes, log })
  const accounts = withStorages(backend, (s) => createAccountService({ accounts: s.accounts, audit: s.audit }, clock))
  const shared: Shared = {
    config,
    db,
    health: backend.health,
    log,
    faults,
    clock,
    events: createEvents(log),
    changes: backend.changes,
    signer: createLinkSigner(backend.signingSecret),
    limiter: createRateLimiter(clock),
    metrics,
    geo: createGeo({ database: config.geo.database }),
    clientIp: (request) => pipeline.clientIp(request),
    guard: { resolve: opts.resolve, isAllowed: opts.isAllowed },
    server: () => server,
  }
  const parts = {
    outbox,
    accounts,
    clickWriter: backend.clickWriter,
    databaseCheck: backend.databaseCheck,
    signingSecret: backend.signingSecret,
    opts,
  }
  const { clicks, webhooks, abuse, links, mail, media, dashboard, audit, methods, features } = withStorages(
    backend,
    (s) => createFeatures(shared, s, parts),
  )

  // The wiring: metrics, the API, the router, the pipeline.
  for (const f of features) f.metrics?.(metrics)
  processMetrics(metrics, log, Date.now())
  // A query that failed because the database is gone (PostgreSQL) marks it down and answers 503, not 500.
  const unavailable = (err: unknown) => (backend.health.observe(err) ? databaseUnavailable() : null)
  const answers = metrics.counter('linkbox_api_requests_total', 'Answers of /api methods, by method and HTTP status.')
  const api = createApi(methods, {
    config,
    accounts,
    limiter: shared.limiter,
    clientIp: shared.clientIp,
    faults,
    unavailable,
    onAnswer: (m, status) => answers.incLabels({ method: m.path.replace('/api/', ''), status: String(status) }),
  })
  const answerFault = faultAnswer(faults, unavailable)
  const router = createRouter(
    api,
    features.flatMap((f) => f.routes ?? []),
    answerFault,
  )
  const pipeline = createPipeline({
    logger: log,
    hot: [...features.flatMap((f) => f.hot ?? []), api.hot],
    route: router.fetch,
    fault: answerFault,
    clientIpOf: createClientIp(config.server.trusted_proxies),
  })

  let stopJobs: (() => void) | null = null

  return {
    config,
    db,
    /** 'sqlite' or 'postgres': which database this node runs on (backend-sqlite.ts). */
    engine: backend.engine,
    storages,
    health: backend.health,
    /** Answers a request without a socket (tests): the pipeline of listen(), without peer addresses. */
    app: { handle: (request: Request) => Promise.resolve(pipeline.handle(request)) },
    accounts,
    events: shared.events,
    outbox,
    signer: shared.signer,
    recorder: clicks.recorder,
    links: links.links,
    /** Reports, bans, disabled links and the blocklists (reloadBlocklist() at start and on SIGHUP). */
    abuse: abuse.abuse,
    /** The change feed between nodes (db/changes.ts): serve announces a blocklist reload on it. */
    changes: shared.changes,
    methods,
    mail: mail.mail,
    spool: mail.spool,
    media: media.media,
    ytdlp: media.ytdlp,
    /** Media download's cookies per site (media/cookies.ts): `linkbox media cookies`, the dashboard. */
    cookies: media.cookies,
    webhooks: webhooks.webhooks,
    /** Sends the webhook outbox; started by listen(), stopped by close(). */
    deliverer: webhooks.deliverer,
    /** Dashboard sign-in sessions (tests sign in through the pages; the sweep removes expired ones). */
    sessions: dashboard.sessions,
    /** The audit log (audit/service.ts): its rows are written by the services, in each change's transaction. */
    audit,
    /** The SMTP receiver, once startSmtp() has run (null when mail.smtp_port is 0). */
    get smtp() {
      return mail.smtp
    },
    /** Starts the periodic jobs (sweeps) and the SMTP receiver on mail.smtp_host:smtp_port (0: none). */
    async startSmtp() {
      stopJobs ??= startJobs(
        features.flatMap((f) => f.jobs ?? []),
        faults,
      )
      return mail.startSmtp()
    },
    /** Starts listening (port 0 picks a free port) and what runs meanwhile (click writes, deliveries). */
    listen() {
      for (const f of features) f.listen?.()
      server = serve(config, pipeline, opts.idleTimeoutSeconds)
      return server
    },
    /** Applies a newly loaded config (SIGHUP); see reload.ts. */
    reload: (next: Config): ReloadOutcome => reloadConfig(config, next, log),
    /**
     * Stops accepting, lets in-flight requests finish (at most `graceMs`), then closes the features in reverse
     * order and the database. When the last click write fails the database is closed all the same and
     * ClicksNotWritten is thrown, saying how many clicks are lost and why.
     */
    async close({ graceMs = 5_000 }: { graceMs?: number } = {}) {
      stopJobs?.()
      for (const f of features) f.stopping?.()
      if (server) await stopGracefully(server, graceMs, log)
      server = null
      await log.drain()
      try {
        for (const f of [...features].reverse()) await f.close?.()
      } finally {
        outbox.close()
        await backend.close()
      }
    },
  }
}
export type Linkbox = ReturnType<typeof createLinkbox>
