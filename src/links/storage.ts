// Short links' storage behind one async interface, on either engine (issue 22, SPEC §11): the links, their
// tags, the dashboard's search, links.json's pages by cursor, the export's pages and the visits of limited
// links. The SQLite implementation below wraps today's synchronous store (store.ts) as it is; the PostgreSQL
// one is storage-postgres.ts. One test suite (test/db/link-storage.test.ts) runs against both.
//
// What both promise:
// - ids are never reused (AUTOINCREMENT, an identity column): a deleted link's id never names another link,
//   which is what makes "the row read earlier, read again by id AND code" a re-check.
// - insert writes the link, its tags and whatever `within` writes (the webhook event, a page's form token) in
//   one transaction; a code already in use is the outcome CODE_TAKEN, with nothing written, on both engines
//   (SQLite: the UNIQUE error of links.code the service has always caught; PostgreSQL: ON CONFLICT (code) DO
//   NOTHING, so two nodes inserting one code at once leave exactly one row, the second waiting for the
//   first's commit and then finding the code taken — or free, when the first rolled back).
// - change, setTags and remove re-read the link by id and code inside their transaction, with a row lock on
//   PostgreSQL (FOR NO KEY UPDATE / FOR UPDATE), and decide on what that read returned: gone, not the
//   caller's (`allowed` is the service's rule), or changed. Only the fields present in `changes` are written
//   (a concurrent change of other fields stands). Tags are replaced whole under the link's lock: two nodes
//   setting different tag sets at once end with one of the two sets, never a mix.
// - takeVisit is ONE conditional write (visits_used < max_visits): however many requests on however many
//   nodes race for a limited link's last visits, exactly max_visits of them are given.
// - search and pageMatching match `pattern` (a LIKE pattern: containsPattern escapes %, _ and \ with a
//   backslash) case-insensitively for ASCII letters only (SQLite's LIKE; PostgreSQL's ILIKE on COLLATE "C"
//   text), so both engines give the same rows in the same order.
// - count and total read the per-owner counters the schema's triggers keep (link_counts); on PostgreSQL the
//   triggers add by upserts, never read-and-write-back, so creations and deletions on two nodes both count.
//
// On SQLite, `within` runs inside the synchronous transaction and must be synchronous itself (a webhook
// queue's enqueue and a form token's claim are: see webhooks/queue.ts, dashboard/session-store.ts); insert
// goes through a write group, so the creations of one event-loop turn commit together, as the service's do
// (and, as there, an insert's work may run twice when SQLite rolls a whole group back: `within` does only
// database work). That group is this object's own: whoever closes the database first awaits the inserts
// it started (the service's flushCreations does the same for its group today).
//
// The service (service.ts) reaches links only through this interface; a random code is drawn by the service
// and tried here (insertFresh), so that a collision is drawn again in the same transaction. Not here: the
// service's cache of visited rows (the redirect path), click statistics (clicks/counts.ts), and an account's
// deletion with its links (accounts/).
import { storageError, stored, type Db } from '../db/sqlite'
import { createWriteGroup } from '../db/sqlite/write-group'
import { createLinkStore, type LinkChanges, type LinkRow, type NewLink } from './store'

export type { LinkChanges, LinkRow, NewLink } from './store'

/** insert's outcome when the code is in use (the service answers alias_taken, or draws another code). */
export const CODE_TAKEN = 'code_taken'
/** change's outcomes: no link with that id and code any more; or not the caller's to change. */
export const GONE = 'gone'
export const REFUSED = 'refused'

/** The link a caller read before an await: checked again, by both, inside the write's transaction. */
export interface ReadLink {
  id: number
  code: string
}

export interface RemovedLink {
  row: LinkRow
  /** Its tags as they were (sorted): the deletion's webhook event names them. */
  tags: string[]
}

/** What pageMatching looked at: see LinkStorage.pageMatching. */
export interface MatchingPage {
  rows: LinkRow[]
  floor: number
  full: boolean
}

