// Every store behind its async interface, for one engine: `Tx` is what a store's `within` hands its callback
// (SQLite's connection inside its synchronous transaction, or TransactionSQL). PostgreSQL's: storages-postgres.ts.
import { dirname } from 'node:path'
import type { Db } from '../db/sqlite'
import type { AbuseRows } from '../abuse'
import { sqliteAbuseRows } from '../abuse/storage/sqlite'
import { sqliteAccountStorage } from '../accounts/storage/sqlite'
import type { AccountStorage } from '../accounts'
import { sqliteAuditRows } from '../audit/storage/sqlite'
import type { AuditRows } from '../audit'
import type { ClickCounts, DayKeyRows, SharedVisitorRows } from '../clicks'
import { sqliteClickCounts, sqliteDayKeyRows } from '../clicks/storage/sqlite'
import {
  sqliteFlashRows,
  sqliteFormTokenRows,
  sqlitePendingImportRows,
  sqliteSessionRows,
} from '../dashboard/storage/sqlite'
import type { FlashRows, FormTokenRows, PendingImportRows, SessionRows } from '../dashboard'
import type { DailyCountRows } from '../db/daily-counts'
import { sqliteDailyCountRows } from '../db/sqlite/daily-counts'
import type { LinkStorage } from '../links'
import { sqliteLinkStorage } from '../links/storage/sqlite'
import type { MessageStore } from '../mail'
import { createSpool, sqliteMessageStore } from '../mail/storage/sqlite'
import type { TicketStorage } from '../media'
import { sqliteTicketStorage } from '../media/storage/sqlite'
import type { CookieStorage } from '../media'
import { sqliteCookieStorage } from '../media/storage/sqlite-cookies'
import { sqliteIdentityStorage } from '../oidc/storage/sqlite'
import type { IdentityStorage } from '../oidc'
import type { EndpointRows, WebhookQueue } from '../webhooks'
import { eventInserts, sqliteEndpointRows, sqliteWebhookQueue } from '../webhooks/storage/sqlite'

export interface Storages<Tx> {
  engine: 'sqlite' | 'postgres'
  links: LinkStorage<Tx>
  accounts: AccountStorage<Tx>
  identities: IdentityStorage<Tx>
  sessions: SessionRows<Tx>
  formTokens: FormTokenRows<Tx>
  /** Values carried across a redirect and started sign-ins, sealed (dashboard/flash.ts). */
  flashes: FlashRows
  /** Files uploaded to the dashboard's import page, waiting for their confirmation (dashboard/import-store.ts). */
  pendingImports: PendingImportRows
  /** The key of each UTC day that hashes visitors (clicks/day-keys.ts). */
  dayKeys: DayKeyRows
  /** Per-day counts of anonymous creations (web/daily-limit.ts). */
  dailyCounts: DailyCountRows
  /** The visitor hashes nodes compare (clicks/shared-visitors.ts): PostgreSQL's; null on SQLite (one node counts exactly). */
  visitorHashes: SharedVisitorRows | null
  abuse: AbuseRows<Tx>
  audit: AuditRows<Tx>
  endpoints: EndpointRows<Tx>
  queue: WebhookQueue<Tx>
  counts: ClickCounts
  tickets: TicketStorage
  /** Media download's cookies per site, sealed (media/cookies.ts). */
  cookies: CookieStorage<Tx>
  /** Temporary mail: mailboxes, messages and their bytes (mail/storage/contract.ts). */
  messages: MessageStore<Tx>
}

/** Where a SQLite database's mail bytes are: the mail folder beside the database file (data_dir/mail). */
function dataDirOf(db: Db): string {
  if (!db.filename || db.filename === ':memory:')
    throw new Error('storages: the mail store needs a database file (its bytes are kept beside it)')
  return dirname(db.filename)
}

/**
 * SQLite's stores, each made on its first use: making them all prepares a hundred-odd statements, which a
 * start-up (serve's first answer, a CLI command) should not pay for stores it does not touch yet.
 */
export function sqliteStorages(db: Db): Storages<Db> {
  const made = new Map<string, unknown>()
  const once = <T>(name: string, make: () => T): T => {
    if (!made.has(name)) made.set(name, make())
    return made.get(name) as T
  }
  return {
    engine: 'sqlite',
    get links() {
      return once('links', () => sqliteLinkStorage(db))
    },
    get accounts() {
      return once('accounts', () => sqliteAccountStorage(db))
    },
    get identities() {
      return once('identities', () => sqliteIdentityStorage(db))
    },
    get sessions() {
      return once('sessions', () => sqliteSessionRows(db))
    },
    get formTokens() {
      return once('formTokens', () => sqliteFormTokenRows(db))
    },
    get flashes() {
      return once('flashes', () => sqliteFlashRows(db))
    },
    get pendingImports() {
      return once('pendingImports', () => sqlitePendingImportRows(db))
    },
    get dayKeys() {
      return once('dayKeys', () => sqliteDayKeyRows(db))
    },
    get dailyCounts() {
      return once('dailyCounts', () => sqliteDailyCountRows(db))
    },
    visitorHashes: null,
    get abuse() {
      return once('abuse', () => sqliteAbuseRows(db))
    },
    get audit() {
      return once('audit', () => sqliteAuditRows(db))
    },
    get endpoints() {
      return once('endpoints', () => sqliteEndpointRows(db))
    },
    get queue() {
      return once('queue', () => sqliteWebhookQueue(db))
    },
    get counts() {
      return once('counts', () => sqliteClickCounts(db, eventInserts))
    },
    get tickets() {
      return once('tickets', () => sqliteTicketStorage(db))
    },
    get cookies() {
      return once('cookies', () => sqliteCookieStorage(db))
    },
    get messages() {
      return once('messages', () => sqliteMessageStore(db, createSpool(dataDirOf(db))))
    },
  }
}
