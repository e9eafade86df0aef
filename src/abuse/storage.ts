// Abuse handling's rows (visitors' reports, banned hosts, which accounts are disabled) behind one async
// interface, on either engine (issue 22, SPEC §11). The SQLite implementation wraps the synchronous store
// (store.ts) as it is; the PostgreSQL one is storage-postgres.ts. One test suite (test/db/abuse-storage.test.ts)
// runs against both.
//
// What both promise, however many nodes write at once:
// - fileReport decides and writes in one transaction: refused when MAX_OPEN_REPORTS are open ('full'), kept
//   back when the link has its MAX_OPEN_REPORTS_PER_LINK ('link_full'), else stored; `within` (the outbox's
//   link.reported) runs in the same transaction. Two nodes filing the last allowed report at once: exactly
//   one is stored. A link deleted (on any node) since the service found it: 'no_link', nothing stored (on
//   SQLite the foreign key refuses the row; on PostgreSQL the link's row is read under a key-share lock).
// - closeReport closes an open report only: two admins closing the same one at once, one closes it and the
//   other is told 'already_closed' (nothing of its change or its `within`, the audit rows, is written). The
//   change it is closed with (the link disabled, the host banned) is written in the same transaction: a link
//   gone meanwhile is 'no_link' and the report stays open; a host banned already stays as it was.
// - setLinkDisabled is one conditional write by code (null: no such link).
// - addBan writes a host once: the same host banned twice at once leaves one row, and only the call that
//   wrote it runs its `within` (the audit row). removeBan likewise.
// `within` runs in the write's transaction (on SQLite it must be synchronous); throwing undoes the write.
// On PostgreSQL a committed ban or unban is announced on the change feed (BAN_TOPIC, keys: hosts) by the
// transaction itself; on SQLite the one process that writes keeps its memory as it writes.
import type { Db } from '../db/sqlite'
import { createAbuseStore, type BanRow, type CloseAction, type LinkRef, type OpenReport, type ReportReason, type ReportRow } from './store'

/** The change feed's topic (db/changes.ts) of bans written or lifted: every node reads its bans again. */
export const BAN_TOPIC = 'ban'

export type { BanRow, CloseAction, LinkRef, OpenReport, ReportReason, ReportRow } from './store'

export interface NewReport {
  linkId: number
  code: string
  reason: ReportReason
  text: string
  contact: string
  created: number
}

export interface ReportBounds {
  /** Open reports in all past which a report is refused. */
  maxOpen: number
  /** Open reports of one link past which a report is not stored (the visitor is thanked all the same). */
  maxPerLink: number
}

/** How a report is closed: what was done, by whom, when, and the change made with it (none: dismissed, or done by `within`). */
export interface ReportClose {
  action: CloseAction
  by: number | null
  at: number
  /** The link with this code disabled, with this reason shown to its visitors. */
  disableLink?: { code: string; reason: string }
  /** This host banned (with its subdomains). */
  ban?: { host: string; reason: string }
}

/** What closeReport's change wrote: the link disabled, the ban (null: none asked, or the host was banned already). */
export interface CloseDone {
  link: LinkRef | null
  ban: BanRow | null
}

