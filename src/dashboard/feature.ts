// The dashboard as a feature of the composition root: sign-in, the page frame and one plugin a section, over
// the other features' services (handed in by app.ts); the sweeps of sessions, flashes and audit rows.
import { Elysia } from 'elysia'
import type { Feature, Shared } from '../web/feature'
import { createAbuseSection } from './abuse'
import { createAdminSection } from './admin'
import { createAdminCookiesPage } from './admin-cookies'
import { createAdminLinksPage } from './admin-links'
import { createHealthSection } from './admin-health'
import { createAuditPage } from './audit'
import { createAuthRoutes } from './auth'
import type { DashboardDeps } from './deps'
import { createImportPage } from './import'
import { createKeysSection } from './keys'
import { createLinksSection } from './links'
import { createMailSection } from './mail'
import { createDownloadSection } from './media'
import { createOidcSignIn } from './oidc'
import { createSessions } from './sessions'
import { createShell } from './shell'
import { DASHBOARD_CSS } from './styles'
import { createWebhooksSection } from './webhooks'

/** What app.ts hands the dashboard besides Shared: the storages, the account service, the audit reader, the services. */
export type DashboardFeatureDeps = Omit<
  DashboardDeps,
  'config' | 'clock' | 'metrics' | 'limiter' | 'clientIp' | 'log' | 'server' | 'sessions' | 'shell'
>

export function createDashboardFeature(shared: Shared, deps: DashboardFeatureDeps) {
  const { config, clock, metrics, limiter, clientIp, log } = shared
  const sessions = createSessions({ storages: deps.storages, clock })
  const { formTokens, flashes } = deps.storages
  const shell = createShell({ config, sessions, formTokens, flashes, clock })
  const server = shared.server
  const all: DashboardDeps = { ...deps, config, clock, metrics, limiter, clientIp, log, server, sessions, shell }
  const oidc = config.oidc.issuer ? createOidcSignIn(all) : null
  const routes = new Elysia({ name: 'dashboard' })
    .get(
      '/assets/dashboard.css',
      () =>
        new Response(DASHBOARD_CSS, {
          headers: {
            'content-type': 'text/css; charset=utf-8',
            'cache-control': 'public, max-age=31536000, immutable',
          },
        }),
    )
    .use(createAuthRoutes(all, oidc))
    .use(oidc?.plugin ?? new Elysia({ name: 'dashboard-oidc-off' }))
    .use(createLinksSection(all))
    .use(createImportPage(all))
    .use(createKeysSection(all))
    .use(createMailSection(all))
    .use(createDownloadSection(all))
    .use(createWebhooksSection(all))
    .use(createAdminSection(all))
    .use(createHealthSection(all))
    .use(createAbuseSection(all))
    .use(createAdminLinksPage(all))
    .use(createAdminCookiesPage(all))
    .use(createAuditPage({ shell, audit: deps.audit, keepDays: () => config.audit.keep_days }))
  const feature: Feature = {
    routes,
    jobs: [
      { name: 'session sweep', everyMs: 60_000, run: () => sessions.sweep() },
      { name: 'flash sweep', everyMs: 60_000, run: () => shell.flash.sweep() },
      { name: 'import sweep', everyMs: 60_000, run: () => deps.storages.pendingImports.sweep(clock()) },
      // keep_days is read at each run: SIGHUP may change it.
      { name: 'audit sweep', everyMs: 3_600_000, run: () => deps.audit.sweep(config.audit.keep_days) },
    ],
  }
  return { feature, sessions, shell }
}
