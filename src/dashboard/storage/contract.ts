// The dashboard's state on either engine: sign-in sessions, one-time form tokens and flashes (rules: sessions.ts,
// form-tokens.ts, flash.ts). test/db/dashboard-contract.test.ts runs this contract on both.
import type { AccountStorage } from '../../accounts'
import type { AuditRows } from '../../audit'
import type { IdentityStorage } from '../../oidc'

export interface SessionRow {
  id: number
  token_hash: string
  account_id: number
  csrf: string
  created: number
  expires: number
  last_seen: number
}
export interface SessionWithAccount extends SessionRow {
  account_name: string
  admin: number
  disabled: number | null
}

export interface NewSession {
  /** SHA-256 of the cookie's token (hashKey): the token itself is never stored. */
  tokenHash: string
  accountId: number
  csrf: string
  now: number
  expires: number
}

export interface SessionRows<Tx> {
  /**
   * A new session, and the account's sessions beyond its newest `keep` deleted, in one transaction; `within`
   * runs in it with the new session (on SQLite it must not return a promise: see db/written.ts).
   */
  create(
    s: NewSession,
    keep: number,
    within?: (tx: Tx, made: SessionWithAccount) => unknown,
  ): Promise<SessionWithAccount>
  /** The session with its account's name, admin flag and disabled time; null when there is none. */
  byHash(tokenHash: string): Promise<SessionWithAccount | null>
  /** Its last use and its new expiry. */
  touch(id: number, now: number, expires: number): Promise<void>
  remove(id: number): Promise<void>
  /** Every session of the account; how many. */
  removeOfAccount(accountId: number): Promise<number>
  /** Sessions expired at `now` (up to 5,000 a call); how many. */
  sweep(now: number): Promise<number>
}

export interface FormTokenRow {
  token: string
  session_id: number | null
  fingerprint: string
  created: number
  result: string
}

export type ClaimOutcome = { claimed: true } | { claimed: false; first: FormTokenRow | null }

export interface FormTokenRows<Tx> {
  /** Inside the caller's transaction: the token taken for this creation; false when it was taken already. */
  claim(
    tx: Tx,
    token: string,
    sessionId: number | null,
    fingerprint: string,
    now: number,
    result: string,
  ): Promise<boolean>
  /**
   * claim, with its outcome handed to `then` in the same transaction (the first claim's row, read in `tx`, when
   * taken). `then` decides and throws to undo the caller's change; what it returns is what claimIn gives. On
   * SQLite claimIn runs `then`, or throws, before it returns, and `then` must not return a promise.
   */
  claimIn(
    tx: Tx,
    token: string,
    sessionId: number | null,
    fingerprint: string,
    now: number,
    result: string,
    then: (tx: Tx, outcome: ClaimOutcome) => unknown,
  ): Promise<unknown>
  /** The token's row (in `tx` when given: what a claim that found it taken compares against); null: none. */
  byToken(token: string, tx?: Tx): Promise<FormTokenRow | null>
  /** A few of the tokens created at `before` or earlier (in `tx` when given); how many. */
  removeOld(before: number, tx?: Tx): Promise<number>
}

export interface FlashRow {
  /** SHA-256 of the id the redirect's URL carries. */
  id: string
  /** 0 sessions', 1 visitors', 2 started sign-ins: each pool has its own bounds. */
  pool: number
  /** SHA-256 of the owner (a session with its token, a visitor's cookie). */
  owner: string
  kind: string
  /** The sealed value (flash.ts). */
  value: Uint8Array
  /** What the pool's size bound counts for it. */
  size: number
  expires: number
}

/** What a pool may hold: per owner, in rows, in bytes (the oldest go first). */
export interface FlashBounds {
  perOwner: number
  rows: number
  bytes: number
}

export interface FlashRows {
  /** Stores the row (replacing one of the same id), then trims its owner and its pool to `bounds`, oldest first. */
  put(row: FlashRow, bounds: FlashBounds): Promise<void>
  /**
   * Deletes and returns the row of `id` (in one statement: two nodes cannot both take it); with `owner` and
   * `kind`, only when they match (another owner's row is left alone). Null: none.
   */
  take(id: string, owner?: { owner: string; kind: string }): Promise<FlashRow | null>
  /** Rows expired at `now` (up to 5,000 a call); how many. */
  sweep(now: number): Promise<number>
  /** Rows and bytes of a pool (tests, bounds). */
  usage(pool: number): Promise<{ rows: number; bytes: number }>
}

/** A file uploaded to the import page, waiting for its confirmation, then its summary (import-store.ts). */
export interface PendingImportRow {
  /** SHA-256 of the id the page's URL carries. */
  id: string
  account_id: number
  /** The file's name as the browser gave it (shown only). */
  name: string
  format: string
  body: string
  /** The body's bytes (what the bounds count). */
  size: number
  state: 'pending' | 'running' | 'done'
  /** The import's result as JSON, once done. */
  result: string | null
  created: number
  expires: number
}

/** What pending imports may hold: per account (the oldest go first), and in bytes over all accounts. */
export interface PendingImportBounds {
  perAccount: number
  bytes: number
}

export interface PendingImportRows {
  /**
   * Stores a new row (state pending) and trims its account's oldest rows to `perAccount`, in one transaction;
   * false, storing nothing, when all rows together would hold more than `bounds.bytes` (after expired ones go).
   */
  put(row: Omit<PendingImportRow, 'state' | 'result'>, bounds: PendingImportBounds, now: number): Promise<boolean>
  /** The account's row of `id`, unexpired at `now`, or null (another account's is never found). */
  get(id: string, accountId: number, now: number): Promise<PendingImportRow | null>
  /** pending → running, in one statement: true for exactly one of any number of callers on any node. */
  start(id: string, accountId: number, now: number): Promise<boolean>
  /** running → done with its result (kept until `expires`), or back to pending when `result` is null. */
  settle(id: string, accountId: number, result: string | null, expires: number): Promise<void>
  /** Rows expired at `now` (up to 100 a call: they are large); how many. */
  sweep(now: number): Promise<number>
}

/** The dashboard's own storage, one engine's. */
export interface DashboardStorage<Tx> {
  sessions: SessionRows<Tx>
  formTokens: FormTokenRows<Tx>
  flashes: FlashRows
  pendingImports: PendingImportRows
}

/** What the dashboard reads and writes: its own storage, and the rows of sign-in (accounts, identities, audit). */
export interface DashboardStores<Tx> extends DashboardStorage<Tx> {
  accounts: AccountStorage<Tx>
  identities: IdentityStorage<Tx>
  audit: AuditRows<Tx>
}
