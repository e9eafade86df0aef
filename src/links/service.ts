// The rules of short links: creation, change, deletion, listing and statistics. It takes plain values
// and a caller, returns plain records, and throws AppErrors; it never sees HTTP.
//
// On the async storages (issue 22; the recipe is abuse/service.ts's): the database is reached only through
// LinkStorage (the links, their tags, visits of limited links), ClickCounts (statistics' days and names) and
// the webhook queue's enqueue(tx, …), written in the `within` of the storage call that makes the change, so
// the same service runs on SQLite or PostgreSQL by being handed either engine's storages.
// - Async: create, update, delete, list, get, search, exportPages' pages, total, stats, takeVisit and
//   visitsLeft (limited links only), and resolve on a miss of its cache.
// - Sync: resolve on a hit — the redirect's lookup answers the cached row itself, no Promise, no allocation,
//   so the plain redirect never waits (visit.ts's `hot` hands a miss to the router, which awaits the read that
//   resolve started) — and isExpired, destination and recordClick (memory and the click buffer only).
// - The cache of visited rows is dropped per code on every change this process publishes or hears of
//   (db/changes.ts), and a read that was under way when its code changed does not keep its row.
import type { Caller } from '../kernel/caller'
import { randomBase62 } from '../accounts/service'
import { MAX_NAMES, OTHER } from '../clicks/classify'
import type { ClickRecorder } from '../clicks/recorder'
import type { ClickCounts } from '../clicks/counts'
import { DIMENSIONS, dayOf, type DimNames } from '../clicks/store'
import type { Config } from '../kernel/config'
import { iso } from '../db/sqlite'
import { allWrites } from '../db/sqlite/within'
import { localChangeFeed, type ChangeFeed } from '../db/changes'
import { AppError, invalidParameter, notFound, notOwner } from '../kernel/errors'
import type { Events } from '../kernel/events'
import type { EventType, Outbox } from '../kernel/outbox'
import type { EventWriter } from '../kernel/outbox'
import { createDestinations, type Visitor } from './destinations'
import { CODE_TAKEN, GONE, REFUSED, type LinkChanges, type LinkRow, type LinkStorage, type NameCount } from './storage/contract'
import {
  isReserved,
  MODES,
  ownUrlRules,
  validateAlias,
  validateCode,
  validateExpire,
  validateMode,
  validatePassword,
  validateTag,
  validateMaxVisits,
  validateRules,
  validateSplit,
  validateTags,
  validateTitle,
  validateUrl,
  type Mode,
  type Rule,
  type SplitArm,
  type UrlRules,
} from './validate'

export interface LinkRecord {
  hex: string
  url: string
  long_url: string
  qr: string
  stats: string
  mode: Mode
  created: string
  expires: string | null
  expired: boolean
  password: boolean
  clicks: number
  /** Null while the link works; else why an admin disabled it. */
  disabled: string | null
  /** Its tags, sorted (SPEC §2a); empty without. */
  tags: string[]
  /** The visit limit (null: none) and the visits it has left (null without a limit). */
  max_visits: number | null
  visits_left: number | null
  /** Its redirect rules and A/B split, when it has them (absent otherwise). */
  rules?: Rule[]
  split?: SplitArm[]
  /** 0-200 characters, "" for none. */
  title: string
}

export interface CreateLinkInput {
  url: unknown
  alias?: unknown
  mode?: unknown
  expire?: unknown
  password?: unknown
  tags?: unknown
  max_visits?: unknown
  rules?: unknown
  split?: unknown
  title?: unknown
}

/** What an import tells the account's webhooks, once (SPEC §9 links.imported). */
export interface ImportSummary {
  created: number
  skipped: number
  /** The codes made, in file order: the first IMPORTED_CODES_MAX. */
  codes: string[]
}
export const IMPORTED_CODES_MAX = 1000

const aliasTaken = (alias: string) => new AppError(409, 'alias_taken', `The alias "${alias}" is already in use.`)
const present = (v: unknown) => v !== undefined && v !== null && v !== ''
const DAY_MS = 86_400_000
const DATE = /^\d{4}-\d{2}-\d{2}$/

// Statistics cannot predate the service: the window is kept to years 1970-9999, where every day is a
// plain YYYY-MM-DD (a window reaching into year 0 would print days as "-000001-12-03").
function parseDay(value: unknown, name: string): string {
  const rule = 'a date as YYYY-MM-DD (UTC), from 1970-01-01 to 9999-12-31'
  if (typeof value !== 'string' || !DATE.test(value) || value < '1970-01-01') throw invalidParameter(name, rule)
  const ms = Date.parse(`${value}T00:00:00Z`)
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) throw invalidParameter(name, rule)
  return value
}

