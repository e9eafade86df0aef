// Media download tickets on SQLite (migration 6 says what a ticket is).
import { stored, type Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import type { TicketRow, TicketStorage } from './contract'
import { sqliteDownloads } from './downloads-sqlite'

export function sqliteTicketStorage(db: Db): TicketStorage {
  const q = lazyStatements(db) // prepared at their first use (db/sqlite/lazy.ts)
  const insert = q.prepare(
    `INSERT INTO media_tickets (account_id, page_url, format_id, method, upstream_url, headers, filename, content_type, created, expires)
     VALUES ($account_id, $page_url, $format_id, $method, $upstream_url, $headers, $filename, $content_type, $created, $expires)
     RETURNING id`,
  )
  const byId = q.prepare('SELECT * FROM media_tickets WHERE id = ?')
  const sweep = q.prepare(
    'DELETE FROM media_tickets WHERE rowid IN (SELECT rowid FROM media_tickets WHERE expires <= ? LIMIT 5000)',
  )
  const count = q.prepare('SELECT count(*) AS n FROM media_tickets')

  return {
    // A storage failure becomes the 503 storage_unavailable (and /healthz says so), as for every write.
    insertAll: async (tickets) =>
      stored(db, () => db.transaction(() => tickets.map((t) => (insert.get(t as any) as { id: number }).id))()),
    ticket: async (id) => (byId.get(id) as TicketRow | null) ?? null,
    sweep: async (now) => sweep.run(now).changes,
    count: async () => (count.get() as { n: number }).n,
    ...sqliteDownloads(db),
  }
}
