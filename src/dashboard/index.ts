// The dashboard at /dashboard: sign-in (auth.ts, and oidc.ts with a provider), the page frame and form checks (shell.ts), and one file a
// section — links.ts, keys.ts (the API section), mail.ts, webhooks.ts, admin.ts — each an Elysia plugin
// over the same services the API uses, with the signed-in account as the caller.
import { Elysia } from 'elysia'
import type { AccountService } from '../accounts'
import type { Config } from '../kernel/config'
import type { Storages } from '../app/storages'
import type { RateLimiter } from '../web/rate-limit'
import type { LinkService } from '../links/service'
import type { MailService } from '../mail/service'
import type { Metrics } from '../kernel/metrics'
import type { QrService } from '../qr/service'
import type { WebhookService } from '../webhooks/service'
import { DASHBOARD_CSS, createShell, type Shell } from './shell'
import { createAuthRoutes } from './auth'
import { createSessions, type Sessions } from './sessions'
import { createLinksSection } from './links'
import { createKeysSection } from './keys'
import { createMailSection } from './mail'
import { createWebhooksSection } from './webhooks'
import { createAdminSection } from './admin'
import { createAbuseSection } from './abuse'
import type { AbuseService } from '../abuse/service'
import type { Logger } from '../kernel/log'
import { createOidcSignIn, type OidcSignIn } from './oidc'

export interface DashboardDeps {
  config: Config
  /** The accounts, sessions, form tokens and single sign-on's identities as sign-in and the forms need them, and the audit log's rows (db/storages.ts). */
  storages: Pick<Storages<unknown>, 'accounts' | 'sessions' | 'formTokens' | 'flashes' | 'identities' | 'audit'>
  clock: () => number
  accounts: AccountService
  links: LinkService
  mail: MailService
  webhooks: WebhookService
  qr: QrService
  abuse: AbuseService
  metrics: Metrics
  limiter: RateLimiter
  clientIp: (request: Request) => string
  /** The listening server, once there is one (an event stream is held open past its idle timeout). */
  server?: () => ReturnType<typeof Bun.serve> | null
  /** Why the database cannot be written, or null: the check /healthz answers with (the admin's health page). */
  databaseProblem: () => string | null
  log: Logger
  sessions: Sessions
  shell: Shell
  /** "Sign in with <provider>" when oidc.issuer is set (oidc.ts), else null. */
  oidc: OidcSignIn | null
}

export function createDashboard(deps: Omit<DashboardDeps, 'sessions' | 'shell' | 'oidc'>) {
  const sessions = createSessions({ storages: deps.storages, clock: deps.clock })
  const shell = createShell({ config: deps.config, sessions, formTokens: deps.storages.formTokens, flashes: deps.storages.flashes, clock: deps.clock })
  const all: DashboardDeps = { ...deps, sessions, shell, oidc: null }
  if (deps.config.oidc.issuer) all.oidc = createOidcSignIn(all)
  const plugin = new Elysia({ name: 'dashboard' })
    .get('/assets/dashboard.css', () => new Response(DASHBOARD_CSS, {
      headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable' },
    }))
    .use(createAuthRoutes(all))
    .use(all.oidc?.plugin ?? new Elysia({ name: 'dashboard-oidc-off' }))
    .use(createLinksSection(all))
    .use(createKeysSection(all))
    .use(createMailSection(all))
    .use(createWebhooksSection(all))
    .use(createAdminSection(all))
    .use(createAbuseSection(all))
  return { plugin, sessions, shell }
}
