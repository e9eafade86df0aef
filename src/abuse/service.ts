// Abuse handling (SPEC §3, §12): reports, an admin's disables and bans, blocklists; the verdict per link its visitors
// meet is memory.ts's (the redirect pays a WeakMap lookup), handed out as is; design notes: abuse.
import { auditRow, SYSTEM, type AuditEntry, type AuditRows, type Who } from '../audit'
import type { Config } from '../kernel/config'
import { AppError, badRequest, notFound } from '../kernel/errors'
import type { LinkService } from '../links'
import type { EventWriter, Outbox } from '../kernel/outbox'
import type { ChangeFeed } from '../db/changes'
import { allWritten } from '../db/written'
import { loadBlocklist, type Blocklist } from './blocklist'
import { createVerdictMemory, EMPTY } from './memory'
import { destinationHost, hostToBan, matchHost } from './verdict'
import {
  CLOSE_ACTIONS,
  REPORT_REASONS,
  type AbuseRows,
  type CloseAction,
  type CloseDone,
  type LinkRef,
  type OpenReport,
  type ReportClose,
  type ReportReason,
  type ReportRow,
  type LinkListQuery,
} from './storage/contract'

export const MAX_REPORT_TEXT = 1000
export const MAX_REPORT_CONTACT = 200
export const MAX_DISABLE_REASON = 300
/** Open reports kept for one link: past it, the admin has enough to act on, and more are not stored. */
export const MAX_OPEN_REPORTS_PER_LINK = 50
/** Open reports kept in all (what outsiders can grow): past it, reports are refused until admins close some. */
export const MAX_OPEN_REPORTS = 10_000

export interface AbuseDeps<Tx> {
  /** The abuse rows (storage/contract.ts), and the storages whose rows its changes write in their transactions. */
  rows: AbuseRows<Tx>
  audit: AuditRows<Tx>
  queue: EventWriter<Tx>
  config: Config
  /** The link service's cached rows: a code's, and dropping a changed one's. */
  links: Pick<LinkService, 'resolve' | 'forget' | 'domains'>
  clock: () => number
  /** Who listens for link.reported (its index), and the deliverer's wake-up after a commit. */
  outbox?: Pick<Outbox, 'wanted' | 'wake'>
  /** Changes made by other nodes (db/changes.ts): bans and disabled accounts read again when told. */
  changes?: ChangeFeed
}

/** What a report is closed with, besides its action: the service's own changes, or another feature's. */
export interface CloseWith<Tx> {
  /** The report's link disabled (by its code), with this reason shown to visitors. */
  disableLink?: { code: string; reason: string }
  /** A host banned (as banHost takes it), with this reason. */
  ban?: { host: string; reason: string }
  /**
   * Another feature's change (the owner's account disabled), run in the close's transaction after it: it
   * throws to undo the close. On SQLite it must be synchronous (storage/sqlite.ts refuses a pending promise).
   */
  change?: (tx: Tx) => unknown
}

