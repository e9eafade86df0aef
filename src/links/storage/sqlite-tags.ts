// Short links on SQLite, the dashboard's reads and tag changes (issue 38): the list filtered by several tags
// in any of its orders, the account's tags with their counts, and a tag renamed, merged or removed whole.
import { stored, type Db } from '../../db/sqlite'
import { syncWithin } from '../../db/sqlite/within'
import { type LinkOrder, type LinkRow, type LinkStorage, type RetaggedLink, TOO_MANY } from './contract'

type TagReads = Pick<LinkStorage<Db>, 'search' | 'searchCount' | 'tagSummary' | 'retagAll'>

/** ORDER BY of each order: fixed text, never from input (id breaks ties, so pages never overlap). */
const ORDER: Record<LinkOrder, string> = {
  'created-desc': 'id DESC',
  'created-asc': 'id ASC',
  'clicks-desc': 'clicks DESC, id DESC',
  'clicks-asc': 'clicks ASC, id ASC',
  'code-asc': 'code ASC',
  'code-desc': 'code DESC',
  'destination-asc': 'long_url ASC, id ASC',
  'destination-desc': 'long_url DESC, id DESC',
}

export function sqliteTagReads(db: Db): TagReads {
  // A LIKE pattern ('%' for all; the service escapes what was typed) over code, destination, title and tags,
  // and every tag of a JSON array (?5; '[]' for any): the link has as many of them as the array holds.
  const SEARCH = `account_id = ?1 AND (code LIKE ?2 ESCAPE '\\' OR long_url LIKE ?2 ESCAPE '\\' OR title LIKE ?2 ESCAPE '\\'
    OR EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag LIKE ?2 ESCAPE '\\'))
    AND (json_array_length(?5) = 0 OR (SELECT count(*) FROM link_tags t
      WHERE t.link_id = links.id AND t.tag IN (SELECT value FROM json_each(?5))) = json_array_length(?5))
    AND (?6 IS NULL OR domain = ?6)`
  const searchIn = (order: LinkOrder) =>
    db.query<LinkRow, [number, string, number, number, string, string | null]>(
      `SELECT * FROM links WHERE ${SEARCH} ORDER BY ${ORDER[order]} LIMIT ?3 OFFSET ?4`,
    )
  // Counted up to a bound: a search over a very large account stops counting there ("10000+").
  const searchCount = db.query<{ n: number }, [number, string, number, number, string, string | null]>(
    `SELECT count(*) AS n FROM (SELECT 1 FROM links WHERE ${SEARCH} LIMIT ?3 OFFSET ?4)`,
  )
  const summary = db.query<{ tag: string; links: number; clicks: number }, [number, number]>(
    `SELECT t.tag, count(*) AS links, coalesce(sum(l.clicks), 0) AS clicks
       FROM link_tags t JOIN links l ON l.id = t.link_id
      WHERE t.account_id = ?1 AND l.account_id = ?1 GROUP BY t.tag ORDER BY t.tag LIMIT ?2`,
  )
  const tagged = db.query<{ link_id: number }, [number, string, number]>(
    'SELECT link_id FROM link_tags WHERE account_id = ?1 AND tag = ?2 ORDER BY link_id LIMIT ?3',
  )
  // A merge: the links that have both lose `from`; the others have it renamed.
  const dropWhereBoth = db.query<unknown, [number, string, string]>(
    `DELETE FROM link_tags WHERE account_id = ?1 AND tag = ?2
       AND link_id IN (SELECT link_id FROM link_tags WHERE account_id = ?1 AND tag = ?3)`,
  )
  const rename = db.query<unknown, [number, string, string]>(
    'UPDATE link_tags SET tag = ?3 WHERE account_id = ?1 AND tag = ?2',
  )
  const drop = db.query<unknown, [number, string]>('DELETE FROM link_tags WHERE account_id = ?1 AND tag = ?2')
  const touch = db.query<LinkRow, [number, number]>('UPDATE links SET updated = ?2 WHERE id = ?1 RETURNING *')
  const tagsOf = db.query<{ tag: string }, [number]>('SELECT tag FROM link_tags WHERE link_id = ? ORDER BY tag')
  const json = (tags: readonly string[]) => JSON.stringify([...new Set(tags)])

  return {
    search: async (accountId, pattern, tags, sort, limit, offset, order, domain = null) =>
      searchIn(order ?? (sort === 'clicks' ? 'clicks-desc' : 'created-desc')).all(
        accountId,
        pattern,
        limit,
        offset,
        json(tags),
        domain,
      ),
    searchCount: async (accountId, pattern, tags, max, domain = null) =>
      searchCount.get(accountId, pattern, max, 0, json(tags), domain)!.n,
    tagSummary: async (accountId, limit) => summary.all(accountId, limit),
    retagAll: async (accountId, from, to, now, max, within) =>
      stored(db, () =>
        db.transaction((): number | typeof TOO_MANY => {
          const ids = tagged.all(accountId, from, max + 1).map((r) => r.link_id)
          if (ids.length > max) return TOO_MANY
          if (ids.length === 0 || from === to) return 0
          if (to === null) drop.run(accountId, from)
          else {
            dropWhereBoth.run(accountId, from, to)
            rename.run(accountId, from, to)
          }
          const changed: RetaggedLink[] = ids.map((id) => ({
            row: touch.get(id, now)!,
            tags: tagsOf.all(id).map((r) => r.tag),
          }))
          if (within) syncWithin(within(db, changed))
          return ids.length
        })(),
      ),
  }
}
