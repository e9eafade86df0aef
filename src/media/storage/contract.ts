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

/** A download an account started from the dashboard (which ticket, and what it was, kept after the ticket is swept). */
export interface DownloadInput {
  account_id: number
  ticket_id: number
  page_url: string
  filename: string
  format_id: string
  created: number
  /** When the signed link the account was given stops working (ms). */
  link_expires: number
}

export interface DownloadRow extends DownloadInput {
  id: number
}

/** The downloads kept per account: a 51st pushes the oldest out. */
export const DOWNLOADS_KEPT = 50

export interface TicketStorage {
  /** Stores the tickets of one extraction in one transaction; their ids, in order. */
  insertAll(tickets: TicketInput[]): Promise<number[]>
  ticket(id: number): Promise<TicketRow | null>
  /** Deletes tickets expired at `now`, at most SWEEP_BATCH; how many. */
  sweep(now: number): Promise<number>
  count(): Promise<number>
  /**
   * Records a download the account started (the same ticket again: its time and link moved), keeping the
   * account's newest DOWNLOADS_KEPT, in one transaction.
   */
  started(d: DownloadInput): Promise<void>
  /** The account's downloads, newest first, at most DOWNLOADS_KEPT. */
  downloads(accountId: number): Promise<DownloadRow[]>
}
