// The redirect's own cache of visited codes, compact: per code only what a plain redirect reads (the link's id,
// account, destination, expiry and whether the gate let it through), in typed arrays beside one Map per
// generation; the rest of a row is read on the slow path (cache.ts). Design notes: links, the link cache.
import { codeKey } from './domains'
import { sharedRead } from './shared-read'
import { hasPreview } from './preview'
import { blankLinkRow, type LinkRow, type LinkStorage } from './storage/contract'
import { isReserved } from './validate'

/** A code whose link is not a plain redirect now (a page, a password, a limit, stopped): the router's. */
export const NOT_PLAIN = 'not_plain'
export type HotLink = LinkRow | null | typeof NOT_PLAIN

const PLAIN = 0
/** A link with rules, a split or a social preview: its row is kept whole (destinations.ts compiles rules once per row). */
const ROUTED = 1
const OTHER = 2

/** The codes of one generation: code → slot, and the slots' fields (grown as codes come, up to `size`). */
class Generation {
  readonly slots = new Map<string, number>()
  ids = new Float64Array(0)
  accounts = new Float64Array(0)
  expires = new Float64Array(0)
  at = new Float64Array(0)
  stamps = new Float64Array(0)
  kinds = new Uint8Array(0)
  codes: string[] = []
  /** Each slot's domain ('' the default): a code is unique per domain (SPEC §13). */
  domains: string[] = []
  urls: string[] = []
  readonly routed = new Map<number, LinkRow>()
  used = 0
  chars = 0
  constructor(readonly size: number) {}
  /** A new slot: the arrays double when full (a server visited over a few codes holds little). */
  take(): number {
    const slot = this.used++
    if (slot >= this.ids.length) {
      const n = Math.min(this.size, Math.max(1024, this.ids.length * 2))
      const grown = <T extends Float64Array | Uint8Array>(a: T, b: T) => (b.set(a), b)
      this.ids = grown(this.ids, new Float64Array(n))
      this.accounts = grown(this.accounts, new Float64Array(n))
      this.expires = grown(this.expires, new Float64Array(n))
      this.at = grown(this.at, new Float64Array(n))
      this.stamps = grown(this.stamps, new Float64Array(n))
      this.kinds = grown(this.kinds, new Uint8Array(n))
    }
    return slot
  }
  /** Emptied for reuse: nothing of the codes it held is kept. */
  clear() {
    this.slots.clear()
    this.routed.clear()
    this.codes.length = 0
    this.domains.length = 0
    this.urls.length = 0
    this.used = 0
    this.chars = 0
  }
}

