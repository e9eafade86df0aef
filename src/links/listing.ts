// Lists of a caller's links: links.json's pages by cursor, the export's pages, the dashboard's search.
import type { Caller } from '../kernel/caller'
import { invalidParameter } from '../kernel/errors'
import { codeKey, type Domains } from './domains'
import type { LinkRecord, Records } from './record'
import type { LinkOrder, LinkStorage } from './storage/contract'
import { validateTag } from './validate'

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

const present = (v: unknown) => v !== undefined && v !== null && v !== ''

export function createListing<Tx>(
  store: LinkStorage<Tx>,
  { records, domains }: Pick<Records, 'records'> & { domains: Pick<Domains, 'named'> },
) {
  return {
    /**
     * links.json: a page of the caller's links, newest first. `tag` keeps the links with that tag (along an
     * index); `q` those whose code, destination or a tag contains it (case-insensitive), looking at no more
     * than LIST_SCAN links per page: such a page may hold fewer than `limit` links while `next` goes on;
     * `domain` those of one short domain, looked for the same way.
     */
    async list(
      input: { limit?: unknown; cursor?: unknown; tag?: unknown; q?: unknown; domain?: unknown },
      caller: Caller,
    ) {
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
      const domain = present(input.domain) ? domains.named(input.domain) : null
      const count = await store.count(caller.accountId)
      if (q || domain !== null) {
        const { rows, floor, full } = await store.pageMatching(
          caller.accountId,
          before,
          tag,
          q ? containsPattern(q) : '%',
          limit + 1,
          LIST_SCAN,
          domain,
        )
        const more = rows.length > limit
        const pageRows = more ? rows.slice(0, limit) : rows
        // Past the page's last link, or (the window looked at without filling the page) past the window.
        const next = more ? pageRows[pageRows.length - 1]!.id : full ? floor : null
        return { links: await records(pageRows), count, next: next === null ? null : String(next) }
      }
      const rows = await (tag
        ? store.pageByTag(caller.accountId, tag, before, limit + 1)
        : store.page(caller.accountId, before, limit + 1))
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

    /**
     * The dashboard's list: the caller's own links whose code, destination or a tag contains `q`
     * (case-insensitive for ASCII letters) and that have every tag of `tags` (and `tag`), in `order` (newest
     * first by default; `sort` 'clicks' is most clicked first), SEARCH_PAGE_SIZE a page. `total` is exact without
     * a filter (a counter) and counted up to SEARCH_COUNT_MAX with one (`capped` then says there are more); a
     * page past the end answers the last page.
     */
    async search(input: SearchInput & { page?: number }, caller: Caller) {
      const { q, tags, pattern, order } = searchOf(input)
      const domain = present(input.domain) ? domains.named(input.domain) : null
      const sort: LinkSort = input.sort === 'clicks' ? 'clicks' : 'created'
      const filtered = q !== '' || tags.length > 0 || domain !== null
      const counted = await (filtered
        ? store.searchCount(caller.accountId, pattern, tags, SEARCH_COUNT_MAX + 1, domain)
        : store.count(caller.accountId))
      const capped = filtered && counted > SEARCH_COUNT_MAX
      const total = capped ? SEARCH_COUNT_MAX : counted
      const pages = Math.max(1, Math.ceil(total / SEARCH_PAGE_SIZE))
      const page = Math.min(Math.max(1, Math.floor(input.page ?? 1) || 1), pages)
      const offset = (page - 1) * SEARCH_PAGE_SIZE
      const rows = await store.search(caller.accountId, pattern, tags, sort, SEARCH_PAGE_SIZE, offset, order, domain)
      const tag = tags[0] ?? ''
      return {
        links: await records(rows),
        q,
        domain,
        tag,
        tags,
        sort,
        order,
        page,
        pages,
        total,
        capped,
        offset,
        perPage: SEARCH_PAGE_SIZE,
      }
    },

    /** The codes of the caller's links the dashboard's filter finds (as search does), in its order, at most `max`. */
    async matchingCodes(input: SearchInput, caller: Caller, max: number): Promise<string[]> {
      const { tags, pattern, order } = searchOf(input)
      const domain = present(input.domain) ? domains.named(input.domain) : null
      const rows = await store.search(caller.accountId, pattern, tags, 'created', max, 0, order, domain)
      // As the dashboard names links (its paths and bulk selections): codeKey, "code@host" on another domain.
      return rows.map((r) => codeKey(r.domain, r.code))
    },
  }
}

/** The dashboard's filter: what was typed, tags (each once, at most MAX_FILTER_TAGS) and the order. */
export interface SearchInput {
  q?: string
  tag?: string
  tags?: readonly string[]
  sort?: LinkSort
  order?: LinkOrder
  /** Only one short domain's links (its host; absent: every domain's). */
  domain?: string
}
export const MAX_FILTER_TAGS = 10

function searchOf(input: SearchInput) {
  const q = (input.q ?? '').trim()
  if ([...q].length > MAX_SEARCH_LENGTH) throw invalidParameter('q', `at most ${MAX_SEARCH_LENGTH} characters`)
  const asked = [...(input.tags ?? []), ...(input.tag ? [input.tag] : [])]
  if (asked.length > MAX_FILTER_TAGS) throw invalidParameter('tags', `at most ${MAX_FILTER_TAGS} tags`)
  const tags = [...new Set(asked.map((t) => validateTag(t)))]
  const order: LinkOrder = input.order ?? (input.sort === 'clicks' ? 'clicks-desc' : 'created-desc')
  return { q, tags, pattern: q ? containsPattern(q) : '%', order }
}
