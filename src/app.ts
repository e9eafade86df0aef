// The composition root: config → database → services → one Elysia app. Tests build exactly this with a
// temporary data directory; `linkbox serve` builds it and listens.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { createAccountService } from './accounts/service'
import { createClickRecorder, type ClickRecorderOptions } from './clicks/recorder'
import type { Config } from './config'
import { lastWriteFailure, openDatabase, probeWrite } from './db'
import { log as rootLog, requestIdOf, type Logger } from './log'
import { createEvents } from './events'
import { createMetrics } from './metrics'
import { AppError, internalError, notFound } from './errors'
import { createApi, errorResponse, type ApiMethod } from './http/api'
import { createClientIp } from './http/client-ip'
import { faultLog } from './http/fault-log'
import { createMetricsAccess } from './http/metrics-access'
import { pathOf } from './http/path'
import { createRateLimiter } from './http/rate-limit'
import { linkApi } from './links/api'
import { createLinkService } from './links/service'
import { createVisitRoutes, errorPage, messagePage, notFoundPage } from './links/visit'
import { createMailRoutes, mailApi } from './mail/api'
import { createMailService } from './mail/service'
import type { SmtpReceiver } from './mail/smtp'
import { createSpool } from './mail/spool'
import { createMediaRoutes, mediaApi } from './media/api'
import { killRunning } from './media/runner'
import { createMediaService } from './media/service'
import { createYtdlp } from './media/ytdlp'
import { startGuardProxy, type GuardProxy } from './net/proxy'
import { qrApi } from './qr/api'
import { createLinkSigner, loadSigningSecret } from './signing'
import { createQrRoutes } from './qr/public'
import { createQrRenderer, type QrRenderer } from './qr/renderer'
import { createQrService } from './qr/service'
import { createDashboard } from './dashboard'
import { createDocsRoutes } from './pages/docs'
import { createHomeRoutes } from './pages/home'
import { APP_JS, FAVICON_SVG, STYLE_CSS } from './pages/render'
import type { Verifier } from './links/password-gate'
import { VERSION } from './version'
import { webhookApi } from './webhooks/api'
import { createDeliverer, DELIVERY_OUTCOMES } from './webhooks/deliverer'
import { createOutbox } from './webhooks/outbox'
import { createWebhookService } from './webhooks/service'

export interface AppOptions {
  clock?: () => number
  /** Click buffer settings (tests shorten the interval). */
  clicks?: ClickRecorderOptions
  /** The QR renderer (tests pass one with a tiny queue). */
  qrRenderer?: QrRenderer
  /** Link password checks (tests wrap the real one to count concurrent checks). */
  verifyPassword?: Verifier
  /** Hashes link passwords (tests pass a slow one to drive races through the await). */
  hashPassword?: (password: string) => Promise<string>
  /** Seconds a connection may stay silent (tests shorten it); see listen(). */
  idleTimeoutSeconds?: number
  /** The SMTP port instead of mail.smtp_port (tests pass 0 for a free one, which the config would read as "off"). */
  smtpPort?: number
  /** Name resolution for the SSRF guard (tests map made-up names to local addresses). */
  resolve?: (host: string) => Promise<string[]>
  /** Which addresses the guard lets through instead of "public ones" (tests call one loopback address public). */
  isAllowed?: (address: string) => boolean
  /** Waits between webhook delivery attempts in ms (tests use milliseconds); default SPEC §9's schedule. */
  webhookSchedule?: readonly number[]
  /** The log (default: the process's, which `serve` configures from [log]). */
  logger?: Logger
}

/** What reload() did: the keys it applied, and the changed ones that only a restart applies. */
export interface ReloadOutcome {
  applied: string[]
  restart: string[]
}

// Keys whose new value takes effect at once: read from `config` on every use (rate.*), held by reference
// (links.blocked_domains, in the URL rules of the link service), or the log's own settings.
const RELOADABLE = new Set(['rate.anon_per_minute', 'rate.key_per_minute', 'links.blocked_domains', 'log.level', 'log.requests', 'log.format'])