export function createHotCache(deps: {
  store: Pick<LinkStorage<unknown>, 'byCode' | 'byCodeNow'>
  clock: () => number
  ttlMs: number
  /** Codes per generation (tests make it tiny). */
  generation?: number
  /** Whether the gate stops a link (disabled, banned, listed), and the generation its verdicts are good for. */
  stopped?: (row: LinkRow) => boolean
  gateGeneration?: () => number
}) {
  const { store, clock, ttlMs } = deps
  const readNow = store.byCodeNow?.bind(store)
  const stopped = deps.stopped ?? (() => false)
  const gateGeneration = deps.gateGeneration ?? (() => 0)
  const SIZE = deps.generation ?? 65_536
  const GENERATION_CHARS = 8_000_000
  let young = new Generation(SIZE)
  let old = new Generation(SIZE)
  // The one row a hit hands out for a plain link, filled from the slot: read at once, never kept.
  const view: LinkRow = blankLinkRow()
  // Reads of missed codes under way (PostgreSQL), shared by the visits of one code at once (capped).
  const reading = new Map<string, Promise<HotLink>>()
  const READING_MAX = 10_000

  const forget = (code: string) => {
    young.slots.delete(code)
    old.slots.delete(code)
    reading.delete(code)
  }
  const forgetAll = () => {
    young.clear()
    old.clear()
    reading.clear()
  }

  /** A free slot of the young generation; when it is full, the old one is emptied and becomes the young one. */
  function slotFor(chars: number): number {
    if (young.used >= SIZE || young.chars + chars > GENERATION_CHARS) {
      const emptied = old
      emptied.clear()
      old = young
      young = emptied
    }
    young.chars += chars
    return young.take()
  }

  /** A page, a password, a limit or stopped by the gate: the router's. */
  const notPlain = (row: LinkRow) =>
    row.mode !== 'redirect' || row.password_hash !== null || row.max_visits !== null || stopped(row)

  /** A young slot holding a code's fields (`row`: the whole row of a routed link), under its key (codeKey). */
  function place(
    key: string,
    code: string,
    domain: string,
    url: string,
    id: number,
    account: number,
    expires: number,
    at: number,
    stamp: number,
    kind: number,
    row: LinkRow | undefined,
  ): number {
    const slot = slotFor(code.length + url.length)
    const g = young
    // Keyed by the row's own code, as read: no string of a request's is kept.
    g.slots.set(key, slot)
    g.codes[slot] = code
    g.domains[slot] = domain
    g.urls[slot] = url
    g.ids[slot] = id
    g.accounts[slot] = account
    g.expires[slot] = expires
    g.at[slot] = at
    g.stamps[slot] = stamp
    g.kinds[slot] = kind
    if (row) g.routed.set(slot, row)
    return slot
  }

  /** Keeps a row read now, as the redirect needs it; answers what the redirect makes of it. */
  function keep(row: LinkRow, now: number): HotLink {
    // A social preview's row is kept whole: the redirect hands its crawlers to the router (the card).
    const kind = notPlain(row) ? OTHER : row.rules !== null || row.split !== null || hasPreview(row) ? ROUTED : PLAIN
    const key = codeKey(row.domain, row.code)
    old.slots.delete(key)
    const account = row.account_id ?? Number.NaN
    const expires = row.expires ?? Number.NaN
    const routed = kind === ROUTED ? row : undefined
    place(key, row.code, row.domain, row.long_url, row.id, account, expires, now, gateGeneration(), kind, routed)
    return kind === OTHER ? NOT_PLAIN : row
  }

  /** A slot of the old generation visited again: copied to the young one (read first: the copy may empty `old`). */
  function promote(slot: number): number {
    const o = old
    const row = o.routed.get(slot)
    const code = o.codes[slot]!
    const domain = o.domains[slot]!
    const url = o.urls[slot]!
    return place(
      codeKey(domain, code),
      code,
      domain,
      url,
      o.ids[slot]!,
      o.accounts[slot]!,
      o.expires[slot]!,
      o.at[slot]!,
      o.stamps[slot]!,
      o.kinds[slot]!,
      row,
    )
  }

  /** What a hit hands out: the row of a routed link, the view of a plain one. */
  function answer(g: Generation, slot: number): HotLink {
    const kind = g.kinds[slot]!
    if (kind === OTHER) return NOT_PLAIN
    if (kind === ROUTED) return g.routed.get(slot)!
    view.id = g.ids[slot]!
    view.code = g.codes[slot]!
    view.domain = g.domains[slot]!
    view.long_url = g.urls[slot]!
    const account = g.accounts[slot]!
    view.account_id = Number.isNaN(account) ? null : account
    const expires = g.expires[slot]!
    view.expires = Number.isNaN(expires) ? null : expires
    return view
  }

  function readMissed(key: string, code: string, domain: string, now: number): Promise<HotLink> {
    // Overtaken by a change of the code (or not shared): answered from the row, never kept.
    return sharedRead(
      reading,
      READING_MAX,
      key,
      () => store.byCode(code, domain),
      (row, kept) => (row === null ? null : kept ? keep(row, now) : notPlain(row) ? NOT_PLAIN : row),
    )
  }

  return {
    /** Codes held (both generations; /metrics). */
    get rows() {
      return young.slots.size + old.slots.size
    },
    /** A link changed or went (told by the row cache, which hears the change feed: cache.ts). */
    forget,
    /** The channel to the other processes was lost: anything may have changed. */
    forgetAll,

    /**
     * What the redirect of a code on a domain ('' the default) reads: a row (for a plain link a view of the
     * slot, to be read at once and never kept), NOT_PLAIN, or null (no such link); synchronous on a hit and on
     * SQLite, else a promise.
     */
    find(code: string, domain = ''): HotLink | Promise<HotLink> {
      const now = clock()
      const stamp = gateGeneration()
      const key = domain === '' ? code : codeKey(domain, code)
      let slot = young.slots.get(key)
      if (slot !== undefined && now - young.at[slot]! < ttlMs && young.stamps[slot] === stamp)
        return answer(young, slot)
      if (slot === undefined) {
        slot = old.slots.get(key)
        if (slot !== undefined && now - old.at[slot]! < ttlMs && old.stamps[slot] === stamp)
          return answer(young, promote(slot))
      }
      if (isReserved(code)) return null
      if (readNow === undefined) return readMissed(key, code, domain, now)
      const row = readNow(code, domain)
      if (row === null) {
        forget(key)
        return null
      }
      return keep(row, now)
    },
  }
}
