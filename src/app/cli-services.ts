// What a command opens (cli/context.ts asks): one connection to the database of the config and the services on
// it, built by the same factories as the app's (app.ts). Only the stores a command uses are loaded.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { SQL, TransactionSQL } from 'bun'
import type { AccountService } from '../accounts'
import type { AuditRows } from '../audit'
import type { Config } from '../kernel/config'
import type { Db } from '../db/sqlite'
import type { ChangeFeed } from '../db/changes'
import type { Storages } from './storages'
import type { Outbox } from '../kernel/outbox'
import type { WebhookService } from '../webhooks'
import type { CookieJar } from '../media'
import { databaseUrl } from './database-url'

type StoreName = 'accounts' | 'audit' | 'endpoints' | 'queue' | 'cookies'
type Loaders<C, Tx> = { [K in StoreName]: (connection: C) => Promise<Storages<Tx>[K]> }

const sqliteStores: Loaders<Db, Db> = {
  accounts: async (db) => (await import('../accounts/storage/sqlite')).sqliteAccountStorage(db),
  audit: async (db) => (await import('../audit/storage/sqlite')).sqliteAuditRows(db),
  endpoints: async (db) => (await import('../webhooks/storage/sqlite')).sqliteEndpointRows(db),
  queue: async (db) => (await import('../webhooks/storage/sqlite')).sqliteWebhookQueue(db),
  cookies: async (db) => (await import('../media/storage/sqlite-cookies')).sqliteCookieStorage(db),
}

const postgresStores: Loaders<SQL, TransactionSQL> = {
  accounts: async (sql) => (await import('../accounts/storage/postgres')).postgresAccountStorage(sql),
  audit: async (sql) => (await import('../audit/storage/postgres')).postgresAuditRows(sql),
  endpoints: async (sql) => (await import('../webhooks/storage/postgres')).postgresEndpointRows(sql),
  queue: async (sql) => (await import('../webhooks/storage/postgres')).postgresWebhookQueue(sql),
  cookies: async (sql) => (await import('../media/storage/postgres-cookies')).postgresCookieStorage(sql),
}

export interface Services {
  accounts(): Promise<AccountService>
  audit(): Promise<AuditRows<unknown>>
  webhooks(): Promise<WebhookService>
  /** Media download's cookies per site, sealed with the signing secret's key (media/cookies.ts). */
  cookies(): Promise<CookieJar>
  close(): Promise<void>
}

/** The services on one engine's connection, each made once; `outbox` is the engine's (as in app.ts). */
function services<C, Tx>(
  config: Config,
  connection: C,
  stores: Loaders<C, Tx>,
  db: Db | null,
  outbox: (queue: Storages<Tx>['queue']) => Promise<Outbox>,
  close: () => Promise<void>,
  signingSecret: () => Promise<Buffer>,
): Services {
  const made = new Map<string, Promise<unknown>>()
  const once = <T>(name: string, make: () => Promise<T>): Promise<T> => {
    if (!made.has(name)) made.set(name, make())
    return made.get(name) as Promise<T>
  }
  const store = <K extends StoreName>(name: K) => once(name, () => stores[name](connection))
  return {
    accounts: () =>
      once('accountService', async () => {
        const { createAccountService } = await import('../accounts')
        const [accounts, audit] = await Promise.all([store('accounts'), store('audit')])
        return createAccountService({ accounts, audit }) as AccountService
      }),
    audit: () => store('audit') as Promise<AuditRows<unknown>>,
    webhooks: () =>
      once('webhookService', async () => {
        const { createWebhookService } = await import('../webhooks')
        const [endpoints, queue, audit] = await Promise.all([store('endpoints'), store('queue'), store('audit')])
        const deps = { ...(db ? { db } : {}), config, outbox: await outbox(queue), endpoints, queue, audit }
        return createWebhookService(deps) as WebhookService
      }),
    cookies: () =>
      once('cookieJar', async () => {
        const { cookieKey, createCookieJar } = await import('../media')
        const [storage, audit, secret] = await Promise.all([store('cookies'), store('audit'), signingSecret()])
        return createCookieJar({
          storage,
          key: cookieKey(secret),
          clock: Date.now,
          dataDir: config.data_dir,
          audit,
        })
      }),
    close,
  }
}

// On stderr: stdout is the command's answer (a key, a list) that scripts read.
const upgraded = (note: string) => console.error(`linkbox: ${note}`)

/** One connection to the database of the config, the engine chosen here; close() when done. */
export async function openServices(config: Config): Promise<Services> {
  const url = databaseUrl(config)
  if (url) {
    const { openPostgres } = await import('../db/postgres')
    const pg = await openPostgres(url, { max: 2, onUpgrade: upgraded })
    let feed: { outbox: Outbox; changes: ChangeFeed } | null = null
    // The feed tells the running nodes at once: an endpoint made or deleted, an event to deliver.
    const outbox = async (queue: Storages<TransactionSQL>['queue']) => {
      const [{ postgresChangeFeed }, { createQueueOutbox }] = await Promise.all([
        import('../db/postgres/changes'),
        import('../webhooks'),
      ])
      const changes = await postgresChangeFeed(pg.sql)
      feed = { outbox: createQueueOutbox({ queue, changes }), changes }
      return feed.outbox
    }
    return services(
      config,
      pg.sql,
      postgresStores,
      null,
      outbox,
      async () => {
        if (feed) {
          feed.outbox.close()
          await feed.changes.close()
        }
        await pg.close()
      },
      async () => (await import('../db/postgres/signing')).postgresSigningSecret(pg.sql)(),
    )
  }
  const { openDatabase } = await import('../db/sqlite')
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const db = openDatabase(join(config.data_dir, 'linkbox.db'), { onUpgrade: upgraded })
  const outbox = async () => (await import('../webhooks')).createOutbox(db)
  const secret = async () => (await import('../kernel/signing')).loadSigningSecret(config.data_dir)
  return services(config, db, sqliteStores, db, outbox, async () => db.close(), secret)
}
