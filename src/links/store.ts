// The SQL of short links, and nothing else: the rules live in service.ts (statistics: clicks/store.ts).
import type { Db } from '../db/sqlite'
import type { Mode } from './validate'

export interface LinkRow {
  id: number
  code: string
  long_url: string
  account_id: number | null
  mode: Mode
  password_hash: string | null
  created: number
  updated: number
  expires: number | null
  clicks: number
  bots: number
  /** Null while live; else why an admin disabled it (visitors get a 451 page). */
  disabled: string | null
  /** Null: no visit limit; else the human visits it gives (SPEC §2a), visits_used of them taken. */
  max_visits: number | null
  visits_used: number
  /** Null, or the validated JSON arrays of its redirect rules and A/B split (validate.ts). */
  rules: string | null
  split: string | null
  /** 0-200 characters, '' for none (SPEC §2a). */
  title: string
}
export type LinkChanges = Partial<Pick<LinkRow, 'long_url' | 'mode' | 'password_hash' | 'expires' | 'max_visits' | 'rules' | 'split' | 'title'>>
/** The fields a new link is made with (no title: ''). */
export type NewLink = Omit<LinkRow, 'id' | 'clicks' | 'bots' | 'updated' | 'disabled' | 'visits_used' | 'title'> & { title?: string }
export interface NameCount {
  name: string
  clicks: number
}

