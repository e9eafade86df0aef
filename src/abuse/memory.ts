// The verdicts' memory (SPEC §3, §12): the bans, the disabled accounts and the blocklist held in memory, kept
// fresh by timers and the change feed, and one verdict per link cached beside its row for the redirect to read.
import type { ChangeFeed } from '../db/changes'
import { ACCOUNT_TOPIC } from '../accounts'
import type { LinkRow } from '../links'
import { HostSet, type Blocklist } from './blocklist'
import { destinationHost, destinationsOf, matchHost, type Verdict } from './verdict'
import { BAN_TOPIC, type AbuseRows, type BanRow } from './storage/contract'

/** How soon a disabled account's links answer 451 when no feed says so (a CLI in another process on SQLite). */
const ACCOUNTS_RECHECK_MS = 1000
/** How often the bans are read again all the same (a feed's message lost without a resync: bounded by this). */
const BANS_RECHECK_MS = 30_000

export const EMPTY: Blocklist = { set: new HostSet(0), files: [], loadedAt: 0, ms: 0 }

export interface VerdictMemoryDeps {
  rows: Pick<AbuseRows<unknown>, 'bans' | 'disabledAccounts'>
  /** Changes made by other nodes (db/changes.ts): bans and disabled accounts read again when told. */
  changes?: ChangeFeed
}

export function createVerdictMemory({ rows, changes }: VerdictMemoryDeps) {
  let blocklist = EMPTY
  let bans = new Map<string, string>()
  let banned = new HostSet(0)
  /** Bumped by each ban change of this process: a read of all bans begun before it is stale and dropped. */
  let banChanges = 0
  let disabledAccounts = new Set<number>()
  /** Bumped whenever a ban, the lists or the disabled accounts change: every cached verdict is then stale. */
  let generation = 0
  const verdicts = new WeakMap<LinkRow, { generation: number; verdict: Verdict | null }>()

  function setBans(next: Map<string, string>) {
    bans = next
    banned = new HostSet(bans.size)
    for (const host of bans.keys()) banned.add(host)
    generation++
  }
  async function readBans() {
    const seen = banChanges
    const all = await rows.bans()
    // Unchanged (the periodic read, mostly): the cached verdicts stay good.
    if (seen !== banChanges || (all.length === bans.size && all.every((b) => bans.get(b.host) === b.reason))) return
    setBans(new Map(all.map((b) => [b.host, b.reason])))
  }
  // Reads asked for by the feed: one at a time; one asked for during a read runs after it (it may have begun
  // before the change committed); a failed one is tried again a second later, until one succeeds.
  let bansReading = false
  let bansWanted = false
  let stopped = false
  function refreshBans() {
    bansWanted = true
    if (bansReading || stopped) return
    bansReading = true
    bansWanted = false
    readBans().then(
      () => {
        bansReading = false
        if (bansWanted) refreshBans()
      },
      () => {
        bansReading = false
        setTimeout(() => refreshBans(), 1000).unref?.()
      },
    )
  }
  /** A ban this process wrote, or lifted, in memory as soon as the write committed (no await before the next visit). */
  function banChanged(host: string, added: BanRow | null) {
    banChanges++
    const next = new Map(bans)
    if (added) next.set(host, added.reason)
    else next.delete(host)
    setBans(next)
  }

  // Reads may overlap (the timer's, and one after a change of this process): the later-begun one wins.
  let accountReads = 0
  let accountsApplied = 0
  async function readAccounts() {
    const begun = ++accountReads
    const ids = await rows.disabledAccounts()
    if (begun < accountsApplied) return
    accountsApplied = begun
    if (ids.length !== disabledAccounts.size || ids.some((id) => !disabledAccounts.has(id))) {
      disabledAccounts = new Set(ids)
      generation++
    }
  }
  // Twice a second, so that a change is seen within ACCOUNTS_RECHECK_MS (one read at a time). A failed read keeps
  // the set as it was (a database gone for a moment: the redirects go on from memory); the next tick tries again.
  let polling = false
  let ticks = 0
  const accountsTimer = setInterval(() => {
    if (++ticks % (BANS_RECHECK_MS / (ACCOUNTS_RECHECK_MS / 2)) === 0) refreshBans()
    if (polling) return
    polling = true
    readAccounts()
      .catch(() => {})
      .finally(() => (polling = false))
  }, ACCOUNTS_RECHECK_MS / 2)
  accountsTimer.unref?.()
  // Another node's changes (its transaction announced them): read again at once. A resync: anything may have changed.
  const readAccountsNow = () => void readAccounts().catch(() => {}) // a failure: the timer's next tick reads again
  const unsubscribe = changes
    ? [
        changes.subscribe(BAN_TOPIC, refreshBans, refreshBans),
        changes.subscribe(ACCOUNT_TOPIC, readAccountsNow, readAccountsNow),
      ]
    : []

  /** The memory the visit path reads, loaded: the bans and the disabled accounts. */
  const ready = Promise.all([readBans(), readAccounts()]).then(() => {})

  /** Why a host may not be a destination, or null. */
  function hostVerdict(host: string | null): Extract<Verdict, { host: string }> | null {
    if (host === null) return null
    const ban = matchHost(banned, host)
    if (ban !== null) return { kind: 'banned', host: ban, reason: bans.get(ban) ?? '' }
    const listed = matchHost(blocklist.set, host)
    return listed !== null ? { kind: 'listed', host: listed } : null
  }

  function compute(row: LinkRow): Verdict | null {
    if (row.disabled !== null) return { kind: 'disabled', reason: row.disabled }
    if (row.account_id !== null && disabledAccounts.has(row.account_id)) return { kind: 'account' }
    if (banned.size === 0 && blocklist.set.size === 0) return null
    // Every place the link may send a visitor: its own destination and those of its rules and split (a
    // host banned after the link was made must not be reached through a rule either).
    for (const url of destinationsOf(row)) {
      const v = hostVerdict(destinationHost(url))
      if (v) return v
    }
    return null
  }

  return {
    ready,

    /** What a visitor of this link meets: null (the link works) or why it answers 451. The visit's one lookup; never awaits. */
    verdict(row: LinkRow): Verdict | null {
      const kept = verdicts.get(row)
      if (kept && kept.generation === generation) return kept.verdict
      const verdict = compute(row)
      verdicts.set(row, { generation, verdict })
      return verdict
    },

    /** Bumped whenever a verdict may have changed: one taken at a generation holds while it is current. */
    generation: () => generation,
    hostVerdict,
    banChanged,
    readAccounts,
    blocklist: () => blocklist,
    /** New blocklists in place: every cached verdict is then stale. */
    setBlocklist(next: Blocklist) {
      blocklist = next
      generation++
    },

    /** Stops reading the disabled accounts and the bans (before the database closes). */
    close() {
      stopped = true
      clearInterval(accountsTimer)
      for (const off of unsubscribe) off()
    },
  }
}
