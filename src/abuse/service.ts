// Abuse handling for a shortener on the open internet (SPEC §3, §12; issue 26): visitors report links, an
// admin disables a link, bans a destination host or disables an account, and the owner's blocklist files
// refuse listed destinations. What a visitor meets is one verdict per link — live, or 451 with the reason —
// worked out once per link and kept beside the cached row until a ban, a list or an account changes, so the
// redirect pays a WeakMap lookup for it.
import { createAuditLog, SYSTEM, type Who } from '../audit/service'
import type { Config } from '../config'
import type { Db } from '../db'
import { AppError, badRequest, notFound } from '../errors'
import type { LinkService } from '../links/service'
import type { LinkRow } from '../links/store'
import type { Outbox } from '../webhooks/outbox'
import { HostSet, loadBlocklist, normalizeHost, type Blocklist } from './blocklist'
import { CLOSE_ACTIONS, createAbuseStore, REPORT_REASONS, type CloseAction, type OpenReport, type ReportReason } from './store'

export const MAX_REPORT_TEXT = 1000
export const MAX_REPORT_CONTACT = 200
export const MAX_DISABLE_REASON = 300
/** Open reports kept for one link: past it, the admin has enough to act on, and more are not stored. */
export const MAX_OPEN_REPORTS_PER_LINK = 50
/** Open reports kept in all (what outsiders can grow): past it, reports are refused until admins close some. */
export const MAX_OPEN_REPORTS = 10_000
/** How often the set of disabled accounts is read again (a CLI in another process may change it). */
const ACCOUNTS_RECHECK_MS = 1000

/** The destinations a link's row can send visitors to: long_url, then its rules' and split's urls (validated JSON). */
function destinationsOf(row: LinkRow): string[] {
  const urls = [row.long_url]
  for (const json of [row.rules, row.split]) {
    if (!json) continue
    try {
      for (const item of JSON.parse(json) as { url?: unknown }[]) if (typeof item?.url === 'string') urls.push(item.url)
    } catch {
      // Stored only after validation (links/validate.ts): never malformed.
    }
  }
  return urls
}

export type Verdict =
  | { kind: 'disabled'; reason: string }
  | { kind: 'banned'; host: string; reason: string }
  | { kind: 'listed'; host: string }
  | { kind: 'account' }

export interface AbuseDeps {
  db: Db
  config: Config
  links: LinkService
  clock: () => number
  outbox?: Outbox
}

const EMPTY: Blocklist = { set: new HostSet(0), files: [], loadedAt: 0, ms: 0 }

/** The host of a stored destination, as the lists spell hosts; null for one that does not parse. */
function destinationHost(url: string): string | null {
  try {
    return normalizeHost(new URL(url).hostname.replace(/^\[|\]$/g, ''))
  } catch {
    return null
  }
}

