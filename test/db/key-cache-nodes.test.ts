// The API key cache on several nodes (issue 22, SPEC §11): each node keeps the callers of keys it has seen in
// memory, so a request with a known key does not wait for the database; a revoke, an edit, a disable or a
// deletion made on any node (or by the command line, which has no feed) is told to every node by a NOTIFY sent
// from inside its transaction, so a revoked key is refused everywhere once the change has committed — and a
// change that rolled back tells nobody.
import { expect, test } from 'bun:test'
import { createAccountService } from '../../src/accounts'
import { postgresAccountStorage } from '../../src/accounts/storage/postgres'
import { postgresAuditRows } from '../../src/audit/storage/postgres'
import { postgresChangeFeed } from '../../src/db/postgres/changes'
import { engineHarness } from '../support/engines'

const engines = engineHarness()

async function node(d: Awaited<ReturnType<typeof engines.postgres>>, withFeed = true) {
  const sql = d.pool()
  const changes = withFeed ? await postgresChangeFeed(sql) : undefined
  const accounts = postgresAccountStorage(sql, { changes })
  return {
    sql,
    accounts,
    service: createAccountService({ accounts, audit: postgresAuditRows(sql) }),
    close: async () => changes?.close(),
  }
}

/** Asks the node for the key until it is refused (true), or `ms` went by (false). */
async function refusedWithin(n: { service: ReturnType<typeof createAccountService> }, key: string, ms: number) {
  const end = Date.now() + ms
  do {
    if ((await n.service.authenticate(key)) === null) return true
    await Bun.sleep(10)
  } while (Date.now() < end)
  return false
}

test('a key revoked on one node, or by a node without a feed (the CLI), is refused on the other at once; reads of a known key stay in memory', async () => {
  const d = await engines.postgres()
  const [a, b, cli] = [await node(d), await node(d), await node(d, false)]
  try {
    const { key } = await a.service.createAccount({ name: 'alice' })
    const second = await a.service.createKey({ account: 'alice', scopes: ['links'] })
    expect((await b.service.authenticate(key.key))?.accountName).toBe('alice')
    expect((await b.service.authenticate(second.key))?.accountName).toBe('alice')
    // Cached on B now: with nothing changed, B's storage says so without a query.
    expect(b.accounts.keysChanged()).toBe(false)
    await a.service.revokeKey(String(key.id))
    expect(await refusedWithin(b, key.key, 1_000)).toBe(true)
    expect((await b.service.authenticate(second.key))?.accountName).toBe('alice')
    // The command line's revoke has no feed: the NOTIFY goes with its transaction all the same.
    await cli.service.revokeKey(String(second.id))
    expect(await refusedWithin(b, second.key, 1_000)).toBe(true)
  } finally {
    for (const n of [a, b, cli]) await n.close()
    await d.close()
  }
})

test('a disable on one node turns the account’s cached keys away on the other; a change that rolled back tells nobody', async () => {
  const d = await engines.postgres()
  const [a, b] = [await node(d), await node(d)]
  try {
    await a.service.createAccount({ name: 'root', admin: true })
    const { key } = await a.service.createAccount({ name: 'bob' })
    expect((await b.service.authenticate(key.key))?.accountName).toBe('bob')
    expect(b.accounts.keysChanged()).toBe(false)
    // A revoke whose transaction fails after its UPDATE (the audit row's insert throws): no NOTIFY is delivered.
    await expect(
      a.accounts.revokeKey(key.id, Date.now(), () => Promise.reject(new Error('refused in within'))),
    ).rejects.toThrow('refused in within')
    await Bun.sleep(300)
    expect(b.accounts.keysChanged()).toBe(false)
    expect((await b.service.authenticate(key.key))?.accountName).toBe('bob')
    await a.service.setDisabled('bob', true)
    expect(await refusedWithin(b, key.key, 1_000)).toBe(true)
  } finally {
    for (const n of [a, b]) await n.close()
    await d.close()
  }
})