export interface AbuseRows<Tx> {
  /**
   * The report stored (and `within` run with it), or why not: 'full' (all open reports), 'link_full' (the
   * link's), 'no_link' (the link is gone).
   */
  fileReport(r: NewReport, bounds: ReportBounds, within?: (tx: Tx, row: ReportRow) => unknown): Promise<ReportRow | 'full' | 'link_full' | 'no_link'>
  /** The newest open reports, with their link, owner, clicks and destination. */
  openReports(limit: number): Promise<OpenReport[]>
  openCount(): Promise<number>
  /** One open report with its link (null: closed, or none). */
  openReport(id: number): Promise<OpenReport | null>
  /** Any report, open or closed (null: none). */
  report(id: number): Promise<ReportRow | null>
  /**
   * Closes the report if it is open, makes its change (`disableLink`, `ban`) and runs `within` with both in the
   * same transaction (the audit rows; another feature's change); 'already_closed' (closed by someone else) or
   * 'missing', or 'no_link' (the link to disable is gone): then nothing is written or run.
   */
  closeReport(id: number, close: ReportClose, within?: (tx: Tx, closed: ReportRow, done: CloseDone) => unknown): Promise<ReportRow | 'already_closed' | 'missing' | 'no_link'>
  /** Every banned host, by host. */
  bans(): Promise<BanRow[]>
  /** The ban written (and `within` run), or null: the host was banned already (nothing written or run). */
  addBan(ban: { host: string; reason: string; at: number; by: number | null }, within?: (tx: Tx, row: BanRow) => unknown): Promise<BanRow | null>
  /** True when this call removed the ban (and ran `within`). */
  removeBan(host: string, within?: (tx: Tx) => unknown): Promise<boolean>
  /** Disables the link with this code (a reason shown to visitors) or enables it (null), and runs `within`; null: no such link. */
  setLinkDisabled(code: string, reason: string | null, at: number, within?: (tx: Tx, link: LinkRef) => unknown): Promise<LinkRef | null>
  /** The ids of disabled accounts. */
  disabledAccounts(): Promise<number[]>
  /** A page of destinations after link id `after`, by id (keyset paging). */
  destinations(after: number, limit: number): Promise<{ id: number; long_url: string }[]>
}

/** The SQLite abuse store as it is, behind the async interface; `tx` is the connection inside db.transaction. */
export function sqliteAbuseRows(db: Db): AbuseRows<Db> {
  const store = createAbuseStore(db)
  return {
    fileReport: async (r, bounds, within) =>
      db.transaction(() => {
        if (store.openCount() >= bounds.maxOpen) return 'full' as const
        if (store.openForLink(r.linkId) >= bounds.maxPerLink) return 'link_full' as const
        let row: ReportRow
        try {
          row = store.insertReport(r)
        } catch (err) {
          // The report's one foreign key is its link: deleted since the service found it.
          if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return 'no_link' as const
          throw err
        }
        within?.(db, row)
        return row
      })(),
    openReports: async (limit) => store.openReports(limit),
    openCount: async () => store.openCount(),
    openReport: async (id) => store.openReport(id) ?? null,
    report: async (id) => store.report(id) ?? null,
    closeReport: async (id, c, within) => {
      const noLink = new Error('no_link')
      try {
        return db.transaction(() => {
          const closed = store.closeReport(id, c.action, c.by, c.at)
          if (!closed) return store.report(id) ? ('already_closed' as const) : ('missing' as const)
          const link = c.disableLink ? store.setLinkDisabled(c.disableLink.code, c.disableLink.reason, c.at) : null
          if (c.disableLink && !link) throw noLink // undoes the close
          const ban = c.ban ? store.addBan(c.ban.host, c.ban.reason, c.at, c.by) : null
          within?.(db, closed, { link, ban })
          return closed
        })()
      } catch (err) {
        if (err === noLink) return 'no_link' as const
        throw err
      }
    },
    bans: async () => store.bans(),
    addBan: async (b, within) =>
      db.transaction(() => {
        const row = store.addBan(b.host, b.reason, b.at, b.by) ?? null
        if (row) within?.(db, row)
        return row
      })(),
    removeBan: async (host, within) =>
      db.transaction(() => {
        const removed = store.removeBan(host)
        if (removed) within?.(db)
        return removed
      })(),
    setLinkDisabled: async (code, reason, at, within) =>
      db.transaction(() => {
        const link = store.setLinkDisabled(code, reason, at)
        if (link) within?.(db, link)
        return link
      })(),
    disabledAccounts: async () => store.disabledAccounts(),
    destinations: async (after, limit) => store.destinations(after, limit),
  }
}
