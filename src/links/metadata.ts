// The destination's title of a keyed link made without one (links.fetch_metadata, SPEC §2a), fetched once after
// its creation, off the request's path, on whichever node claims it (SPEC §11): the creation sets meta_due in its
// transaction; every node's fetcher claims due links under a lease, at most CONCURRENT at once, and writes the
// title (and the preview's og defaults) with link.updated, or tries again later, or gives up. Design notes: links.
import type { Caller } from '../kernel/caller'
import type { Config } from '../kernel/config'
import type { Events } from '../kernel/events'
import { codeKey } from './domains'
import type { LinkEventWriter } from './event-writer'
import { fetchPageMeta, type FetchOutcome, type MetaGuard } from './metadata-fetch'
import type { LinkRecord } from './record'
import type { LinkMetaStore, LinkRow, PageMeta } from './storage/contract'

/** SPEC §2a: at most two fetches at once on a node. */
export const CONCURRENT = 2

export type MetaOutcome = 'filled' | 'nothing' | 'retry' | 'failed'

/** The fetcher's timings (tests shorten them) and its reports. */
export interface MetadataOptions {
  /** The longest wait between two looks for due links (rows another node left, retries). Default 10 s. */
  pollMs?: number
  /** How long a claim holds a link: a node that dies while fetching leaves it to others after this. Default 60 s. */
  leaseMs?: number
  /** The shortest wait before a failed fetch is tried again; the wait then grows with the link's age. Default 30 s. */
  retryMs?: number
  /** A link older than this is not tried again after a failure (about 6 tries with the defaults). Default 15 min. */
  giveUpMs?: number
  /** The SSRF guard's name resolution and public addresses (Shared's guard: tests replace them). */
  guard?: Pick<MetaGuard, 'resolve' | 'isAllowed'>
  /** Each fetch's outcome (the /metrics counter). */
  onOutcome?: (outcome: MetaOutcome) => void
  /** A failure of the fetcher itself (a storage error), for the fault log. */
  fault?: (what: string, err: unknown) => void
}

interface MetadataDeps<Tx> {
  store: LinkMetaStore<Tx>
  config: Config
  clock: () => number
  events: Events
  record: (row: LinkRow, tags: readonly string[]) => LinkRecord
  published: (codes: readonly string[]) => void
  eventWriter: () => LinkEventWriter<Tx>
}

export function createMetadata<Tx>(deps: MetadataDeps<Tx>, options: MetadataOptions = {}) {
  const { store, config, clock, events, record, published, eventWriter } = deps
  const pollMs = options.pollMs ?? 10_000
  const leaseMs = options.leaseMs ?? 60_000
  const retryMs = options.retryMs ?? 30_000
  const giveUpMs = options.giveUpMs ?? 15 * 60_000
  const fault = options.fault ?? (() => {})

  let running = false
  let stopping = new AbortController()
  let timer: ReturnType<typeof setTimeout> | null = null
  let looking: Promise<void> | null = null
  let lookAgain = false
  /** The fetches under way (at most CONCURRENT). */
  const flights = new Set<Promise<void>>()

  /** Looks for due links until nothing more can start; then sleeps until the next due one (at most pollMs). */
  function look() {
    if (!running) return
    if (looking) {
      lookAgain = true
      return
    }
    if (timer) clearTimeout(timer)
    timer = null
    looking = (async () => {
      let wait = pollMs
      do {
        lookAgain = false
        wait = await pass()
      } while (lookAgain && running)
      if (running) {
        timer = setTimeout(look, wait)
        timer.unref?.()
      }
    })().finally(() => void (looking = null))
  }

  /** Claims what free slots allow and starts it; how long until the next look. */
  async function pass(): Promise<number> {
    try {
      // Switched off (SIGHUP): due links stay due, for a node or a time where it is on.
      if (!config.links.fetch_metadata) return pollMs
      while (running && flights.size < CONCURRENT) {
        const now = clock()
        const rows = await store.claimMeta(now, now + leaseMs, CONCURRENT - flights.size)
        for (const row of rows) start(row, now + leaseMs)
        if (rows.length === 0) break
      }
      // Full: a fetch that ends looks again.
      if (flights.size >= CONCURRENT) return pollMs
      const next = await store.nextMetaDue()
      return next === null ? pollMs : Math.min(pollMs, Math.max(10, next - clock()))
    } catch (err) {
      fault('the title fetch could not read or claim due links', err)
      return pollMs
    }
  }

  function start(row: LinkRow, lease: number) {
    const flight: Promise<void> = fetchOne(row, lease)
      .catch((err) => fault('the title fetch could not write its outcome', err))
      .finally(() => {
        flights.delete(flight)
        look()
      })
    flights.add(flight)
  }

  async function fetchOne(row: LinkRow, lease: number) {
    const signal = stopping.signal
    const outcome: FetchOutcome = await fetchPageMeta(
      row.long_url,
      { ...options.guard, allowPrivate: config.media.allow_private_networks },
      { signal },
    )
    if ('page' in outcome) {
      options.onOutcome?.((await fill(row, lease, outcome.page)) ? 'filled' : 'nothing')
      return
    }
    const now = clock()
    // Cut by the node's stop: due again at once, for the next node to look (or this one, restarted).
    if (signal.aborted) {
      await store.deferMeta(row.id, lease, now)
      return
    }
    // Tried again after a wait as long as the link is old (at least retryMs), until it is giveUpMs old.
    const age = Math.max(0, now - row.created)
    const retry = 'retry' in outcome && age < giveUpMs
    options.onOutcome?.(retry ? 'retry' : 'failed')
    await store.deferMeta(row.id, lease, retry ? now + Math.max(retryMs, age) : null)
  }

  /** The page's title and preview defaults written, with link.updated, if the link still wants them. */
  async function fill(row: LinkRow, lease: number, page: PageMeta): Promise<boolean> {
    const event = eventWriter()
    let tagsNow: readonly string[] = []
    const written = await store.fillMeta(row.id, lease, row.long_url, page, clock(), (tx, w, tags) => {
      tagsNow = tags
      return event.write(tx, 'link.updated', w.account_id, () => ({ ...record(w, tags) }), w.updated)
    })
    if (!written) return false
    published([codeKey(written.domain, written.code)])
    event.wake()
    events.emit('link.updated', { link: { ...record(written, tagsNow) }, accountId: written.account_id })
    return true
  }

  return {
    /**
     * The meta_due of a new link: now for a keyed one (an API key, a signed-in dashboard) made without a title
     * while links.fetch_metadata is on; else null. Never for anonymous links, nor an import's rows (`quiet`).
     */
    due(caller: Caller | null, title: string, quiet = false): number | null {
      return config.links.fetch_metadata && caller !== null && title === '' && !quiet ? clock() : null
    },
    /** After a creation that set meta_due committed: the fetcher looks at once. */
    wake() {
      look()
    },
    /** Starts looking (the service listens): now, and every pollMs at least. */
    start() {
      if (running) return
      running = true
      stopping = new AbortController()
      look()
    },
    /** Stops looking; fetches under way are cut and their links made due again; settles when they are. */
    async stop() {
      running = false
      if (timer) clearTimeout(timer)
      timer = null
      stopping.abort()
      await looking
      await Promise.all([...flights])
    },
    /** Fetches under way (tests, /metrics). */
    get fetching() {
      return flights.size
    },
  }
}
export type Metadata = ReturnType<typeof createMetadata>
