// The SQL of abuse handling (migration 11): visitors' reports, banned destination hosts, and which accounts
// are disabled (a link's own disabled flag is the link store's). The rules are in service.ts.
import type { Db } from '../db/sqlite'
import { lazyStatements } from '../db/sqlite/lazy'

export const REPORT_REASONS = ['phishing', 'malware', 'spam', 'illegal', 'other'] as const
export type ReportReason = (typeof REPORT_REASONS)[number]
export const CLOSE_ACTIONS = ['dismissed', 'link_disabled', 'host_banned', 'account_disabled'] as const
export type CloseAction = (typeof CLOSE_ACTIONS)[number]

export interface ReportRow {
  id: number
  link_id: number | null
  code: string
  reason: ReportReason
  text: string
  contact: string
  created: number
  closed: number | null
  action: CloseAction | null
  closed_by: number | null
}

/** An open report with what an admin needs beside it: the link, its owner, its clicks, its destination. */
export interface OpenReport extends ReportRow {
  long_url: string | null
  clicks: number | null
  owner: string | null
  link_disabled: string | null
}

export interface BanRow {
  host: string
  reason: string
  created: number
  created_by: number | null
}

/** A link as a write about it names it: its id and code. */
export interface LinkRef {
  id: number
  code: string
}

export function createAbuseStore(db: Db) {
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
  const openForLink = q.query<{ n: number }, [number]>('SELECT count(*) AS n FROM link_reports WHERE closed IS NULL AND link_id = ?')
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
  const setLinkDisabled = q.query<LinkRef, [string, string | null, number]>('UPDATE links SET disabled = ?2, updated = ?3 WHERE code = ?1 RETURNING id, code')
  const disabledAccounts = q.query<{ id: number }, []>('SELECT id FROM accounts WHERE disabled IS NOT NULL')
  // Every destination, for counting what a list or a ban catches (a reload, not a visit, pays for it).
  const destinations = q.query<{ id: number; long_url: string }, [number, number]>('SELECT id, long_url FROM links WHERE id > ?1 ORDER BY id LIMIT ?2')

  return {
    insertReport: (r: { linkId: number | null; code: string; reason: ReportReason; text: string; contact: string; created: number }) =>
      insertReport.get(r.linkId, r.code, r.reason, r.text, r.contact, r.created)!,
    openReports: (limit: number) => openReports.all(limit),
    openCount: () => openCount.get()!.n,
    openForLink: (linkId: number) => openForLink.get(linkId)!.n,
    openReport: (id: number) => openById.get(id),
    report: (id: number) => reportById.get(id),
    closeReport: (id: number, action: CloseAction, by: number | null, at: number) => closeReport.get(id, action, by, at),
    bans: () => bans.all(),
    addBan: (host: string, reason: string, at: number, by: number | null) => insertBan.get(host, reason, at, by),
    removeBan: (host: string) => deleteBan.get(host) !== null,
    setLinkDisabled: (code: string, reason: string | null, at: number) => setLinkDisabled.get(code, reason, at),
    disabledAccounts: () => disabledAccounts.all().map((r) => r.id),
    /** A page of destinations after link id `after` (keyset paging: no cursor stays open between pages). */
    destinations: (after: number, limit: number) => destinations.all(after, limit),
  }
}
export type AbuseStore = ReturnType<typeof createAbuseStore>
