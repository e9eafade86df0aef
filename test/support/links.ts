// The storages a link service is built with, on one SQLite connection (tests that build the service
// themselves; the app hands it Storages' members, links/feature.ts).
import { sqliteClickCounts } from '../../src/clicks/storage/sqlite'
import { eventInserts } from '../../src/webhooks/storage/sqlite'
import type { Db } from '../../src/db/sqlite'
import { blankLinkRow, type LinkRow } from '../../src/links/storage/contract'
import { sqliteLinkStorage } from '../../src/links/storage/sqlite'
import { sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'

export const sqliteLinkDeps = (db: Db) => ({
  links: sqliteLinkStorage(db),
  counts: sqliteClickCounts(db, eventInserts),
  queue: sqliteWebhookQueue(db),
})

/** A whole link row as storage reads it: a plain redirect of account 7 with every other field at its default. */
export const linkRow = (more: Partial<LinkRow> = {}): LinkRow => ({
  ...blankLinkRow(),
  id: 1,
  code: 'abc',
  long_url: 'https://example.com/a',
  account_id: 7,
  ...more,
})
