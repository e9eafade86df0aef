// The rules of short links: creation, change and deletion, with their webhook events; it composes the link
// cache, listing and statistics into one service. Plain values and a caller in, records out; never HTTP.
import type { Caller } from '../kernel/caller'
import { randomBase62 } from '../accounts'
import { localChangeFeed } from '../db/changes'
import { allWritten } from '../db/written'
import { AppError, notFound, notOwner } from '../kernel/errors'
import { createLinkCache, LINK_CACHE_TTL_MS } from './cache'
import { codeKey, createDomains } from './domains'
import { createHotCache } from './hot-cache'
import { createChecker, createInputRules } from './check'
import { createDestinations, type Visitor } from './destinations'
import { linkEventWriters } from './event-writer'
import { createImportLock } from './import-lock'
import { createListing } from './listing'
import { createMetadata } from './metadata'
import { createRecords, type LinkRecord } from './record'
import { createStatistics } from './statistics'
import { createTagging } from './tags'
import { CODE_TAKEN, GONE, REFUSED, type LinkChanges, type LinkRow } from './storage/contract'
import {
  isReserved,
  ownUrlRules,
  validateCode,
  validateExpire,
  validateMode,
  validatePassword,
  MAX_TAGS,
  validateTag,
  validateTags,
  validateTitle,
  type UrlRules,
} from './validate'
import { validateMaxVisits } from './validate-routing'
import type { CreateLinkInput, LinkDeps } from './service-inputs'
import { createOgImagePool, type OgImagePool } from './og-image-pool'
import { previewChanges } from './preview'

const aliasTaken = (alias: string) => new AppError(409, 'alias_taken', `The alias "${alias}" is already in use.`)
const previewNeedsKey = (field: string) =>
  new AppError(
    401,
    'missing_key',
    `The parameter "${field}" needs an API key: a link made without one has no social preview.`,
  )
const present = (v: unknown) => v !== undefined && v !== null && v !== ''

