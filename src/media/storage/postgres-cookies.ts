// Cookies per site on PostgreSQL, as sqlite-cookies.ts: a row a site, replaced whole.
import type { SQL, TransactionSQL } from 'bun'
import { int, intOrNull, text, type PgRow } from '../../db/postgres/rows'
import { MAX_SITES, type CookieSiteRow, type CookieStorage } from './cookies-contract'

const listed = (r: PgRow): CookieSiteRow => ({
  site: text(r.site),
  cookies: int(r.cookies),
  expires: intOrNull(r.expires),
  created: int(r.created),
  last_used: intOrNull(r.last_used),
})

export function postgresCookieStorage(sql: SQL): CookieStorage<TransactionSQL> {
  return {
    async put(row, within) {
      const sealed = Buffer.from(row.sealed)
      return sql.begin(async (tx) => {
        const done = await tx`
        INSERT INTO media_cookies (site, sealed, cookies, expires, created, last_used)
        SELECT ${row.site}, ${sealed}, ${row.cookies}, ${row.expires}, ${row.created}, NULL
        WHERE (SELECT count(*) FROM media_cookies WHERE site <> ${row.site}) < ${MAX_SITES}
        ON CONFLICT (site) DO UPDATE SET sealed = EXCLUDED.sealed, cookies = EXCLUDED.cookies,
          expires = EXCLUDED.expires, created = EXCLUDED.created, last_used = NULL
        RETURNING site`
        if (done.length > 0 && within) await within(tx)
        return done.length > 0
      })
    },
    async find(sites) {
      // Host names hold no comma (siteCandidates).
      if (sites.length === 0 || sites.some((s) => s.includes(','))) return null
      const [r] = await sql`
        SELECT * FROM media_cookies WHERE site = ANY(string_to_array(${sites.join(',')}, ','))
        ORDER BY length(site) DESC LIMIT 1`
      return r ? { ...listed(r), sealed: new Uint8Array(r.sealed as Uint8Array) } : null
    },
    async list() {
      return (
        await sql`SELECT site, cookies, expires, created, last_used FROM media_cookies ORDER BY site LIMIT ${MAX_SITES}`
      ).map(listed)
    },
    async remove(site, within) {
      return sql.begin(async (tx) => {
        const done = (await tx`DELETE FROM media_cookies WHERE site = ${site}`).count > 0
        if (done && within) await within(tx)
        return done
      })
    },
    async touch(site, at) {
      await sql`UPDATE media_cookies SET last_used = ${at} WHERE site = ${site}`
    },
  }
}
