// The SQL of media download tickets, and nothing else (migration 6 says what a ticket is).
import { stored, type Db } from '../db/sqlite'
import { lazyStatements } from '../db/sqlite/lazy'

export interface TicketInput {
  account_id: number
  page_url: string
  format_id: string
  /** 'direct': stream upstream_url; 'ytdlp': yt-dlp fetches the format (segmented or merged) into the cache. */
  method: 'direct' | 'ytdlp'
  upstream_url: string
  /** JSON object of the request headers yt-dlp said to send (already filtered to a safe list). */
  headers: string
  filename: string
  content_type: string
  created: number
  expires: number
}

export interface TicketRow extends TicketInput {
  id: number
}

export function createMediaStore(db: Db) {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insert = q.prepare(
    `INSERT INTO media_tickets (account_id, page_url, format_id, method, upstream_url, headers, filename, content_type, created, expires)
     VALUES ($account_id, $page_url, $format_id, $method, $upstream_url, $headers, $filename, $content_type, $created, $expires)
     RETURNING id`,
  )
  const byId = q.prepare('SELECT * FROM media_tickets WHERE id = ?')
  const sweep = q.prepare('DELETE FROM media_tickets WHERE rowid IN (SELECT rowid FROM media_tickets WHERE expires <= ? LIMIT 5000)')
  const count = q.prepare('SELECT count(*) AS n FROM media_tickets')

  return {
    /** Stores the tickets of one extraction in one transaction; returns their ids in order. */
    insertAll(tickets: TicketInput[]): number[] {
      // A storage failure becomes the 503 storage_unavailable (and /healthz says so), as for every write.
      return stored(db, () => db.transaction(() => tickets.map((t) => (insert.get(t as any) as { id: number }).id))())
    },
    ticket(id: number): TicketRow | null {
      return (byId.get(id) as TicketRow | null) ?? null
    },
    /** Deletes expired tickets, at most 5000 per call (the sweep runs every minute). */
    sweep(now: number): number {
      return sweep.run(now).changes
    },
    count(): number {
      return (count.get() as { n: number }).n
    },
  }
}
export type MediaStore = ReturnType<typeof createMediaStore>
