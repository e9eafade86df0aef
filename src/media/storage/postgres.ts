// Media download tickets on PostgreSQL: written once, then only read or swept, so no node waits on another.
import type { SQL } from 'bun'
import { int, text, type PgRow } from '../../db/postgres/rows'
import { SWEEP_BATCH, type TicketRow, type TicketStorage } from './contract'
import { postgresDownloads } from './downloads-postgres'

const ticket = (r: PgRow): TicketRow => ({
  id: int(r.id),
  account_id: int(r.account_id),
  page_url: text(r.page_url),
  format_id: text(r.format_id),
  method: r.method as TicketRow['method'],
  upstream_url: text(r.upstream_url),
  headers: text(r.headers),
  filename: text(r.filename),
  content_type: text(r.content_type),
  created: int(r.created),
  expires: int(r.expires),
})

export function postgresTicketStorage(sql: SQL): TicketStorage {
  return {
    async insertAll(tickets) {
      // One statement a ticket: the ids come back in the order given (a multi-row INSERT's RETURNING does
      // not promise an order).
      return sql.begin(async (tx) => {
        const ids: number[] = []
        for (const t of tickets) {
          const [row] = await tx`
            INSERT INTO media_tickets (account_id, page_url, format_id, method, upstream_url, headers, filename, content_type, created, expires)
            VALUES (${t.account_id}, ${t.page_url}, ${t.format_id}, ${t.method}, ${t.upstream_url}, ${t.headers}, ${t.filename},
                    ${t.content_type}, ${t.created}, ${t.expires})
            RETURNING id`
          ids.push(Number(row.id))
        }
        return ids
      })
    },
    async ticket(id) {
      const [row] = await sql`SELECT * FROM media_tickets WHERE id = ${id}`
      return row ? ticket(row) : null
    },
    async sweep(now) {
      // SKIP LOCKED: a node sweeping while another does takes other rows rather than waiting for them.
      return (
        await sql`DELETE FROM media_tickets WHERE id IN
          (SELECT id FROM media_tickets WHERE expires <= ${now} LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`
      ).count
    },
    async count() {
      const [row] = await sql`SELECT count(*) AS n FROM media_tickets`
      return Number(row.n)
    },
    ...postgresDownloads(sql),
  }
}
