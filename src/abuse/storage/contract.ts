// The storage contract of abuse handling (migration 11), one for both engines; the promises are in the design notes.

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

/** A link as a write about it names it: its id, code and short domain ('' the default). */
export interface LinkRef {
  id: number
  code: string
  domain: string
}

/** The change feed's topic (db/changes.ts) of bans written or lifted: every node reads its bans again. */
export const BAN_TOPIC = 'ban'

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
  /** The report's link disabled (while it still has this code), with this reason shown to its visitors. */
  disableLink?: { code: string; reason: string }
  /** This host banned (with its subdomains). */
  ban?: { host: string; reason: string }
}

/** What closeReport's change wrote: the link disabled, the ban (null: none asked, or the host was banned already). */
export interface CloseDone {
  link: LinkRef | null
  ban: BanRow | null
}

/** The admin's list of every link (issue 38): its orders and what it can be narrowed to. */
export const LINK_LIST_SORTS = ['newest', 'oldest', 'clicks', 'code', 'owner'] as const
export type LinkListSort = (typeof LINK_LIST_SORTS)[number]
export const LINK_LIST_SHOWS = ['all', 'anonymous', 'disabled', 'reported'] as const
export type LinkListShow = (typeof LINK_LIST_SHOWS)[number]

/** The LIKE pattern of a search ('' for none): the text anywhere, LIKE's own characters taken literally. */
export const searchPattern = (text: string) => (text === '' ? '' : `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)

export interface LinkListQuery {
  /** Part of the code, the destination or the owner's name, any case ('' for every link); matched literally. */
  search: string
  sort: LinkListSort
  show: LinkListShow
  offset: number
  limit: number
}

/** A link as the admin's list shows it: whose (null: anonymous or its account deleted), disabled why, open reports. */
export interface ListedLink {
  id: number
  code: string
  long_url: string
  created: number
  clicks: number
  owner: string | null
  disabled: string | null
  reports: number
}

export interface AbuseRows<Tx> {
  /**
   * The report stored (and `within` run with it), or why not: 'full' (all open reports), 'link_full' (the
   * link's), 'no_link' (the link is gone).
   */
  fileReport(
    r: NewReport,
    bounds: ReportBounds,
    within?: (tx: Tx, row: ReportRow) => unknown,
  ): Promise<ReportRow | 'full' | 'link_full' | 'no_link'>
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
  closeReport(
    id: number,
    close: ReportClose,
    within?: (tx: Tx, closed: ReportRow, done: CloseDone) => unknown,
  ): Promise<ReportRow | 'already_closed' | 'missing' | 'no_link'>
  /** Every banned host, by host. */
  bans(): Promise<BanRow[]>
  /** The ban written (and `within` run), or null: the host was banned already (nothing written or run). */
  addBan(
    ban: { host: string; reason: string; at: number; by: number | null },
    within?: (tx: Tx, row: BanRow) => unknown,
  ): Promise<BanRow | null>
  /** True when this call removed the ban (and ran `within`). */
  removeBan(host: string, within?: (tx: Tx) => unknown): Promise<boolean>
  /** Disables the link with this code on `domain` ('' the default; a reason shown to visitors) or enables it (null), and runs `within`; null: no such link. */
  setLinkDisabled(
    code: string,
    reason: string | null,
    at: number,
    within?: (tx: Tx, link: LinkRef) => unknown,
    domain?: string,
  ): Promise<LinkRef | null>
  /** A page of every link matching the query, in its order (ties by id), and how many match in all. */
  listLinks(q: LinkListQuery): Promise<{ total: number; links: ListedLink[] }>
  /**
   * Disables (a reason) or enables (null) the link with this id only while it is as the admin saw it (enabled, to
   * disable; disabled, to enable), and runs `within`, in one transaction; null: gone, or changed meanwhile.
   */
  setLinkDisabledIf(
    id: number,
    reason: string | null,
    at: number,
    within?: (tx: Tx, link: LinkRef) => unknown,
  ): Promise<LinkRef | null>
  /** The ids of disabled accounts. */
  disabledAccounts(): Promise<number[]>
  /** A page of destinations after link id `after`, by id (keyset paging). */
  destinations(after: number, limit: number): Promise<{ id: number; long_url: string }[]>
}
