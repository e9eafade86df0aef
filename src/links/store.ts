// The SQL of short links, and nothing else: the rules live in service.ts (statistics: clicks/store.ts).
import type { Db } from '../db'
import type { Mode } from './validate'

export interface LinkRow {
  id: number
  code: string
  long_url: string
  account_id: number | null
  mode: Mode
  password_hash: string | null
  created: number
  updated: number
  expires: number | null
  clicks: number
  bots: number
  /** Null while live; else why an admin disabled it (visitors get a 451 page). */
  disabled: string | null
}
export type LinkChanges = Partial<Pick<LinkRow, 'long_url' | 'mode' | 'password_hash' | 'expires'>>
export interface NameCount {
  name: string
  clicks: number
}

export function createLinkStore(db: Db) {
  const insert = db.query<LinkRow, [string, string, number | null, string, string | null, number, number, number | null]>(
    `INSERT INTO links (code, long_url, account_id, mode, password_hash, created, updated, expires)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING *`,
  )
  const byCode = db.query<LinkRow, [string]>('SELECT * FROM links WHERE code = ?')
  const codeExists = db.query<{ one: number }, [string]>('SELECT 1 AS one FROM links WHERE code = ?')
  const page = db.query<LinkRow, [number, number, number]>(
    'SELECT * FROM links WHERE account_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3',
  )
  // Kept by triggers (migration 4): one row read, whatever the number of links.
  const count = db.query<{ n: number }, [number]>('SELECT links AS n FROM link_counts WHERE owner = ?')
  const total = db.query<{ n: number }, []>('SELECT coalesce(sum(links), 0) AS n FROM link_counts')
  const byIdAndCode = db.query<LinkRow, [number, string]>('SELECT * FROM links WHERE id = ?1 AND code = ?2')
  // One fixed statement for any set of changed fields: each field has a flag, and a field whose flag is 0
  // keeps what is stored, so an update never writes back values it read earlier.
  const update = db.query<LinkRow, [number, string | null, number, string | null, number, string | null, number, number | null, number, number]>(
    `UPDATE links SET
       long_url = iif(?1, ?2, long_url), mode = iif(?3, ?4, mode),
       password_hash = iif(?5, ?6, password_hash), expires = iif(?7, ?8, expires), updated = ?9
     WHERE id = ?10 RETURNING *`,
  )
  const remove = db.query<unknown, [number]>('DELETE FROM links WHERE id = ?')
  // The dashboard's list: one account's links matching a LIKE pattern ('%' for all; the service escapes what
  // was typed), newest first (by id, the order of creation, along links_account) or most clicked first, a
  // page at a time. Two fixed statements rather than SQL text built per call.
  const SEARCH = "account_id = ?1 AND (code LIKE ?2 ESCAPE '\\' OR long_url LIKE ?2 ESCAPE '\\')"
  const searchNewest = db.query<LinkRow, [number, string, number, number]>(
    `SELECT * FROM links WHERE ${SEARCH} ORDER BY id DESC LIMIT ?3 OFFSET ?4`,
  )
  const searchClicks = db.query<LinkRow, [number, string, number, number]>(
    `SELECT * FROM links WHERE ${SEARCH} ORDER BY clicks DESC, id DESC LIMIT ?3 OFFSET ?4`,
  )
  // Counted up to a bound: a search over a very large account stops counting there ("10000+").
  const setDisabled = db.query<LinkRow, [number, string | null, number]>('UPDATE links SET disabled = ?2, updated = ?3 WHERE id = ?1 RETURNING *')
  const searchCount = db.query<{ n: number }, [number, string, number]>(
    `SELECT count(*) AS n FROM (SELECT 1 FROM links WHERE ${SEARCH} LIMIT ?3)`,
  )
  return {
    insert: (r: Omit<LinkRow, 'id' | 'clicks' | 'bots' | 'updated' | 'disabled'>) =>
      insert.get(r.code, r.long_url, r.account_id, r.mode, r.password_hash, r.created, r.created, r.expires)!,
    byCode: (code: string) => byCode.get(code),
    codeExists: (code: string) => codeExists.get(code) !== null,
    page: (accountId: number, beforeId: number, limit: number) => page.all(accountId, beforeId, limit),
    count: (accountId: number) => count.get(accountId)?.n ?? 0,
    /** Every link stored, with or without an account. */
    total: () => total.get()!.n,
    byIdAndCode: (id: number, code: string) => byIdAndCode.get(id, code),
    /** Writes only the fields present in `changes`; null when the row is gone. */
    update: (id: number, changes: LinkChanges, now: number) =>
      update.get(
        'long_url' in changes ? 1 : 0, changes.long_url ?? null,
        'mode' in changes ? 1 : 0, changes.mode ?? null,
        'password_hash' in changes ? 1 : 0, changes.password_hash ?? null,
        'expires' in changes ? 1 : 0, changes.expires ?? null,
        now, id,
      ),
    remove: (id: number) => remove.run(id),
    /** An admin's disable (a reason) or enable (null); null when the row is gone. */
    setDisabled: (id: number, reason: string | null, now: number) => setDisabled.get(id, reason, now),
    /** A page of an account's links whose code or destination matches `pattern` (LIKE; its own %, _ and \\ escaped with a backslash). */
    search: (accountId: number, pattern: string, sort: 'created' | 'clicks', limit: number, offset: number) =>
      (sort === 'clicks' ? searchClicks : searchNewest).all(accountId, pattern, limit, offset),
    /** How many of an account's links match `pattern`, counting up to `max`. */
    searchCount: (accountId: number, pattern: string, max: number) => searchCount.get(accountId, pattern, max)!.n,
  }
}
export type LinkStore = ReturnType<typeof createLinkStore>
