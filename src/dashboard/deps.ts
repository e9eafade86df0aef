// What every dashboard section is handed (index.ts composes them; sections never import index.ts).
import type { AbuseService } from '../abuse'
import type { AccountService } from '../accounts'
import type { AuditReader } from '../audit'
import type { Config } from '../kernel/config'
import type { Logger } from '../kernel/log'
import type { Metrics } from '../kernel/metrics'
import type { LinkService } from '../links'
import type { MailService } from '../mail'
import type { CookieJar, MediaService } from '../media'
import type { QrService } from '../qr'
import type { WebhookService } from '../webhooks'
import type { RateLimiter } from '../web/rate-limit'
import type { Sessions } from './sessions'
import type { Shell } from './shell'
import type { DashboardStores } from './storage/contract'

export interface DashboardDeps {
  config: Config
  /** The dashboard's storage and the rows sign-in writes (accounts, identities, audit), of one engine. */
  storages: DashboardStores<unknown>
  clock: () => number
  accounts: AccountService
  links: LinkService
  mail: MailService
  /** The media service: the Download page asks it as download.json does, with the session's caller. */
  media: MediaService
  webhooks: WebhookService
  qr: QrService
  abuse: AbuseService
  /** Media download's cookies per site (Admin › Media cookies). */
  cookies: CookieJar
  /** The audit log's reader (its page in the Admin section, its hourly sweep). */
  audit: AuditReader
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
}
