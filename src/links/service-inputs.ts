// What the link service takes in: what it is built with (LinkDeps), what a creation is given (CreateLinkInput),
// and what an import tells the account's webhooks (ImportSummary, IMPORTED_CODES_MAX).
import type { ClickCounts, ClickRecorder } from '../clicks'
import type { ChangeFeed } from '../db/changes'
import type { Config } from '../kernel/config'
import type { Events } from '../kernel/events'
import type { EventWriter, Outbox } from '../kernel/outbox'
import type { MetadataOptions } from './metadata'
import type { LinkRow, LinkStorage } from './storage/contract'

export interface CreateLinkInput {
  url: unknown
  alias?: unknown
  mode?: unknown
  expire?: unknown
  password?: unknown
  tags?: unknown
  max_visits?: unknown
  rules?: unknown
  split?: unknown
  title?: unknown
  /** The short domain (SPEC §13): absent or '' the default. */
  domain?: unknown
  /** Where it sends people once expired or used up ('' none; on update '' removes it). */
  expired_url?: unknown
  /** Set in the destination's query (utm.ts). */
  utm_source?: unknown
  utm_medium?: unknown
  utm_campaign?: unknown
  utm_term?: unknown
  utm_content?: unknown
  /** The social preview (preview.ts): og_image a file, or '' on update to remove it. */
  og_title?: unknown
  og_description?: unknown
  og_image?: unknown
}

/** What an import tells the account's webhooks, once (SPEC §9 links.imported). */
export interface ImportSummary {
  created: number
  skipped: number
  /** The codes made, in file order: the first IMPORTED_CODES_MAX. */
  codes: string[]
}
export const IMPORTED_CODES_MAX = 1000

/** What the service is built with: the storages of one engine (db/storages.ts) and the process's parts. */
export interface LinkDeps<Tx> {
  /** The links, their tags and limited links' visits. */
  links: LinkStorage<Tx>
  /** Statistics: the days and names of a link's window. */
  counts: ClickCounts
  /** The webhook events of each change, written in its transaction. */
  queue: EventWriter<Tx>
  config: Config
  recorder: ClickRecorder
  events: Events
  clock?: () => number
  /** Random short codes of a given length (tests replace it to force collisions). */
  randomCode?: (length: number) => string
  /** The argon2id hash of a link password (tests slow it down to hold a request inside the await). */
  hashPassword?: (password: string) => Promise<string>
  /** Rows per generation of the caches of visited links (tests make it tiny). */
  hotGeneration?: number
  /** Who listens for which event (events are built only then), and the deliverer's wake-up after a commit (absent: no webhooks). */
  outbox?: Pick<Outbox, 'wanted' | 'wake'>
  /** Refuses a destination that is banned or on a blocklist (the LinkGuard app.ts hands in), with invalid_url. */
  checkDestination?: (url: string) => void
  /** Whether a link answers 451 (the LinkGuard): its destination is then shown only to its owner and admins (SPEC §3). */
  stopped?: (row: LinkRow) => boolean
  /** The generation of the gate's verdicts (bumped when bans, lists or disabled accounts change): the redirect's cached ones hold while it stays. */
  gateGeneration?: () => number
  /** The ISO alpha-2 country of an address or null (geo): for rules with a country condition. */
  country?: (address: string) => string | null
  /** The shared key of a UTC day for A/B splits (clicks/day-keys.ts), or null while this node waits for it. */
  splitKey?: (day: number) => Uint8Array | null
  /**
   * Changes of links between processes and nodes (db/changes.ts): this service publishes the code of each
   * link it changes or deletes, after the commit, and forgets the codes others publish (absent: this
   * process alone, a local feed).
   */
  changes?: ChangeFeed
  /** How long a visited link is served from memory at most before it is read again (the safety net). */
  cacheTtlMs?: number
  /** The title fetch's guard settings, timings and reports (metadata.ts). */
  metadata?: MetadataOptions
}
