// The audit log (SPEC §7): who changed what. A row is part of its change, written by AuditRows.insert(tx, …) in
// the storage call's `within`; a row of no change goes through insertAlone. Design notes: ARCHITECTURE (audit).
import { AppError, invalidParameter } from '../kernel/errors'
import type { AuditInsert, AuditQuery, AuditRow, AuditRows } from './storage/contract'

export type Actor =
  | { kind: 'account'; id: number; name: string }
  /** The command line (whoever can run it on the machine). */
  | { kind: 'cli' }
  /** A failed sign-in: nobody, with the name that was tried. */
  | { kind: 'anonymous'; name: string }
  /** The service itself (a marketplace user's account made on first use, a change a test makes directly). */
  | { kind: 'system'; name: string }

/** Who does a change, and from where: the actor and the client address (shared.clientIp), or "cli". */
export interface Who {
  actor: Actor
  address: string
}

export const CLI: Who = { actor: { kind: 'cli' }, address: 'cli' }
/** The service itself: what a service call without a `by` records (tests setting up rows; never the pages or the CLI). */
export const SYSTEM: Who = { actor: { kind: 'system', name: 'linkbox' }, address: '' }

/** A signed-in account (the dashboard's session, the API's caller) at a client address. */
export const byAccount = (account: { accountId: number; accountName: string }, address: string): Who => ({
  actor: { kind: 'account', id: account.accountId, name: account.accountName },
  address,
})

/** What a row says was done: a stable dotted action (ACTIONS), what to, and more words when they help. */
export interface AuditEntry {
  action: Action
  target: string
  detail?: string
}

/** Every action the log records, grouped by what it is about (the page's filter offers them). */
export const ACTIONS = [
  'account.create',
  'account.disable',
  'account.enable',
  'account.delete',
  'account.password',
  'account.admin',
  'key.create',
  'key.update',
  'key.revoke',
  'webhook.create',
  'webhook.update',
  'webhook.rotate',
  'webhook.redeliver',
  'webhook.delete',
  'webhook.disable',
  'signin.ok',
  'signin.failed',
  'report.close',
  'link.disable',
  'link.enable',
  'host.ban',
  'host.unban',
  'cookies.add',
  'cookies.remove',
  'settings.reload',
] as const
export type Action = (typeof ACTIONS)[number]

/** How targets read: `account bob (#3)`, `key lbk_AbCdEfG… (#4) of bob`, `webhook 5 of bob: https://…`. */
export const accountTarget = (name: string, id: number) => `account ${name} (#${id})`
export const keyTarget = (prefix: string, id: number, owner: string) => `key ${prefix}… (#${id}) of ${owner}`
export const webhookTarget = (id: number, owner: string, url: string) => `webhook ${id} of ${owner}: ${url}`

/** Rows on one page of the log (the page and `linkbox audit` read in pages of this many at most). */
export const AUDIT_PAGE_MAX = 100
export const AUDIT_PAGE_DEFAULT = 50
const SWEEP_BATCH = 1_000
const DAY_MS = 86_400_000
const DATE = /^\d{4}-\d{2}-\d{2}$/
const ACTION_FILTER = /^[a-z_]{1,32}(\.[a-z_]{1,32})?$/

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** A day as YYYY-MM-DD (UTC) to its first millisecond; an AppError naming `field` otherwise. */
export function dayStart(value: string, field: string): number {
  const rule = 'a date as YYYY-MM-DD (UTC)'
  if (!DATE.test(value)) throw invalidParameter(field, rule)
  const ms = Date.parse(`${value}T00:00:00Z`)
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) throw invalidParameter(field, rule)
  return ms
}

/** What a page of the log asks for, as typed (the dashboard's GET form, the CLI's options). */
export interface AuditFilter {
  actor?: string
  action?: string
  /** YYYY-MM-DD, from its start (UTC). */
  from?: string
  /** YYYY-MM-DD, up to its end (UTC). */
  to?: string
  /** Rows older than this row id (the "Older" link). */
  before?: string
  limit?: number
}

/**
 * The row of a change, clipped as the log keeps it: what a service on the async storage hands to
 * AuditRows.insert(tx, …) inside its change's `within` (audit/storage.ts).
 */
export function auditRow(who: Who, entry: AuditEntry, at: number): AuditInsert {
  const a = who.actor
  return {
    at,
    actorKind: a.kind,
    actorId: a.kind === 'account' ? a.id : null,
    actorName: a.kind === 'cli' ? 'cli' : clip(a.name, 64),
    action: entry.action,
    target: clip(entry.target, 300),
    detail: clip(entry.detail ?? '', 500),
    address: clip(who.address, 100),
  }
}

