// Short links on PostgreSQL, the title fetch's rows (LinkMetaStore): due links claimed under a lease by one node
// (SKIP LOCKED: a node never waits for, nor takes, a row another is claiming), the page written under that lease.
import type { SQL, TransactionSQL } from 'bun'
import { intOrNull } from '../../db/postgres/rows'
import type { LinkMetaStore, LinkRow } from './contract'
import { link } from './postgres-reads'

export function postgresMetaStore(sql: SQL): LinkMetaStore<TransactionSQL> {
  return {
    async nextMetaDue() {
      const [row] = await sql`SELECT min(meta_due) AS due FROM links WHERE meta_due IS NOT NULL`
      return intOrNull(row?.due ?? null)
    },
    async claimMeta(now, lease, limit) {
      // The outer condition is checked again on the row as it is when locked: a row claimed meanwhile is left.
      const rows = await sql`
        UPDATE links SET meta_due = ${lease}
        WHERE id IN (SELECT id FROM links WHERE meta_due IS NOT NULL AND meta_due <= ${now}
                     ORDER BY meta_due LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          AND meta_due <= ${now}
        RETURNING *`
      return rows.map(link)
    },
    async deferMeta(id, lease, due) {
      return (await sql`UPDATE links SET meta_due = ${due} WHERE id = ${id} AND meta_due = ${lease}`).count === 1
    },
    async fillMeta(id, lease, url, meta, now, within) {
      return sql.begin(async (tx): Promise<LinkRow | null> => {
        const [locked] = await tx`SELECT * FROM links WHERE id = ${id} AND meta_due = ${lease} FOR NO KEY UPDATE`
        if (!locked) return null
        const row = link(locked)
        if (row.long_url !== url) {
          await tx`UPDATE links SET meta_due = ${now} WHERE id = ${id}`
          return null
        }
        const fills =
          row.title === '' &&
          (meta.title !== '' ||
            (row.og_title === '' && meta.og_title !== '') ||
            (row.og_description === '' && meta.og_description !== ''))
        if (!fills) {
          await tx`UPDATE links SET meta_due = NULL WHERE id = ${id}`
          return null
        }
        const [updated] = await tx`
          UPDATE links SET title = ${meta.title},
            og_title = CASE WHEN og_title = '' THEN ${meta.og_title}::text ELSE og_title END,
            og_description = CASE WHEN og_description = '' THEN ${meta.og_description}::text ELSE og_description END,
            meta_due = NULL, updated = ${now}
          WHERE id = ${id} RETURNING *`
        const written = link(updated)
        if (within) {
          const tags = (await tx`SELECT tag FROM link_tags WHERE link_id = ${id} ORDER BY tag`).map(
            (r: { tag: string }) => r.tag,
          )
          await within(tx, written, tags)
        }
        return written
      })
    },
  }
}
