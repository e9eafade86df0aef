// The storage contract of short links, one for both engines (sqlite.ts, postgres.ts); the promises are in the design notes.
import type { Mode } from '../validate'

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
  /** The short domain it belongs to ('' the default: base_url's host); a code is unique per domain (SPEC §13). */
  domain: string
  /** Where it sends people once expired or used up (null: the 410 page). */
  expired_url: string | null
  /** The social preview (SPEC §2a): '' without; og_image the stored image's version (null: none). */
  og_title: string
  og_description: string
  og_image: string | null
  /** Unix ms: the destination's title is still to be fetched (links.fetch_metadata); null: nothing to fetch. */
  meta_due: number | null
}
/** The row a new link is stored as: its fields, the defaults of those it left out, nothing counted yet. */
export const newLinkRow = (id: number, code: string, l: Omit<NewLink, 'code'>): LinkRow => ({
  id,
  code,
  long_url: l.long_url,
  account_id: l.account_id,
  mode: l.mode,
  password_hash: l.password_hash,
  created: l.created,
  updated: l.created,
  expires: l.expires,
  clicks: 0,
  bots: 0,
  disabled: null,
  max_visits: l.max_visits,
  visits_used: 0,
  rules: l.rules,
  split: l.split,
  title: l.title ?? '',
  domain: l.domain ?? '',
  expired_url: l.expired_url ?? null,
  og_title: l.og_title ?? '',
  og_description: l.og_description ?? '',
  og_image: l.og_image ?? null,
  meta_due: l.meta_due ?? null,
})

/** A plain redirect to nowhere with every field at its default (a row to fill in). */
export const blankLinkRow = (): LinkRow =>
  newLinkRow(0, '', {
    long_url: '',
    account_id: null,
    mode: 'redirect',
    password_hash: null,
    created: 0,
    expires: null,
    max_visits: null,
    rules: null,
    split: null,
  })

/** The fields a change may write (the domain is the link's for life). */
export type LinkChanges = Partial<
  Pick<
    LinkRow,
    | 'long_url'
    | 'mode'
    | 'password_hash'
    | 'expires'
    | 'max_visits'
    | 'rules'
    | 'split'
    | 'title'
    | 'expired_url'
    | 'og_title'
    | 'og_description'
    | 'og_image'
    | 'meta_due'
  >
>
/** Fields a new link may leave out, with what they then are. */
type Defaulted = 'title' | 'domain' | 'expired_url' | 'og_title' | 'og_description' | 'og_image' | 'meta_due'
/** The fields a new link is made with (title, og_title, og_description, domain: ''; the others null). */
export type NewLink = Omit<LinkRow, 'id' | 'clicks' | 'bots' | 'updated' | 'disabled' | 'visits_used' | Defaulted> &
  Partial<Pick<LinkRow, Defaulted>>
export interface NameCount {
  name: string
  clicks: number
}

/** A link's new tags: the list, or made from its tags as they are inside the write's transaction (sorted). */
export type TagsChange = readonly string[] | ((current: string[]) => readonly string[])

/** insert's outcome when the code is in use (the service answers alias_taken, or draws another code). */
export const CODE_TAKEN = 'code_taken'
/** change's outcomes: no link with that id and code any more; or not the caller's to change. */
export const GONE = 'gone'
export const REFUSED = 'refused'

/** The dashboard's orders of the list: a column, and which way (created desc is newest first). */
export type LinkOrder = `${'created' | 'clicks' | 'code' | 'destination'}-${'asc' | 'desc'}`

/** A tag of an account: how many of its links have it, and their clicks. */
export interface TagSummary {
  tag: string
  links: number
  clicks: number
}
/** retagAll's outcome when more links have the tag than it may change at once (nothing was written). */
export const TOO_MANY = 'too_many'
/** A link a tag's rename or removal changed, as written, with its tags then (sorted). */
export interface RetaggedLink {
  row: LinkRow
  tags: string[]
}

/** The link a caller read before an await: checked again, by both, inside the write's transaction (the id is
 *  the link's; the code guards against a deleted and re-made one). */
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

/** What a destination's page says of itself (links.fetch_metadata): cleaned, each '' when absent. */
export interface PageMeta {
  title: string
  og_title: string
  og_description: string
}

/**
 * The title fetch's rows (SPEC §2a, §11): a link is due while its meta_due is set; a node claims it by moving
 * meta_due to the end of its lease (`lease`), and every later write of the claim holds only while it is still
 * that value, so a node whose lease ran out writes nothing.
 */
