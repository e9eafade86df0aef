// Short links on PostgreSQL, for any number of nodes sharing one database (concurrency: design notes, links).
import type { SQL, TransactionSQL } from 'bun'
import { int, intOrNull } from '../../db/postgres/rows'
import {
  CODE_TAKEN,
  GONE,
  newLinkRow,
  REFUSED,
  type LinkRow,
  type LinkStorage,
  type NewLink,
  type RemovedLink,
} from './contract'
import { link, postgresLinkReads } from './postgres-reads'
import { postgresMetaStore } from './postgres-meta'
import { postgresImages } from './postgres-images'
import { postgresTagReads } from './postgres-tags'

/** A new link's row built from the values bound and the id the insert gave (RETURNING * cost ~16 decodes). */
const insertedRow = (id: unknown, code: string, l: Omit<NewLink, 'code'>): LinkRow => newLinkRow(int(id), code, l)

export function postgresLinkStorage(sql: SQL): LinkStorage<TransactionSQL> {
  /** Tags added to a link, in `tx`. */
  async function addTags(tx: SQL, linkId: number, accountId: number | null, tags: readonly string[]) {
    if (tags.length > 0)
      await tx`INSERT INTO link_tags ${tx(tags.map((tag) => ({ link_id: linkId, tag, account_id: accountId })))}`
  }
  /** The link's tags replaced, in `tx` (whose caller holds the link's row lock). */
  async function replaceTags(tx: SQL, linkId: number, accountId: number | null, tags: readonly string[]) {
    await tx`DELETE FROM link_tags WHERE link_id = ${linkId}`
    await addTags(tx, linkId, accountId, tags)
  }

  // Creations of one turn (or made while a batch is written) go in one transaction, a multi-row INSERT per
  // round of codes; a failing group is made again one by one (design notes: links, creations on PostgreSQL).
  interface Creation {
    l: Omit<NewLink, 'code'>
    codes: () => Iterable<string>
    tags: readonly string[]
    within: ((tx: TransactionSQL, row: LinkRow) => unknown) | undefined
    settle(outcome: { row: LinkRow | typeof CODE_TAKEN } | { err: unknown }): void
  }
  /** The most creations one transaction takes (a burst beyond it is written in several, side by side). */
  const GROUP_MAX = 256
  let waiting: Creation[] = []
  let commits = 0
  let committed = 0
  const inFlight = new Set<Promise<unknown>>()

  /** The columns a creation inserts: the new row's, less those the table fills in (id and the counters). */
  const values = (l: Omit<NewLink, 'code'>, code: string) => {
    const { id: _, clicks: _c, bots: _b, disabled: _d, visits_used: _v, ...columns } = newLinkRow(0, code, l)
    return columns
  }
  /** A code's place: codes are unique per domain. */
  const slot = (domain: string | undefined, code: string) => `${domain ?? ''}\n${code}`

  /** One creation in a transaction of its own: the first of its codes that is free, its tags, its `within`. */
  async function alone(c: Creation): Promise<void> {
    try {
      const row = await sql.begin(async (tx) => {
        for (const code of c.codes()) {
          // ON CONFLICT DO NOTHING raises no error: the transaction stays usable for the next code.
          const [inserted] =
            await tx`INSERT INTO links ${tx(values(c.l, code))} ON CONFLICT (domain, code) DO NOTHING RETURNING id`
          if (!inserted) continue
          const row = insertedRow(inserted.id, code, c.l)
          // A new id has no tags yet: nothing to delete first (a round trip less than replaceTags).
          await addTags(tx, row.id, row.account_id, c.tags)
          if (c.within) await c.within(tx, row)
          return row
        }
        return CODE_TAKEN
      })
      if (row !== CODE_TAKEN) {
        commits++
        committed++
      }
      c.settle({ row })
    } catch (err) {
      c.settle({ err })
    }
  }

  /** Several creations in one transaction (see above); on any failure, each alone. */
  async function together(group: Creation[]): Promise<void> {
    let outcome: Map<Creation, LinkRow | typeof CODE_TAKEN>
    try {
      outcome = await sql.begin(async (tx) => {
        const out = new Map<Creation, LinkRow | typeof CODE_TAKEN>()
        const codes = new Map(group.map((c) => [c, c.codes()[Symbol.iterator]()]))
        let open = group
        while (open.length > 0) {
          // Each open creation's next code; one that has none left is CODE_TAKEN.
          const trying: [Creation, string][] = []
          for (const c of open) {
            const next = codes.get(c)!.next()
            if (next.done) out.set(c, CODE_TAKEN)
            else trying.push([c, next.value])
          }
          if (trying.length === 0) break
          // In owner order, then code order (see above).
          const owner = (c: Creation) => c.l.account_id ?? 0
          const place = ([c, code]: [Creation, string]) => slot(c.l.domain, code)
          trying.sort((a, b) => owner(a[0]) - owner(b[0]) || (place(a) < place(b) ? -1 : place(a) > place(b) ? 1 : 0))
          // Each row inserted names its place and id; the rest of the row is what was bound (insertedRow).
          const inserted =
            await tx`INSERT INTO links ${tx(trying.map(([c, code]) => values(c.l, code)))} ON CONFLICT (domain, code) DO NOTHING RETURNING id, domain, code`
          const idOf = new Map<string, unknown>(
            inserted.map((r: { id: unknown; domain: string; code: string }) => [slot(r.domain, r.code), r.id]),
          )
          open = []
          for (const [c, code] of trying) {
            // Two creations of one group asking for one place: the first has it, the second tries its next.
            const id = idOf.get(slot(c.l.domain, code))
            if (id !== undefined) {
              idOf.delete(slot(c.l.domain, code))
              out.set(c, insertedRow(id, code, c.l))
            } else open.push(c)
          }
        }
        const tagRows: { link_id: number; tag: string; account_id: number | null }[] = []
        for (const c of group) {
          const row = out.get(c)
          if (row && row !== CODE_TAKEN)
            for (const tag of c.tags) tagRows.push({ link_id: row.id, tag, account_id: row.account_id })
        }
        if (tagRows.length > 0) await tx`INSERT INTO link_tags ${tx(tagRows)}`
        // Issued together, so the connection pipelines them: each creation's webhook event is a statement
        // (it reads the endpoints in this transaction), and one after another they held the group's commit.
        await Promise.all(
          group.map((c) => {
            const row = out.get(c)
            return row && row !== CODE_TAKEN && c.within ? c.within(tx, row) : undefined
          }),
        )
        return out
      })
    } catch {
      await Promise.all(group.map(alone))
      return
    }
    commits++
    for (const c of group) {
      const row = outcome.get(c)!
      if (row !== CODE_TAKEN) committed++
      c.settle({ row })
    }
  }

  // One batch is written at a time: the creations asked for while it is under way wait for it and go in the
  // next one, together. Batches side by side would each update the owner's link_counts row and wait for one
  // another there, each paying a transaction for a few links.
  let writing = false
  /** The creations asked for since the last batch began, written together (GROUP_MAX a transaction). */
  function writeWaiting() {
    if (writing || waiting.length === 0) return
    const all = waiting
    waiting = []
    writing = true
    const groups: Promise<void>[] = []
    for (let i = 0; i < all.length; i += GROUP_MAX) {
      const group = all.slice(i, i + GROUP_MAX)
      groups.push(group.length === 1 ? alone(group[0]!) : together(group))
    }
    void Promise.all(groups).then(() => {
      writing = false
      writeWaiting()
    })
  }

  /** The first of `codes` that is free inserted, with its tags and `within`, in the transaction of the next batch. */
  function insertFirstFree(
    l: Omit<NewLink, 'code'>,
    codes: () => Iterable<string>,
    tags: readonly string[],
    within: ((tx: TransactionSQL, row: LinkRow) => unknown) | undefined,
  ): Promise<LinkRow | typeof CODE_TAKEN> {
    const done = new Promise<LinkRow | typeof CODE_TAKEN>((resolve, reject) => {
      if (waiting.length === 0 && !writing) setImmediate(writeWaiting)
      waiting.push({ l, codes, tags, within, settle: (o) => ('err' in o ? reject(o.err) : resolve(o.row)) })
    })
    const settled = done.then(
      () => {},
      () => {},
    )
    inFlight.add(settled)
    void settled.then(() => inFlight.delete(settled))
    return done
  }

  return {
    ...postgresLinkReads(sql),
    ...postgresTagReads(sql),
    ...postgresMetaStore(sql),
    ...postgresImages(sql),
    insert: (l, tags, within) => insertFirstFree(l, () => [l.code], tags, within),
    insertFresh: (l, codes, tags, within) => insertFirstFree(l, codes, tags, within),
    async flush() {
      await Promise.all([...inFlight])
    },
    creations: () => ({ commits, links: committed }),
    async byCode(code, domain = '') {
      const [row] = await sql`SELECT * FROM links WHERE domain = ${domain} AND code = ${code}`
      return row ? link(row) : null
    },
    async codeExists(code, domain = '') {
      return (await sql`SELECT 1 FROM links WHERE domain = ${domain} AND code = ${code}`).length > 0
    },
    async byIdAndCode(id, code) {
      const [row] = await sql`SELECT * FROM links WHERE id = ${id} AND code = ${code}`
      return row ? link(row) : null
    },

    async change(read, changes, tags, now, allowed, within) {
      return sql.begin(async (tx) => {
        const [locked] = await tx`SELECT * FROM links WHERE id = ${read.id} AND code = ${read.code} FOR NO KEY UPDATE`
        if (!locked) return GONE
        if (!allowed(link(locked))) return REFUSED
        const next =
          typeof tags === 'function'
            ? tags(
                (await tx`SELECT tag FROM link_tags WHERE link_id = ${read.id} ORDER BY tag`).map(
                  (r: { tag: string }) => r.tag,
                ),
              )
            : tags
        // One fixed statement for any set of changed fields, as in sqlite.ts: a field whose flag is false keeps
        // what is stored (the row as locked, not a value read before).
        const has = (field: keyof typeof changes) => field in changes
        const [updated] = await tx`
          UPDATE links SET
            long_url = CASE WHEN ${has('long_url')} THEN ${changes.long_url ?? null}::text ELSE long_url END,
            mode = CASE WHEN ${has('mode')} THEN ${changes.mode ?? null}::text ELSE mode END,
            password_hash = CASE WHEN ${has('password_hash')} THEN ${changes.password_hash ?? null}::text ELSE password_hash END,
            expires = CASE WHEN ${has('expires')} THEN ${changes.expires ?? null}::bigint ELSE expires END,
            updated = ${now},
            max_visits = CASE WHEN ${has('max_visits')} THEN ${changes.max_visits ?? null}::bigint ELSE max_visits END,
            visits_used = CASE WHEN ${has('max_visits')} AND ${changes.max_visits ?? null}::bigint IS NULL THEN 0 ELSE visits_used END,
            rules = CASE WHEN ${has('rules')} THEN ${changes.rules ?? null}::text ELSE rules END,
            split = CASE WHEN ${has('split')} THEN ${changes.split ?? null}::text ELSE split END,
            title = CASE WHEN ${has('title')} THEN ${changes.title ?? null}::text ELSE title END,
            expired_url = CASE WHEN ${has('expired_url')} THEN ${changes.expired_url ?? null}::text ELSE expired_url END,
            og_title = CASE WHEN ${has('og_title')} THEN ${changes.og_title ?? null}::text ELSE og_title END,
            og_description = CASE WHEN ${has('og_description')} THEN ${changes.og_description ?? null}::text ELSE og_description END,
            og_image = CASE WHEN ${has('og_image')} THEN ${changes.og_image ?? null}::text ELSE og_image END,
            meta_due = CASE WHEN ${has('meta_due')} THEN ${changes.meta_due ?? null}::bigint ELSE meta_due END
          WHERE id = ${read.id} RETURNING *`
        const row = link(updated)
        if (next) await replaceTags(tx, row.id, row.account_id, next)
        if (within) {
          const now = next
            ? [...next].sort()
            : (await tx`SELECT tag FROM link_tags WHERE link_id = ${row.id} ORDER BY tag`).map(
                (r: { tag: string }) => r.tag,
              )
          await within(tx, row, now)
        }
        return row
      })
    },

    async setTags(read, tags) {
      return sql.begin(async (tx) => {
        const [locked] =
          await tx`SELECT id, account_id FROM links WHERE id = ${read.id} AND code = ${read.code} FOR NO KEY UPDATE`
        if (!locked) return false
        await replaceTags(tx, read.id, intOrNull(locked.account_id), tags)
        return true
      })
    },

    async remove(read, within) {
      return sql.begin(async (tx): Promise<RemovedLink | null> => {
        const [locked] = await tx`SELECT * FROM links WHERE id = ${read.id} AND code = ${read.code} FOR UPDATE`
        if (!locked) return null
        const tags = (await tx`SELECT tag FROM link_tags WHERE link_id = ${read.id} ORDER BY tag`).map(
          (r: { tag: string }) => r.tag,
        )
        await tx`DELETE FROM links WHERE id = ${read.id}`
        const gone = { row: link(locked), tags }
        if (within) await within(tx, gone)
        return gone
      })
    },

    async setDisabled(id, reason, now) {
      const [row] = await sql`UPDATE links SET disabled = ${reason}, updated = ${now} WHERE id = ${id} RETURNING *`
      return row ? link(row) : null
    },
    async takeVisit(id) {
      return (
        (await sql`UPDATE links SET visits_used = visits_used + 1 WHERE id = ${id} AND visits_used < max_visits`)
          .count === 1
      )
    },
    async visitsLeft(id) {
      const [row] =
        await sql`SELECT max_visits - visits_used AS remaining FROM links WHERE id = ${id} AND max_visits IS NOT NULL`
      return row ? Math.max(0, int(row.remaining)) : null
    },

    async tagsOf(linkId) {
      return (await sql`SELECT tag FROM link_tags WHERE link_id = ${linkId} ORDER BY tag`).map(
        (r: { tag: string }) => r.tag,
      )
    },
    async tagsFor(linkIds) {
      const out = new Map<number, string[]>()
      if (linkIds.length === 0) return out
      for (const r of await sql`SELECT link_id, tag FROM link_tags WHERE link_id IN ${sql([...linkIds])} ORDER BY link_id, tag`) {
        const id = int(r.link_id)
        const list = out.get(id)
        if (list) list.push(r.tag)
        else out.set(id, [r.tag])
      }
      return out
    },

    async claimImport(accountId, holder, until, now) {
      const rows = await sql`
        INSERT INTO import_locks (account_id, holder, until) VALUES (${accountId}, ${holder}, ${until})
        ON CONFLICT (account_id) DO UPDATE SET holder = excluded.holder, until = excluded.until WHERE import_locks.until <= ${now}
        RETURNING account_id`
      return rows.length === 1
    },
    async renewImport(accountId, holder, until) {
      return (
        (await sql`UPDATE import_locks SET until = ${until} WHERE account_id = ${accountId} AND holder = ${holder}`)
          .count === 1
      )
    },
    async releaseImport(accountId, holder, within) {
      await sql.begin(async (tx) => {
        await tx`DELETE FROM import_locks WHERE account_id = ${accountId} AND holder = ${holder}`
        if (within) await within(tx)
      })
    },
    async importUntil(accountId) {
      const [row] = await sql`SELECT until FROM import_locks WHERE account_id = ${accountId}`
      return row ? int(row.until) : null
    },
    async count(accountId) {
      const [row] = await sql`SELECT links AS n FROM link_counts WHERE owner = ${accountId}`
      return row ? int(row.n) : 0
    },
    async total() {
      const [row] = await sql`SELECT coalesce(sum(links), 0) AS n FROM link_counts`
      return int(row.n)
    },
  }
}
