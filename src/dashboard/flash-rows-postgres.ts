// The rows of flashes on PostgreSQL (see flash-rows.ts for the contract). A take is DELETE … RETURNING: of
// two nodes taking the same row at once one gets it, the other waits for its commit and finds nothing.
import type { SQL } from 'bun'
import type { FlashRow, FlashRows } from './flash-rows'

const row = (r: Record<string, unknown>): FlashRow => ({
  id: r.id as string,
  pool: Number(r.pool),
  owner: r.owner as string,
  kind: r.kind as string,
  value: new Uint8Array(r.value as Uint8Array),
  size: Number(r.size),
  expires: Number(r.expires),
})

export function postgresFlashRows(sql: SQL): FlashRows {
  return {
    async put(r, bounds) {
      await sql.begin(async (tx) => {
        await tx`INSERT INTO flashes (id, pool, owner, kind, value, size, expires)
                 VALUES (${r.id}, ${r.pool}, ${r.owner}, ${r.kind}, ${r.value}, ${r.size}, ${r.expires})
                 ON CONFLICT (id) DO UPDATE SET pool = excluded.pool, owner = excluded.owner, kind = excluded.kind,
                   value = excluded.value, size = excluded.size, expires = excluded.expires`
        await tx`DELETE FROM flashes WHERE owner = ${r.owner} AND seq NOT IN
                   (SELECT seq FROM flashes WHERE owner = ${r.owner} ORDER BY seq DESC LIMIT ${bounds.perOwner})`
        await tx`DELETE FROM flashes WHERE seq IN (SELECT seq FROM (
                   SELECT seq, row_number() OVER w AS n, sum(size) OVER w AS total FROM flashes WHERE pool = ${r.pool}
                   WINDOW w AS (ORDER BY seq DESC)) t WHERE n > ${bounds.rows} OR total > ${bounds.bytes})`
      })
    },
    async take(id, owner) {
      const [r] = owner
        ? await sql`DELETE FROM flashes WHERE id = ${id} AND owner = ${owner.owner} AND kind = ${owner.kind}
                    RETURNING id, pool, owner, kind, value, size, expires`
        : await sql`DELETE FROM flashes WHERE id = ${id} RETURNING id, pool, owner, kind, value, size, expires`
      return r ? row(r) : null
    },
    async sweep(now) {
      return (await sql`DELETE FROM flashes WHERE seq IN (SELECT seq FROM flashes WHERE expires <= ${now} LIMIT 5000)`).count
    },
    async usage(pool) {
      const [r] = await sql`SELECT count(*) AS rows, coalesce(sum(size), 0) AS bytes FROM flashes WHERE pool = ${pool}`
      return { rows: Number(r.rows), bytes: Number(r.bytes) }
    },
  }
}