/**
 * At most MAX_NAMES names, the busiest, and the rest (with what was stored as OTHER on days that were full)
 * summed as one OTHER entry, placed by its clicks (after its ties). Names of equal clicks in name order.
 */
function topNames(names: Map<string, number>): NameCount[] {
  const sorted = [...names]
    .filter(([name]) => name !== OTHER)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  const top: NameCount[] = sorted.slice(0, MAX_NAMES).map(([name, clicks]) => ({ name, clicks }))
  let rest = names.get(OTHER) ?? 0
  for (let i = MAX_NAMES; i < sorted.length; i++) rest += sorted[i]![1]
  if (rest === 0) return top
  const at = top.findIndex((item) => item.clicks < rest)
  top.splice(at === -1 ? top.length : at, 0, { name: OTHER, clicks: rest })
  return top
}

/** What a statistics answer costs to build, kept briefly per link and window (see `stats`). */
interface WindowAnswer {
  written: number
  days: { date: string; clicks: number; visitors: number }[]
  names: Record<(typeof DIMENSIONS)[number], NameCount[]>
}
const ANSWERS_KEPT = 1000

/** A visited link in memory, and when its row was read (unix ms). */
interface CachedLink {
  row: LinkRow
  at: number
}
/**
 * The longest a visited link is served from memory: every change made through a linkbox process or node is
 * published at once (db/changes.ts); this bounds what is not — a node killed between its commit and its
 * notification, a change made behind the service. Reading a visited code again twice a minute costs nothing.
 */
export const LINK_CACHE_TTL_MS = 30_000

/** The dashboard's list of links: a page of this many, and a search counted up to SEARCH_COUNT_MAX matches. */
export const SEARCH_PAGE_SIZE = 25
export const SEARCH_COUNT_MAX = 10_000
export const MAX_SEARCH_LENGTH = 200
export type LinkSort = 'created' | 'clicks'
/** links.json?q=: the links looked at for one page at most (a rare match costs a bounded scan per page). */
export const LIST_SCAN = 5_000
/** The export reads the links this many at a time. */
export const EXPORT_PAGE = 500

/** A LIKE pattern matching `text` anywhere, with LIKE's own characters (and the escape) taken literally. */
export const containsPattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** What the service is built with: the storages of one engine (db/storages.ts) and the process's parts. */
export interface LinkDeps<Tx> {
  /** The links, their tags and limited links' visits. */
  links: LinkStorage<Tx>
  /** Statistics: the days and names of a link's window. */
  counts: ClickCounts
  /** The webhook events of each change, written in its transaction. */
  queue: EventWriter<Tx>
  config: Config
  recorder: ClickRecorder
  events: Events
  clock?: () => number
  /** Random short codes of a given length (tests replace it to force collisions). */
  randomCode?: (length: number) => string
  /** The argon2id hash of a link password (tests slow it down to hold a request inside the await). */
  hashPassword?: (password: string) => Promise<string>
  /** Rows per generation of the cache of visited links (tests make it tiny). */
  hotGeneration?: number
  /** Who listens for which event (events are built only then), and the deliverer's wake-up after a commit (absent: no webhooks). */
  outbox?: Pick<Outbox, 'wanted' | 'wake'>
  /** Refuses a destination that is banned or on a blocklist (abuse/service.ts), with invalid_url. */
  checkDestination?: (url: string) => void
  /** Whether a link answers 451 (abuse/service.ts): its destination is then shown only to its owner and admins (SPEC §3). */
  stopped?: (row: LinkRow) => boolean
  /** The ISO alpha-2 country of an address or null (geo): for rules with a country condition. */
  country?: (address: string) => string | null
  /** The shared key of a UTC day for A/B splits (clicks/day-keys.ts), or null while this node waits for it. */
  splitKey?: (day: number) => Uint8Array | null
  /**
   * Changes of links between processes and nodes (db/changes.ts): this service publishes the code of each
   * link it changes or deletes, after the commit, and forgets the codes others publish (absent: this
   * process alone, a local feed).
   */
  changes?: ChangeFeed
  /** How long a visited link is served from memory at most before it is read again (the safety net). */
  cacheTtlMs?: number
}

