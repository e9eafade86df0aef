// Short links on SQLite, the title fetch's rows (LinkMetaStore): due links claimed under a lease in one conditional
// write, and the fetched page written only while that lease holds.
import { stored, type Db } from '../../db/sqlite'
import { syncWithin } from '../../db/sqlite/within'
import type { LinkMetaStore, LinkRow } from './contract'

export function sqliteMetaStore(db: Db): LinkMetaStore<Db> {
  const next = db.query<{ due: number | null }, []>('SELECT min(meta_due) AS due FROM links WHERE meta_due IS NOT NULL')
  // One statement: a link another connection claimed has meta_due > now by then and is not taken again.
  const claim = db.query<LinkRow, [number, number, number]>(
    `UPDATE links SET meta_due = ?2 WHERE id IN
       (SELECT id FROM links WHERE meta_due IS NOT NULL AND meta_due <= ?1 ORDER BY meta_due LIMIT ?3)
     RETURNING *`,
  )
  const defer = db.query<unknown, [number, number, number | null]>(
    'UPDATE links SET meta_due = ?3 WHERE id = ?1 AND meta_due = ?2',
  )
  const held = db.query<LinkRow, [number, number]>('SELECT * FROM links WHERE id = ?1 AND meta_due = ?2')
  const fill = db.query<LinkRow, [number, string, string, string, number]>(
    `UPDATE links SET title = ?2, og_title = iif(og_title = '', ?3, og_title),
       og_description = iif(og_description = '', ?4, og_description), meta_due = NULL, updated = ?5
     WHERE id = ?1 RETURNING *`,
  )
  const tagsOf = db.query<{ tag: string }, [number]>('SELECT tag FROM link_tags WHERE link_id = ? ORDER BY tag')

  return {
    nextMetaDue: async () => next.get()?.due ?? null,
    claimMeta: async (now, lease, limit) => stored(db, () => claim.all(now, lease, limit)),
    deferMeta: async (id, lease, due) => stored(db, () => defer.run(id, lease, due).changes === 1),
    fillMeta: async (id, lease, url, meta, now, within) =>
      stored(db, () =>
        db.transaction((): LinkRow | null => {
          const row = held.get(id, lease)
          if (!row) return null
          if (row.long_url !== url) {
            defer.run(id, lease, now)
            return null
          }
          const fills =
            row.title === '' &&
            (meta.title !== '' ||
              (row.og_title === '' && meta.og_title !== '') ||
              (row.og_description === '' && meta.og_description !== ''))
          if (!fills) {
            defer.run(id, lease, null)
            return null
          }
          const written = fill.get(id, meta.title, meta.og_title, meta.og_description, now)!
          if (within)
            syncWithin(
              within(
                db,
                written,
                tagsOf.all(id).map((t) => t.tag),
              ),
            )
          return written
        })(),
      ),
  }
}
