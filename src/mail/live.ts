// The held messages.json requests (wait=N) and the dashboard's live views of mailboxes, bounded, told of new mail
// through the change feed's 'mail' topic by whichever node took it (on one process, at once).
import type { ChangeFeed } from '../db/changes'
import { AppError } from '../kernel/errors'

/** Held messages.json requests, in all and per account: each is a socket and a promise, so both are bounded. */
const MAX_WAITERS = 2000
const MAX_WAITERS_PER_ACCOUNT = 100
/** Open live views of mailboxes (the dashboard's event streams), in all and per account: each is a socket. */
export const MAX_WATCHERS = 1000
export const MAX_WATCHERS_PER_ACCOUNT = 20
/** The change feed's topic for "this mailbox changed" (mail arrived, or it was deleted): keys are mailbox ids. */
export const MAIL_TOPIC = 'mail'

/** 'mail': a message arrived; 'gone': the mailbox was deleted; 'closing': the server stops. */
export type WatchEvent = 'mail' | 'gone' | 'closing'

/** `changes`: mailboxes changed anywhere wake this node's waiters and live views (absent: this process only). */
export function createMailboxNotices(changes?: ChangeFeed) {
  const waiters = new Map<number, Set<() => void>>()
  const waitersByAccount = new Map<number, number>()
  let waiting = 0
  let closing = false

  function wake(mailboxId: number) {
    const set = waiters.get(mailboxId)
    if (!set) return
    waiters.delete(mailboxId)
    for (const w of set) w()
  }

  /** Resolves when mail arrives for the mailbox, after `ms`, when the request goes away, or at shutdown. */
  function waitForMail(mailboxId: number, accountId: number, ms: number, signal: AbortSignal): Promise<void> {
    if (closing || ms <= 0 || signal.aborted) return Promise.resolve()
    if (waiting >= MAX_WAITERS || (waitersByAccount.get(accountId) ?? 0) >= MAX_WAITERS_PER_ACCOUNT)
      throw new AppError(503, 'busy', 'Too many requests are waiting for mail; try again in a moment.', {
        'Retry-After': '1',
      })
    waiting++
    waitersByAccount.set(accountId, (waitersByAccount.get(accountId) ?? 0) + 1)
    return new Promise<void>((resolve) => {
      let set = waiters.get(mailboxId)
      if (!set) waiters.set(mailboxId, (set = new Set()))
      const done = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        waiters.get(mailboxId)?.delete(done)
        if (waiters.get(mailboxId)?.size === 0) waiters.delete(mailboxId)
        waiting--
        const left = (waitersByAccount.get(accountId) ?? 1) - 1
        if (left > 0) waitersByAccount.set(accountId, left)
        else waitersByAccount.delete(accountId)
        resolve()
      }
      const timer = setTimeout(done, ms)
      signal.addEventListener('abort', done, { once: true })
      set.add(done)
    })
  }

  const watchers = new Map<number, Set<(e: WatchEvent) => void>>()
  const watchersByAccount = new Map<number, number>()
  let watching = 0

  /**
   * Calls `listener` on every change of the mailbox until the returned stop is called (at most once per listener,
   * safe to call twice). Bounded in all and per account: past either, 503 busy. At shutdown: 'closing', then stopped.
   */
  function watch(mailboxId: number, accountId: number, listener: (e: WatchEvent) => void): () => void {
    if (closing) throw new AppError(503, 'busy', 'The service is shutting down.', { 'Retry-After': '1' })
    if (watching >= MAX_WATCHERS || (watchersByAccount.get(accountId) ?? 0) >= MAX_WATCHERS_PER_ACCOUNT)
      throw new AppError(503, 'busy', 'Too many mailboxes are open at once; close some pages and try again.', {
        'Retry-After': '5',
      })
    let set = watchers.get(mailboxId)
    if (!set) watchers.set(mailboxId, (set = new Set()))
    const own = set
    own.add(listener)
    watching++
    watchersByAccount.set(accountId, (watchersByAccount.get(accountId) ?? 0) + 1)
    let stopped = false
    return () => {
      if (stopped) return
      stopped = true
      own.delete(listener)
      if (own.size === 0 && watchers.get(mailboxId) === own) watchers.delete(mailboxId)
      watching--
      const left = (watchersByAccount.get(accountId) ?? 1) - 1
      if (left > 0) watchersByAccount.set(accountId, left)
      else watchersByAccount.delete(accountId)
    }
  }

  function tellWatchers(mailboxId: number, e: WatchEvent) {
    for (const w of [...(watchers.get(mailboxId) ?? [])]) w(e)
  }

  /** A mailbox changed (mail arrived, or it went), here or on another node: its held requests and live views read again. */
  function mailboxChanged(mailboxId: number) {
    wake(mailboxId)
    tellWatchers(mailboxId, 'mail')
  }
  const unsubscribe = changes?.subscribe(
    MAIL_TOPIC,
    (keys) => keys.forEach((key) => mailboxChanged(Number(key))),
    // Anything may have changed: every held request and live view reads again (and finds what is new, or nothing).
    () => {
      for (const id of [...waiters.keys()]) wake(id)
      for (const id of [...watchers.keys()]) tellWatchers(id, 'mail')
    },
  )
  /** After a commit that changed these mailboxes: every node (this one before this returns) hears of it. */
  function announce(mailboxIds: number[]) {
    if (mailboxIds.length === 0) return
    if (changes) changes.publish(MAIL_TOPIC, mailboxIds.map(String))
    else mailboxIds.forEach(mailboxChanged)
  }
  /** Mailboxes deleted here (by the owner, the sweep, or made anew after expiry): open pages hear 'gone', other nodes' read again. */
  function mailboxGone(ids: number[]) {
    for (const id of ids) tellWatchers(id, 'gone')
    announce(ids)
  }

  return {
    wake,
    waitForMail,
    watch,
    announce,
    mailboxGone,
    get waiting() {
      return waiting
    },
    get watching() {
      return watching
    },
    /** Shutdown: every held request answers now and every live view hears 'closing'; none is held from here on. */
    release() {
      closing = true
      unsubscribe?.()
      for (const id of [...waiters.keys()]) wake(id)
      for (const id of [...watchers.keys()]) tellWatchers(id, 'closing')
    },
  }
}
export type MailboxNotices = ReturnType<typeof createMailboxNotices>
