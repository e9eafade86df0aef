// Whether the database can be written, as this node sees it (issue 22, SPEC §11: a node that loses the
// database answers 503 on writes, keeps redirecting from its cache, and recovers by itself).
//
// The service layer (once it is async) hands every error of a write to observe(): an error that says the
// server is gone marks the database down, and while it is down a write is refused at once with 503 instead of
// waiting for a connection timeout; redirects keep answering from the cache. The node recovers by itself: the
// PostgreSQL implementation (postgres/health.ts) probes the server while it is down and marks it up again.
// SQLite is a file of this process: it is never "down" in this sense (a full disk is reported by /readyz,
// src/app/health.ts), so localHealth() is always up.
export interface DatabaseHealth {
  isUp(): boolean
  /** Why it is down (the last connection error, without the URL), or null while up. */
  reason(): string | null
  /** Looks at a failed query's error: a connection error marks the database down (true); any other is not about availability (false). */
  observe(err: unknown): boolean
  /** Told each time it goes down (false) or up (true); the function returned removes the listener. */
  onChange(listener: (up: boolean) => void): () => void
  /** Stops the probe. Safe to call twice. */
  close(): void
}

/** SQLite: always up, no timer. */
export function localHealth(): DatabaseHealth {
  return {
    isUp: () => true,
    reason: () => null,
    observe: () => false,
    onChange: () => () => {},
    close() {},
  }
}