export interface LinkStorage<Tx> {
  /**
   * A new link with its tags; `within` runs in the same transaction after them (when it throws, no link is
   * made). CODE_TAKEN, with nothing written, when the code is in use.
   */
  insert(link: NewLink, tags: readonly string[], within?: (tx: Tx, row: LinkRow) => unknown): Promise<LinkRow | typeof CODE_TAKEN>
  /**
   * insert with a code drawn by the caller: the codes `codes()` gives are tried in turn, in the one
   * transaction, until one is free (a random code that collides is drawn again without another commit);
   * CODE_TAKEN, with nothing written, when every code it gave was taken. `codes` is called afresh for each
   * run of the write (SQLite may run a group's writes again).
   */
  insertFresh(
    link: Omit<NewLink, 'code'>,
    codes: () => Iterable<string>,
    tags: readonly string[],
    within?: (tx: Tx, row: LinkRow) => unknown,
  ): Promise<LinkRow | typeof CODE_TAKEN>
  /**
   * Settles once every insert started so far has committed or failed: whoever closes the database awaits it
   * first (SQLite's inserts wait for the end of their event-loop turn).
   */
  flush(): Promise<void>
  /** Transactions that committed new links since start, and the links they committed (for /metrics). */
  creations(): { commits: number; links: number }
  byCode(code: string): Promise<LinkRow | null>
  /**
   * The same read at once, where the engine reads synchronously (SQLite, on this thread): the redirect of a
   * code not in the cache is then answered without a promise. Absent on PostgreSQL.
   */
  byCodeNow?(code: string): LinkRow | null
  codeExists(code: string): Promise<boolean>
  byIdAndCode(id: number, code: string): Promise<LinkRow | null>
  /**
   * The link read earlier, read again (locked) in one transaction: GONE when no link has that id and code,
   * REFUSED when `allowed` says no to what was read; else the fields present in `changes` written (a removed
   * visit limit takes its used visits with it), its tags replaced when `tags` is given, and `within` run
   * with the link as written and its tags as they are then (sorted; read in the transaction when not given).
   */
  change(
    read: ReadLink,
    changes: LinkChanges,
    tags: readonly string[] | undefined,
    now: number,
    allowed: (current: LinkRow) => boolean,
    within?: (tx: Tx, row: LinkRow, tags: readonly string[]) => unknown,
  ): Promise<LinkRow | typeof GONE | typeof REFUSED>
  /** Replaces the link's tags whole (each row carries the link's owner); false when the link is gone. */
  setTags(link: ReadLink, tags: readonly string[]): Promise<boolean>
  /** Deletes the link (its tags and click rows go with it); `within` runs in the same transaction. Null when it was gone. */
  remove(link: ReadLink, within?: (tx: Tx, gone: RemovedLink) => unknown): Promise<RemovedLink | null>
  /** An admin's disable (a reason) or enable (null); null when the row is gone. */
  setDisabled(id: number, reason: string | null, now: number): Promise<LinkRow | null>
  /** Takes one visit of a limited link: false when none is left (or the link is gone, or has no limit). */
  takeVisit(id: number): Promise<boolean>
  /** The visits a limited link has left (0 when used up); null for a link without a limit, or gone. */
  visitsLeft(id: number): Promise<number | null>
  /** A link's tags, sorted. */
  tagsOf(linkId: number): Promise<string[]>
  /** The tags of several links (each sorted); links without any are absent. */
  tagsFor(linkIds: readonly number[]): Promise<Map<number, string[]>>
  /** links.json: the account's links below `beforeId`, newest first. */
  page(accountId: number, beforeId: number, limit: number): Promise<LinkRow[]>
  /** links.json?tag=: the account's links with `tag` below `beforeId`, newest first. */
  pageByTag(accountId: number, tag: string, beforeId: number, limit: number): Promise<LinkRow[]>
  /**
   * links.json?q=: the account's links below `beforeId` that match `tag` ('' for any) and the LIKE `pattern`,
   * newest first, looking at no more than `scan` links: `floor` is the lowest id looked at, `full` whether the
   * window was full (so that older links remain to be looked at).
   */
  pageMatching(accountId: number, beforeId: number, tag: string, pattern: string, limit: number, scan: number): Promise<MatchingPage>
  /** The export: the account's links above `afterId`, oldest first. */
  exportPage(accountId: number, afterId: number, limit: number): Promise<LinkRow[]>
  /** The dashboard: a page of the account's links whose code, destination or a tag matches `pattern`, with the tag `tag` ('' for any). */
  search(accountId: number, pattern: string, tag: string, sort: 'created' | 'clicks', limit: number, offset: number): Promise<LinkRow[]>
  /** How many of the account's links search would find, counting up to `max`. */
  searchCount(accountId: number, pattern: string, tag: string, max: number): Promise<number>
  /**
   * The account's import lock (one import at a time per account, on every node): taken for `holder` until
   * `until` (unix ms) when no one holds it or its lease ran out by `now`; false while another holds it.
   */
  claimImport(accountId: number, holder: string, until: number, now: number): Promise<boolean>
  /** Extends the lease; false when `holder` no longer has it. */
  renewImport(accountId: number, holder: string, until: number): Promise<boolean>
  /** Frees the lock if `holder` has it; `within` runs in the same transaction (the import's one event). */
  releaseImport(accountId: number, holder: string, within?: (tx: Tx) => unknown): Promise<void>
  /** When the account's import lock runs out at the latest; null when none is held. */
  importUntil(accountId: number): Promise<number | null>
  /** The account's links, from its counter. */
  count(accountId: number): Promise<number>
  /** Every link stored, with or without an account (for /metrics), from the counters. */
  total(): Promise<number>
}

/** The UNIQUE error of links.code, as bun:sqlite throws it (what service.ts has always caught as "taken"). */
const codeTaken = (err: unknown) => String(err).includes('UNIQUE constraint failed: links.code')