export function createAbuseService<Tx>({ rows, audit, queue, config, links, clock, outbox, changes }: AbuseDeps<Tx>) {
  /** The audit row of a change, written in its transaction (a promise: see the design notes). */
  const record = (tx: Tx, by: Who, entry: AuditEntry) => audit.insert(tx, auditRow(by, entry, clock()))
  const memory = createVerdictMemory({ rows, changes })
  const { verdict, hostVerdict, banChanged, readAccounts } = memory
  /** Open reports, for /metrics: read at start and after each filing and closing of this process. */
  let openKnown = 0
  // Visits answered 451 are counted with the other visits (linkbox_visits_total{outcome="unavailable"}).
  const counts = { refusedBanned: 0, refusedListed: 0, reports: 0 }

  const countOpen = async () => {
    openKnown = await rows.openCount()
  }
  /** After a filing or a closing that committed: the gauge read again, a failure of which fails nothing. */
  const recount = () => void countOpen().catch(() => {})
  /** The memory the visit path reads, loaded: awaited before serving (a redirect before it sees no bans). */
  const ready = Promise.all([memory.ready, countOpen()]).then(() => {})

  const disableText = (reason: string | null) =>
    reason === null
      ? null
      : reason.trim().slice(0, MAX_DISABLE_REASON) || 'It was disabled by the administrator of this service.'

  return {
    /** Resolves once the bans, the disabled accounts and the count of open reports are in memory. */
    ready,

    /** What a visitor of this link meets: null (the link works) or why it answers 451. The visit's one lookup; never awaits. */
    verdict,
    /** The verdicts' generation (memory.ts): a verdict taken at one holds while it is current. */
    verdictGeneration: memory.generation,

    /** At creation and change: a banned or listed destination is refused with invalid_url, naming why. */
    checkDestination(url: string) {
      const v = hostVerdict(destinationHost(url))
      if (!v) return
      if (v.kind === 'banned') {
        counts.refusedBanned++
        throw badRequest(
          'invalid_url',
          `The parameter "url" points to ${v.host}, which the administrator of this service has banned${v.reason ? ` (${v.reason})` : ''}.`,
        )
      }
      counts.refusedListed++
      throw badRequest(
        'invalid_url',
        `The parameter "url" points to ${v.host}, which is on this service's blocklist of phishing and malware hosts.`,
      )
    },

    /** A visitor's report of a link: stored with the time and nothing of the visitor but what they typed. */
    async report(input: {
      code: string
      /** The short domain ('' the default) the report came to. */
      domain?: string
      reason: unknown
      text: unknown
      contact: unknown
    }): Promise<{ id: number | null }> {
      const row = await links.resolve(input.code, input.domain ?? '')
      if (!row) throw notFound('There is no short link at this address.')
      const reason = String(input.reason ?? '')
      if (!(REPORT_REASONS as readonly string[]).includes(reason))
        throw badRequest('invalid_parameter', `The field "reason" must be one of: ${REPORT_REASONS.join(', ')}.`)
      const text = typeof input.text === 'string' ? input.text.trim() : ''
      if ([...text].length > MAX_REPORT_TEXT)
        throw badRequest('invalid_parameter', `The field "text" must be at most ${MAX_REPORT_TEXT} characters.`)
      const contact = typeof input.contact === 'string' ? input.contact.trim() : ''
      if ([...contact].length > MAX_REPORT_CONTACT)
        throw badRequest('invalid_parameter', `The field "contact" must be at most ${MAX_REPORT_CONTACT} characters.`)
      const now = clock()
      const owner = row.account_id
      const heard = owner !== null && (outbox?.wanted('link.reported', owner) ?? false)
      // Bounds, checked inside the write: reports are what anyone on the internet can add to. The owner hears of
      // it in the same transaction (their endpoints subscribed to link.reported).
      const saved = await rows.fileReport(
        { linkId: row.id, code: row.code, reason: reason as ReportReason, text, contact, created: now },
        { maxOpen: MAX_OPEN_REPORTS, maxPerLink: MAX_OPEN_REPORTS_PER_LINK },
        heard
          ? (tx, r) =>
              queue.enqueue(
                tx,
                {
                  type: 'link.reported',
                  accountId: owner,
                  at: now,
                  data: {
                    hex: row.code,
                    url: `${links.domains.baseOf(row.domain)}/${row.code}`,
                    reason,
                    text,
                    report: r.id,
                  },
                },
                now,
              )
          : undefined,
      )
      if (saved === 'full')
        throw new AppError(503, 'busy', 'Too many reports are waiting for the administrator: try again later.', {
          'Retry-After': '3600',
        })
      if (saved === 'no_link') throw notFound('There is no short link at this address.')
      counts.reports++
      // Past the per-link bound the visitor is thanked all the same: the link has enough reports waiting.
      if (saved === 'link_full') return { id: null }
      if (heard) outbox?.wake()
      recount()
      return { id: saved.id }
    },

    openReports: (limit = 200): Promise<OpenReport[]> => rows.openReports(limit),
    openReportCount: () => rows.openCount(),
    /** For /metrics: the open reports as last counted (at start, and after each filing and closing here). */
    openReportsKnown: () => openKnown,
    /** One open report with its link, owner, clicks and destination (null: closed, or no such report). */
    openReport: (id: number): Promise<OpenReport | null> => rows.openReport(id),

    /**
     * Closes an open report with what was done about it — dismissed, its link disabled (`disableLink`), its
     * destination's host banned (`ban`), or its owner's account disabled (`change`) — in one transaction with
     * the change and their audit rows: both or neither. 409 when someone else closed it meanwhile (nothing
     * changed), 404 when there is no such report or the link to disable is gone. The banned host, if any.
     */
    async closeReport(
      id: number,
      action: CloseAction,
      adminId: number | null,
      by: Who = SYSTEM,
      what: CloseWith<Tx> = {},
    ): Promise<{ closed: ReportRow; host: string | null }> {
      if (!(CLOSE_ACTIONS as readonly string[]).includes(action))
        throw badRequest('invalid_parameter', `The field "action" must be one of: ${CLOSE_ACTIONS.join(', ')}.`)
      const close: ReportClose = { action, by: adminId, at: clock() }
      if (what.disableLink)
        close.disableLink = { code: what.disableLink.code, reason: disableText(what.disableLink.reason)! }
      if (what.ban)
        close.ban = { host: hostToBan(what.ban.host), reason: what.ban.reason.trim().slice(0, MAX_DISABLE_REASON) }
      let done: CloseDone = { link: null, ban: null }
      const closed = await rows.closeReport(id, close, (tx, report, d) => {
        done = d
        // What may refuse first: a throw then leaves no write of this `within` started (and none dangling on PostgreSQL).
        return allWritten([
          what.change?.(tx),
          d.link &&
            record(tx, by, {
              action: 'link.disable',
              target: `link ${d.link.code}`,
              detail: close.disableLink!.reason,
            }),
          d.ban && record(tx, by, { action: 'host.ban', target: `host ${d.ban.host}`, detail: d.ban.reason }),
          record(tx, by, { action: 'report.close', target: `report ${id} (link ${report.code})`, detail: action }),
        ])
      })
      if (closed === 'missing') throw notFound('There is no such report.')
      if (closed === 'already_closed')
        throw new AppError(409, 'closed', 'That report was closed by someone else meanwhile: nothing was changed.')
      if (closed === 'no_link') throw notFound(`No link with the code "${close.disableLink!.code}".`)
      if (done.link) links.forget([done.link])
      if (done.ban) banChanged(done.ban.host, done.ban)
      recount()
      // Another feature's change (an account disabled): what it changed of the visit path's memory is read before
      // answering, so the very next visit sees it (a failed read is the timer's to retry: the close stands).
      if (what.change) await readAccounts().catch(() => {})
      return { closed, host: close.ban?.host ?? null }
    },

    /** An admin disables a link (reason shown to visitors) or enables it again. */
    async setLinkDisabled(code: string, reason: string | null, by: Who = SYSTEM, domain = ''): Promise<LinkRef> {
      const text = disableText(reason)
      const link = await rows.setLinkDisabled(
        code,
        text,
        clock(),
        (tx, l) =>
          record(tx, by, {
            action: text === null ? 'link.enable' : 'link.disable',
            target: `link ${l.domain ? `${l.domain}/` : ''}${l.code}`,
            detail: text ?? '',
          }),
        domain,
      )
      if (!link) throw notFound(`No link with the code "${code}"${domain ? ` on ${domain}` : ''}.`)
      // The link service's cached row goes: the next visit reads the row again, and its verdict with it.
      links.forget([link])
      return link
    },

    /** The admin's list of every link, a page at a time (the storage orders and counts it). */
    listLinks: (q: LinkListQuery) => rows.listLinks(q),
    /**
     * From that list: disables (reason) or enables (null) the link with this id only while it is still as the list
     * showed it, checked in the write's transaction with its audit row; null: gone or changed meanwhile.
     */
    async setListedLinkDisabled(id: number, reason: string | null, by: Who = SYSTEM): Promise<LinkRef | null> {
      const text = reason === null ? null : disableText(reason)
      const link = await rows.setLinkDisabledIf(id, text, clock(), (tx, l) =>
        record(tx, by, {
          action: text === null ? 'link.enable' : 'link.disable',
          target: `link ${l.code}`,
          detail: text ?? '',
        }),
      )
      if (link) links.forget([link])
      return link
    },

    bans: () => rows.bans(),
    /** Bans a destination host and its subdomains: every link to it answers 451, new ones are refused. */
    async banHost(input: string, reason: string, adminId: number | null, by: Who = SYSTEM) {
      const host = hostToBan(input)
      const why = reason.trim().slice(0, MAX_DISABLE_REASON)
      const added = await rows.addBan({ host, reason: why, at: clock(), by: adminId }, (tx) =>
        record(tx, by, { action: 'host.ban', target: `host ${host}`, detail: why }),
      )
      // In memory as soon as it is stored: the very next visit of a link to it answers 451.
      if (added) banChanged(host, added)
      return { host, added: added !== null }
    },
    /** Lifts the ban of a host as stored, or else as banHost would spell what was typed ([2001:DB8::1] lifts 2001:db8::1). */
    async unbanHost(input: string, by: Who = SYSTEM) {
      const lift = async (host: string) => {
        const removed = await rows.removeBan(host, (tx) =>
          record(tx, by, { action: 'host.unban', target: `host ${host}` }),
        )
        if (removed) banChanged(host, null)
        return removed
      }
      if (await lift(input)) return true
      let canonical: string | null = null
      try {
        canonical = hostToBan(input)
      } catch {
        // Not a host: there is nothing else to lift.
      }
      return canonical !== null && canonical !== input ? lift(canonical) : false
    },

    /** Reads links.blocklist_files again (start, SIGHUP): what it holds, and how many stored links it catches now. */
    async reloadBlocklist(): Promise<{ hosts: number; files: Blocklist['files']; ms: number; caught: number }> {
      const next = config.links.blocklist_files.length
        ? await loadBlocklist(config.links.blocklist_files, clock)
        : { ...EMPTY, loadedAt: clock() }
      memory.setBlocklist(next)
      let caught = 0
      // A page at a time, yielding between pages: a million links must not hold up the redirects for seconds.
      for (let after = 0; next.set.size > 0; ) {
        const page = await rows.destinations(after, 5_000)
        for (const link of page) {
          const host = destinationHost(link.long_url)
          if (host !== null && matchHost(next.set, host) !== null) caught++
        }
        if (page.length < 5_000) break
        after = page[page.length - 1]!.id
        await new Promise((resolve) => setImmediate(resolve))
      }
      return { hosts: next.set.size, files: next.files, ms: next.ms, caught }
    },
    blocklist: memory.blocklist,

    /** For /metrics. */
    counts,

    /** Stops reading the disabled accounts and the bans (before the database closes). */
    close() {
      memory.close()
    },
  }
}
export type AbuseService = ReturnType<typeof createAbuseService<unknown>>
export { hostToBan, verdictText, type Verdict } from './verdict'