/** "section.key" → its value as JSON, for every key of a config. */
function flatten(config: Config): Map<string, string> {
  const out = new Map<string, string>()
  for (const [key, value] of Object.entries(config)) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      for (const [sub, v] of Object.entries(value)) out.set(`${key}.${sub}`, JSON.stringify(v))
    else out.set(key, JSON.stringify(value))
  }
  return out
}

// A connection that sends nothing for this long is closed, whatever it is doing: a request body that
// stalls (the body reader has no timer of its own for bodies with a Content-Length, see http/params.ts),
// a client that never sends its headers. Bun's own default, made explicit: no handler here waits longer.
const IDLE_TIMEOUT_SECONDS = 10

export function createLinkbox(config: Config, opts: AppOptions = {}) {
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const logger = opts.logger ?? rootLog
  const db = openDatabase(join(config.data_dir, 'linkbox.db'), { onUpgrade: (note) => logger.info(note) })
  const clock = opts.clock ?? Date.now
  const events = createEvents()
  const accounts = createAccountService(db, clock)
  // Webhook events are written by the services in the transaction of each change (webhooks/outbox.ts);
  // link.clicked ones by the click writer, in the transaction of the flush that counts the clicks.
  const outbox = createOutbox(db, clock)
  const recorder = createClickRecorder(db, {
    ...opts.clicks,
    webhooks: { wanted: (accountId) => outbox.wanted('link.clicked', accountId), written: () => outbox.wake(), now: clock },
  })
  const webhooks = createWebhookService({ db, config, outbox, clock, resolve: opts.resolve, isAllowed: opts.isAllowed })
  const links = createLinkService({ db, config, recorder, events, clock, hashPassword: opts.hashPassword, outbox })
  const qrRenderer = opts.qrRenderer ?? createQrRenderer()
  const qr = createQrService(qrRenderer)
  const spool = createSpool(config.data_dir)
  const signer = createLinkSigner(loadSigningSecret(config.data_dir))
  const mail = createMailService({ db, config, spool, signer, events, clock, outbox })
  const ytdlp = createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir })
  // The proxy every request of yt-dlp goes through (the SSRF guard for a program we do not control);
  // started when the first extraction needs it.
  let guardProxy: Promise<GuardProxy> | null = null
  const metrics = createMetrics()
  const extractions = metrics.counter('linkbox_media_extractions_total', 'download.json answers by outcome (cached: from the 10-minute cache).', 'outcome')
  const media = createMediaService({
    db,
    config,
    signer,
    clock,
    ytdlp,
    proxy: async () => (await (guardProxy ??= startGuardProxy({ allowPrivate: config.media.allow_private_networks, resolve: opts.resolve, isAllowed: opts.isAllowed }))).url,
    canMerge: Bun.which('ffmpeg') !== null,
    resolve: opts.resolve,
    isAllowed: opts.isAllowed,
    onOutcome: (outcome) => extractions.inc(outcome),
  })
  // Webhook deliveries go out from listen() on; the outbox's writers call deliverer.wake() after a commit.
  const deliveries = metrics.counter('linkbox_webhook_deliveries_total', 'Webhook delivery attempts by outcome (retry: failed, another attempt planned; gone: 410, endpoint disabled; private: refused by the SSRF guard).', 'outcome')
  for (const outcome of DELIVERY_OUTCOMES) deliveries.inc(outcome, 0)
  const deliverer = createDeliverer({
    db,
    config,
    clock,
    resolve: opts.resolve,
    isAllowed: opts.isAllowed,
    schedule: opts.webhookSchedule,
    log: (line, err) => (err === undefined ? logger.info(`linkbox: ${line}`) : faultLog.fault(line, err)),
    onOutcome: (outcome) => {
      deliveries.inc(outcome)
      if (outcome === 'gone') outbox.reload()
    },
  })
  // A commit that wrote events wakes the deliverer; an endpoint it disabled (410) leaves the outbox's index.
  outbox.onEnqueued(() => deliverer.wake())
  // One query for both outbox gauges of a scrape.
  let outboxGauge = { at: -1, value: { pending: 0, oldest: null as number | null } }
  const outboxNow = () => {
    if (Date.now() - outboxGauge.at > 1000) outboxGauge = { at: Date.now(), value: deliverer.stats.outbox() }
    return outboxGauge.value
  }
  metrics.sampled('linkbox_webhook_outbox', 'Webhook deliveries waiting to be sent or retried (enabled endpoints).', () => outboxNow().pending)
  metrics.sampled('linkbox_webhook_oldest_pending_seconds', 'Age of the oldest event with a delivery still pending (0: none).', () => {
    const oldest = outboxNow().oldest
    return oldest === null ? 0 : Math.max(0, Math.round((clock() - oldest) / 1000))
  })
  const limiter = createRateLimiter(clock)
  const clientIpOf = createClientIp(config.server.trusted_proxies)

  // Set once the app listens; without a server (app.handle in tests) the peer is unknown.
  let server: ReturnType<typeof Bun.serve> | null = null
  let sweepTimer: ReturnType<typeof setInterval> | null = null
  const clientIp = (request: Request) =>
    clientIpOf(server?.requestIP(request)?.address ?? null, request.headers.get('x-forwarded-for'))
  const metricsAllowed = createMetricsAccess({ config, clientIp })

  const visits = metrics.counter('linkbox_visits_total', 'Visits of short links and their pages, by outcome.', 'outcome')
  const answers = metrics.counter('linkbox_api_requests_total', 'Answers of /api methods, by method and HTTP status.')
  const startedAt = Date.now()
  metrics.sampled('linkbox_links', 'Short links stored.', () => links.total())
  metrics.sampled('linkbox_link_creation_commits_total', 'Transactions that committed new links (one per group of creations).', () => links.creationCommits.commits, 'counter')
  metrics.sampled('linkbox_links_created_total', 'Links created since start.', () => links.creationCommits.links, 'counter')
  metrics.sampled('linkbox_clicks_written_total', 'Clicks (human and bot) written to the database since start.', () => recorder.flushed, 'counter')
  metrics.sampled('linkbox_click_buffer', 'Clicks waiting in memory for the next write.', () => recorder.pending)
  metrics.sampled('linkbox_clicks_dropped_total', 'Clicks dropped because writes kept failing and the buffer was full.', () => recorder.dropped, 'counter')
  metrics.sampled('linkbox_qr_waiting', 'QR renderings waiting for the worker.', () => qrRenderer.waiting)
  let smtp: SmtpReceiver | null = null
  // One query for the three mail gauges of a scrape, not three.
  let mailTotals = { at: -1, value: { mailboxes: 0, messages: 0, bytes: 0 } }
  const totals = () => {
    if (Date.now() - mailTotals.at > 1000) mailTotals = { at: Date.now(), value: mail.totals() }
    return mailTotals.value
  }
  metrics.sampled('linkbox_mailboxes', 'Temporary mailboxes stored (live, or expired and not yet swept).', () => totals().mailboxes)
  metrics.sampled('linkbox_mail_messages', 'Messages stored in mailboxes.', () => totals().messages)
  metrics.sampled('linkbox_mail_bytes', 'Bytes of the stored messages as received (the raw .eml files; attachments are kept decoded beside them).', () => totals().bytes)
  metrics.sampled('linkbox_mail_received_total', 'Messages stored since start (once per mailbox they went to).', () => mail.received, 'counter')
  metrics.sampled('linkbox_mail_waiting', 'messages.json requests held until mail arrives (wait=N).', () => mail.waiting)
  metrics.sampled('linkbox_smtp_connections', 'Open SMTP connections.', () => smtp?.connections ?? 0)
  metrics.sampled('linkbox_media_queue', 'yt-dlp runs (extractions and fetches) waiting for a slot.', () => media.queued)
  metrics.sampled('linkbox_media_running', 'yt-dlp runs under way.', () => media.running)
  metrics.sampled('linkbox_media_bytes_served_total', 'Bytes of the files sent through signed /dl links (a download is counted by its length when it starts).', () => media.stats.bytesServed, 'counter')
  metrics.sampled('process_resident_memory_bytes', 'Resident memory of the process.', () => process.memoryUsage.rss())
  metrics.sampled('process_uptime_seconds', 'Seconds since the service started.', () => Math.round((Date.now() - startedAt) / 1000))

  // Why the database cannot be written, or null. Failing click writes (retried by the recorder) and a
  // change that could not be stored (until a write succeeds again) are known at once; otherwise a write
  // is tried and rolled back — at most once per PROBE_MS, since /healthz is public and polled.
  const PROBE_MS = 5_000
  let probed = { at: -Infinity, problem: null as string | null }
  const databaseProblem = () => {
    if (recorder.failing) return recorder.lastError
    const failed = lastWriteFailure(db)
    if (failed !== null) return failed
    if (Date.now() - probed.at >= PROBE_MS) probed = { at: Date.now(), problem: probeWrite(db) }
    return probed.problem
  }

  const methods: ApiMethod[] = [
    ...linkApi(links),
    ...qrApi(qr),
    ...mediaApi(media),
    // A held messages.json outlives the idle timeout of its connection: it is told to wait longer.
    ...mailApi(mail, { holdOpen: (request, seconds) => server?.timeout(request, seconds) }),
    ...webhookApi(webhooks),
  ]
  const api = createApi(methods, {
    config,
    accounts,
    limiter,
    clientIp,
    onAnswer: (m, status) => answers.incLabels({ method: m.path.replace('/api/', ''), status: String(status) }),
  })

  const dashboard = createDashboard({ config, db, clock, accounts, links, mail, webhooks, qr, metrics, limiter, clientIp, databaseProblem })

  const app = new Elysia({ name: 'linkbox' })
    // The last line of defence: whatever the request (a malformed Host header makes its URL unparseable),
    // this answers with the envelope or a page, never with internals, and it must not throw itself.
    .onError(({ code, error, request }) => {
      try {
        const isApi = pathOf(request.url).startsWith('/api')
        if (code === 'NOT_FOUND') return isApi ? errorResponse(notFound()) : notFoundPage()
        // A page's route may throw an AppError too (a full QR queue: 503 with Retry-After): its status,
        // message and headers make the page. Anything else is a fault, logged (within bounds), not shown.
        if (error instanceof AppError) return isApi ? errorResponse(error) : errorPage(error)
        faultLog.fault(`internal error on ${request.method} ${pathOf(request.url).slice(0, 200)}`, error)
        return isApi
          ? errorResponse(internalError())
          : messagePage(500, 'Something went wrong', 'The request could not be completed. Try again in a moment.')
      } catch {
        return new Response('Internal error', { status: 500, headers: { 'content-type': 'text/plain; charset=utf-8' } })
      }
    })
    // A Host shorter than four characters ("nas") makes Elysia's router read the path from the wrong
    // slash (see api.ts dispatch); /api requests with such a Host are answered by their real path.
    .onRequest(({ request }) => {
      const url = request.url
      const slash = url.indexOf('/', url.indexOf('://') + 3)
      if (slash > 0 && slash < 11 && url.startsWith('/api', slash)) return api.dispatch(request)
    })
    // 503 when the database cannot be written, so that a monitor notices; visits and reads still work.
    .get('/healthz', () => {
      const problem = databaseProblem()
      if (problem === null) return { status: 'ok', version: VERSION }
      return new Response(JSON.stringify({ status: 'degraded', version: VERSION, database: `not writable: ${problem}` }), {
        status: 503,
        headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
      })
    })
    // Loopback, private networks and the bearer token only (http/metrics-access.ts); others: a plain 404.
    .get('/metrics', ({ request }) => metricsAllowed(request) ? new Response(metrics.render(), {
      headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' },
    }) : notFoundPage())
    .get('/assets/style.css', () => new Response(STYLE_CSS, {
      headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable' },
    }))
    .get('/assets/app.js', () => new Response(APP_JS, {
      headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable' },
    }))
    .get('/favicon.ico', () => new Response(FAVICON_SVG, { headers: { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=604800' } }))
    .get('/robots.txt', () => new Response('User-agent: *\nDisallow: /\n', { headers: { 'content-type': 'text/plain' } }))
    .use(createHomeRoutes({ config, links, limiter, clientIp, shell: dashboard.shell }))
    .use(createDocsRoutes({
      methods,
      baseUrl: config.server.base_url,
      version: VERSION,
      marketplace: config.marketplace.proxy_secret
        ? { secretHeader: config.marketplace.secret_header, userHeader: config.marketplace.user_header }
        : null,
    }))
    .use(api.plugin)
    .use(dashboard.plugin)
    .use(createQrRoutes({ config, links, qr, events }))
    .use(createMailRoutes(mail))
    .use(createMediaRoutes(media))
    .use(createVisitRoutes({ config, links, clientIp, clock, count: (outcome) => visits.inc(outcome), verifyPassword: opts.verifyPassword }))

  return {
    config,
    db,
    app,
    accounts,
    links,
    recorder,
    events,
    methods,
    mail,
    media,
    outbox,
    webhooks,
    ytdlp,
    spool,
    signer,
    /** Dashboard sign-in sessions (tests sign in through the pages; the sweep removes expired ones). */
    sessions: dashboard.sessions,
    /** Sends the webhook outbox; started by listen(), stopped by close(). */
    deliverer,
    /** The SMTP receiver, once startSmtp() has run (null when mail.smtp_port is 0). */
    get smtp() {
      return smtp
    },
    /**
     * Starts the SMTP receiver on mail.smtp_host:smtp_port (0: none) and the mail sweep (expired mailboxes every
     * minute; files left by a crash at start and every hour).
     */
    async startSmtp(): Promise<SmtpReceiver | null> {
      if (!sweepTimer) {
        let runs = 0
        const sweep = () => {
          mail.sweep({ orphans: runs++ % 60 === 0 }).catch((err) => faultLog.fault('mail sweep', err))
          void media.sweep()
          try {
            dashboard.sessions.sweep()
          } catch (err) {
            faultLog.fault('session sweep', err)
          }
          try {
            webhooks.sweep()
          } catch (err) {
            faultLog.fault('webhook sweep', err)
          }
        }
        sweep()
        sweepTimer = setInterval(sweep, 60_000)
        sweepTimer.unref?.()
      }
      if (opts.smtpPort === undefined && config.mail.smtp_port === 0) return null
      const { startSmtp } = await import('./mail/smtp')
      smtp = await startSmtp(opts.smtpPort === undefined ? config : { ...config, mail: { ...config.mail, smtp_port: opts.smtpPort } }, mail, spool)
      return smtp
    },
    /** Starts listening (port 0 picks a free port), the periodic click flush and the webhook deliverer. */
    listen() {
      recorder.start()
      deliverer.start()
      // Every answer passes through instrument(), whatever produced it (a route, onRequest's /api dispatch,
      // onError): it gets X-Request-Id, and one request line is logged. Elysia's listen() hands Bun its
      // routes (Bun's router answers HEAD itself there; Elysia's own fallback would run the GET route for
      // a HEAD), so rather than replace it, the handlers it gives Bun.serve — and later server.reload() —
      // are wrapped, for the duration of that one synchronous call.
      type Handler = (request: Request, srv: unknown) => Response | Promise<Response>
      const instrument = async (request: Request, answer: () => Response | Promise<Response>) => {
        const started = performance.now()
        const id = requestIdOf(request.headers.get('x-request-id'))
        let res: Response
        try {
          res = await answer()
        } catch {
          res = new Response('Internal error', { status: 500, headers: { 'content-type': 'text/plain; charset=utf-8' } })
        }
        try {
          res.headers.set('x-request-id', id)
        } catch {
          // Immutable headers (a Response.redirect()): the same answer, with headers of its own.
          res = new Response(res.body, res)
          res.headers.set('x-request-id', id)
        }
        if (logger.requests) {
          logger.request({
            id,
            method: request.method,
            path: pathOf(request.url), // without the query string
            status: res.status,
            ms: performance.now() - started,
            ip: clientIp(request) ?? '-',
            ua: request.headers.get('user-agent') ?? '',
          })
        }
        return res
      }
      const wrap = (h: unknown) => (typeof h === 'function' ? (request: Request, srv: unknown) => instrument(request, () => (h as Handler)(request, srv)) : h)
      const wrapOptions = (o: Record<string, unknown>) => {
        const routes = o.routes as Record<string, unknown> | undefined
        return {
          ...o,
          fetch: wrap(o.fetch),
          routes: routes && Object.fromEntries(Object.entries(routes).map(([path, r]) => [
            path,
            r && typeof r === 'object' && !(r instanceof Response) ? Object.fromEntries(Object.entries(r).map(([m, h]) => [m, wrap(h)])) : wrap(r),
          ])),
        }
      }
      const realServe = Bun.serve
      const patched = ((o: Record<string, unknown>) => {
        const srv = realServe(wrapOptions(o) as unknown as Parameters<typeof Bun.serve>[0])
        const reload = srv.reload.bind(srv)
        srv.reload = ((next: Record<string, unknown>) => reload(wrapOptions(next) as never)) as unknown as typeof srv.reload
        return srv
      }) as unknown as typeof Bun.serve
      Bun.serve = patched
      try {
        app.listen({
          hostname: config.server.host,
          port: config.server.port,
          // Bodies are limited per route (64 KiB on /api, 8 KiB for the password form), where the answer can
          // carry the envelope; Bun's own limit would answer a bare 413, so it sits far above those.
          maxRequestBodySize: Number.MAX_SAFE_INTEGER,
          // Never Bun's development error page (a stack trace and source), whatever NODE_ENV says.
          development: false,
          // A second linkbox on the same port must fail to start, not silently share the traffic.
          reusePort: false,
          idleTimeout: opts.idleTimeoutSeconds ?? IDLE_TIMEOUT_SECONDS,
        })
      } finally {
        Bun.serve = realServe
      }
      server = app.server
      return app.server!
    },
    /**
     * Applies a newly loaded config (SIGHUP): the keys in RELOADABLE take effect at once; the other changed
     * keys are listed as needing a restart and left as they were.
     */
    reload(next: Config): ReloadOutcome {
      const before = flatten(config)
      const after = flatten(next)
      const applied: string[] = []
      const restart: string[] = []
      for (const [key, value] of after) if (before.get(key) !== value) (RELOADABLE.has(key) ? applied : restart).push(key)
      if (applied.length > 0) {
        config.rate.anon_per_minute = next.rate.anon_per_minute
        config.rate.key_per_minute = next.rate.key_per_minute
        // In place: the link service's URL rules hold this very array.
        config.links.blocked_domains.splice(0, config.links.blocked_domains.length, ...next.links.blocked_domains)
        config.log = { ...next.log }
        logger.configure(next.log)
      }
      return { applied, restart }
    },
    /**
     * Stops accepting, lets in-flight requests finish, flushes clicks and closes the database. A client
     * that never finishes its request (a stalled upload) would hold this forever, so after `graceMs` the
     * remaining connections are closed by force. When the last click flush fails the database is closed
     * all the same and ClicksNotWritten is thrown, saying how many clicks are lost and why.
     */
    async close({ graceMs = 5_000 }: { graceMs?: number } = {}) {
      if (sweepTimer) clearInterval(sweepTimer)
      // Held messages.json requests are answered first, or the HTTP server would wait out their `wait`.
      mail.release()
      const smtpClosed = smtp?.close() ?? Promise.resolve()
      if (server) {
        const stopping: ReturnType<typeof Bun.serve> = server
        let timer: ReturnType<typeof setTimeout> | undefined
        const deadline = new Promise<void>((done) => {
          timer = setTimeout(() => {
            logger.warn(`shutdown: requests still open after ${graceMs} ms; closing them`)
            void stopping.stop(true)
            done()
          }, graceMs)
        })
        await Promise.race([stopping.stop(false), deadline])
        clearTimeout(timer)
      }
      server = null
      logger.flush()
      // yt-dlp runs live in process groups of their own, which would outlive us.
      killRunning()
      if (guardProxy) await (await guardProxy.catch(() => null))?.stop()
      // Requests in flight are cut; their rows stay pending and go out after the restart.
      await deliverer.stop()
      await smtpClosed
      smtp = null
      await mail.settle()
      // A running worker thread would keep the process (or the test runner) from exiting.
      qrRenderer.close()
      links.flushCreations()
      try {
        await recorder.stop()
      } finally {
        db.close()
      }
    },
  }
}
export type Linkbox = ReturnType<typeof createLinkbox>
