// Dashboard sessions and one-time form tokens behind one async interface, on either engine (issue 22, SPEC
// §11: a session made on one node works on every node). The SQLite implementation wraps the synchronous
// stores (store.ts) as they are; the PostgreSQL one is session-store-postgres.ts. One test suite
// (test/db/session-store.test.ts) runs against both.
//
// What both promise:
// - create writes the session and trims the account to its newest `keep` in one transaction; the rows a
//   sign-in writes with it (last sign-in time, audit row) go in the same one through `within`. On
//   PostgreSQL two nodes signing the same account in at once are serialized on the account's row, so the
//   trim always sees every other session and the account keeps exactly `keep`.
// - A form token is claimed inside the caller's transaction (`tx`: the SQLite connection inside
//   db.transaction, or a PostgreSQL sql.begin handle), so a creation that rolls back leaves its token free.
//   The same token claimed on two nodes at once: the second waits for the first's commit and finds it taken
//   (or takes it, when the first rolled back). On SQLite the claim is done, or thrown, before the call returns.
import type { Db } from '../db/sqlite'
import { createFormTokenStore, createSessionStore, type FormTokenRow, type SessionWithAccount } from './store'

export type { FormTokenRow, SessionWithAccount } from './store'

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
   * A new session, and the account's sessions beyond its newest `keep` deleted, in one transaction;
   * `within` runs in it with the new session (on SQLite it must be synchronous). The session as byHash reads it.
   */
  create(s: NewSession, keep: number, within?: (tx: Tx, made: SessionWithAccount) => unknown): Promise<SessionWithAccount>
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

export interface FormTokenRows<Tx> {
  /** Inside the caller's transaction: the token taken for this creation; false when it was taken already. */
  claim(tx: Tx, token: string, sessionId: number | null, fingerprint: string, now: number, result: string): Promise<boolean>
  /**
   * claim, with its outcome handed to `then` in the same transaction: claimed, or not and the row that had
   * taken the token (read in `tx`; null when it went meanwhile). `then` decides what a taken token means and
   * throws to undo the caller's change; what it returns is what claimIn gives. On SQLite `then` runs, or
   * throws, before claimIn returns.
   */
  claimIn(
    tx: Tx,
    token: string,
    sessionId: number | null,
    fingerprint: string,
    now: number,
    result: string,
    then: (tx: Tx, outcome: { claimed: true } | { claimed: false; first: FormTokenRow | null }) => unknown,
  ): Promise<unknown>
  /** The token's row (in `tx` when given: what a claim that found it taken compares against); null: none. */
  byToken(token: string, tx?: Tx): Promise<FormTokenRow | null>
  /** A few of the tokens created at `before` or earlier (in `tx` when given); how many. */
  removeOld(before: number, tx?: Tx): Promise<number>
}

/** The SQLite session store as it is, behind the async interface. */
export function sqliteSessionRows(db: Db): SessionRows<Db> {
  const store = createSessionStore(db)
  return {
    create: async (s, keep, within) =>
      db.transaction(() => {
        const inserted = store.insert(s.tokenHash, s.accountId, s.csrf, s.now, s.expires)
        store.trim(s.accountId, keep)
        const made = store.byHash(inserted.token_hash)!
        within?.(db, made)
        return made
      })(),
    byHash: async (tokenHash) => store.byHash(tokenHash) ?? null,
    touch: async (id, now, expires) => void store.touch(id, now, expires),
    remove: async (id) => void store.remove(id),
    removeOfAccount: async (accountId) => store.removeOfAccount(accountId),
    sweep: async (now) => store.sweep(now),
  }
}

/** The form token stores of each SQLite connection, prepared once. */
const tokenStores = new WeakMap<Db, ReturnType<typeof createFormTokenStore>>()
const tokensOf = (db: Db) => {
  let store = tokenStores.get(db)
  if (!store) tokenStores.set(db, (store = createFormTokenStore(db)))
  return store
}

/** The SQLite form token store as it is, behind the async interface; `tx` is a connection inside db.transaction. */
export function sqliteFormTokenRows(db: Db): FormTokenRows<Db> {
  return {
    // Not async: the row is written (or the error thrown) inside the caller's synchronous transaction.
    claim(tx, token, sessionId, fingerprint, now, result) {
      if (!tx.inTransaction) throw new Error('form tokens: a token is claimed inside the transaction of its creation')
      return Promise.resolve(tokensOf(tx).insert(token, sessionId, fingerprint, now, result))
    },
    // Not async either: `then` may throw inside the caller's synchronous transaction.
    claimIn(tx, token, sessionId, fingerprint, now, result, then) {
      if (!tx.inTransaction) throw new Error('form tokens: a token is claimed inside the transaction of its creation')
      const store = tokensOf(tx)
      if (store.insert(token, sessionId, fingerprint, now, result)) return Promise.resolve(then(tx, { claimed: true }))
      return Promise.resolve(then(tx, { claimed: false, first: store.byToken(token) ?? null }))
    },
    byToken: async (token, tx) => tokensOf(tx ?? db).byToken(token) ?? null,
    // Not async: in a claim's transaction it runs, or throws, before it returns.
    removeOld: (before, tx) => Promise.resolve(tokensOf(tx ?? db).removeOld(before)),
  }
}