export interface LinkMetaStore<Tx> {
  /** The earliest meta_due of all links (null: none); when the fetcher looks again. */
  nextMetaDue(): Promise<number | null>
  /**
   * Up to `limit` links whose meta_due is at most `now` (the earliest due; in no order), claimed in one conditional
   * write: their meta_due becomes `lease`. Two nodes claiming at once never get the same link.
   */
  claimMeta(now: number, lease: number, limit: number): Promise<LinkRow[]>
  /** A claimed link due again at `due` (null: never), while the claim `lease` holds; false when it no longer does. */
  deferMeta(id: number, lease: number, due: number | null): Promise<boolean>
  /**
   * A claimed link's page, in one transaction while the claim `lease` holds (else null, nothing written), its
   * meta_due cleared: when its title is still '' and its destination still `url`, the title and, where still '',
   * og_title and og_description taken from `meta` (updated = `now`) and `within` run with the link as written and
   * its tags. The row as written when a field was filled, else null. A destination changed since the claim: due
   * again at `now` (the new one is fetched), nothing filled.
   */
  fillMeta(
    id: number,
    lease: number,
    url: string,
    meta: PageMeta,
    now: number,
    within?: (tx: Tx, row: LinkRow, tags: readonly string[]) => unknown,
  ): Promise<LinkRow | null>
}

/** A link's social-preview image (link_images): re-encoded, its version the one links.og_image names. */
export interface LinkImage {
  version: string
  type: string
  width: number
  height: number
  bytes: Uint8Array
}

export interface LinkStorage<Tx> extends LinkMetaStore<Tx> {
  /**
   * A new link with its tags; `within` runs in the same transaction after them (when it throws, no link is
   * made). CODE_TAKEN, with nothing written, when the code is in use.
   */
  insert(
    link: NewLink,
    tags: readonly string[],
    within?: (tx: Tx, row: LinkRow) => unknown,
  ): Promise<LinkRow | typeof CODE_TAKEN>
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
  /** The link with that code on `domain` ('' the default). */
  byCode(code: string, domain?: string): Promise<LinkRow | null>
  /**
   * The same read at once, where the engine reads synchronously (SQLite, on this thread): the redirect of a
   * code not in the cache is then answered without a promise. Absent on PostgreSQL.
   */
  byCodeNow?(code: string, domain?: string): LinkRow | null
  codeExists(code: string, domain?: string): Promise<boolean>
  byIdAndCode(id: number, code: string): Promise<LinkRow | null>
  /**
   * The link read earlier, read again (locked) in one transaction: GONE when no link has that id and code,
   * REFUSED when `allowed` says no to what was read; else the fields present in `changes` written (a removed
   * visit limit takes its used visits with it), its tags replaced when `tags` is given (a function is handed
   * the tags read in the transaction: a bulk tag added or removed loses no concurrent change), and `within` run
   * with the link as written and its tags as they are then (sorted; read in the transaction when not given).
   */
  change(
    read: ReadLink,
    changes: LinkChanges,
    tags: TagsChange | undefined,
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
   * window was full (so that older links remain to be looked at). `domain`: only that domain's ('' the default).
   */
  pageMatching(
    accountId: number,
    beforeId: number,
    tag: string,
    pattern: string,
    limit: number,
    scan: number,
    domain?: string | null,
  ): Promise<MatchingPage>
  /** The export: the account's links above `afterId`, oldest first. */
  exportPage(accountId: number, afterId: number, limit: number): Promise<LinkRow[]>
  /**
   * The dashboard: a page of the account's links whose code, destination or a tag matches `pattern`, with every
   * tag of `tags` (none: any), in `sort`'s order (newest or most clicked first), or `order`'s when given;
   * `domain`: only that short domain's ('' the default; null or absent: any).
   */
  search(
    accountId: number,
    pattern: string,
    tags: readonly string[],
    sort: 'created' | 'clicks',
    limit: number,
    offset: number,
    order?: LinkOrder,
    domain?: string | null,
  ): Promise<LinkRow[]>
  /** How many of the account's links search would find, counting up to `max`. */
  searchCount(
    accountId: number,
    pattern: string,
    tags: readonly string[],
    max: number,
    domain?: string | null,
  ): Promise<number>
  /** The account's tags by name (at most `limit`), each with how many links have it and their clicks. */
  tagSummary(accountId: number, limit: number): Promise<TagSummary[]>
  /**
   * In one transaction, every link of the account with the tag `from`: the tag renamed `to` (merged into it
   * where a link has both) or, `to` null, removed; each changed link's `updated` set to `now`, and `within`
   * handed them as written. TOO_MANY, with nothing written, when more than `max` links have it.
   */
  retagAll(
    accountId: number,
    from: string,
    to: string | null,
    now: number,
    max: number,
    within?: (tx: Tx, changed: RetaggedLink[]) => unknown,
  ): Promise<number | typeof TOO_MANY>
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
  /** The link's preview image, or null when it has none. */
  image(linkId: number): Promise<LinkImage | null>
  /**
   * Within an insert's or a change's transaction (their `within`): the link's image replaced, or removed
   * (null). On SQLite it writes at once (synchronously); on PostgreSQL it answers the write's promise.
   */
  putImage(tx: Tx, linkId: number, image: LinkImage | null): unknown
  /** The account's links, from its counter. */
  count(accountId: number): Promise<number>
  /** Every link stored, with or without an account (for /metrics), from the counters. */
  total(): Promise<number>
}
