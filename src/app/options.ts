// Options of createLinkbox (app.ts): what tests change (a clock, small bounds, a logger of their own); `serve` passes none.
import type { ClickRecorderOptions } from '../clicks'
import type { Backend } from './backend-sqlite'
import type { LinksOptions, Verifier } from '../links'
import type { Logger } from '../kernel/log'
import type { QrRenderer } from '../qr'

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
  /** The title fetch's timings (tests shorten them); see links/metadata.ts. */
  metadata?: LinksOptions['metadata']
  /** The log (default: the process's, which `serve` configures from [log]). */
  logger?: Logger
  /**
   * Where the data is (backend-sqlite.ts): default SQLite in data_dir. openLinkbox makes PostgreSQL's for a
   * database.url; tests make one to run two nodes on one database.
   */
  backend?: Backend
}
