// Webhook endpoints on PostgreSQL (the contract: contract.ts): each decision locks the row it depends on
// (the account's, the endpoint's), an account before its endpoints, an endpoint before its deliveries.
import type { SQL, TransactionSQL } from 'bun'
import type { EndpointRow, EndpointRows, NamedEndpoint } from './contract'

/** bigint columns come back from Bun.SQL as text; every number here stays far below 2^53. */
const endpoint = (r: Record<string, unknown>): EndpointRow => ({
  id: Number(r.id),
  account_id: Number(r.account_id),
  url: r.url as string,
  events: r.events as string,
  secret: r.secret as string,
  enabled: Number(r.enabled),
  failing: Number(r.failing),
  disabled_reason: (r.disabled_reason ?? null) as string | null,
  created: Number(r.created),
  previous_secret: (r.previous_secret ?? null) as string | null,
  previous_until: Number(r.previous_until ?? 0),
})

const named = (r: Record<string, unknown>): NamedEndpoint => ({
  ...endpoint(r),
  account_name: r.account_name as string,
})

export function postgresEndpointRows(sql: SQL): EndpointRows<TransactionSQL> {
  const ownerOf = async (tx: SQL, accountId: number) =>
    ((await tx`SELECT name FROM accounts WHERE id = ${accountId}`)[0]?.name as string | undefined) ?? `#${accountId}`

  return {
    async insertUnder(accountId, max, e, within) {
      return sql.begin(async (tx) => {
        const [account] = await tx`SELECT name FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE`
        if (!account) return 'no_account' as const
        const [n] = await tx`SELECT count(*) AS n FROM webhook_endpoints WHERE account_id = ${accountId}`
        if (Number(n.n) >= max) return 'full' as const
        const [row] = await tx`INSERT INTO webhook_endpoints (account_id, url, events, secret, created)
                               VALUES (${accountId}, ${e.url}, ${e.events}, ${e.secret}, ${e.now}) RETURNING *`
        const made = endpoint(row)
        if (within) await within(tx, made, account.name as string)
        return made
      })
    },

    async endpoint(id) {
      const [row] = await sql`SELECT * FROM webhook_endpoints WHERE id = ${id}`
      return row ? endpoint(row) : null
    },

    async endpointsOf(accountId) {
      const rows =
        await sql`SELECT w.*, a.name AS account_name FROM webhook_endpoints w JOIN accounts a ON a.id = w.account_id
                              WHERE w.account_id = ${accountId} ORDER BY w.id`
      return rows.map(named)
    },

    async allEndpoints() {
      return (
        await sql`SELECT w.*, a.name AS account_name FROM webhook_endpoints w JOIN accounts a ON a.id = w.account_id ORDER BY w.id`
      ).map(named)
    },

    async countOf(accountId) {
      return Number((await sql`SELECT count(*) AS n FROM webhook_endpoints WHERE account_id = ${accountId}`)[0].n)
    },

    async accountId(name) {
      const [row] = await sql`SELECT id FROM accounts WHERE name = ${name}`
      return row ? Number(row.id) : null
    },

    async accountName(id) {
      const [row] = await sql`SELECT name FROM accounts WHERE id = ${id}`
      return row ? (row.name as string) : null
    },

    async update(id, accountId, change, within) {
      return sql.begin(async (tx) => {
        const [locked] =
          await tx`SELECT * FROM webhook_endpoints WHERE id = ${id} AND account_id = ${accountId} FOR NO KEY UPDATE`
        if (!locked) return null
        const before = endpoint(locked)
        const v = change(before)
        const [row] =
          await tx`UPDATE webhook_endpoints SET url = ${v.url}, events = ${v.events}, enabled = ${v.enabled ? 1 : 0}, disabled_reason = ${v.disabledReason}
                                WHERE id = ${id} RETURNING *`
        const after = endpoint(row)
        if (within) await within(tx, before, after, await ownerOf(tx, accountId))
        return after
      })
    },

    async rotateSecret(id, accountId, secret, times, within) {
      return sql.begin(async (tx) => {
        // Locked first: two rotations at once take turns, and the second sees the first's secret as the one it keeps.
        const [locked] =
          await tx`SELECT * FROM webhook_endpoints WHERE id = ${id} AND account_id = ${accountId} FOR NO KEY UPDATE`
        if (!locked) return null
        const before = endpoint(locked)
        const until = times.previousUntil
        const [row] = await tx`UPDATE webhook_endpoints SET secret = ${secret},
                                 previous_secret = CASE WHEN ${until}::bigint > 0 THEN secret END, previous_until = ${until}
                                WHERE id = ${id} RETURNING *`
        const made = endpoint(row)
        if (within) await within(tx, made, await ownerOf(tx, accountId))
        return { row: made, dropped: before.previous_secret !== null && before.previous_until > times.now }
      })
    },

    async remove(id, within) {
      return sql.begin(async (tx) => {
        const [row] = await tx`DELETE FROM webhook_endpoints WHERE id = ${id} RETURNING *`
        if (!row) return null
        const removed = endpoint(row)
        if (within) await within(tx, removed, await ownerOf(tx, removed.account_id))
        return removed
      })
    },

    async requeueFailed(id, now, within) {
      return sql.begin(async (tx) => {
        const [locked] = await tx`SELECT * FROM webhook_endpoints WHERE id = ${id} FOR KEY SHARE`
        if (!locked) return null
        const row = endpoint(locked)
        // Its failed deliveries locked in id order first, the order the sweep and markGone lock deliveries in.
        await tx`SELECT id FROM webhook_deliveries WHERE endpoint_id = ${id} AND state = 'failed' ORDER BY id FOR UPDATE`
        const n = (
          await tx`UPDATE webhook_deliveries SET state = 'pending', next_at = ${now}, attempts = 0
                             WHERE endpoint_id = ${id} AND state = 'failed'`
        ).count
        if (within) await within(tx, row, n, await ownerOf(tx, row.account_id))
        return { row, n }
      })
    },
  }
}
