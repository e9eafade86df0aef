// What the storage of cookies per site promises on both engines (media/cookies.ts seals and opens them): one row a
// site, replaced whole, found by the longest of a host's candidate sites, listed without its sealed bytes.

/** The most sites kept: an admin's list, not something an outsider can grow, but bounded all the same. */
export const MAX_SITES = 1000

export interface CookieSiteRow {
  site: string
  /** How many cookies the file kept. */
  cookies: number
  /** The earliest expiry (unix ms); null: session cookies only. */
  expires: number | null
  created: number
  last_used: number | null
}

export interface SealedCookies extends CookieSiteRow {
  /** The cookies, sealed with the site as associated data (cookies.ts). */
  sealed: Uint8Array
}

/** `Tx`: what `within` is handed, the engine's transaction (the audit row of the change is written with it). */
export interface CookieStorage<Tx = unknown> {
  /**
   * Stores a site's cookies, replacing any it had (last use cleared), and runs `within` in the same transaction;
   * false when MAX_SITES other sites are stored (nothing written or run).
   */
  put(row: Omit<SealedCookies, 'last_used'>, within?: (tx: Tx) => unknown): Promise<boolean>
  /** The row of the longest of `sites` that has one (null: none). */
  find(sites: string[]): Promise<SealedCookies | null>
  /** Every site, by name, at most MAX_SITES, without the sealed bytes. */
  list(): Promise<CookieSiteRow[]>
  /** Whether there was such a site (then removed, and `within` run in the same transaction). */
  remove(site: string, within?: (tx: Tx) => unknown): Promise<boolean>
  /** Notes a use of the site's cookies at `at` (unix ms). */
  touch(site: string, at: number): Promise<void>
}
