// The cache of visited rows for the visit routes but the plain redirect (hot-cache.ts): answered synchronously
// on a hit, dropped per code on every change this process publishes or hears of (db/changes.ts); design notes: links, the link cache.
import type { ChangeFeed } from '../db/changes'
import type { LinkRow, LinkStorage } from './storage/contract'
import { codeKey } from './domains'
import { sharedRead } from './shared-read'
import { isReserved, MODES } from './validate'

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

export function createLinkCache(deps: {
  store: Pick<LinkStorage<unknown>, 'byCode' | 'byCodeNow'>
  feed: ChangeFeed
  clock: () => number
  /** Rows per generation (tests make it tiny). */
  generation?: number
  ttlMs?: number
  /** Another cache of links told of the same changes (hot-cache.ts). */
  alongside?: { forget(code: string): void; forgetAll(): void }
}) {
  const { store, feed, clock } = deps
  const readNow = store.byCodeNow?.bind(store)
  const cacheTtlMs = deps.ttlMs ?? LINK_CACHE_TTL_MS
  // Two generations rather than one Map evicted oldest-first: replacing a generation costs nothing. The plain
  // redirect reads hot-cache.ts instead: rows here are the slow path's (pages, passwords, the API), fewer.
  const GENERATION = deps.generation ?? 4_096
  const GENERATION_CHARS = 8_000_000
  let young = new Map<string, CachedLink>()
  let old = new Map<string, CachedLink>()
  let youngChars = 0
  // Reads of missed codes under way, so that visits of one code at once share one read (capped).
  const reading = new Map<string, Promise<LinkRow | null>>()
  const READING_MAX = 10_000
  const forget = (code: string) => {
    deps.alongside?.forget(code)
    young.delete(code)
    old.delete(code)
    // A read begun before this change may return the row as it was: it is not kept (see readMissed).
    reading.delete(code)
  }
  const forgetAll = () => {
    deps.alongside?.forgetAll()
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

  /**
   * A row read after a miss, kept: in the young generation alone (a copy past its TTL in the old one goes),
   * or, read as gone, dropped from both.
   */
  function keepRead(key: string, row: LinkRow | null, now: number): LinkRow | null {
    old.delete(key)
    if (row) {
      // Keyed by the row's own code and holding the one string of its mode: no string of the request's is kept.
      row.mode = MODES.find((m) => m === row.mode) ?? row.mode
      remember(row.domain === '' ? row.code : codeKey(row.domain, row.code), { row, at: now })
    } else young.delete(key)
    return row
  }

  /** A code missed by the cache, read; kept unless its code changed while the read was under way. */
  function readMissed(key: string, code: string, domain: string, now: number): Promise<LinkRow | null> {
    // Overtaken by a change of the code (or not shared, past READING_MAX): answered, never kept.
    return sharedRead(
      reading,
      READING_MAX,
      key,
      () => store.byCode(code, domain),
      (row, kept) => (kept ? keepRead(key, row, now) : row),
    )
  }

  return {
    /** Rows held (both generations; /metrics). */
    get rows() {
      return young.size + old.size
    },
    /** After the commit of a change of these links (their keys: codeKey): every process's cache drops them. */
    published: (keys: readonly string[]) => feed.publish('link', keys),
    /** Stops hearing of other processes' changes. */
    close: () => stopChanges(),

    /**
     * The link behind a visited code (null when unknown, or a reserved name): the cached row itself on a hit
     * (synchronous: the redirect never waits); on a miss the stored row read at once where the engine can
     * (SQLite), else a promise of it (PostgreSQL; visits of one code at once share one read).
     */
    resolve(code: string, domain = ''): LinkRow | null | Promise<LinkRow | null> {
      const now = clock()
      const key = domain === '' ? code : codeKey(domain, code)
      const hit = young.get(key)
      if (hit !== undefined && now - hit.at < cacheTtlMs) return hit.row
      const held = hit === undefined ? old.get(key) : undefined
      if (held !== undefined && now - held.at < cacheTtlMs) {
        remember(key, held)
        return held.row
      }
      // No link has a reserved name (validate.ts; random codes skip them): /healthz costs no read.
      if (isReserved(code)) return null
      if (readNow === undefined) return readMissed(key, code, domain, now)
      // SQLite: read at once, on this thread; nothing can overtake a read that does not wait.
      return keepRead(key, readNow(code, domain), now)
    },
  }
}
