// Short links on SQLite: the statements, run directly; the one synchronous read is byCodeNow (the redirect's miss).
import { storageError, stored, type Db } from '../../db/sqlite'
import { syncWithin } from '../../db/sqlite/within'
import { createWriteGroup } from '../../db/sqlite/write-group'
import {
  CODE_TAKEN,
  GONE,
  newLinkRow,
  REFUSED,
  type LinkChanges,
  type LinkRow,
  type LinkStorage,
  type NewLink,
  type ReadLink,
  type RemovedLink,
} from './contract'
import { sqliteMetaStore } from './sqlite-meta'
import { sqliteImages } from './sqlite-images'
import { sqliteTagReads } from './sqlite-tags'

/** The UNIQUE error of (links.domain, links.code), as bun:sqlite throws it (what the service has always caught as "taken"). */
const codeTaken = (err: unknown) => String(err).includes('UNIQUE constraint failed: links.domain, links.code')

/** SQLite: `within` runs in the transaction and must be synchronous (syncWithin refuses a pending promise). */
export function sqliteLinkStorage(db: Db): LinkStorage<Db> {
  // Without RETURNING * (~7 µs of the ~20 µs an insert costs): the row is what was bound and the columns'
  // defaults, which insert() below writes out (the trigger on links touches only link_counts).
  const insert = db.query<
    never,
    [
      string,
      string,
      number | null,
      string,
      string | null,
      number,
      number,
      number | null,
      number | null,
      string | null,
      string | null,
      string,
      string,
      string | null,
      string,
      string,
      string | null,
      number | null,
    ]
  >(
    `INSERT INTO links (code, long_url, account_id, mode, password_hash, created, updated, expires, max_visits, rules, split, title,
       domain, expired_url, og_title, og_description, og_image, meta_due)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)`,
  )
  const byCode = db.query<LinkRow, [string, string]>('SELECT * FROM links WHERE domain = ?2 AND code = ?1')
  const codeExists = db.query<{ one: number }, [string, string]>(
    'SELECT 1 AS one FROM links WHERE domain = ?2 AND code = ?1',
  )
  const page = db.query<LinkRow, [number, number, number]>(
    'SELECT * FROM links WHERE account_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3',
  )
  // Kept by triggers (migration 4): one row read, whatever the number of links.
  const count = db.query<{ n: number }, [number]>('SELECT links AS n FROM link_counts WHERE owner = ?')
  const total = db.query<{ n: number }, []>('SELECT coalesce(sum(links), 0) AS n FROM link_counts')
  const byIdAndCode = db.query<LinkRow, [number, string]>('SELECT * FROM links WHERE id = ?1 AND code = ?2')
  // One fixed statement for any set of changed fields: each field has a flag, and a field whose flag is 0
  // keeps what is stored, so an update never writes back values it read earlier.
  // A limit removed takes its count of used visits with it: a later limit counts from then.
  type UpdateArgs = [
    number,
    string | null,
    number,
    string | null,
    number,
    string | null,
    number,
    number | null,
    number,
    number,
    number,
    number | null,
    number,
    string | null,
    number,
    string | null,
    number,
    string | null,
    ...OptionalArgs,
  ]
  type OptionalArgs = [number, string | null, number, string | null, number, string | null, number, string | null]
  type MoreArgs = [number, number | null]
  const update = db.query<LinkRow, [...UpdateArgs, ...MoreArgs]>(
    `UPDATE links SET
       long_url = iif(?1, ?2, long_url), mode = iif(?3, ?4, mode),
       password_hash = iif(?5, ?6, password_hash), expires = iif(?7, ?8, expires), updated = ?9,
       max_visits = iif(?11, ?12, max_visits), visits_used = iif(?11 AND ?12 IS NULL, 0, visits_used),
       rules = iif(?13, ?14, rules), split = iif(?15, ?16, split), title = iif(?17, ?18, title),
       expired_url = iif(?19, ?20, expired_url), og_title = iif(?21, ?22, og_title),
       og_description = iif(?23, ?24, og_description), og_image = iif(?25, ?26, og_image),
       meta_due = iif(?27, ?28, meta_due)
     WHERE id = ?10 RETURNING *`,
  )
  // A visit of a limited link takes one of its visits, or finds none left: one conditional write, atomic
  // however many requests (or processes sharing the file) race for the last one.
  const takeVisit = db.query<unknown, [number]>(
    'UPDATE links SET visits_used = visits_used + 1 WHERE id = ? AND visits_used < max_visits',
  )
  const visitsLeft = db.query<{ left: number }, [number]>(
    'SELECT max_visits - visits_used AS left FROM links WHERE id = ? AND max_visits IS NOT NULL',
  )
  const remove = db.query<unknown, [number]>('DELETE FROM links WHERE id = ?')
  const setDisabled = db.query<LinkRow, [number, string | null, number]>(
    'UPDATE links SET disabled = ?2, updated = ?3 WHERE id = ?1 RETURNING *',
  )
  // Tags (migration 12): a link's, a page's (ids as one JSON array: one fixed statement for any page), and
  // replaced whole on a change. Each row carries the link's owner for the index links.json?tag= reads.
  const tagsOf = db.query<{ tag: string }, [number]>('SELECT tag FROM link_tags WHERE link_id = ? ORDER BY tag')
  const tagsFor = db.query<{ link_id: number; tag: string }, [string]>(
    'SELECT link_id, tag FROM link_tags WHERE link_id IN (SELECT value FROM json_each(?)) ORDER BY link_id, tag',
  )
  const clearTags = db.query<unknown, [number]>('DELETE FROM link_tags WHERE link_id = ?')
  const addTag = db.query<unknown, [number, string, number | null]>(
    'INSERT INTO link_tags (link_id, tag, account_id) VALUES (?1, ?2, ?3)',
  )
  // links.json?tag=: newest first along the index (account, tag, link_id); the join only reads the rows.
  const pageByTag = db.query<LinkRow, [number, string, number, number]>(
    `SELECT links.* FROM link_tags JOIN links ON links.id = link_tags.link_id
     WHERE link_tags.account_id = ?1 AND link_tags.tag = ?2 AND link_tags.link_id < ?3 AND links.account_id = ?1
     ORDER BY link_tags.link_id DESC LIMIT ?4`,
  )
  // links.json?q=: the matches among at most SCAN rows of the account below the cursor (the window's lowest
  // id is read first, from the index alone), so that a page costs a bounded scan however rare the match.
  const FILTER = `(?3 = '' OR EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag = ?3))
    AND (code LIKE ?4 ESCAPE '\\' OR long_url LIKE ?4 ESCAPE '\\' OR title LIKE ?4 ESCAPE '\\'
         OR EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag LIKE ?4 ESCAPE '\\'))`
  const windowFloor = db.query<{ floor: number | null; n: number }, [number, number, number]>(
    'SELECT min(id) AS floor, count(*) AS n FROM (SELECT id FROM links WHERE account_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3)',
  )
  const pageMatching = db.query<LinkRow, [number, number, string, string, number, number, string | null]>(
    `SELECT * FROM links WHERE account_id = ?1 AND id < ?2 AND id >= ?5 AND ${FILTER}
       AND (?7 IS NULL OR domain = ?7) ORDER BY id DESC LIMIT ?6`,
  )
  // The export: every link of an account, oldest first, a page at a time after an id.
  const exportPage = db.query<LinkRow, [number, number, number]>(
    'SELECT * FROM links WHERE account_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3',
  )
  // The import lock (migration 22): taken when free or when its lease ran out; renewed and freed only by its holder.
  const claimImport = db.query<unknown, [number, string, number, number]>(
    `INSERT INTO import_locks (account_id, holder, until) VALUES (?1, ?2, ?3)
     ON CONFLICT (account_id) DO UPDATE SET holder = excluded.holder, until = excluded.until WHERE import_locks.until <= ?4`,
  )
  const renewImport = db.query<unknown, [number, string, number]>(
    'UPDATE import_locks SET until = ?3 WHERE account_id = ?1 AND holder = ?2',
  )
  const releaseImport = db.query<unknown, [number, string]>(
    'DELETE FROM import_locks WHERE account_id = ?1 AND holder = ?2',
  )
  const importUntil = db.query<{ until: number }, [number]>('SELECT until FROM import_locks WHERE account_id = ?')
  const addTags = (linkId: number, accountId: number | null, tags: readonly string[]) => {
    for (const tag of tags) addTag.run(linkId, tag, accountId)
  }
  const tagsOfNow = (linkId: number) => tagsOf.all(linkId).map((r) => r.tag)
  const setTagsNow = (linkId: number, accountId: number | null, tags: readonly string[]) => {
    clearTags.run(linkId)
    addTags(linkId, accountId, tags)
  }
  /** The new link's row as stored, in the table's column order (as SELECT * gives it); `code` apart, so that a
   *  creation trying several codes does not copy its fields for each. */
  function insertRow(r: Omit<NewLink, 'code'>, code: string): LinkRow {
    const { lastInsertRowid } = insert.run(
      code,
      r.long_url,
      r.account_id,
      r.mode,
      r.password_hash,
      r.created,
      r.created,
      r.expires,
      r.max_visits,
      r.rules,
      r.split,
      r.title ?? '',
      r.domain ?? '',
      r.expired_url ?? null,
      r.og_title ?? '',
      r.og_description ?? '',
      r.og_image ?? null,
      r.meta_due ?? null,
    )
    return newLinkRow(Number(lastInsertRowid), code, r)
  }
  /** Writes only the fields present in `changes`. */
  const updateRow = (id: number, changes: LinkChanges, now: number) =>
    update.get(
      'long_url' in changes ? 1 : 0,
      changes.long_url ?? null,
      'mode' in changes ? 1 : 0,
      changes.mode ?? null,
      'password_hash' in changes ? 1 : 0,
      changes.password_hash ?? null,
      'expires' in changes ? 1 : 0,
      changes.expires ?? null,
      now,
      id,
      'max_visits' in changes ? 1 : 0,
      changes.max_visits ?? null,
      'rules' in changes ? 1 : 0,
      changes.rules ?? null,
      'split' in changes ? 1 : 0,
      changes.split ?? null,
      'title' in changes ? 1 : 0,
      changes.title ?? null,
      'expired_url' in changes ? 1 : 0,
      changes.expired_url ?? null,
      'og_title' in changes ? 1 : 0,
      changes.og_title ?? null,
      'og_description' in changes ? 1 : 0,
      changes.og_description ?? null,
      'og_image' in changes ? 1 : 0,
      changes.og_image ?? null,
      'meta_due' in changes ? 1 : 0,
      changes.meta_due ?? null,
    )

  const creations = createWriteGroup(db)
  let inFlight = 0
  let made = 0
  const waiting: (() => void)[] = []

  /** The first of `codes` that is free inserted, with its tags and `within`, in the savepoint of its group. */
  async function insertFirstFree(
    fields: Omit<NewLink, 'code'>,
    codes: () => Iterable<string>,
    tags: readonly string[],
    within: ((tx: Db, row: LinkRow) => unknown) | undefined,
  ): Promise<LinkRow | typeof CODE_TAKEN> {
    inFlight++
    try {
      // One savepoint of the turn's group: a taken code or a failing `within` undoes this link alone. A code
      // inserted earlier in the same group, uncommitted, is seen as taken here too.
      return await creations
        .run(() => {
          for (const code of codes()) {
            let row: LinkRow
            try {
              row = insertRow(fields, code)
            } catch (err) {
              if (codeTaken(err)) continue
              throw err
            }
            addTags(row.id, row.account_id, tags)
            if (within) syncWithin(within(db, row))
            return row
          }
          return CODE_TAKEN
        })
        .then((row) => {
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

  return {
    insert: (link, tags, within) => insertFirstFree(link, () => [link.code], tags, within),
    insertFresh: (link, codes, tags, within) => insertFirstFree(link, codes, tags, within),
    flush() {
      // The waiting group committed now (not at the end of this turn): the database may close right after.
      creations.flush()
      return inFlight === 0 ? Promise.resolve() : new Promise<void>((settled) => waiting.push(settled))
    },
    creations: () => ({ commits: creations.commits, links: made }),
    byCode: async (code, domain = '') => byCode.get(code, domain) ?? null,
    byCodeNow: (code, domain = '') => byCode.get(code, domain) ?? null,
    codeExists: async (code, domain = '') => codeExists.get(code, domain) !== null,
    byIdAndCode: async (id, code) => byIdAndCode.get(id, code) ?? null,

    async change(read, changes, tags, now, allowed, within) {
      return stored(db, () =>
        db.transaction((): LinkRow | typeof GONE | typeof REFUSED => {
          const current = byIdAndCode.get(read.id, read.code)
          if (!current) return GONE
          if (!allowed(current)) return REFUSED
          const next = typeof tags === 'function' ? tags(tagsOfNow(current.id)) : tags
          const updated = updateRow(current.id, changes, now)!
          if (next) setTagsNow(updated.id, updated.account_id, next)
          if (within) syncWithin(within(db, updated, next ? [...next].sort() : tagsOfNow(updated.id)))
          return updated
        })(),
      )
    },

    setTags: async (link: ReadLink, tags) =>
      stored(db, () =>
        db.transaction(() => {
          const current = byIdAndCode.get(link.id, link.code)
          if (!current) return false
          setTagsNow(current.id, current.account_id, tags)
          return true
        })(),
      ),

    async remove(link, within) {
      return stored(db, () =>
        db.transaction((): RemovedLink | null => {
          const row = byIdAndCode.get(link.id, link.code)
          if (!row) return null
          const gone = { row, tags: tagsOfNow(row.id) }
          remove.run(row.id)
          if (within) syncWithin(within(db, gone))
          return gone
        })(),
      )
    },

    setDisabled: async (id, reason, now) => stored(db, () => setDisabled.get(id, reason, now)) ?? null,
    takeVisit: async (id) => stored(db, () => takeVisit.run(id).changes === 1),
    async visitsLeft(id) {
      const r = visitsLeft.get(id)
      return r ? Math.max(0, r.left) : null
    },
    tagsOf: async (linkId) => tagsOfNow(linkId),
    async tagsFor(linkIds) {
      const out = new Map<number, string[]>()
      if (linkIds.length === 0) return out
      for (const r of tagsFor.all(JSON.stringify(linkIds))) {
        const list = out.get(r.link_id)
        if (list) list.push(r.tag)
        else out.set(r.link_id, [r.tag])
      }
      return out
    },
    page: async (accountId, beforeId, limit) => page.all(accountId, beforeId, limit),
    pageByTag: async (accountId, tag, beforeId, limit) => pageByTag.all(accountId, tag, beforeId, limit),
    async pageMatching(accountId, beforeId, tag, pattern, limit, scan, domain = null) {
      const w = windowFloor.get(accountId, beforeId, scan)!
      if (w.floor === null) return { rows: [], floor: 0, full: false }
      return {
        rows: pageMatching.all(accountId, beforeId, tag, pattern, w.floor, limit, domain),
        floor: w.floor,
        full: w.n >= scan,
      }
    },
    exportPage: async (accountId, afterId, limit) => exportPage.all(accountId, afterId, limit),
    ...sqliteTagReads(db),
    ...sqliteMetaStore(db),
    ...sqliteImages(db),
    claimImport: async (accountId, holder, until, now) =>
      stored(db, () => claimImport.run(accountId, holder, until, now).changes === 1),
    renewImport: async (accountId, holder, until) =>
      stored(db, () => renewImport.run(accountId, holder, until).changes === 1),
    releaseImport: async (accountId, holder, within) =>
      stored(db, () =>
        db.transaction(() => {
          releaseImport.run(accountId, holder)
          if (within) syncWithin(within(db))
        })(),
      ),
    importUntil: async (accountId) => importUntil.get(accountId)?.until ?? null,
    count: async (accountId) => count.get(accountId)?.n ?? 0,
    total: async () => total.get()!.n,
  }
}