export function createAbuseService({ db, config, links, clock, outbox }: AbuseDeps) {
  const store = createAbuseStore(db)
  // Every admin action is written with its audit row, in one transaction (audit/service.ts).
  const audit = createAuditLog(db, clock)
  let blocklist = EMPTY
  let bans = new Map<string, string>()
  let banned = new HostSet(0)
  let disabledAccounts = new Set<number>()
  let accountsReadAt = -Infinity
  /** Bumped whenever a ban, the lists or the disabled accounts change: every cached verdict is then stale. */
  let generation = 0
  const verdicts = new WeakMap<LinkRow, { generation: number; verdict: Verdict | null }>()
  // Visits answered 451 are counted with the other visits (linkbox_visits_total{outcome="unavailable"}).
  const counts = { refusedBanned: 0, refusedListed: 0, reports: 0 }

  function readBans() {
    bans = new Map(store.bans().map((b) => [b.host, b.reason]))
    banned = new HostSet(bans.size)
    for (const host of bans.keys()) banned.add(host)
    generation++
  }
  readBans()

  function freshAccounts() {
    const now = clock()
    if (now - accountsReadAt < ACCOUNTS_RECHECK_MS) return
    accountsReadAt = now
    const ids = store.disabledAccounts()
    if (ids.length !== disabledAccounts.size || ids.some((id) => !disabledAccounts.has(id))) {
      disabledAccounts = new Set(ids)
      generation++
    }
  }

  /** Why a host may not be a destination, or null. */
  function hostVerdict(host: string | null): Extract<Verdict, { host: string }> | null {
    if (host === null) return null
    const ban = banned.match(host)
    if (ban !== null) return { kind: 'banned', host: ban, reason: bans.get(ban) ?? '' }
    const listed = blocklist.set.match(host)
    return listed !== null ? { kind: 'listed', host: listed } : null
  }

  function compute(row: LinkRow): Verdict | null {
    if (row.disabled !== null) return { kind: 'disabled', reason: row.disabled }
    if (row.account_id !== null && disabledAccounts.has(row.account_id)) return { kind: 'account' }
    if (banned.size === 0 && blocklist.set.size === 0) return null
    // Every place the link may send a visitor: its own destination and those of its rules and split (a
    // host banned after the link was made must not be reached through a rule either).
    for (const url of destinationsOf(row)) {
      const v = hostVerdict(destinationHost(url))
      if (v) return v
    }
    return null
  }

  return {
    /** What a visitor of this link meets: null (the link works) or why it answers 451. The visit's one lookup. */
    verdict(row: LinkRow): Verdict | null {
      freshAccounts()
      const kept = verdicts.get(row)
      if (kept && kept.generation === generation) return kept.verdict
      const verdict = compute(row)
      verdicts.set(row, { generation, verdict })
      return verdict
    },


    /** At creation and change: a banned or listed destination is refused with invalid_url, naming why. */
    checkDestination(url: string) {
      const v = hostVerdict(destinationHost(url))
      if (!v) return
      if (v.kind === 'banned') {
        counts.refusedBanned++
        throw badRequest('invalid_url', `The parameter "url" points to ${v.host}, which the administrator of this service has banned${v.reason ? ` (${v.reason})` : ''}.`)
      }
      counts.refusedListed++
      throw badRequest('invalid_url', `The parameter "url" points to ${v.host}, which is on this service's blocklist of phishing and malware hosts.`)
    },

    /** A visitor's report of a link: stored with the time and nothing of the visitor but what they typed. */
    report(input: { code: string; reason: unknown; text: unknown; contact: unknown }): { id: number | null } {
      const row = links.resolve(input.code)
      if (!row) throw notFound('There is no short link at this address.')
      const reason = String(input.reason ?? '')
      if (!(REPORT_REASONS as readonly string[]).includes(reason))
        throw badRequest('invalid_parameter', `The field "reason" must be one of: ${REPORT_REASONS.join(', ')}.`)
      const text = typeof input.text === 'string' ? input.text.trim() : ''
      if ([...text].length > MAX_REPORT_TEXT) throw badRequest('invalid_parameter', `The field "text" must be at most ${MAX_REPORT_TEXT} characters.`)
      const contact = typeof input.contact === 'string' ? input.contact.trim() : ''
      if ([...contact].length > MAX_REPORT_CONTACT)
        throw badRequest('invalid_parameter', `The field "contact" must be at most ${MAX_REPORT_CONTACT} characters.`)
      const now = clock()
      const saved = db.transaction(() => {
        // Bounds, checked inside the write: reports are what anyone on the internet can add to.
        if (store.openCount() >= MAX_OPEN_REPORTS)
          throw new AppError(503, 'busy', 'Too many reports are waiting for the administrator: try again later.', { 'Retry-After': '3600' })
        if (store.openForLink(row.id) >= MAX_OPEN_REPORTS_PER_LINK) return null
        const r = store.insertReport({ linkId: row.id, code: row.code, reason: reason as ReportReason, text, contact, created: now })
        // The owner hears of it in the same transaction (their endpoints subscribed to link.reported).
        outbox?.enqueue('link.reported', row.account_id, { hex: row.code, url: `${config.server.base_url}/${row.code}`, reason, text, report: r.id }, now)
        return r
      })()
      counts.reports++
      // Past the per-link bound the visitor is thanked all the same: the link has enough reports waiting.
      return { id: saved?.id ?? null }
    },

    openReports: (limit = 200): OpenReport[] => store.openReports(limit),
    openReportCount: () => store.openCount(),
    /** One open report with its link, owner, clicks and destination (null: closed, or no such report). */
    openReport: (id: number): OpenReport | null => store.openReport(id) ?? null,

    /**
     * Closes an open report with what was done about it: dismissed, or its link disabled, its destination's host
     * banned, or its owner's account disabled (the caller does that part and says so). Null when it was not open.
     */
    closeReport(id: number, action: CloseAction, adminId: number | null, by: Who = SYSTEM) {
      if (!(CLOSE_ACTIONS as readonly string[]).includes(action)) throw badRequest('invalid_parameter', `The field "action" must be one of: ${CLOSE_ACTIONS.join(', ')}.`)
      const report = store.report(id)
      if (!report) throw notFound('There is no such report.')
      return db.transaction(() => {
        const closed = store.closeReport(id, action, adminId, clock()) ?? null
        if (closed) audit.record(by, { action: 'report.close', target: `report ${id} (link ${report.code})`, detail: action })
        return closed
      })()
    },

    /**
     * Closes an open report together with what was done about it: `change` (disable the link, ban the host,
     * disable the owner) runs first, in the same transaction, so both are done or neither (a report closed
     * by another admin meanwhile undoes the change: 409). Returns what `change` returned.
     */
    closeReportWith<T>(id: number, action: CloseAction, adminId: number | null, by: Who, change: () => T): T {
      try {
        return db.transaction(() => {
          const result = change()
          if (!this.closeReport(id, action, adminId, by)) throw new AppError(409, 'closed', 'That report was closed by someone else meanwhile: nothing was changed.')
          return result
        })()
      } finally {
        readBans() // a ban made in `change` and undone with it leaves the memory too
      }
    },

    /** An admin disables a link (reason shown to visitors) or enables it again. */
    setLinkDisabled(code: string, reason: string | null, by: Who = SYSTEM) {
      const text = reason === null ? null : reason.trim().slice(0, MAX_DISABLE_REASON) || 'It was disabled by the administrator of this service.'
      return db.transaction(() => {
        const row = links.setDisabled(code, text)
        if (!row) throw notFound(`No link with the code "${code}".`)
        audit.record(by, { action: text === null ? 'link.enable' : 'link.disable', target: `link ${row.code}`, detail: text ?? '' })
        return row
      })()
    },

    bans: () => store.bans(),
    /** Bans a destination host and its subdomains: every link to it answers 451, new ones are refused. */
    banHost(input: string, reason: string, adminId: number | null, by: Who = SYSTEM) {
      const host = normalizeHost(input.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').split(/[/:?#]/)[0] ?? '')
      if (!host) throw badRequest('invalid_parameter', 'The field "host" must be a host name, such as phish.example.')
      const why = reason.trim().slice(0, MAX_DISABLE_REASON)
      try {
        const added = db.transaction(() => {
          const row = store.addBan(host, why, clock(), adminId)
          if (row) audit.record(by, { action: 'host.ban', target: `host ${host}`, detail: why })
          return row
        })()
        return { host, added: added !== null }
      } finally {
        // After the commit (or the rollback): the bans in memory are the ones stored.
        readBans()
      }
    },
    unbanHost(host: string, by: Who = SYSTEM) {
      try {
        return db.transaction(() => {
          const removed = store.removeBan(host)
          if (removed) audit.record(by, { action: 'host.unban', target: `host ${host}` })
          return removed
        })()
      } finally {
        readBans()
      }
    },

    /** Reads links.blocklist_files again (start, SIGHUP): what it holds, and how many stored links it catches now. */
    async reloadBlocklist(): Promise<{ hosts: number; files: Blocklist['files']; ms: number; caught: number }> {
      const next = config.links.blocklist_files.length ? await loadBlocklist(config.links.blocklist_files, clock) : { ...EMPTY, loadedAt: clock() }
      blocklist = next
      generation++
      let caught = 0
      // A page at a time, yielding between pages: a million links must not hold up the redirects for seconds.
      for (let after = 0; next.set.size > 0; ) {
        const page = store.destinations(after, 5_000)
        for (const link of page) if (next.set.match(destinationHost(link.long_url) ?? '') !== null) caught++
        if (page.length < 5_000) break
        after = page[page.length - 1]!.id
        await new Promise((resolve) => setImmediate(resolve))
      }
      return { hosts: next.set.size, files: next.files, ms: next.ms, caught }
    },
    blocklist: () => blocklist,

    /** For /metrics. */
    counts,
  }
}
export type AbuseService = ReturnType<typeof createAbuseService>

/** The 451 page's words for a verdict: why, never the destination. */
export function verdictText(v: Verdict): string {
  switch (v.kind) {
    case 'disabled':
      return `The administrator of this service disabled this short link: ${v.reason}`
    case 'banned':
      return `This short link leads to a site that the administrator of this service has banned${v.reason ? `: ${v.reason}` : '.'}`
    case 'listed':
      return 'This short link leads to a site on a blocklist of phishing and malware sites, so this service does not send visitors there.'
    case 'account':
      return 'The account that made this short link has been disabled by the administrator of this service.'
  }
}
