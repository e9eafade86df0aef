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
}
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
  const count = db.query<{ n: number }, [number]>('SELECT count(*) AS n FROM links WHERE account_id = ?')
  const update = db.query<LinkRow, [string, string, string | null, number | null, number, number]>(
    `UPDATE links SET long_url = ?1, mode = ?2, password_hash = ?3, expires = ?4, updated = ?5 WHERE id = ?6 RETURNING *`,
  )
  const remove = db.query<unknown, [number]>('DELETE FROM links WHERE id = ?')
  const days = db.query<{ day: string; clicks: number }, [number, string, string]>(
    'SELECT day, clicks FROM click_days WHERE link_id = ?1 AND day BETWEEN ?2 AND ?3 ORDER BY day',
  )
  const dims = db.query<NameCount & { dim: string }, [number, string, string]>(
    `SELECT dim, name, sum(clicks) AS clicks FROM click_dims WHERE link_id = ?1 AND day BETWEEN ?2 AND ?3
     GROUP BY dim, name ORDER BY dim, clicks DESC, name`,
  )

  return {
    insert: (r: Omit<LinkRow, 'id' | 'clicks' | 'bots' | 'updated'>) =>
      insert.get(r.code, r.long_url, r.account_id, r.mode, r.password_hash, r.created, r.created, r.expires)!,
    byCode: (code: string) => byCode.get(code),
    codeExists: (code: string) => codeExists.get(code) !== null,
    page: (accountId: number, beforeId: number, limit: number) => page.all(accountId, beforeId, limit),
    count: (accountId: number) => count.get(accountId)!.n,
    update: (r: LinkRow, now: number) => update.get(r.long_url, r.mode, r.password_hash, r.expires, now, r.id)!,
    remove: (id: number) => remove.run(id),
    days: (id: number, from: string, to: string) => days.all(id, from, to),
    dims: (id: number, from: string, to: string) => dims.all(id, from, to),
  }
}
export type LinkStore = ReturnType<typeof createLinkStore>
