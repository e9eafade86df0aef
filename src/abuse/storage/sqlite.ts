// Abuse handling's rows on SQLite: the statements, run directly; `within` runs in the transaction, synchronously.
import type { Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import { syncWithin } from '../../db/sqlite/within'
import type {
  AbuseRows,
  BanRow,
  LinkListShow,
  LinkListSort,
  LinkRef,
  ListedLink,
  OpenReport,
  ReportReason,
  ReportRow,
} from './contract'
import { searchPattern } from './contract'

// The admin's list of every link: fixed fragments chosen by name (nothing typed goes into the SQL text).
const LIST_ORDER: Record<LinkListSort, string> = {
  newest: 'l.id DESC',
  oldest: 'l.id ASC',
  clicks: 'l.clicks DESC, l.id DESC',
  code: 'l.code ASC, l.id ASC',
  owner: 'a.name IS NULL, a.name ASC, l.id DESC',
}
const LIST_SHOW: Record<LinkListShow, string> = {
  all: '1',
  anonymous: 'l.account_id IS NULL',
  disabled: 'l.disabled IS NOT NULL',
  reported: 'EXISTS (SELECT 1 FROM link_reports r WHERE r.link_id = l.id AND r.closed IS NULL)',
}
const LIST_FROM = `FROM links l LEFT JOIN accounts a ON a.id = l.account_id
  WHERE (?1 = '' OR l.code LIKE ?1 ESCAPE '\\' OR l.long_url LIKE ?1 ESCAPE '\\' OR a.name LIKE ?1 ESCAPE '\\')`

export function sqliteAbuseRows(db: Db): AbuseRows<Db> {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insertReport = q.query<ReportRow, [number | null, string, string, string, string, number]>(
    'INSERT INTO link_reports (link_id, code, reason, text, contact, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING *',
  )
  const openReports = q.query<OpenReport, [number]>(
    `SELECT r.*, l.long_url, l.clicks, a.name AS owner, l.disabled AS link_disabled
       FROM link_reports r LEFT JOIN links l ON l.id = r.link_id LEFT JOIN accounts a ON a.id = l.account_id
      WHERE r.closed IS NULL ORDER BY r.id DESC LIMIT ?1`,
  )
  const openCount = q.query<{ n: number }, []>('SELECT count(*) AS n FROM link_reports WHERE closed IS NULL')
  const openForLink = q.query<{ n: number }, [number]>(
    'SELECT count(*) AS n FROM link_reports WHERE closed IS NULL AND link_id = ?',
  )
  const openById = q.query<OpenReport, [number]>(
    `SELECT r.*, l.long_url, l.clicks, a.name AS owner, l.disabled AS link_disabled
       FROM link_reports r LEFT JOIN links l ON l.id = r.link_id LEFT JOIN accounts a ON a.id = l.account_id
      WHERE r.id = ?1 AND r.closed IS NULL`,
  )
  const reportById = q.query<ReportRow, [number]>('SELECT * FROM link_reports WHERE id = ?')
  // Only an open report closes: a second admin closing the same one a moment later changes nothing.
  const closeReport = q.query<ReportRow, [number, string, number | null, number]>(
    'UPDATE link_reports SET closed = ?4, action = ?2, closed_by = ?3 WHERE id = ?1 AND closed IS NULL RETURNING *',
  )
  const bans = q.query<BanRow, []>('SELECT * FROM banned_hosts ORDER BY host')
  const insertBan = q.query<BanRow, [string, string, number, number | null]>(
    'INSERT INTO banned_hosts (host, reason, created, created_by) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (host) DO NOTHING RETURNING *',
  )
  const deleteBan = q.query<{ host: string }, [string]>('DELETE FROM banned_hosts WHERE host = ? RETURNING host')
  // An admin's disable (a reason) or enable (null) of a link by its code: the column is the link store's, the
  // write is abuse handling's (with its audit row, or as part of a report's closing).
  const setLinkDisabled = q.query<LinkRef, [string, string | null, number, string]>(
    'UPDATE links SET disabled = ?2, updated = ?3 WHERE code = ?1 AND domain = ?4 RETURNING id, code, domain',
  )
  // A report's closing disables the report's own link (a code may be on several domains), while it has that code.
  const disableReported = q.query<LinkRef, [number, string, string, number]>(
    `UPDATE links SET disabled = ?3, updated = ?4
     WHERE id = (SELECT link_id FROM link_reports WHERE id = ?1) AND code = ?2 RETURNING id, code, domain`,
  )
  // Only a link still as the admin saw it changes (enabled to disable, disabled to enable).
  const disableIf = q.query<LinkRef, [number, string, number]>(
    'UPDATE links SET disabled = ?2, updated = ?3 WHERE id = ?1 AND disabled IS NULL RETURNING id, code, domain',
  )
  const enableIf = q.query<LinkRef, [number, number]>(
    'UPDATE links SET disabled = NULL, updated = ?2 WHERE id = ?1 AND disabled IS NOT NULL RETURNING id, code, domain',
  )
  const disabledAccounts = q.query<{ id: number }, []>('SELECT id FROM accounts WHERE disabled IS NOT NULL')
  // Every destination, for counting what a list or a ban catches (a reload, not a visit, pays for it).
  const destinations = q.query<{ id: number; long_url: string }, [number, number]>(
    'SELECT id, long_url FROM links WHERE id > ?1 ORDER BY id LIMIT ?2',
  )

  const insertReportRow = (r: {
    linkId: number | null
    code: string
    reason: ReportReason
    text: string
    contact: string
    created: number
  }) => insertReport.get(r.linkId, r.code, r.reason, r.text, r.contact, r.created)!
  const addBanRow = (host: string, reason: string, at: number, by: number | null) =>
    insertBan.get(host, reason, at, by) ?? null
  const disableLink = (code: string, reason: string | null, at: number, domain = '') =>
    setLinkDisabled.get(code, reason, at, domain)

  return {
    fileReport: async (r, bounds, within) =>
      db.transaction(() => {
        if (openCount.get()!.n >= bounds.maxOpen) return 'full' as const
        if (openForLink.get(r.linkId)!.n >= bounds.maxPerLink) return 'link_full' as const
        let row: ReportRow
        try {
          row = insertReportRow(r)
        } catch (err) {
          // The report's one foreign key is its link: deleted since the service found it.
          if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return 'no_link' as const
          throw err
        }
        if (within) syncWithin(within(db, row))
        return row
      })(),
    openReports: async (limit) => openReports.all(limit),
    openCount: async () => openCount.get()!.n,
    openReport: async (id) => openById.get(id) ?? null,
    report: async (id) => reportById.get(id) ?? null,
    closeReport: async (id, c, within) => {
      const noLink = new Error('no_link')
      try {
        return db.transaction(() => {
          const closed = closeReport.get(id, c.action, c.by, c.at)
          if (!closed) return reportById.get(id) ? ('already_closed' as const) : ('missing' as const)
          const link = c.disableLink ? disableReported.get(id, c.disableLink.code, c.disableLink.reason, c.at) : null
          if (c.disableLink && !link) throw noLink // undoes the close
          const ban = c.ban ? addBanRow(c.ban.host, c.ban.reason, c.at, c.by) : null
          if (within) syncWithin(within(db, closed, { link, ban }))
          return closed
        })()
      } catch (err) {
        if (err === noLink) return 'no_link' as const
        throw err
      }
    },
    bans: async () => bans.all(),
    addBan: async (b, within) =>
      db.transaction(() => {
        const row = addBanRow(b.host, b.reason, b.at, b.by)
        if (row && within) syncWithin(within(db, row))
        return row
      })(),
    removeBan: async (host, within) =>
      db.transaction(() => {
        const removed = deleteBan.get(host) !== null
        if (removed && within) syncWithin(within(db))
        return removed
      })(),
    setLinkDisabled: async (code, reason, at, within, domain) =>
      db.transaction(() => {
        const link = disableLink(code, reason, at, domain)
        if (link && within) syncWithin(within(db, link))
        return link
      })(),
    listLinks: async ({ search, sort, show, offset, limit }) => {
      const pattern = searchPattern(search)
      const where = `${LIST_FROM} AND ${LIST_SHOW[show]}`
      const total = db.query<{ n: number }, [string]>(`SELECT count(*) AS n ${where}`).get(pattern)!.n
      const links = db
        .query<ListedLink, [string, number, number]>(
          `SELECT l.id, l.code, l.long_url, l.created, l.clicks, a.name AS owner, l.disabled,
             (SELECT count(*) FROM link_reports r WHERE r.link_id = l.id AND r.closed IS NULL) AS reports
           ${where} ORDER BY ${LIST_ORDER[sort]} LIMIT ?2 OFFSET ?3`,
        )
        .all(pattern, limit, offset)
      return { total, links }
    },
    setLinkDisabledIf: async (id, reason, at, within) =>
      db.transaction(() => {
        const link = (reason === null ? enableIf.get(id, at) : disableIf.get(id, reason, at)) ?? null
        if (link && within) syncWithin(within(db, link))
        return link
      })(),
    disabledAccounts: async () => disabledAccounts.all().map((r) => r.id),
    /** A page of destinations after link id `after` (keyset paging: no cursor stays open between pages). */
    destinations: async (after, limit) => destinations.all(after, limit),
  }
}