export function createLinkService<Tx>(deps: LinkDeps<Tx>) {
  const { config, recorder, events, outbox, queue, counts } = deps
  const store = deps.links
  const clock = deps.clock ?? Date.now
  const randomCode = deps.randomCode ?? randomBase62
  const hashPassword = deps.hashPassword ?? ((password: string) => Bun.password.hash(password, 'argon2id'))
  const domains = createDomains(config)
  // What the plain redirect reads, compact (hot-cache.ts); the row cache serves the slow path (pages, the API)
  // and tells the compact one of every change it hears of.
  const hot = createHotCache({
    store,
    clock,
    ttlMs: deps.cacheTtlMs ?? LINK_CACHE_TTL_MS,
    generation: deps.hotGeneration,
    stopped: deps.stopped,
    gateGeneration: deps.gateGeneration,
  })
  const cache = createLinkCache({
    store,
    feed: deps.changes ?? localChangeFeed(),
    clock,
    generation: deps.hotGeneration,
    ttlMs: deps.cacheTtlMs,
    alongside: hot,
  })
  const published = cache.published
  const urlRules: UrlRules = ownUrlRules(config.server, config.links.blocked_domains)
  const destinations = createDestinations({ clock, country: deps.country ?? (() => null), dayKey: deps.splitKey })
  const checkDestination = deps.checkDestination
  const { rulesText, splitText, checked, destinationChanges } = createInputRules(urlRules, checkDestination)
  const { record, records, recordOf } = createRecords(domains, clock, store)
  const problems = createChecker(urlRules, checkDestination)
  // Preview images are re-encoded on a thread started at the first upload (og-image-pool.ts).
  let pool: OgImagePool | null = null
  const ogPool = () => (pool ??= createOgImagePool())

  const mayChange = (row: LinkRow, caller: Caller) =>
    caller.admin || (row.account_id !== null && row.account_id === caller.accountId)

  /** The link with `code` on the domain a `domain` parameter names, the caller's (or any, for an admin). */
  async function owned(code: unknown, caller: Caller, domain?: unknown): Promise<LinkRow> {
    const on = domains.named(domain)
    const row = await store.byCode(validateCode(code), on)
    if (!row) throw notFound(`No link with the code "${code}"${on ? ` on ${on}` : ''}.`)
    if (!mayChange(row, caller)) throw notOwner()
    return row
  }

  const listing = createListing(store, { records, domains })
  const statistics = createStatistics({ store, counts, recorder, clock, domains, mayChange, stopped: deps.stopped })
  /** After a change's commit: every process's caches drop the link. */
  const changed = (row: { code: string; domain: string }) => published([codeKey(row.domain, row.code)])

  const eventWriter = linkEventWriters<Tx>(outbox, queue, clock)
  const tagging = createTagging({ store, clock, events, record, published, eventWriter })
  const importLock = createImportLock({ store, clock, eventWriter })
  // The destination's title of a keyed link made without one, fetched after the commit (metadata.ts).
  const metadata = createMetadata({ store, config, clock, events, record, published, eventWriter }, deps.metadata)

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

  return {
    /** Every value's problem at once under its parameter's rules (check.ts), for forms; nothing is written. */
    problems,
    /**
     * What create would refuse, without writing (an import's preview): the same checks, and an alias already
     * taken; the answer may change before a creation (the creation checks again).
     */
    async check(input: CreateLinkInput): Promise<void> {
      const { alias } = checked(input)
      const domain = domains.named(input.domain)
      if (alias !== null && (await store.byCode(alias, domain))) throw aliasTaken(alias)
    },
    /** The short domains (SPEC §13): the visit, the pages and the dashboard read a request's and a link's. */
    domains,
    /** Rows held in the cache of visited links (both generations; /metrics). */
    get cachedRows() {
      return cache.rows + hot.rows
    },
    /** Settles once the creations under way are committed or failed (the app's close, before the database closes). */
    flushCreations: () => store.flush(),
    /** Stops hearing of other processes' changes (the app's close). */
    close: () => {
      cache.close()
      pool?.close()
    },
    /** Transactions that committed creations, and the creations in them. */
    get creationCommits() {
      return store.creations()
    },

    /**
     * `within` runs in the transaction that inserts the link, after the insert and before its webhook event (the
     * pages claim their form token there); when it throws, no link is made. On SQLite it must be synchronous
     * and may run more than once, like the write itself (see storage/sqlite.ts).
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
      const { long_url, alias, mode, expire, tags, max_visits, rules, split, title, password, expired_url } =
        checked(input)
      const domain = domains.named(input.domain)
      const password_hash = password ? await hashPassword(password) : null
      // A made-up card on a link nobody owns is a phishing kit: a social preview needs an account.
      if (!caller)
        for (const field of ['og_title', 'og_description', 'og_image'] as const)
          if (present(input[field])) throw previewNeedsKey(field)
      const preview = await previewChanges(input, ogPool)
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
        domain,
        meta_due: metadata.due(caller, title, opts.quiet),
        expired_url,
        ...preview.fields,
      }
      // Committed with the other creations of this event-loop turn on SQLite; answered once that commit is
      // done. The webhook event is written in the same transaction: a creation that fails leaves none. What
      // may refuse (the caller's `within`: a form token already used) goes first.
      const event = eventWriter()
      const within = (tx: Tx, inserted: LinkRow) => {
        const claimed = opts.within?.(tx, inserted)
        const image = preview.image ? store.putImage(tx, inserted.id, preview.image) : undefined
        if (opts.quiet) return allWritten([claimed, image])
        return allWritten([
          claimed,
          image,
          event.write(tx, 'link.created', inserted.account_id, () => ({ ...record(inserted, tags) }), inserted.created),
        ])
      }
      const row = alias
        ? await store.insert({ ...fields, code: alias }, tags, within)
        : await store.insertFresh(fields, freshCodes, tags, within)
      if (row === CODE_TAKEN) {
        if (alias) throw aliasTaken(alias)
        throw new AppError(503, 'busy', 'Could not find a free short code; try again.')
      }
      event.wake()
      if (row.meta_due !== null) metadata.wake()
      const rec = record(row, tags)
      // A copy for listeners (none by default): only when one is there.
      if (events.has('link.created')) events.emit('link.created', { link: { ...rec }, accountId: row.account_id })
      return rec
    },

    async update(
      input: { code: unknown } & Omit<CreateLinkInput, 'alias' | 'url'> & { url?: unknown },
      caller: Caller,
      retagged?: (tags: string[]) => readonly string[],
    ) {
      const row = await owned(input.code, caller, input.domain)
      const changes: LinkChanges = {}
      Object.assign(changes, destinationChanges(input, row.long_url))
      if (input.mode !== undefined) changes.mode = validateMode(input.mode)
      const tags = retagged ?? (input.tags !== undefined ? validateTags(input.tags) : undefined)
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
      const preview = await previewChanges(input, ogPool)
      Object.assign(changes, preview.fields)
      // In one transaction: the link read above is read again by its id AND code (ids are never reused, and a
      // code can be taken again after a delete), its owner checked again, and only the fields that were sent
      // are written, so a concurrent update of other fields stands.
      const event = eventWriter()
      let tagsNow: readonly string[] = []
      const updated = await store.change(
        row,
        changes,
        tags,
        clock(),
        (current) => mayChange(current, caller),
        (tx, written, now) => {
          tagsNow = now
          return allWritten([
            preview.image !== undefined ? store.putImage(tx, written.id, preview.image) : undefined,
            event.write(tx, 'link.updated', written.account_id, () => ({ ...record(written, now) }), written.updated),
          ])
        },
      )
      if (updated === GONE) throw notFound(`No link with the code "${row.code}".`)
      if (updated === REFUSED) throw notOwner()
      changed(row)
      event.wake()
      const rec = record(updated, tagsNow)
      events.emit('link.updated', { link: { ...rec }, accountId: updated.account_id })
      return rec
    },

    /**
     * Adds a tag to a link or removes one (the dashboard's bulk actions): the tags read and written in the
     * change's transaction, with link.updated as update sends it; 400 when the link would hold over MAX_TAGS.
     */
    async retag(input: { code: unknown; domain?: unknown; add?: unknown; remove?: unknown }, caller: Caller) {
      const add = present(input.add) ? validateTag(input.add) : null
      const drop = present(input.remove) ? validateTag(input.remove, 'remove') : null
      return this.update({ code: input.code, domain: input.domain }, caller, (tags) => {
        const next = tags.filter((t) => t !== drop && t !== add).concat(add ? [add] : [])
        return next.length > MAX_TAGS ? validateTags(next.join(',')) : next
      })
    },

    async delete(input: { code: unknown; domain?: unknown }, caller: Caller) {
      const row = await owned(input.code, caller, input.domain)
      // Click aggregates go with it (ON DELETE CASCADE); the webhook event is written in the same transaction.
      const event = eventWriter()
      const removed = await store.remove(row, (tx, gone) => {
        if (!mayChange(gone.row, caller)) throw notOwner()
        return event.write(tx, 'link.deleted', gone.row.account_id, () => ({ ...record(gone.row, gone.tags) }), clock())
      })
      if (!removed) throw notFound(`No link with the code "${row.code}".`)
      changed(row)
      event.wake()
      events.emit('link.deleted', { hex: row.code, domain: row.domain, accountId: row.account_id })
      return { hex: row.code, deleted: true }
    },

    ...importLock,

    /** Drops the cached rows of links changed or deleted behind the service (an account deleted with its links). */
    forget(links: readonly { code: string; domain: string }[]) {
      published(links.map((l) => codeKey(l.domain, l.code)))
    },

    list: listing.list,
    exportPages: listing.exportPages,

    /** One of the caller's links (or any, for an admin), as links.json lists it: 404/403 otherwise. */
    async get(input: { code: unknown; domain?: unknown }, caller: Caller): Promise<LinkRecord> {
      return recordOf(await owned(input.code, caller, input.domain))
    },

    search: listing.search,
    matchingCodes: listing.matchingCodes,
    ...tagging,
    /** The title fetch: started and stopped with the service's listening (feature.ts). */
    metadata,

    /** A link's preview image (link_images), or null. */
    previewImage: (row: LinkRow) => store.image(row.id),

    /** The service's clock (unix ms). */
    now: () => clock(),

    /** How many links are stored (for /metrics): read from the per-account counters, not counted. */
    total: () => store.total(),

    stats: statistics.stats,

    resolve: cache.resolve,
    /** The plain redirect's read of a code (hot-cache.ts): a row to read at once, NOT_PLAIN or null. */
    hotLink: hot.find,

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
export type LinkService = ReturnType<typeof createLinkService<unknown>>
