// Whether the database can be reached and written, as this node sees it (issue 22, SPEC §11): the contracts;
// PostgreSQL's availability is in postgres/health.ts, the checks /healthz and /readyz ask in app/health.ts.
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

export type DatabaseState = 'ok' | 'down' | 'unwritable'
export interface DatabaseStatus {
  database: DatabaseState
  /** Why not 'ok' (null when it is). */
  reason: string | null
}

export interface DatabaseCheck {
  /** What is known now, without waiting (a stale probe is started): /healthz and the admin's page. */
  known(): DatabaseStatus
  /** The same once a due probe has answered (bounded): /readyz. */
  check(): Promise<DatabaseStatus>
}

export const DATABASE_OK: DatabaseStatus = { database: 'ok', reason: null }

/** Whether the click writes fail (the clicks' recorder): a failing write means the database is unwritable. */
export interface WriteFailures {
  readonly failing: boolean
  readonly lastError: string | null
}