export function createLinkService<Tx>(deps: LinkDeps<Tx>) {
  const { config, recorder, events, outbox, queue, counts } = deps
  const store = deps.links
  const readNow = store.byCodeNow?.bind(store)
  const feed = deps.changes ?? localChangeFeed()
  const cacheTtlMs = deps.cacheTtlMs ?? LINK_CACHE_TTL_MS
  const clock = deps.clock ?? Date.now
  const randomCode = deps.randomCode ?? randomBase62
  const hashPassword = deps.hashPassword ?? ((password: string) => Bun.password.hash(password, 'argon2id'))
  // Answers per link and window, valid while no click of the link has been written since: every write adds
  // to links.clicks or links.bots in the same transaction, so their sum, read with the row, says so. A page
  // polled by many visitors costs one build per write of its link at most. Ids are never reused, so a
  // deleted link's entries can only go stale, never answer for another link.
  const answers = new Map<string, WindowAnswer>()
  const base = config.server.base_url
  // Visits read links far more often than anything changes them, and only this process changes them:
  // keep recently visited rows in memory and drop a row whenever it is updated or deleted. Two
  // generations rather than one Map evicted oldest-first: taking the first key of a Map walks over the
  // deleted entries at its head (~96 µs at 100,000 entries), while replacing a generation costs nothing.
  // A row found in the old generation is copied to the young one; when the young one is full (in rows,
  // or in URL characters: a URL may be 4096 long) it becomes the old one and the old one goes. So the
  // ~GENERATION most recently visited codes are always held, and at most twice that. Each entry keeps the
  // time its row was read: one older than cacheTtlMs is read again, so a change this process never heard
  // of (another process's, or a node's whose notification was lost) is served for cacheTtlMs at most.
  const GENERATION = deps.hotGeneration ?? 65_536
  const GENERATION_CHARS = 8_000_000
  let young = new Map<string, CachedLink>()
  let old = new Map<string, CachedLink>()
  let youngChars = 0
  // Reads of missed codes under way, so that visits of one code at once share one read (the hot path's miss
  // and the router's lookup of the same request among them). Bounded by the requests in flight, and capped.
  const reading = new Map<string, Promise<LinkRow | null>>()
  const READING_MAX = 10_000
  const forget = (code: string) => {
    young.delete(code)
    old.delete(code)
    // A read begun before this change may return the row as it was: it is not kept (see readMissed).
    reading.delete(code)
  }
  const forgetAll = () => {
    young = new Map()
    old = new Map()
    youngChars = 0
    reading.clear()
  }
  const remember = (code: string, entry: CachedLink) => {
    const chars = code.length + entry.row.long_url.length
    if (young.size >= GENERATION || youngChars + chars > GENERATION_CHARS) {
      old = young
      young = new Map()
      youngChars = 0
    }
    young.set(code, entry)
    youngChars += chars
  }
  // Every change of a link, this process's or another's, drops its cached row; a lost connection to the
  // other nodes (onResync) drops them all.
  const stopChanges = feed.subscribe('link', (codes) => codes.forEach(forget), forgetAll)
  /** After the commit of a change of these links: every process's cache drops them (this one's at once). */
  const published = (codes: readonly string[]) => feed.publish('link', codes)
  const urlRules: UrlRules = ownUrlRules(config.server, config.links.blocked_domains)
  const destinations = createDestinations({ clock, country: deps.country ?? (() => null), dayKey: deps.splitKey })
  const checkDestination = deps.checkDestination
  /** Rules and split as stored: the validated arrays as JSON text, null for none. */
  const rulesText = (value: unknown) => {
    const rules = validateRules(value, urlRules, checkDestination)
    return rules.length ? JSON.stringify(rules) : null
  }
  const splitText = (value: unknown) => {
    const split = validateSplit(value, urlRules, checkDestination)
    return split.length ? JSON.stringify(split) : null
  }

  /** A link as the API answers it, with its tags (sorted). */
  function record(row: LinkRow, tags: readonly string[]): LinkRecord {
    const now = clock()
    return {
      hex: row.code,
      url: `${base}/${row.code}`,
      long_url: row.long_url,
      qr: `${base}/qr/${row.code}.png`,
      stats: `${base}/${row.code}+`,
      mode: row.mode,
      created: iso(row.created)!,
      expires: iso(row.expires),
      expired: row.expires !== null && row.expires <= now,
      password: row.password_hash !== null,
      clicks: row.clicks,
      disabled: row.disabled,
      tags: [...tags],
      max_visits: row.max_visits,
      visits_left: row.max_visits === null ? null : Math.max(0, row.max_visits - row.visits_used),
      ...(row.rules ? { rules: JSON.parse(row.rules) as Rule[] } : {}),
      ...(row.split ? { split: JSON.parse(row.split) as SplitArm[] } : {}),
      title: row.title,
    }
  }

  /** Records of several links, their tags read in one statement. */
  async function records(rows: LinkRow[]): Promise<LinkRecord[]> {
    const tags = await store.tagsFor(rows.map((r) => r.id))
    return rows.map((r) => record(r, tags.get(r.id) ?? []))
  }
  /** One link's record, its tags read. */
  const recordOf = async (row: LinkRow) => record(row, await store.tagsOf(row.id))

  const mayChange = (row: LinkRow, caller: Caller) => caller.admin || (row.account_id !== null && row.account_id === caller.accountId)

  async function owned(code: unknown, caller: Caller): Promise<LinkRow> {
    const row = await store.byCode(validateCode(code))
    if (!row) throw notFound(`No link with the code "${code}".`)
    if (!mayChange(row, caller)) throw notOwner()
    return row
  }

  /**
   * The webhook event of a change, written by the storage call's `within` in its transaction when anyone of
   * the account listens for it (the promise of the write: see abuse/service.ts); `heard` says one was.
   */
  function eventWriter() {
    let heard = false
    return {
      write(tx: Tx, type: EventType, accountId: number | null, data: () => Record<string, unknown>, at: number) {
        if (accountId === null || !outbox?.wanted(type, accountId)) return undefined
        heard = true
        return queue.enqueue(tx, { type, accountId, at, data: data() }, clock())
      },
      /** After the commit: the deliverer is woken when an event was written. */
      wake() {
        if (heard) outbox?.wake()
      },
    }
  }

  /** Random codes as creation draws them: 6 characters (62^6 ≈ 5.7e10); after repeated collisions one more, up to 12. */
  function* freshCodes(): Generator<string> {
    for (let length = 6; length <= 12; length++) {
      for (let attempt = 0; attempt < 4; attempt++) {
        const code = randomCode(length)
        if (isReserved(code)) continue
        // No look-up first: a collision is rare (62^6 codes), and the UNIQUE index finds it in the insert.
        yield code
      }
    }
  }

  async function windowAnswer(row: LinkRow, from: string, to: string, span: number): Promise<WindowAnswer> {
    const linkId = row.id
    const key = `${linkId} ${from} ${to}`
    const written = row.clicks + row.bots
    const kept = answers.get(key)
    if (kept && kept.written === written) return kept
    const [daysStored, stored] = await Promise.all([counts.days(linkId, from, to), counts.names(linkId, from, to)])
    const byDay = new Map(daysStored.map((d) => [d.day, d]))
    const days: { date: string; clicks: number; visitors: number }[] = []
    for (let t = Date.parse(`${from}T00:00:00Z`), i = 0; i < span; i++, t += DAY_MS) {
      const date = dayOf(t)
      const d = byDay.get(date)
      days.push({ date, clicks: d?.clicks ?? 0, visitors: d?.visitors ?? 0 })
    }
    const names = {} as WindowAnswer['names']
    for (const dim of DIMENSIONS) names[dim] = topNames((stored as DimNames)[dim])
    const answer: WindowAnswer = { written, days, names }
    if (answers.size >= ANSWERS_KEPT) answers.clear()
    answers.set(key, answer)
    return answer
  }

  /**
   * A row read after a miss, kept: in the young generation alone (a copy past its TTL in the old one goes),
   * or, read as gone, dropped from both.
   */
  function keepRead(code: string, row: LinkRow | null, now: number): LinkRow | null {
    old.delete(code)
    if (row) {
      // Held with the row's own code as its key (equal to `code`: codes compare exactly) and the one string
      // of its mode, so that a row holds no string of the request's and no copy of 'redirect': 62 of the
      // ~390 bytes a cached row took (100,000 rows of the bench's 1M-link data).
      row.mode = MODES.find((m) => m === row.mode) ?? row.mode
      remember(row.code, { row, at: now })
    } else young.delete(code)
    return row
  }

  /** A code missed by the cache, read; kept unless its code changed while the read was under way. */
  function readMissed(code: string, now: number): Promise<LinkRow | null> {
    const under = reading.get(code)
    if (under !== undefined) return under
    const read: Promise<LinkRow | null> = store.byCode(code).then(
      (row) => {
        // Overtaken by a change of the code (or not shared, past READING_MAX): answered, never kept.
        if (reading.get(code) !== read) return row
        reading.delete(code)
        return keepRead(code, row, now)
      },
      (err) => {
        if (reading.get(code) === read) reading.delete(code)
        throw err
      },
    )
    if (reading.size < READING_MAX) reading.set(code, read)
    // Whoever awaits it hears of a failure; a read left with nobody awaiting it must not be an unhandled
    // rejection.
    read.catch(() => {})
    return read
  }

  return {
    /** Rows held in the cache of visited links (both generations; /metrics). */
    get cachedRows() {
      return young.size + old.size
    },
    /** Settles once the creations under way are committed or failed (the app's close, before the database closes). */
    flushCreations: () => store.flush(),
    /** Stops hearing of other processes' changes (the app's close). */
    close: () => stopChanges(),
    /** Transactions that committed creations, and the creations in them. */
    get creationCommits() {
      return store.creations()
    },

    /**
     * `within` runs in the transaction that inserts the link, after the insert and before its webhook event (the
     * pages claim their form token there); when it throws, no link is made. On SQLite it must be synchronous
     * and may run more than once, like the write itself (see storage.ts).
     */
    async create(
      input: CreateLinkInput,
      caller: Caller | null,
      opts: {
        within?: (tx: Tx, link: LinkRow) => unknown
        /** An import's expiry, as a moment (unix ms), instead of `expire`: it may have passed already. */
        expiresAt?: number | null
        /** An import's creation moment (unix ms) from its file, checked by the import, instead of now. */
        createdAt?: number
        /** An import's row: no link.created event (the import sends one links.imported for all its links). */
        quiet?: boolean
      } = {},
    ): Promise<LinkRecord> {
      if (!present(input.url)) throw new AppError(400, 'missing_parameter', 'The parameter "url" is required.')
      const long_url = validateUrl(input.url, urlRules)
      deps.checkDestination?.(long_url)
      const alias = present(input.alias) ? validateAlias(input.alias) : null
      const mode = present(input.mode) ? validateMode(input.mode) : 'redirect'
      const expire = present(input.expire) ? validateExpire(input.expire) : 0
      const tags = present(input.tags) ? validateTags(input.tags) : []
      const max_visits = present(input.max_visits) ? validateMaxVisits(input.max_visits) : null
      const rules = present(input.rules) ? rulesText(input.rules) : null
      const split = present(input.split) ? splitText(input.split) : null
      const title = present(input.title) ? validateTitle(input.title) : ''
      const password = input.password !== undefined ? validatePassword(input.password, { allowEmpty: true }) : null
      const password_hash = password ? await hashPassword(password) : null
      const now = clock()
      const fields = {
        long_url,
        account_id: caller?.accountId ?? null,
        mode,
        password_hash,
        created: opts.createdAt ?? now,
        expires: opts.expiresAt !== undefined ? opts.expiresAt : expire ? now + expire * 1000 : null,
        max_visits,
        rules,
        split,
        title,
      }
      // Committed with the other creations of this event-loop turn on SQLite; answered once that commit is
      // done. The webhook event is written in the same transaction: a creation that fails leaves none. What
      // may refuse (the caller's `within`: a form token already used) goes first.
      const event = eventWriter()
      const within = (tx: Tx, inserted: LinkRow) => {
        const claimed = opts.within?.(tx, inserted)
        if (opts.quiet) return claimed
        return allWrites([claimed, event.write(tx, 'link.created', inserted.account_id, () => ({ ...record(inserted, tags) }), inserted.created)])
      }
      const row = alias ? await store.insert({ ...fields, code: alias }, tags, within) : await store.insertFresh(fields, freshCodes, tags, within)
      if (row === CODE_TAKEN) {
        if (alias) throw aliasTaken(alias)
        throw new AppError(503, 'busy', 'Could not find a free short code; try again.')
      }
      event.wake()
      const rec = record(row, tags)
      events.emit('link.created', { link: { ...rec }, accountId: row.account_id })
      return rec
    },

    async update(input: { code: unknown } & Omit<CreateLinkInput, 'alias' | 'url'> & { url?: unknown }, caller: Caller) {
      const row = await owned(input.code, caller)
      const changes: LinkChanges = {}
      if (input.url !== undefined) {
        changes.long_url = validateUrl(input.url, urlRules)
        deps.checkDestination?.(changes.long_url)
      }
      if (input.mode !== undefined) changes.mode = validateMode(input.mode)
      const tags = input.tags !== undefined ? validateTags(input.tags) : undefined
      if (input.max_visits !== undefined) changes.max_visits = validateMaxVisits(input.max_visits)
      if (input.rules !== undefined) changes.rules = rulesText(input.rules)
      if (input.split !== undefined) changes.split = splitText(input.split)
      if (input.title !== undefined && input.title !== null) changes.title = validateTitle(input.title)
      if (input.expire !== undefined) {
        const expire = validateExpire(input.expire)
        changes.expires = expire ? clock() + expire * 1000 : null
      }
      if (input.password !== undefined) {
        const password = validatePassword(input.password, { allowEmpty: true })
        // The hash takes ~100 ms, and the link may be deleted, replaced or changed meanwhile: what was read
        // above is only a promise that is checked again below.
        changes.password_hash = password ? await hashPassword(password) : null
      }
      // In one transaction: the link read above is read again by its id AND code (ids are never reused, and a
      // code can be taken again after a delete), its owner checked again, and only the fields that were sent
      // are written, so a concurrent update of other fields stands.
      const event = eventWriter()
      let tagsNow: readonly string[] = []
      const updated = await store.change(row, changes, tags, clock(), (current) => mayChange(current, caller), (tx, written, now) => {
        tagsNow = now
        return event.write(tx, 'link.updated', written.account_id, () => ({ ...record(written, now) }), written.updated)
      })
      if (updated === GONE) throw notFound(`No link with the code "${row.code}".`)
      if (updated === REFUSED) throw notOwner()
      published([row.code])
      event.wake()
      const rec = record(updated, tagsNow)
      events.emit('link.updated', { link: { ...rec }, accountId: updated.account_id })
      return rec
    },

    async delete(input: { code: unknown }, caller: Caller) {
      const row = await owned(input.code, caller)
      // Click aggregates go with it (ON DELETE CASCADE); the webhook event is written in the same transaction.
      const event = eventWriter()
      const removed = await store.remove(row, (tx, gone) => {
        if (!mayChange(gone.row, caller)) throw notOwner()
        return event.write(tx, 'link.deleted', gone.row.account_id, () => ({ ...record(gone.row, gone.tags) }), clock())
      })
      if (!removed) throw notFound(`No link with the code "${row.code}".`)
      published([row.code])
      event.wake()
      events.emit('link.deleted', { hex: row.code, accountId: row.account_id })
      return { hex: row.code, deleted: true }
    },

    /**
     * One import at a time per account, on every node (SPEC §2a): the account's import lock taken for
     * `holder` for `leaseMs`, or 429 rate_limited with Retry-After while another import holds it.
     */
    async claimImport(caller: Caller, holder: string, leaseMs: number) {
      const now = clock()
      if (await store.claimImport(caller.accountId, holder, now + leaseMs, now)) return
      const until = (await store.importUntil(caller.accountId)) ?? now + 1000
      // The lease's end is only a bound (an import of 50,000 rows takes a few seconds): at most 10 s.
      const wait = Math.min(Math.max(1, Math.ceil((until - now) / 1000)), 10)
      throw new AppError(429, 'rate_limited', `Another import of this account is under way: one import at a time; try again in ${wait} s.`, { 'Retry-After': String(wait) })
    },
    /** Keeps the lock while the import runs; false when it was lost (its lease ran out and another took it). */
    renewImport: (caller: Caller, holder: string, leaseMs: number) => store.renewImport(caller.accountId, holder, clock() + leaseMs),
    /** Frees the lock and, in the same transaction, writes the import's one links.imported event (SPEC §9). */
    async finishImport(caller: Caller, holder: string, summary: ImportSummary | null) {
      const event = eventWriter()
      const at = clock()
      await store.releaseImport(caller.accountId, holder, summary
        ? (tx) => event.write(tx, 'links.imported', caller.accountId, () => ({
            account: caller.accountName, created: summary.created, skipped: summary.skipped, codes: summary.codes.slice(0, IMPORTED_CODES_MAX),
          }), at)
        : undefined)
      event.wake()
    },

    /** Drops the cached rows of links deleted behind the service (an account deleted with its links). */
    forget(codes: readonly string[]) {
      published(codes)
    },

    /**
     * links.json: a page of the caller's links, newest first. `tag` keeps the links with that tag (along an
     * index); `q` those whose code, destination or a tag contains it (case-insensitive), looking at no more
     * than LIST_SCAN links per page: such a page may hold fewer than `limit` links while `next` goes on.
     */
    async list(input: { limit?: unknown; cursor?: unknown; tag?: unknown; q?: unknown }, caller: Caller) {
      let limit = 100
      if (present(input.limit)) {
        const s = String(input.limit)
        if (typeof input.limit === 'object' || !/^\d{1,3}$/.test(s) || Number(s) < 1 || Number(s) > 500)
          throw invalidParameter('limit', 'a whole number from 1 to 500')
        limit = Number(s)
      }
      let before = Number.MAX_SAFE_INTEGER
      if (present(input.cursor)) {
        const s = String(input.cursor)
        if (typeof input.cursor === 'object' || !/^\d{1,15}$/.test(s))
          throw invalidParameter('cursor', 'the "next" value of a previous answer')
        before = Number(s)
      }
      const tag = present(input.tag) ? validateTag(input.tag) : ''
      let q = ''
      if (present(input.q)) {
        if (typeof input.q !== 'string' || [...input.q].length > MAX_SEARCH_LENGTH)
          throw invalidParameter('q', `text of at most ${MAX_SEARCH_LENGTH} characters`)
        q = input.q.trim()
      }
      const count = await store.count(caller.accountId)
      if (q) {
        const { rows, floor, full } = await store.pageMatching(caller.accountId, before, tag, containsPattern(q), limit + 1, LIST_SCAN)
        const more = rows.length > limit
        const pageRows = more ? rows.slice(0, limit) : rows
        // Past the page's last link, or (the window looked at without filling the page) past the window.
        const next = more ? pageRows[pageRows.length - 1]!.id : full ? floor : null
        return { links: await records(pageRows), count, next: next === null ? null : String(next) }
      }
      const rows = await (tag ? store.pageByTag(caller.accountId, tag, before, limit + 1) : store.page(caller.accountId, before, limit + 1))
      const more = rows.length > limit
      const pageRows = more ? rows.slice(0, limit) : rows
      return {
        links: await records(pageRows),
        count,
        next: more ? String(pageRows[pageRows.length - 1]!.id) : null,
      }
    },

    /**
     * Every link of the caller, oldest first, read EXPORT_PAGE at a time by id (a million links never sit in
     * memory at once): each call of the returned function gives the next page, empty at the end.
     */
    exportPages(caller: Caller) {
      let after = 0
      return async (): Promise<LinkRecord[]> => {
        const rows = await store.exportPage(caller.accountId, after, EXPORT_PAGE)
        if (rows.length > 0) after = rows[rows.length - 1]!.id
        return records(rows)
      }
    },

    /** One of the caller's links (or any, for an admin), as links.json lists it: 404/403 otherwise. */
    async get(input: { code: unknown }, caller: Caller): Promise<LinkRecord> {
      return recordOf(await owned(input.code, caller))
    },

    /**
     * The dashboard's list: the caller's own links whose code, destination or a tag contains `q`
     * (case-insensitive for ASCII letters) and that have the tag `tag` (when given), newest or most clicked
     * first, SEARCH_PAGE_SIZE a page. `total` is exact without a filter (a counter) and counted up to
     * SEARCH_COUNT_MAX with one (`capped` then says there are more); a page past the end answers the last page.
     */
    async search(input: { q?: string; tag?: string; sort?: LinkSort; page?: number }, caller: Caller) {
      const q = (input.q ?? '').trim()
      const tag = input.tag ? validateTag(input.tag) : ''
      if ([...q].length > MAX_SEARCH_LENGTH) throw invalidParameter('q', `at most ${MAX_SEARCH_LENGTH} characters`)
      const sort: LinkSort = input.sort === 'clicks' ? 'clicks' : 'created'
      const pattern = q ? containsPattern(q) : '%'
      const filtered = q !== '' || tag !== ''
      const counted = await (filtered ? store.searchCount(caller.accountId, pattern, tag, SEARCH_COUNT_MAX + 1) : store.count(caller.accountId))
      const capped = filtered && counted > SEARCH_COUNT_MAX
      const total = capped ? SEARCH_COUNT_MAX : counted
      const pages = Math.max(1, Math.ceil(total / SEARCH_PAGE_SIZE))
      const page = Math.min(Math.max(1, Math.floor(input.page ?? 1) || 1), pages)
      const offset = (page - 1) * SEARCH_PAGE_SIZE
      const rows = await store.search(caller.accountId, pattern, tag, sort, SEARCH_PAGE_SIZE, offset)
      return { links: await records(rows), q, tag, sort, page, pages, total, capped, offset, perPage: SEARCH_PAGE_SIZE }
    },

    /** The service's clock (unix ms). */
    now: () => clock(),

    /** How many links are stored (for /metrics): read from the per-account counters, not counted. */
    total: () => store.total(),

    /** `flush: false` reads what is written (at most a second behind): for the public page, which any
     *  visitor may load, so that a view never costs a write. */
    async stats(input: { code: unknown; from?: unknown; to?: unknown }, caller: Caller | null, opts: { flush?: boolean } = {}) {
      const code = validateCode(input.code)
      const today = dayOf(clock())
      const to = present(input.to) ? parseDay(input.to, 'to') : today
      const from = present(input.from)
        ? parseDay(input.from, 'from')
        : dayOf(Date.parse(`${to}T00:00:00Z`) - 29 * DAY_MS)
      const span = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1
      if (span < 1) throw invalidParameter('from', 'a date on or before "to"')
      if (span > 366) throw invalidParameter('from', 'at most 366 days before "to"')
      let row = await store.byCode(code)
      if (!row) throw notFound(`No link with the code "${code}".`)
      // Pending clicks of this link are at most a second old; writing them first makes the answer exact.
      // Only this link's, in a write of their own: a polled answer that flushed everything forced a write of
      // every link per request (10 answers/s at p50 90 ms, and redirects fell to 0.63 of alone). While the database cannot
      // be written this is skipped (or fails quietly): the answer is read all the same.
      if (opts.flush !== false && recorder.hasPending(row.id)) {
        await recorder.flushLinkIfWritable(row.id)
        row = await store.byCode(code) // with the clicks just written; or gone, deleted meanwhile
        if (!row) throw notFound(`No link with the code "${code}".`)
      }
      const { days, names } = await windowAnswer(row, from, to, span)
      const isOwner = !!caller && mayChange(row, caller)
      // A password-protected link, or one stopped by an admin, a ban or a blocklist, shows where it leads
      // nowhere public (SPEC §3, §4): not its destination, nor those of its rules and split.
      const hidden = !isOwner && (row.password_hash !== null || (deps.stopped?.(row) ?? false))
      return {
        hex: row.code,
        url: `${base}/${row.code}`,
        long_url: hidden ? null : row.long_url,
        created: iso(row.created),
        clicks: row.clicks,
        bots: row.bots,
        from,
        to,
        days,
        sources: names.source,
        devices: names.device,
        browsers: names.browser,
        os: names.os,
        countries: names.country,
        // For a link with rules or a split (SPEC §2a), even before its first visit; also for one that had them in the window.
        ...(!hidden && (names.destination.length > 0 || row.rules || row.split) ? { destinations: names.destination } : {}),
      }
    },

    /**
     * The link behind a visited code (null when unknown, or a reserved name): the cached row itself on a hit
     * (synchronous: the redirect never waits); on a miss the stored row read at once where the engine can
     * (SQLite), else a promise of it (PostgreSQL; visits of one code at once share one read).
     */
    resolve(code: string): LinkRow | null | Promise<LinkRow | null> {
      const now = clock()
      const hit = young.get(code)
      if (hit !== undefined && now - hit.at < cacheTtlMs) return hit.row
      const held = hit === undefined ? old.get(code) : undefined
      if (held !== undefined && now - held.at < cacheTtlMs) {
        remember(code, held)
        return held.row
      }
      // No link has a reserved name (validate.ts; random codes skip them): /healthz costs no read.
      if (isReserved(code)) return null
      if (readNow === undefined) return readMissed(code, now)
      // SQLite: read at once, on this thread; nothing can overtake a read that does not wait.
      return keepRead(code, readNow(code), now)
    },

    isExpired(row: LinkRow) {
      return row.expires !== null && row.expires <= clock()
    },

    /** Where this visitor goes: for a link with rules or a split, what they decide; else long_url. */
    destination(row: LinkRow, visitor: Visitor): string {
      if (row.rules === null && row.split === null) return row.long_url
      return destinations.choose(row, visitor)
    },

    /**
     * A person's visit of a limited link takes one of its visits, in the database (the cached row's count
     * is never trusted): false when none is left. Storage failures throw (a 503 page): a visit that cannot
     * be counted is not given.
     */
    takeVisit(row: LinkRow): Promise<boolean> {
      return store.takeVisit(row.id)
    },

    /** The visits a limited link has left, read from the database (HEAD and bots look without taking). */
    async visitsLeft(row: LinkRow): Promise<number> {
      return (await store.visitsLeft(row.id)) ?? 0
    },

    /**
     * One click: the visitor's user agent, referrer and address (for the country and the day's visitors,
     * never stored), and the destination a rule or split chose ('' for the link's own).
     */
    recordClick(row: LinkRow, ua: string, referer: string, address: string, destination = '') {
      const at = clock()
      // The account and code go with the link-day's counters, for link.clicked (decided at flush time).
      recorder.record(row.id, at, ua, referer, row.account_id ?? -1, row.code, address, destination)
      if (events.has('link.clicked'))
        events.emit('link.clicked', { hex: row.code, linkId: row.id, accountId: row.account_id, at })
    },
  }
}
export type LinkService = ReturnType<typeof createLinkService<any>>
