// Webhook endpoints on SQLite (the contract: contract.ts EndpointRows): each decision in one synchronous transaction.
import type { Db } from '../../db/sqlite'
import { lazyStatements } from '../../db/sqlite/lazy'
import { syncWithin } from '../../db/sqlite/within'
import type { EndpointRow, EndpointRows, NamedEndpoint } from './contract'

export function sqliteEndpointRows(db: Db): EndpointRows<Db> {
  const q = lazyStatements(db) // prepared at their first use (db/lazy.ts)
  const insertEndpoint = q.query<EndpointRow, [number, string, string, string, number]>(
    'INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING *',
  )
  const endpoint = q.query<EndpointRow, [number]>('SELECT * FROM webhook_endpoints WHERE id = ?')
  const endpointsOf = q.query<NamedEndpoint, [number]>(
    `SELECT w.*, a.name AS account_name FROM webhook_endpoints w JOIN accounts a ON a.id = w.account_id
     WHERE w.account_id = ? ORDER BY w.id`,
  )
  const allEndpoints = q.query<NamedEndpoint, []>(
    'SELECT w.*, a.name AS account_name FROM webhook_endpoints w JOIN accounts a ON a.id = w.account_id ORDER BY w.id',
  )
  const accountNamed = q.query<{ id: number }, [string]>('SELECT id FROM accounts WHERE name = ?')
  const accountName = q.query<{ name: string }, [number]>('SELECT name FROM accounts WHERE id = ?')
  const countOf = q.query<{ n: number }, [number]>('SELECT count(*) AS n FROM webhook_endpoints WHERE account_id = ?')
  const removeEndpoint = q.query<unknown, [number]>('DELETE FROM webhook_endpoints WHERE id = ?')
  // An owner's edit: the row as it is after it, or null when it is gone (deleted meanwhile).
  const updateEndpoint = q.query<EndpointRow, [number, number, string, string, number, string | null]>(
    `UPDATE webhook_endpoints SET url = ?3, events = ?4, enabled = ?5, disabled_reason = ?6
     WHERE id = ?1 AND account_id = ?2 RETURNING *`,
  )
  // The secret until now becomes the previous one (SET reads the row as it was), valid until ?4 (0: not at all).
  const setSecret = q.query<EndpointRow, [number, number, string, number]>(
    `UPDATE webhook_endpoints SET secret = ?3, previous_secret = CASE WHEN ?4 > 0 THEN secret END, previous_until = ?4
     WHERE id = ?1 AND account_id = ?2 RETURNING *`,
  )
  // Failed deliveries back to pending: the same rows (so the same webhook-ids), due now, attempts from 0.
  const requeueFailed = q.query<unknown, [number, number]>(
    `UPDATE webhook_deliveries SET state = 'pending', next_at = ?2, attempts = 0 WHERE endpoint_id = ?1 AND state = 'failed'`,
  )

  const nameOf = (accountId: number) => accountName.get(accountId)?.name ?? null
  const owner = (accountId: number) => nameOf(accountId) ?? `#${accountId}`

  return {
    insertUnder: async (accountId, max, e, within) =>
      db.transaction(() => {
        const name = nameOf(accountId)
        if (name === null) return 'no_account' as const
        if (countOf.get(accountId)!.n >= max) return 'full' as const
        const made = insertEndpoint.get(accountId, e.url, e.events, e.secret, e.now)!
        syncWithin(within?.(db, made, name))
        return made
      })(),
    endpoint: async (id) => endpoint.get(id) ?? null,
    endpointsOf: async (accountId) => endpointsOf.all(accountId),
    allEndpoints: async () => allEndpoints.all(),
    countOf: async (accountId) => countOf.get(accountId)!.n,
    accountId: async (name) => accountNamed.get(name)?.id ?? null,
    accountName: async (id) => nameOf(id),
    update: async (id, accountId, change, within) =>
      db.transaction(() => {
        const before = endpoint.get(id)
        if (!before || before.account_id !== accountId) return null
        const v = change(before)
        const after = updateEndpoint.get(id, accountId, v.url, v.events, v.enabled ? 1 : 0, v.disabledReason)
        if (!after) return null
        syncWithin(within?.(db, before, after, owner(accountId)))
        return after
      })(),
    rotateSecret: async (id, accountId, secret, times, within) =>
      db.transaction(() => {
        const before = endpoint.get(id)
        const row = setSecret.get(id, accountId, secret, times.previousUntil)
        if (!before || !row) return null
        syncWithin(within?.(db, row, owner(accountId)))
        return { row, dropped: before.previous_secret !== null && before.previous_until > times.now }
      })(),
    remove: async (id, within) =>
      db.transaction(() => {
        const row = endpoint.get(id)
        if (!row || !removeEndpoint.run(id).changes) return null
        syncWithin(within?.(db, row, owner(row.account_id)))
        return row
      })(),
    requeueFailed: async (id, now, within) =>
      db.transaction(() => {
        const row = endpoint.get(id)
        if (!row) return null
        const n = requeueFailed.run(id, now).changes
        syncWithin(within?.(db, row, n, owner(row.account_id)))
        return { row, n }
      })(),
  }
}
