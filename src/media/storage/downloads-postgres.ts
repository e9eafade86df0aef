// The downloads an account started from the dashboard, on PostgreSQL: its newest DOWNLOADS_KEPT.
import type { SQL } from 'bun'
import { int, text, type PgRow } from '../../db/postgres/rows'
import { DOWNLOADS_KEPT, type DownloadRow, type TicketStorage } from './contract'

const download = (r: PgRow): DownloadRow => ({
  id: int(r.id),
  account_id: int(r.account_id),
  ticket_id: int(r.ticket_id),
  page_url: text(r.page_url),
  filename: text(r.filename),
  format_id: text(r.format_id),
  created: int(r.created),
  link_expires: int(r.link_expires),
})

export function postgresDownloads(sql: SQL): Pick<TicketStorage, 'started' | 'downloads'> {
  return {
    async started(d) {
      await sql.begin(async (tx) => {
        // The account's row locked: two nodes recording for one account take turns, so the trim keeps exactly 50.
        await tx`SELECT 1 FROM accounts WHERE id = ${d.account_id} FOR NO KEY UPDATE`
        await tx`
          INSERT INTO media_downloads (account_id, ticket_id, page_url, filename, format_id, created, link_expires)
          VALUES (${d.account_id}, ${d.ticket_id}, ${d.page_url}, ${d.filename}, ${d.format_id}, ${d.created}, ${d.link_expires})
          ON CONFLICT (account_id, ticket_id) DO UPDATE SET created = excluded.created, link_expires = excluded.link_expires`
        await tx`
          DELETE FROM media_downloads WHERE account_id = ${d.account_id} AND id NOT IN
            (SELECT id FROM media_downloads WHERE account_id = ${d.account_id}
             ORDER BY created DESC, id DESC LIMIT ${DOWNLOADS_KEPT})`
      })
    },
    async downloads(accountId) {
      const rows = await sql`
        SELECT * FROM media_downloads WHERE account_id = ${accountId}
        ORDER BY created DESC, id DESC LIMIT ${DOWNLOADS_KEPT}`
      return rows.map(download)
    },
  }
}
