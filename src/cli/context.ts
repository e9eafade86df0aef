// What a command opens: the config, then, on first ask, one connection to the database `[database] url` names
// (the CLI's only read of it) and the services on it, built by the same factories as the app's (app.ts). A
// command that needs the whole app (import, serve) gets it from openLinkbox. Only the stores a command uses
// are loaded: db/storages.ts would load every feature's (node:crypto, the user-agent parser) into `key list`.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { SQL, TransactionSQL } from 'bun'
import type { AccountService } from '../accounts/service'
import type { AuditRows } from '../audit/storage'
import { loadConfig, type Config } from '../kernel/config'
import type { Db } from '../db/sqlite'
import type { ChangeFeed } from '../db/changes'
import type { Storages } from '../app/storages'
import type { Outbox } from '../kernel/outbox'
import type { WebhookService } from '../webhooks/service'
import type { Invocation } from './args'

type StoreName = 'accounts' | 'audit' | 'endpoints' | 'queue'
type Loaders<C, Tx> = { [K in StoreName]: (connection: C) => Promise<Storages<Tx>[K]> }

const sqliteStores: Loaders<Db, Db> = {
  accounts: async (db) => (await import('../accounts/storage')).sqliteAccountStorage(db),
  audit: async (db) => (await import('../audit/storage')).sqliteAuditRows(db),
  endpoints: async (db) => (await import('../webhooks/storage/sqlite')).sqliteEndpointRows(db),
  queue: async (db) => (await import('../webhooks/storage/sqlite')).sqliteWebhookQueue(db),
}

const postgresStores: Loaders<SQL, TransactionSQL> = {
  accounts: async (sql) => (await import('../accounts/storage-postgres')).postgresAccountStorage(sql),
  audit: async (sql) => (await import('../audit/storage-postgres')).postgresAuditRows(sql),
  endpoints: async (sql) => (await import('../webhooks/storage/postgres')).postgresEndpointRows(sql),
  queue: async (sql) => (await import('../webhooks/storage/postgres')).postgresWebhookQueue(sql),
}

export interface Services {
  accounts(): Promise<AccountService>
  audit(): Promise<AuditRows<unknown>>
  webhooks(): Promise<WebhookService>
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
        const { createAccountService } = await import('../accounts/service')
        const [accounts, audit] = await Promise.all([store('accounts'), store('audit')])
        return createAccountService({ accounts, audit }) as AccountService
      }),
    audit: () => store('audit') as Promise<AuditRows<unknown>>,
    webhooks: () =>
      once('webhookService', async () => {
        const { createWebhookService } = await import('../webhooks/service')
        const [endpoints, queue, audit] = await Promise.all([store('endpoints'), store('queue'), store('audit')])
        const deps = { ...(db ? { db } : {}), config, outbox: await outbox(queue), endpoints, queue, audit }
        return createWebhookService(deps) as WebhookService
      }),
    close,
  }
}

// On stderr: stdout is the command's answer (a key, a list) that scripts read.
const upgraded = (note: string) => console.error(`linkbox: ${note}`)

/** One connection to the database of the config, the engine chosen here; close() when done. */
async function connect(config: Config, url: string | null): Promise<Services> {
  if (url) {
    const { openPostgres } = await import('../db/postgres')
    const pg = await openPostgres(url, { max: 2, onUpgrade: upgraded })
    let feed: { outbox: Outbox; changes: ChangeFeed } | null = null
    // The feed tells the running nodes at once: an endpoint made or deleted, an event to deliver.
    const outbox = async (queue: Storages<TransactionSQL>['queue']) => {
      const [{ postgresChangeFeed }, { createQueueOutbox }] = await Promise.all([
        import('../db/postgres/changes'),
        import('../webhooks/outbox'),
      ])
      const changes = await postgresChangeFeed(pg.sql)
      feed = { outbox: createQueueOutbox({ queue, changes }), changes }
      return feed.outbox
    }
    return services(config, pg.sql, postgresStores, null, outbox, async () => {
      if (feed) {
        feed.outbox.close()
        await feed.changes.close()
      }
      await pg.close()
    })
  }
  const { openDatabase } = await import('../db/sqlite')
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const db = openDatabase(join(config.data_dir, 'linkbox.db'), { onUpgrade: upgraded })
  const outbox = async () => (await import('../webhooks/outbox')).createOutbox(db)
  return services(config, db, sqliteStores, db, outbox, async () => db.close())
}

export interface Context extends Invocation {
  config: Config
  /** `[database] url`, or null: the data_dir's SQLite file. */
  databaseUrl: string | null
  /** The database and its services, opened on the first call. */
  open(): Promise<Services>
  /** The whole app (app.ts), as serve builds it. */
  linkbox(): Promise<import('../app/app').Linkbox>
  /** Closes what open() opened (the app is closed by its command). */
  close(): Promise<void>
}

/** The config of the command line (loaded first: a config error comes before any usage error), nothing opened yet. */
export function context(invocation: Invocation): Context {
  const config = loadConfig(invocation.configPath)
  const databaseUrl = config.database.url || null
  let opened: Promise<Services> | null = null
  return {
    ...invocation,
    config,
    databaseUrl,
    open: () => (opened ??= connect(config, databaseUrl)),
    linkbox: async () => (await import('../app/app')).openLinkbox(config),
    async close() {
      // A database that did not open has nothing to close; its error is the command's already.
      const services = await opened?.catch(() => null)
      await services?.close()
    },
  }
}

/** A value given as - on the command line: stdin without its last line ending. */
export async function readStdin(): Promise<string> {
  return (await Bun.stdin.text()).replace(/\r?\n$/, '')
}
