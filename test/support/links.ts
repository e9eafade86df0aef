// The storages a link service is built with, on one SQLite connection (tests that build the service
// themselves; the app hands it Storages' members, links/feature.ts).
import { sqliteClickCounts } from '../../src/clicks/storage/sqlite'
import { eventInserts } from '../../src/webhooks/storage/sqlite'
import type { Db } from '../../src/db/sqlite'
import { sqliteLinkStorage } from '../../src/links/storage/sqlite'
import { sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'

export const sqliteLinkDeps = (db: Db) => ({
  links: sqliteLinkStorage(db),
  counts: sqliteClickCounts(db, eventInserts),
  queue: sqliteWebhookQueue(db),
})
