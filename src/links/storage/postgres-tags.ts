// Short links on PostgreSQL, the dashboard's reads and tag changes (issue 38): the same answers as
// sqlite-tags.ts — the list filtered by several tags in any of its orders, the account's tags with their
// counts, and a tag renamed, merged or removed whole in one transaction.
import type { SQL, TransactionSQL } from 'bun'
import { int, text } from '../../db/postgres/rows'
import { type LinkOrder, type LinkStorage, type RetaggedLink, TOO_MANY } from './contract'
import { link } from './postgres-reads'

type TagReads = Pick<LinkStorage<TransactionSQL>, 'search' | 'searchCount' | 'tagSummary' | 'retagAll'>

export function postgresTagReads(sql: SQL): TagReads {
  // sqlite-tags.ts's condition, with ILIKE for LIKE; every tag of the list, as there.
  const search = (accountId: number, pattern: string, tags: readonly string[], domain: string | null) => {
    // Tags hold no comma (letters, digits, _ and -): one text parameter, split into an array by PostgreSQL.
    const list = [...new Set(tags)].join(',')
    return sql`
    account_id = ${accountId} AND (code ILIKE ${pattern} ESCAPE '\\' OR long_url ILIKE ${pattern} ESCAPE '\\' OR title ILIKE ${pattern} ESCAPE '\\'
      OR EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag ILIKE ${pattern} ESCAPE '\\'))
    AND (${list}::text = '' OR (SELECT count(*) FROM link_tags t
      WHERE t.link_id = links.id AND t.tag = ANY(string_to_array(${list}::text, ','))) = cardinality(string_to_array(${list}::text, ',')))
    AND (${domain}::text IS NULL OR domain = ${domain}::text)`
  }
  // Text compared byte by byte (COLLATE "C"), as SQLite does: both engines give one order.
  const orderBy = (order: LinkOrder) => {
    switch (order) {
      case 'created-asc':
        return sql`id ASC`
      case 'clicks-desc':
        return sql`clicks DESC, id DESC`
      case 'clicks-asc':
        return sql`clicks ASC, id ASC`
      case 'code-asc':
        return sql`code COLLATE "C" ASC`
      case 'code-desc':
        return sql`code COLLATE "C" DESC`
      case 'destination-asc':
        return sql`long_url COLLATE "C" ASC, id ASC`
      case 'destination-desc':
        return sql`long_url COLLATE "C" DESC, id DESC`
      default:
        return sql`id DESC`
    }
  }

  return {
    async search(accountId, pattern, tags, sort, limit, offset, order, domain = null) {
      const by = orderBy(order ?? (sort === 'clicks' ? 'clicks-desc' : 'created-desc'))
      const rows =
        await sql`SELECT * FROM links WHERE ${search(accountId, pattern, tags, domain)} ORDER BY ${by} LIMIT ${limit} OFFSET ${offset}`
      return rows.map(link)
    },
    async searchCount(accountId, pattern, tags, max, domain = null) {
      const [row] =
        await sql`SELECT count(*) AS n FROM (SELECT 1 FROM links WHERE ${search(accountId, pattern, tags, domain)} LIMIT ${max}) AS m`
      return int(row.n)
    },
    async tagSummary(accountId, limit) {
      const rows = await sql`
        SELECT t.tag, count(*) AS links, coalesce(sum(l.clicks), 0) AS clicks
          FROM link_tags t JOIN links l ON l.id = t.link_id
         WHERE t.account_id = ${accountId} AND l.account_id = ${accountId}
         GROUP BY t.tag ORDER BY t.tag COLLATE "C" LIMIT ${limit}`
      return rows.map((r: Record<string, unknown>) => ({
        tag: text(r.tag),
        links: int(r.links),
        clicks: int(r.clicks),
      }))
    },
    async retagAll(accountId, from, to, now, max, within) {
      return sql.begin(async (tx): Promise<number | typeof TOO_MANY> => {
        // The links locked first (in id order, as every writer of several links takes them), then their tags.
        const locked = await tx`
          SELECT l.id FROM links l JOIN link_tags t ON t.link_id = l.id
           WHERE t.account_id = ${accountId} AND t.tag = ${from}
           ORDER BY l.id LIMIT ${max + 1} FOR NO KEY UPDATE OF l`
        const ids: number[] = locked.map((r: { id: unknown }) => int(r.id))
        if (ids.length > max) return TOO_MANY
        if (ids.length === 0 || from === to) return 0
        const list = ids.join(',')
        const mine = () => tx`link_id = ANY(string_to_array(${list}::text, ',')::bigint[])`
        if (to === null) await tx`DELETE FROM link_tags WHERE ${mine()} AND tag = ${from}`
        else {
          await tx`DELETE FROM link_tags WHERE ${mine()} AND tag = ${from}
                     AND link_id IN (SELECT link_id FROM link_tags WHERE tag = ${to})`
          await tx`UPDATE link_tags SET tag = ${to} WHERE ${mine()} AND tag = ${from}`
        }
        const rows =
          await tx`UPDATE links SET updated = ${now} WHERE id = ANY(string_to_array(${list}::text, ',')::bigint[]) RETURNING *`
        const tagRows = await tx`SELECT link_id, tag FROM link_tags WHERE ${mine()} ORDER BY link_id, tag COLLATE "C"`
        const tagsBy = new Map<number, string[]>()
        for (const r of tagRows) tagsBy.set(int(r.link_id), [...(tagsBy.get(int(r.link_id)) ?? []), text(r.tag)])
        const changed: RetaggedLink[] = rows
          .map(link)
          .sort((a: { id: number }, b: { id: number }) => a.id - b.id)
          .map((row: RetaggedLink['row']) => ({ row, tags: tagsBy.get(row.id) ?? [] }))
        if (within) await within(tx, changed)
        return ids.length
      })
    },
  }
}
