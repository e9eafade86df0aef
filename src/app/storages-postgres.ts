// The PostgreSQL stores as one Storages (see storages.ts): a module of its own, loaded only when
// [database] url names a PostgreSQL database.
import type { SQL, TransactionSQL } from 'bun'
import { postgresAbuseRows } from '../abuse/storage/postgres'
import { postgresAccountStorage } from '../accounts/storage/postgres'
import { postgresAuditRows } from '../audit/storage/postgres'
import { postgresClickCounts, postgresDayKeyRows, postgresSharedVisitorRows } from '../clicks/storage/postgres'
import {
  postgresFlashRows,
  postgresFormTokenRows,
  postgresPendingImportRows,
  postgresSessionRows,
} from '../dashboard/storage/postgres'
import { postgresDailyCountRows } from '../db/postgres/daily-counts'
import { postgresLinkStorage } from '../links/storage/postgres'
import { postgresMessageStore } from '../mail/storage/postgres'
import { postgresTicketStorage } from '../media/storage/postgres'
import { postgresCookieStorage } from '../media/storage/postgres-cookies'
import { postgresIdentityStorage } from '../oidc/storage/postgres'
import { postgresEndpointRows, postgresWebhookQueue } from '../webhooks/storage/postgres'
import type { ChangeFeed } from '../db/changes'
import type { Storages } from './storages'

/** `changes`: the node's feed, which the stores that keep something in memory listen to (the key cache's). */
export function postgresStorages(sql: SQL, opts: { changes?: ChangeFeed } = {}): Storages<TransactionSQL> {
  const queue = postgresWebhookQueue(sql)
  return {
    engine: 'postgres',
    links: postgresLinkStorage(sql),
    accounts: postgresAccountStorage(sql, { changes: opts.changes }),
    identities: postgresIdentityStorage(sql),
    sessions: postgresSessionRows(sql),
    formTokens: postgresFormTokenRows(sql),
    flashes: postgresFlashRows(sql),
    pendingImports: postgresPendingImportRows(sql),
    dayKeys: postgresDayKeyRows(sql),
    dailyCounts: postgresDailyCountRows(sql),
    visitorHashes: postgresSharedVisitorRows(sql),
    abuse: postgresAbuseRows(sql),
    audit: postgresAuditRows(sql),
    endpoints: postgresEndpointRows(sql),
    queue,
    counts: postgresClickCounts(sql, queue),
    tickets: postgresTicketStorage(sql),
    cookies: postgresCookieStorage(sql),
    messages: postgresMessageStore(sql),
  }
}
