// What media ticket storage promises on both engines: the tickets of one extraction stored in one transaction,
// ids in order and never reused (a ticket id is signed into a link), read back field for field, swept in batches.
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

/** The most tickets one sweep deletes (it runs every minute). */
export const SWEEP_BATCH = 5000

export interface TicketStorage {
  /** Stores the tickets of one extraction in one transaction; their ids, in order. */
  insertAll(tickets: TicketInput[]): Promise<number[]>
  ticket(id: number): Promise<TicketRow | null>
  /** Deletes tickets expired at `now`, at most SWEEP_BATCH; how many. */
  sweep(now: number): Promise<number>
  count(): Promise<number>
}
