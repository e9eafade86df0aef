// Every store of linkbox behind its async interface, for one engine (issue 22, SPEC §11): the one place where
// the engine is chosen (PostgreSQL's: db/postgres/storages.ts, kept apart so that a SQLite start-up does not
// load the PostgreSQL stores). The composition root builds one Storages from `[database] url` — SQLite's from the
// data_dir's database, PostgreSQL's from the pool — and hands each feature the members it needs; services
// never ask which engine they run on.
//
// `Tx` is the transaction handle a store's `within` gives and the stores' tx-taking methods accept (the
// webhook queue's enqueue, the audit log's insert): a SQLite connection inside its synchronous transaction,
// or Bun.SQL's TransactionSQL. So a service writes one `within` for both engines:
//
//   await storages.links.insert(link, tags, (tx, row) =>
//     Promise.all([storages.queue.enqueue(tx, created(row), now), storages.audit.insert(tx, auditOf(row))]))
//
// On SQLite each of those runs (or throws) synchronously inside the transaction, so a failure rolls it back;
// on PostgreSQL they are queued on the transaction's one connection in order and awaited before the commit.
// A decision that depends on what a transaction read is a store method of its own (a re-check), never a
// read in `within` followed by a write: see each store's header.
//
// The mail store (messages) on SQLite keeps larger messages' bytes in files beside the database: its spool is
// <the database file's directory>/mail, i.e. data_dir/mail, since the database is data_dir/linkbox.db. Taken from
// the Db rather than passed as a second argument: the rows and the files are one store, so they cannot be paired
// with another directory's by mistake, and no caller (the root, the CLI, the tests) has a path to get right.
//
// Not here (they are built with parts that are not the database's): the signing secret (a file on SQLite, signing-postgres.ts), the
// statistics' read side and the change feed between nodes.
import { dirname } from 'node:path'
import type { Db } from '../db/sqlite'
import { sqliteAbuseRows, type AbuseRows } from '../abuse/storage'
import { sqliteAccountStorage, type AccountStorage } from '../accounts/storage'
import { sqliteAuditRows, type AuditRows } from '../audit/storage'
import { sqliteClickCounts, type ClickCounts } from '../clicks/counts'
import { sqliteFlashRows, sqliteFormTokenRows, sqliteSessionRows } from '../dashboard/storage/sqlite'
import type { FlashRows, FormTokenRows, SessionRows } from '../dashboard'
import { sqliteDayKeyRows, type DayKeyRows } from '../clicks/day-keys'
import type { SharedVisitorRows } from '../clicks/shared-visitors'
import { sqliteDailyCountRows, type DailyCountRows } from '../web/daily-limit'
import { sqliteLinkStorage, type LinkStorage } from '../links/storage'
import { sqliteMessageStore, type MessageStore } from '../mail/messages'
import { createSpool } from '../mail/spool'
import { sqliteTicketStorage, type TicketStorage } from '../media/tickets'
import { sqliteIdentityStorage, type IdentityStorage } from '../oidc/identities'
import { sqliteEndpointRows, type EndpointRows } from '../webhooks/endpoints'
import { sqliteWebhookQueue, type WebhookQueue } from '../webhooks/queue'

export interface Storages<Tx> {
  engine: 'sqlite' | 'postgres'
  links: LinkStorage<Tx>
  accounts: AccountStorage<Tx>
  identities: IdentityStorage<Tx>
  sessions: SessionRows<Tx>
  formTokens: FormTokenRows<Tx>
  /** Values carried across a redirect and started sign-ins, sealed (dashboard/flash.ts). */
  flashes: FlashRows
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
  /** Temporary mail: mailboxes, messages and their bytes (mail/messages.ts). */
  messages: MessageStore<Tx>
}

/** Where a SQLite database's mail bytes are: the mail folder beside the database file (data_dir/mail). */
function dataDirOf(db: Db): string {
  if (!db.filename || db.filename === ':memory:') throw new Error('storages: the mail store needs a database file (its bytes are kept beside it)')
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
      return once('counts', () => sqliteClickCounts(db))
    },
    get tickets() {
      return once('tickets', () => sqliteTicketStorage(db))
    },
    get messages() {
      return once('messages', () => sqliteMessageStore(db, createSpool(dataDirOf(db))))
    },
  }
}
