// The service's own pages as a feature of the composition root: the home page and its form, the API
// documents, /healthz and /readyz, /metrics, the shared assets, the favicon and robots.txt.
import type { Shell } from '../dashboard'
import type { Feature, Shared } from '../web/feature'
import type { DatabaseCheck, DatabaseStatus } from '../db/health'
import type { ApiMethod } from '../web/api'
import type { WebhookEventDoc } from '../web/openapi'
import { createMetricsAccess } from '../web/metrics-access'
import { notFoundPage } from '../web/error-pages'
import type { AnonymousCreations, LinkService } from '../links'
import { VERSION } from '../kernel/version'
import { Elysia } from 'elysia'
import { createDocsRoutes } from './docs'
import { createHomeRoutes } from './home'
import { APP_JS, FAVICON_SVG, STYLE_CSS } from '../web/render'

const IMMUTABLE = 'public, max-age=31536000, immutable'

const health = (code: number, { database, reason }: DatabaseStatus) =>
  new Response(
    JSON.stringify({
      status: code === 200 ? 'ok' : 'degraded',
      version: VERSION,
      database,
      ...(reason === null ? {} : { reason }),
    }),
    {
      status: code,
      headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
    },
  )

export interface PagesDeps {
  links: LinkService
  methods: ApiMethod[]
  database: DatabaseCheck
  shell: Shell
  anonymous: AnonymousCreations
  /** The webhook events the API documents describe (each feature's, joined by app.ts). */
  eventDocs: WebhookEventDoc[]
}

export function createPagesFeature(shared: Shared, deps: PagesDeps) {
  const { config, metrics, limiter, clientIp } = shared
  const metricsAllowed = createMetricsAccess({ config, clientIp })
  const routes = new Elysia({ name: 'pages' })
    // Liveness and readiness (SPEC §10, issue 36). /healthz: 200 while this process serves — cached redirects go
    // on while the database is down — naming the database's state, so a balancer keeps routing visits here.
    // /readyz: 503 while writes cannot be taken, for a balancer or monitor that cares about writes.
    .get('/healthz', () => health(200, deps.database.known()))
    .get('/readyz', async () => {
      const status = await deps.database.check()
      return health(status.database === 'ok' ? 200 : 503, status)
    })
    // Loopback, private networks and the bearer token only (web/metrics-access.ts); others: a plain 404.
    .get('/metrics', async ({ request }) =>
      metricsAllowed(request)
        ? new Response((await metrics.refresh(), metrics.render()), {
            headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' },
          })
        : notFoundPage(),
    )
    .get(
      '/assets/style.css',
      () =>
        new Response(STYLE_CSS, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': IMMUTABLE } }),
    )
    .get(
      '/assets/app.js',
      () =>
        new Response(APP_JS, {
          headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': IMMUTABLE },
        }),
    )
    .get(
      '/favicon.ico',
      () =>
        new Response(FAVICON_SVG, {
          headers: { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=604800' },
        }),
    )
    .get(
      '/robots.txt',
      () => new Response('User-agent: *\nDisallow: /\n', { headers: { 'content-type': 'text/plain' } }),
    )
    .use(
      createHomeRoutes({ config, links: deps.links, limiter, clientIp, shell: deps.shell, anonymous: deps.anonymous }),
    )
    .use(
      createDocsRoutes({
        methods: deps.methods,
        baseUrl: config.server.base_url,
        version: VERSION,
        marketplace: config.marketplace.proxy_secret
          ? { secretHeader: config.marketplace.secret_header, userHeader: config.marketplace.user_header }
          : null,
        webhooks: deps.eventDocs,
        rate: config.rate,
        mediaLinkTtl: config.media.link_ttl,
        session: (request) => deps.shell.session(request),
      }),
    )
  const feature: Feature = { routes }
  return { feature }
}
