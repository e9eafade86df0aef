// Webhook endpoints and what each subscribes to, behind one async interface, on either engine (issue 22, SPEC
// §11): what service.ts does with webhook_endpoints. The SQLite implementation wraps the synchronous store
// (store.ts) as it is; the PostgreSQL one is endpoints-postgres.ts. One test suite
// (test/db/webhook-endpoints.test.ts) runs against both. The outbox and the delivery queue are queue.ts.
//
// What both promise, however many nodes write at once. Each write that service.ts decides on a row it read
// is one method here, the decision taken in the write's transaction:
// - insertUnder counts the account's endpoints and inserts only below `max`: two creations at once cannot
//   both be the last allowed one (PostgreSQL: they take turns on the account's row); an account deleted
//   meanwhile is 'no_account', never a foreign key error.
// - update reads the endpoint in its transaction and hands it to `change`, which returns the new values; an
//   edit made meanwhile on another node is what `change` sees, never overwritten by a stale copy.
// - rotateSecret, remove and requeueFailed act on the endpoint if it is still there (and, but for remove
//   and requeueFailed, still the account's); null when it is not.
// `within` runs in the write's transaction (the audit row, the dashboard's form token; on SQLite it must be
// synchronous); throwing undoes the write.
import type { Db } from '../db/sqlite'
import { createWebhookStore, type EndpointRow } from './store'

export type { EndpointRow } from './store'

export interface NewEndpoint {
  url: string
  /** The subscribed event types, comma-separated. */
  events: string
  secret: string
  now: number
}

/** What an owner's edit writes. */
export interface EndpointChange {
  url: string
  events: string
  enabled: boolean
  disabledReason: string | null
}

/** An endpoint with its account's name (the CLI's list, the audit rows' targets). */
export type NamedEndpoint = EndpointRow & { account_name: string }

export interface EndpointRows<Tx> {
  /**
   * The endpoint inserted when the account has fewer than `max`, and `within` run with it and the account's
   * name; 'full' otherwise, or 'no_account' when the account is gone (nothing written or run).
   */
  insertUnder(
    accountId: number,
    max: number,
    e: NewEndpoint,
    within?: (tx: Tx, made: EndpointRow, owner: string) => unknown,
  ): Promise<EndpointRow | 'full' | 'no_account'>
  endpoint(id: number): Promise<EndpointRow | null>
  /** The account's endpoints, by id. */
  endpointsOf(accountId: number): Promise<NamedEndpoint[]>
  /** Every endpoint, by id. */
  allEndpoints(): Promise<NamedEndpoint[]>
  countOf(accountId: number): Promise<number>
  /** The account of that name (the CLI names accounts); null when there is none. */
  accountId(name: string): Promise<number | null>
  accountName(id: number): Promise<string | null>
  /**
   * The account's endpoint read in the write's transaction, `change` given it as it is now, the values it
   * returns written, and `within` run with the row before and after; null (nothing run) when it is gone.
   */
  update(
    id: number,
    accountId: number,
    change: (now: EndpointRow) => EndpointChange,
    within?: (tx: Tx, before: EndpointRow, after: EndpointRow, owner: string) => unknown,
  ): Promise<EndpointRow | null>
  /** The account's endpoint signed from now on with `secret` alone, and `within` run; null when it is gone. */
  rotateSecret(id: number, accountId: number, secret: string, within?: (tx: Tx, row: EndpointRow, owner: string) => unknown): Promise<EndpointRow | null>
  /** The endpoint deleted (its deliveries with it) and `within` run with the row it was; null when it was gone. */
  remove(id: number, within?: (tx: Tx, removed: EndpointRow, owner: string) => unknown): Promise<EndpointRow | null>
  /**
   * Every failed delivery of the endpoint pending again, due `now`, and `within` run with the endpoint and how
   * many; null (nothing run) when the endpoint is gone.
   */
  requeueFailed(id: number, now: number, within?: (tx: Tx, row: EndpointRow, n: number, owner: string) => unknown): Promise<{ row: EndpointRow; n: number } | null>
}

/** The SQLite webhook store as it is, behind the async interface; `tx` is the connection inside db.transaction. */
export function sqliteEndpointRows(db: Db): EndpointRows<Db> {
  const store = createWebhookStore(db)
  const owner = (accountId: number) => store.accountName(accountId) ?? `#${accountId}`
  return {
    insertUnder: async (accountId, max, e, within) =>
      db.transaction(() => {
        const name = store.accountName(accountId)
        if (name === null) return 'no_account' as const
        if (store.countOf(accountId) >= max) return 'full' as const
        const made = store.insertEndpoint(accountId, e.url, e.events, e.secret, e.now)
        within?.(db, made, name)
        return made
      })(),
    endpoint: async (id) => store.endpoint(id) ?? null,
    endpointsOf: async (accountId) => store.endpointsOf(accountId),
    allEndpoints: async () => store.allEndpoints(),
    countOf: async (accountId) => store.countOf(accountId),
    accountId: async (name) => store.accountId(name),
    accountName: async (id) => store.accountName(id),
    update: async (id, accountId, change, within) =>
      db.transaction(() => {
        const before = store.endpoint(id)
        if (!before || before.account_id !== accountId) return null
        const after = store.updateEndpoint(id, accountId, change(before))
        if (!after) return null
        within?.(db, before, after, owner(accountId))
        return after
      })(),
    rotateSecret: async (id, accountId, secret, within) =>
      db.transaction(() => {
        const row = store.setSecret(id, accountId, secret)
        if (!row) return null
        within?.(db, row, owner(accountId))
        return row
      })(),
    remove: async (id, within) =>
      db.transaction(() => {
        const row = store.endpoint(id)
        if (!row || !store.removeEndpoint(id)) return null
        within?.(db, row, owner(row.account_id))
        return row
      })(),
    requeueFailed: async (id, now, within) =>
      db.transaction(() => {
        const row = store.endpoint(id)
        if (!row) return null
        const n = store.requeueFailed(id, now)
        within?.(db, row, n, owner(row.account_id))
        return { row, n }
      })(),
  }
}
