// Short links on PostgreSQL as they are read: the row mapper (link), and the listing reads of an account's links
// (its pages by id, by tag or matching a search, the export's pages); the dashboard's are postgres-tags.ts.
import type { SQL, TransactionSQL } from 'bun'
import { int, intOrNull, text, textOrNull, type PgRow } from '../../db/postgres/rows'
import type { LinkRow, LinkStorage, MatchingPage } from './contract'

/** A links row as SQLite gives it: numbers as numbers, columns in the table's order. */
export const link = (r: PgRow): LinkRow => ({
  id: int(r.id),
  code: text(r.code),
  long_url: text(r.long_url),
  account_id: intOrNull(r.account_id),
  mode: r.mode as LinkRow['mode'],
  password_hash: textOrNull(r.password_hash),
  created: int(r.created),
  updated: int(r.updated),
  expires: intOrNull(r.expires),
  clicks: int(r.clicks),
  bots: int(r.bots),
  disabled: textOrNull(r.disabled),
  max_visits: intOrNull(r.max_visits),
  visits_used: int(r.visits_used),
  rules: textOrNull(r.rules),
  split: textOrNull(r.split),
  title: text(r.title),
  domain: text(r.domain),
  expired_url: textOrNull(r.expired_url),
  og_title: text(r.og_title),
  og_description: text(r.og_description),
  og_image: textOrNull(r.og_image),
  meta_due: intOrNull(r.meta_due),
})
const links = (rows: PgRow[]) => rows.map(link)

type ListingReads = Pick<LinkStorage<TransactionSQL>, 'page' | 'pageByTag' | 'pageMatching' | 'exportPage'>

export function postgresLinkReads(sql: SQL): ListingReads {
  return {
    async page(accountId, beforeId, limit) {
      return links(
        await sql`SELECT * FROM links WHERE account_id = ${accountId} AND id < ${beforeId} ORDER BY id DESC LIMIT ${limit}`,
      )
    },
    async pageByTag(accountId, tag, beforeId, limit) {
      return links(
        await sql`
        SELECT links.* FROM link_tags JOIN links ON links.id = link_tags.link_id
        WHERE link_tags.account_id = ${accountId} AND link_tags.tag = ${tag} AND link_tags.link_id < ${beforeId} AND links.account_id = ${accountId}
        ORDER BY link_tags.link_id DESC LIMIT ${limit}`,
      )
    },
    async pageMatching(accountId, beforeId, tag, pattern, limit, scan, domain = null): Promise<MatchingPage> {
      const [w] = await sql`
        SELECT min(id) AS floor, count(*) AS n
          FROM (SELECT id FROM links WHERE account_id = ${accountId} AND id < ${beforeId} ORDER BY id DESC LIMIT ${scan}) AS w`
      if (w.floor === null) return { rows: [], floor: 0, full: false }
      const floor = int(w.floor)
      const rows = await sql`
        SELECT * FROM links WHERE account_id = ${accountId} AND id < ${beforeId} AND id >= ${floor}
          AND (${tag} = '' OR EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag = ${tag}))
          AND (code ILIKE ${pattern} ESCAPE '\\' OR long_url ILIKE ${pattern} ESCAPE '\\' OR title ILIKE ${pattern} ESCAPE '\\'
               OR EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag ILIKE ${pattern} ESCAPE '\\'))
          AND (${domain}::text IS NULL OR domain = ${domain}::text)
        ORDER BY id DESC LIMIT ${limit}`
      return { rows: links(rows), floor, full: int(w.n) >= scan }
    },
    async exportPage(accountId, afterId, limit) {
      return links(
        await sql`SELECT * FROM links WHERE account_id = ${accountId} AND id > ${afterId} ORDER BY id LIMIT ${limit}`,
      )
    },
  }
}
