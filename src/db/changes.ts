// The change feed between nodes (issue 22, SPEC §11): a writer publishes which entries changed after its commit,
// every node's caches drop them (and read the row again). localChangeFeed here; PostgreSQL's in postgres/changes.ts.

export interface ChangeFeed {
  /**
   * Tells every subscriber of `topic`, on this node and (PostgreSQL) on every other, that these keys changed.
   * Call it AFTER the change is committed (a subscriber that reads again at once must find the new row).
   * Never waits, and throws only for a topic that is not a name (a bug): a failure to reach other nodes is
   * retried by the feed (postgres/changes.ts).
   */
  publish(topic: string, keys: readonly string[]): void
  /** Registers a subscriber; the function returned removes it. onKeys is never called with an empty list. */
  subscribe(topic: string, onKeys: (keys: readonly string[]) => void, onResync: () => void): () => void
  /** Stops delivering, and (PostgreSQL) stops listening and its timers. Safe to call twice. */
  close(): Promise<void>
}

/** A topic name: short, lower-case, so that a message names it in a few bytes and a typo is caught at once. */
export const TOPIC = /^[a-z][a-z_]{0,31}$/

export function checkTopic(topic: string): void {
  if (!TOPIC.test(topic))
    throw new Error(`change feed: ${JSON.stringify(topic)} is not a topic name (a-z and _, at most 32)`)
}

interface Subscriber {
  onKeys: (keys: readonly string[]) => void
  onResync: () => void
}

/**
 * The subscribers of one node, by topic, and their calls. A subscriber that throws does not stop the others
 * and does not reach the publisher (whose change is committed already): its error goes to onError.
 */
export function createSubscribers(onError: (err: unknown) => void) {
  const byTopic = new Map<string, Set<Subscriber>>()
  let closed = false
  const each = (subscribers: Iterable<Subscriber>, call: (s: Subscriber) => void) => {
    // A copy: a subscriber may unsubscribe (itself or another) while being told.
    for (const s of [...subscribers]) {
      try {
        call(s)
      } catch (err) {
        onError(err)
      }
    }
  }
  return {
    add(topic: string, onKeys: Subscriber['onKeys'], onResync: Subscriber['onResync']): () => void {
      checkTopic(topic)
      if (closed) return () => {}
      const s: Subscriber = { onKeys, onResync }
      let set = byTopic.get(topic)
      if (!set) byTopic.set(topic, (set = new Set()))
      set.add(s)
      return () => {
        set.delete(s)
        if (set.size === 0 && byTopic.get(topic) === set) byTopic.delete(topic)
      }
    },
    keys(topic: string, keys: readonly string[]) {
      const set = byTopic.get(topic)
      if (closed || !set || keys.length === 0) return
      const frozen = Object.freeze([...keys])
      each(set, (s) => s.onKeys(frozen))
    },
    /** One topic's subscribers (a change too big to list), or every subscriber (messages may be lost). */
    resync(topic?: string) {
      if (closed) return
      if (topic !== undefined) {
        const set = byTopic.get(topic)
        if (set) each(set, (s) => s.onResync())
        return
      }
      each(
        [...byTopic.values()].flatMap((set) => [...set]),
        (s) => s.onResync(),
      )
    },
    close() {
      closed = true
      byTopic.clear()
    },
  }
}

/**
 * The feed of a single process (SQLite: no other node writes the database). publish() calls the subscribers
 * synchronously, before it returns: the publisher's next read (often in the same request, in the same tick)
 * must not find the old entry, and there is nothing to wait for. A microtask would leave that window open and
 * gain nothing. Nothing is ever lost, so there is no onResync; it holds no timer and no queue.
 */
export function localChangeFeed(opts: { onError?: (err: unknown) => void } = {}): ChangeFeed {
  const subscribers = createSubscribers(
    opts.onError ?? ((err) => console.error('change feed: a subscriber failed:', err)),
  )
  return {
    publish(topic, keys) {
      checkTopic(topic)
      subscribers.keys(topic, keys)
    },
    subscribe: (topic, onKeys, onResync) => subscribers.add(topic, onKeys, onResync),
    async close() {
      subscribers.close()
    },
  }
}