export function createLinkStore(db: Db) {
  // Without RETURNING * (~7 µs of the ~20 µs an insert costs): the row is what was bound and the columns'
  // defaults, which insert() below writes out (the trigger on links touches only link_counts).
  const insert = db.query<never, [string, string, number | null, string, string | null, number, number, number | null, number | null, string | null, string | null, string]>(
    `INSERT INTO links (code, long_url, account_id, mode, password_hash, created, updated, expires, max_visits, rules, split, title)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)`,
  )
  const byCode = db.query<LinkRow, [string]>('SELECT * FROM links WHERE code = ?')
  const codeExists = db.query<{ one: number }, [string]>('SELECT 1 AS one FROM links WHERE code = ?')
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
  type UpdateArgs = [number, string | null, number, string | null, number, string | null, number, number | null, number, number, number, number | null, number, string | null, number, string | null, number, string | null]
  const update = db.query<LinkRow, UpdateArgs>(
    `UPDATE links SET
       long_url = iif(?1, ?2, long_url), mode = iif(?3, ?4, mode),
       password_hash = iif(?5, ?6, password_hash), expires = iif(?7, ?8, expires), updated = ?9,
       max_visits = iif(?11, ?12, max_visits), visits_used = iif(?11 AND ?12 IS NULL, 0, visits_used),
       rules = iif(?13, ?14, rules), split = iif(?15, ?16, split), title = iif(?17, ?18, title)
     WHERE id = ?10 RETURNING *`,
  )
  // A visit of a limited link takes one of its visits, or finds none left: one conditional write, atomic
  // however many requests (or processes sharing the file) race for the last one.
  const takeVisit = db.query<unknown, [number]>('UPDATE links SET visits_used = visits_used + 1 WHERE id = ? AND visits_used < max_visits')
  const visitsLeft = db.query<{ left: number }, [number]>('SELECT max_visits - visits_used AS left FROM links WHERE id = ? AND max_visits IS NOT NULL')
  const remove = db.query<unknown, [number]>('DELETE FROM links WHERE id = ?')
  // The dashboard's list: one account's links matching a LIKE pattern ('%' for all; the service escapes what
  // was typed), newest first (by id, the order of creation, along links_account) or most clicked first, a
  // page at a time. Two fixed statements rather than SQL text built per call.
  const SEARCH = `account_id = ?1 AND (code LIKE ?2 ESCAPE '\\' OR long_url LIKE ?2 ESCAPE '\\' OR title LIKE ?2 ESCAPE '\\'
    OR EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag LIKE ?2 ESCAPE '\\'))
    AND (?5 = '' OR EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag = ?5))`
  const searchNewest = db.query<LinkRow, [number, string, number, number, string]>(
    `SELECT * FROM links WHERE ${SEARCH} ORDER BY id DESC LIMIT ?3 OFFSET ?4`,
  )
  const searchClicks = db.query<LinkRow, [number, string, number, number, string]>(
    `SELECT * FROM links WHERE ${SEARCH} ORDER BY clicks DESC, id DESC LIMIT ?3 OFFSET ?4`,
  )
  // Counted up to a bound: a search over a very large account stops counting there ("10000+").
  const setDisabled = db.query<LinkRow, [number, string | null, number]>('UPDATE links SET disabled = ?2, updated = ?3 WHERE id = ?1 RETURNING *')
  const searchCount = db.query<{ n: number }, [number, string, number, number, string]>(
    `SELECT count(*) AS n FROM (SELECT 1 FROM links WHERE ${SEARCH} LIMIT ?3 OFFSET ?4)`,
  )
  // Tags (migration 12): a link's, a page's (ids as one JSON array: one fixed statement for any page), and
  // replaced whole on a change. Each row carries the link's owner for the index links.json?tag= reads.
  const tagsOf = db.query<{ tag: string }, [number]>('SELECT tag FROM link_tags WHERE link_id = ? ORDER BY tag')
  const tagsFor = db.query<{ link_id: number; tag: string }, [string]>(
    'SELECT link_id, tag FROM link_tags WHERE link_id IN (SELECT value FROM json_each(?)) ORDER BY link_id, tag',
  )
  const clearTags = db.query<unknown, [number]>('DELETE FROM link_tags WHERE link_id = ?')
  const addTag = db.query<unknown, [number, string, number | null]>('INSERT INTO link_tags (link_id, tag, account_id) VALUES (?1, ?2, ?3)')
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
  const pageMatching = db.query<LinkRow, [number, number, string, string, number, number]>(
    `SELECT * FROM links WHERE account_id = ?1 AND id < ?2 AND id >= ?5 AND ${FILTER} ORDER BY id DESC LIMIT ?6`,
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
  const renewImport = db.query<unknown, [number, string, number]>('UPDATE import_locks SET until = ?3 WHERE account_id = ?1 AND holder = ?2')
  const releaseImport = db.query<unknown, [number, string]>('DELETE FROM import_locks WHERE account_id = ?1 AND holder = ?2')
  const importUntil = db.query<{ until: number }, [number]>('SELECT until FROM import_locks WHERE account_id = ?')
  const addTags = (linkId: number, accountId: number | null, tags: readonly string[]) => {
    for (const tag of tags) addTag.run(linkId, tag, accountId)
  }
  return {
    /** A link's tags, sorted. */
    tagsOf: (linkId: number) => tagsOf.all(linkId).map((r) => r.tag),
    /** The tags of several links (each sorted); links without any are absent. */
    tagsFor(linkIds: number[]): Map<number, string[]> {
      const out = new Map<number, string[]>()
      if (linkIds.length === 0) return out
      for (const r of tagsFor.all(JSON.stringify(linkIds))) {
        const list = out.get(r.link_id)
        if (list) list.push(r.tag)
        else out.set(r.link_id, [r.tag])
      }
      return out
    },
    /** Replaces a link's tags (call inside the write's transaction). */
    setTags(linkId: number, accountId: number | null, tags: readonly string[]) {
      clearTags.run(linkId)
      addTags(linkId, accountId, tags)
    },
    /** The tags of a link just inserted, which has none yet (ids are never reused): nothing to clear. */
    addTags,
    pageByTag: (accountId: number, tag: string, beforeId: number, limit: number) => pageByTag.all(accountId, tag, beforeId, limit),
    /**
     * The account's links below `beforeId` that match `tag` ('' for any) and the LIKE `pattern`, newest first,
     * looking at no more than `scan` links: `floor` is the lowest id looked at, `full` whether the window was
     * full (so that older links remain to be looked at).
     */
    pageMatching(accountId: number, beforeId: number, tag: string, pattern: string, limit: number, scan: number) {
      const w = windowFloor.get(accountId, beforeId, scan)!
      if (w.floor === null) return { rows: [] as LinkRow[], floor: 0, full: false }
      return { rows: pageMatching.all(accountId, beforeId, tag, pattern, w.floor, limit), floor: w.floor, full: w.n >= scan }
    },
    exportPage: (accountId: number, afterId: number, limit: number) => exportPage.all(accountId, afterId, limit),
    /** The new link's row as stored, in the table's column order (as SELECT * gives it). */
    insert(r: NewLink): LinkRow {
      const { lastInsertRowid } = insert.run(r.code, r.long_url, r.account_id, r.mode, r.password_hash, r.created, r.created, r.expires, r.max_visits, r.rules, r.split, r.title ?? '')
      return {
        id: Number(lastInsertRowid),
        code: r.code,
        long_url: r.long_url,
        account_id: r.account_id,
        mode: r.mode,
        password_hash: r.password_hash,
        created: r.created,
        updated: r.created,
        expires: r.expires,
        clicks: 0,
        bots: 0,
        disabled: null,
        max_visits: r.max_visits,
        visits_used: 0,
        rules: r.rules,
        split: r.split,
        title: r.title ?? '',
      }
    },
    /** Takes the account's import lock for `holder` until `until` (unix ms): false while another holds it. */
    claimImport: (accountId: number, holder: string, until: number, now: number) => claimImport.run(accountId, holder, until, now).changes === 1,
    /** Extends the lease: false when `holder` lost it (it ran out and another took it). */
    renewImport: (accountId: number, holder: string, until: number) => renewImport.run(accountId, holder, until).changes === 1,
    releaseImport: (accountId: number, holder: string) => void releaseImport.run(accountId, holder),
    /** When the account's current import lock runs out at the latest (null: none). */
    importUntil: (accountId: number) => importUntil.get(accountId)?.until ?? null,
    byCode: (code: string) => byCode.get(code),
    codeExists: (code: string) => codeExists.get(code) !== null,
    page: (accountId: number, beforeId: number, limit: number) => page.all(accountId, beforeId, limit),
    count: (accountId: number) => count.get(accountId)?.n ?? 0,
    /** Every link stored, with or without an account. */
    total: () => total.get()!.n,
    byIdAndCode: (id: number, code: string) => byIdAndCode.get(id, code),
    /** Writes only the fields present in `changes`; null when the row is gone. */
    update: (id: number, changes: LinkChanges, now: number) =>
      update.get(
        'long_url' in changes ? 1 : 0, changes.long_url ?? null,
        'mode' in changes ? 1 : 0, changes.mode ?? null,
        'password_hash' in changes ? 1 : 0, changes.password_hash ?? null,
        'expires' in changes ? 1 : 0, changes.expires ?? null,
        now, id,
        'max_visits' in changes ? 1 : 0, changes.max_visits ?? null,
        'rules' in changes ? 1 : 0, changes.rules ?? null,
        'split' in changes ? 1 : 0, changes.split ?? null,
        'title' in changes ? 1 : 0, changes.title ?? null,
      ),
    /** Takes one visit of a limited link: false when none is left (or the link is gone). */
    takeVisit: (id: number) => takeVisit.run(id).changes === 1,
    /** The visits a limited link has left (0 when used up); null for a link without a limit, or gone. */
    visitsLeft: (id: number): number | null => {
      const r = visitsLeft.get(id)
      return r ? Math.max(0, r.left) : null
    },
    remove: (id: number) => remove.run(id),
    /** An admin's disable (a reason) or enable (null); null when the row is gone. */
    setDisabled: (id: number, reason: string | null, now: number) => setDisabled.get(id, reason, now),
    /** A page of an account's links whose code, destination, title or a tag matches `pattern` (LIKE; its own %, _ and \\ escaped with a backslash), with the tag `tag` ('' for any). */
    search: (accountId: number, pattern: string, tag: string, sort: 'created' | 'clicks', limit: number, offset: number) =>
      (sort === 'clicks' ? searchClicks : searchNewest).all(accountId, pattern, limit, offset, tag),
    /** How many of an account's links match `pattern` and `tag` ('' for any; the code, destination or a tag match the pattern), counting up to `max`. */
    searchCount: (accountId: number, pattern: string, tag: string, max: number) => searchCount.get(accountId, pattern, max, 0, tag)!.n,
  }
}
export type LinkStore = ReturnType<typeof createLinkStore>