/** A page of the log: its rows, newest first, and the `before` of the page after it (null: none). */
export interface AuditPage {
  rows: AuditRow[]
  next: string | null
}

/** What a page of the log asks the store for (one more row than `limit`: is there a page after it?); an AppError naming the field otherwise. */
function pageQuery(filter: AuditFilter): { query: AuditQuery; limit: number } {
  const actor = filter.actor?.trim() || null
  if (actor !== null && actor.length > 64)
    throw invalidParameter('actor', 'an account name (at most 64 characters), or cli')
  const action = filter.action?.trim() || null
  if (action !== null && !ACTION_FILTER.test(action))
    throw invalidParameter('action', `an action such as ${ACTIONS[0]}, or a group such as account`)
  const from = filter.from ? dayStart(filter.from, 'from') : 0
  const to = filter.to ? dayStart(filter.to, 'to') + DAY_MS : Number.MAX_SAFE_INTEGER
  if (from >= to) throw new AppError(400, 'invalid_parameter', 'The parameter "to" must be the day of "from" or later.')
  let before = Number.MAX_SAFE_INTEGER
  if (filter.before) {
    if (!/^[1-9][0-9]{0,15}$/.test(filter.before)) throw invalidParameter('before', 'the row id of an "older" link')
    before = Number(filter.before)
  }
  const limit = Math.min(
    Math.max(1, Math.floor(filter.limit ?? AUDIT_PAGE_DEFAULT) || AUDIT_PAGE_DEFAULT),
    AUDIT_PAGE_MAX,
  )
  // An exact action is the range [a, a + "\u0001"); a group ("account") is ["account.", "account/").
  const range =
    action === null
      ? null
      : action.includes('.')
        ? { from: action, to: `${action}\u0001` }
        : { from: `${action}.`, to: `${action}/` }
  return { query: { actor, action: range, from, to, before, limit: limit + 1 }, limit }
}

/** The page from the rows pageQuery's query found. */
function pageOf(rows: AuditRow[], limit: number): AuditPage {
  const more = rows.length > limit
  if (more) rows.pop()
  return { rows, next: more ? String(rows[rows.length - 1]!.id) : null }
}

/**
 * The log as its page, the sweep and `since` read it, through AuditRows (storage.ts: SQLite's or
 * PostgreSQL's, as the composition root hands it): every call is async. The rows themselves are written by
 * the services, in their changes' transactions (AuditRows.insert).
 */
export function createAuditReader(
  rows: Pick<AuditRows<unknown>, 'page' | 'since' | 'removeOlder'>,
  clock: () => number = Date.now,
) {
  return {
    /** One page of the log, newest first, filtered; `next` is the `before` of the page after it (null: none). */
    async page(filter: AuditFilter = {}): Promise<AuditPage> {
      const { query, limit } = pageQuery(filter)
      return pageOf(await rows.page(query), limit)
    },

    /** Rows from `from` (unix ms) on, oldest first, after row `afterId`. */
    since: (from: number, afterId = 0, limit = AUDIT_PAGE_MAX) => rows.since(from, afterId, limit),

    /** Deletes rows older than `keepDays` days (audit.keep_days), a batch a statement; returns how many went. */
    async sweep(keepDays: number, now = clock()): Promise<number> {
      const before = now - keepDays * DAY_MS
      let removed = 0
      for (;;) {
        const n = await rows.removeOlder(before, SWEEP_BATCH)
        removed += n
        if (n < SWEEP_BATCH) return removed
      }
    },
  }
}
export type AuditReader = ReturnType<typeof createAuditReader>

/** The actor of a row as people read it: "bob", "cli", "nobody (tried "x")", "linkbox (system)". */
export function actorText(row: Pick<AuditRow, 'actor_kind' | 'actor_name'>): string {
  switch (row.actor_kind) {
    case 'account':
      return row.actor_name ?? '?'
    case 'cli':
      return 'cli'
    case 'anonymous':
      return `nobody (tried "${row.actor_name ?? ''}")`
    case 'system':
      return `${row.actor_name ?? 'linkbox'} (system)`
  }
}

/** A row as one JSON object (the CLI's --json lines): ISO time, the actor with its kind and id. */
export function auditJson(row: AuditRow) {
  return {
    id: row.id,
    time: new Date(row.at).toISOString(),
    actor: { kind: row.actor_kind, id: row.actor_id, name: row.actor_name },
    action: row.action,
    target: row.target,
    detail: row.detail,
    address: row.address,
  }
}