/** SQLite: the synchronous store as the service uses it; `within` runs in the transaction (synchronously). */
export function sqliteLinkStorage(db: Db): LinkStorage<Db> {
  const store = createLinkStore(db)
  const creations = createWriteGroup(db)

  function replaceTags(link: ReadLink, tags: readonly string[]): boolean {
    const current = store.byIdAndCode(link.id, link.code)
    if (!current) return false
    store.setTags(current.id, current.account_id, tags)
    return true
  }

  /** The first of `codes` that is free inserted, with its tags and `within`, in the savepoint of its group. */
  async function insertFirstFree(
    fields: Omit<NewLink, 'code'>,
    codes: () => Iterable<string>,
    tags: readonly string[],
    within: ((tx: Db, row: LinkRow) => unknown) | undefined,
  ): Promise<LinkRow | typeof CODE_TAKEN> {
    try {
      // One savepoint of the turn's group: a taken code or a failing `within` undoes this link alone. A code
      // inserted earlier in the same group, uncommitted, is seen as taken here too.
      return await creations.run(() => {
        for (const code of codes()) {
          let row: LinkRow
          try {
            row = store.insert({ ...fields, code })
          } catch (err) {
            if (codeTaken(err)) continue
            throw err
          }
          store.addTags(row.id, row.account_id, tags)
          within?.(db, row)
          return row
        }
        return CODE_TAKEN
      }).then((row) => {
        if (row !== CODE_TAKEN) made++
        return row
      })
    } catch (err) {
      throw storageError(db, err)
    } finally {
      inFlight--
      if (inFlight === 0) for (const settled of waiting.splice(0)) settled()
    }
  }
  let inFlight = 0
  let made = 0
  const waiting: (() => void)[] = []

  return {
    insert(link, tags, within) {
      inFlight++
      return insertFirstFree(link, () => [link.code], tags, within)
    },
    insertFresh(link, codes, tags, within) {
      inFlight++
      return insertFirstFree(link, codes, tags, within)
    },
    flush() {
      // The waiting group committed now (not at the end of this turn): the database may close right after.
      creations.flush()
      return inFlight === 0 ? Promise.resolve() : new Promise<void>((settled) => waiting.push(settled))
    },
    creations: () => ({ commits: creations.commits, links: made }),
    byCode: async (code) => store.byCode(code) ?? null,
    byCodeNow: (code) => store.byCode(code) ?? null,
    codeExists: async (code) => store.codeExists(code),
    byIdAndCode: async (id, code) => store.byIdAndCode(id, code) ?? null,

    async change(read, changes, tags, now, allowed, within) {
      return stored(db, () =>
        db.transaction((): LinkRow | typeof GONE | typeof REFUSED => {
          const current = store.byIdAndCode(read.id, read.code)
          if (!current) return GONE
          if (!allowed(current)) return REFUSED
          const updated = store.update(current.id, changes, now)!
          if (tags) store.setTags(updated.id, updated.account_id, tags)
          if (within) within(db, updated, tags ? [...tags].sort() : store.tagsOf(updated.id))
          return updated
        })(),
      )
    },

    setTags: async (link, tags) => stored(db, () => db.transaction(() => replaceTags(link, tags))()),

    async remove(link, within) {
      return stored(db, () =>
        db.transaction((): RemovedLink | null => {
          const row = store.byIdAndCode(link.id, link.code)
          if (!row) return null
          const gone = { row, tags: store.tagsOf(row.id) }
          store.remove(row.id)
          within?.(db, gone)
          return gone
        })(),
      )
    },

    setDisabled: async (id, reason, now) => stored(db, () => store.setDisabled(id, reason, now)) ?? null,
    takeVisit: async (id) => stored(db, () => store.takeVisit(id)),
    visitsLeft: async (id) => store.visitsLeft(id),
    tagsOf: async (linkId) => store.tagsOf(linkId),
    tagsFor: async (linkIds) => store.tagsFor([...linkIds]),
    page: async (accountId, beforeId, limit) => store.page(accountId, beforeId, limit),
    pageByTag: async (accountId, tag, beforeId, limit) => store.pageByTag(accountId, tag, beforeId, limit),
    pageMatching: async (accountId, beforeId, tag, pattern, limit, scan) => store.pageMatching(accountId, beforeId, tag, pattern, limit, scan),
    exportPage: async (accountId, afterId, limit) => store.exportPage(accountId, afterId, limit),
    search: async (accountId, pattern, tag, sort, limit, offset) => store.search(accountId, pattern, tag, sort, limit, offset),
    searchCount: async (accountId, pattern, tag, max) => store.searchCount(accountId, pattern, tag, max),
    claimImport: async (accountId, holder, until, now) => stored(db, () => store.claimImport(accountId, holder, until, now)),
    renewImport: async (accountId, holder, until) => stored(db, () => store.renewImport(accountId, holder, until)),
    releaseImport: async (accountId, holder, within) =>
      stored(db, () =>
        db.transaction(() => {
          store.releaseImport(accountId, holder)
          within?.(db)
        })(),
      ),
    importUntil: async (accountId) => store.importUntil(accountId),
    count: async (accountId) => store.count(accountId),
    total: async () => store.total(),
  }
}
