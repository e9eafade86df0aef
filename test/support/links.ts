// The storages a link service is built with, on one SQLite connection (tests that build the service
// themselves; the app hands it Storages' members, links/feature.ts).
import { sqliteClickCounts } from '../../src/clicks/counts'
import type { Db } from '../../src/db/sqlite'
import { sqliteLinkStorage } from '../../src/links/storage'
import { sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'

export const sqliteLinkDeps = (db: Db) => ({ links: sqliteLinkStorage(db), counts: sqliteClickCounts(db), queue: sqliteWebhookQueue(db) })
