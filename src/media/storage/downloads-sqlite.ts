// The downloads an account started from the dashboard, on SQLite (migration 28): its newest DOWNLOADS_KEPT.
import { stored, type Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import { DOWNLOADS_KEPT, type DownloadRow, type TicketStorage } from './contract'

export function sqliteDownloads(db: Db): Pick<TicketStorage, 'started' | 'downloads'> {
  const q = lazyStatements(db)
  const upsert = q.prepare(
    `INSERT INTO media_downloads (account_id, ticket_id, page_url, filename, format_id, created, link_expires)
     VALUES ($account_id, $ticket_id, $page_url, $filename, $format_id, $created, $link_expires)
     ON CONFLICT (account_id, ticket_id) DO UPDATE SET created = excluded.created, link_expires = excluded.link_expires`,
  )
  const trim = q.prepare(
    `DELETE FROM media_downloads WHERE account_id = ?1 AND id NOT IN
       (SELECT id FROM media_downloads WHERE account_id = ?1 ORDER BY created DESC, id DESC LIMIT ${DOWNLOADS_KEPT})`,
  )
  const newest = q.prepare(
    `SELECT * FROM media_downloads WHERE account_id = ? ORDER BY created DESC, id DESC LIMIT ${DOWNLOADS_KEPT}`,
  )
  return {
    started: async (d) =>
      stored(db, () =>
        db.transaction(() => {
          upsert.run(d as any)
          trim.run(d.account_id)
        })(),
      ),
    downloads: async (accountId) => newest.all(accountId) as DownloadRow[],
  }
}
