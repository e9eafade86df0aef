// The dashboard as a feature of the composition root: its pages over the other features' services, and the
// minute's sweep of expired sign-in sessions.
import type { AbuseService } from '../abuse/service'
import type { Feature, Shared } from '../web/feature'
import type { LinkService } from '../links/service'
import type { MailService } from '../mail/service'
import type { QrService } from '../qr/service'
import type { WebhookService } from '../webhooks/service'
import { createDashboard } from './index'

export function createDashboardFeature(
  shared: Shared,
  deps: { links: LinkService; mail: MailService; webhooks: WebhookService; qr: QrService; abuse: AbuseService; databaseProblem: () => string | null },
) {
  const { config, clock, accounts, metrics, limiter, clientIp, log } = shared
  const dashboard = createDashboard({ config, storages: shared.storages, clock, accounts, metrics, limiter, clientIp, log, server: shared.server, ...deps })
  const feature: Feature = {
    routes: dashboard.plugin,
    jobs: [
      { name: 'session sweep', everyMs: 60_000, run: () => dashboard.sessions.sweep() },
      { name: 'flash sweep', everyMs: 60_000, run: () => dashboard.shell.flash.sweep() },
    ],
  }
  return { feature, sessions: dashboard.sessions, shell: dashboard.shell }
}
