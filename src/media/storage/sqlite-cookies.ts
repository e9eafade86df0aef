// Cookies per site on SQLite (migration 27 says what a row is).
import { stored, type Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import { syncWithin } from '../../db/sqlite/within'
import { MAX_SITES, type CookieSiteRow, type CookieStorage, type SealedCookies } from './cookies-contract'

const LISTED = 'site, cookies, expires, created, last_used'

export function sqliteCookieStorage(db: Db): CookieStorage<Db> {
  const q = lazyStatements(db) // prepared at their first use (db/sqlite/lazy.ts)
  // The bound is checked in the statement that writes: a replaced site is not counted against itself.
  const put = q.prepare(
    `INSERT INTO media_cookies (site, sealed, cookies, expires, created, last_used)
     SELECT $site, $sealed, $cookies, $expires, $created, NULL
     WHERE (SELECT count(*) FROM media_cookies WHERE site <> $site) < ${MAX_SITES}
     ON CONFLICT (site) DO UPDATE SET sealed = excluded.sealed, cookies = excluded.cookies,
       expires = excluded.expires, created = excluded.created, last_used = NULL
     RETURNING site`,
  )
  const find = q.prepare(
    `SELECT * FROM media_cookies WHERE site IN (SELECT value FROM json_each(?)) ORDER BY length(site) DESC LIMIT 1`,
  )
  const list = q.prepare(`SELECT ${LISTED} FROM media_cookies ORDER BY site LIMIT ${MAX_SITES}`)
  const remove = q.prepare('DELETE FROM media_cookies WHERE site = ?')
  const touch = q.prepare('UPDATE media_cookies SET last_used = ? WHERE site = ?')
  return {
    // A storage failure becomes the 503 storage_unavailable, as for every write.
    put: async (row, within) =>
      stored(db, () =>
        db.transaction(() => {
          const done = put.get(row as any) !== null
          if (done && within) syncWithin(within(db))
          return done
        })(),
      ),
    async find(sites) {
      if (sites.length === 0) return null
      const row = find.get(JSON.stringify(sites)) as SealedCookies | null
      return row ? { ...row, sealed: new Uint8Array(row.sealed) } : null
    },
    list: async () => list.all() as CookieSiteRow[],
    remove: async (site, within) =>
      stored(db, () =>
        db.transaction(() => {
          const done = remove.run(site).changes > 0
          if (done && within) syncWithin(within(db))
          return done
        })(),
      ),
    touch: async (site, at) => void stored(db, () => touch.run(at, site)),
  }
}
