// The import page's waiting files (dashboard/storage: PendingImportRows), ONE suite on both engines, two "nodes"
// (connections on one SQLite file, pools on one PostgreSQL database): a file put through one node is found
// through the other, only by its account; a confirmation takes it once however many nodes confirm at once;
// the bounds per account and in bytes hold, under two nodes putting at once; expired files are neither found nor started, and are swept.
import { describe, expect, test } from 'bun:test'
import { postgresStorages } from '../../src/app/storages-postgres'
import { sqliteStorages } from '../../src/app/storages'
import type { PendingImportRows } from '../../src/dashboard/storage/contract'
import { engineHarness } from '../support/engines'

interface Engine {
  node(): PendingImportRows
  account(name: string): Promise<number>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-pending-')
  return {
    node: () => sqliteStorages(connect()).pendingImports,
    account: async (name) =>
      (
        main.query('INSERT INTO accounts (name, admin, created) VALUES (?, 0, 0) RETURNING id').get(name) as {
          id: number
        }
      ).id,
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node: () => postgresStorages(pool()).pendingImports,
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, admin, created) VALUES (${name}, 0, 0) RETURNING id`)[0].id),
    close,
  }
}

const ENGINES = [
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const
const T0 = 1_800_000_000_000
const HOUR = 3_600_000
const BOUNDS = { perAccount: 3, bytes: 1_000 }

const file = (id: string, account: number, size = 100, created = T0) => ({
  id,
  account_id: account,
  name: `${id}.csv`,
  format: 'shlink auto',
  body: 'x'.repeat(size),
  size,
  created,
  expires: created + HOUR,
})

describe.each(ENGINES)('pending imports on %s', (_name, makeEngine) => {
  test('put through one node, found through the other by its account only; unexpired only', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const bob = await e.account('bob')
      expect(await a.put(file('f1', alice), BOUNDS, T0)).toBe(true)
      expect(await b.get('f1', alice, T0 + 1)).toEqual({ ...file('f1', alice), state: 'pending', result: null })
      expect(await b.get('f1', bob, T0 + 1)).toBeNull()
      expect(await b.get('nope', alice, T0 + 1)).toBeNull()
      expect(await b.get('f1', alice, T0 + HOUR)).toBeNull()
    } finally {
      await e.close()
    }
  })

  test('start takes a file once: of ten confirmations on two nodes at once, one; settle keeps the result, or hands it back', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const bob = await e.account('bob')
      await a.put(file('f1', alice), BOUNDS, T0)
      // Another account's confirmation takes nothing.
      expect(await b.start('f1', bob, T0 + 1)).toBe(false)
      const started = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).start('f1', alice, T0 + 1)),
      )
      expect(started.filter(Boolean)).toHaveLength(1)
      expect((await a.get('f1', alice, T0 + 2))!.state).toBe('running')
      // Handed back (another import of the account was running): it can be confirmed again.
      await b.settle('f1', alice, null, T0 + HOUR)
      expect((await a.get('f1', alice, T0 + 2))!.state).toBe('pending')
      expect(await a.start('f1', alice, T0 + 3)).toBe(true)
      await b.settle('f1', alice, '{"created":3}', T0 + 2 * HOUR)
      expect(await a.get('f1', alice, T0 + HOUR + 1)).toMatchObject({ state: 'done', result: '{"created":3}' })
      // Done is done: neither started again nor handed back.
      expect(await b.start('f1', alice, T0 + 4)).toBe(false)
      await b.settle('f1', alice, null, T0 + HOUR)
      expect((await a.get('f1', alice, T0 + 5))!.state).toBe('done')
      // An expired file is not started.
      await a.put(file('f2', alice), BOUNDS, T0)
      expect(await a.start('f2', alice, T0 + HOUR)).toBe(false)
    } finally {
      await e.close()
    }
  })

  test('bounded: an account keeps its newest files (the oldest go first); all files together stay under the bytes, and a refused put removes nothing', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const bob = await e.account('bob')
      for (let i = 1; i <= 4; i++)
        expect(await (i % 2 ? a : b).put(file(`a${i}`, alice, 100, T0 + i), BOUNDS, T0 + i)).toBe(true)
      const kept = async (id: string, account = alice) => (await a.get(id, account, T0 + 10)) !== null
      expect([await kept('a1'), await kept('a2'), await kept('a3'), await kept('a4')]).toEqual([
        false,
        true,
        true,
        true,
      ])
      // 300 bytes are alice's; bob may put 700 more, not 701.
      expect(await b.put(file('b1', bob, 701, T0 + 5), BOUNDS, T0 + 5)).toBe(false)
      expect(await b.put(file('b1', bob, 700, T0 + 5), BOUNDS, T0 + 5)).toBe(true)
      // Full: alice's next file replaces her oldest, so 100 bytes fit; 101 do not, and then her oldest stays.
      expect(await a.put(file('a5', alice, 101, T0 + 6), BOUNDS, T0 + 6)).toBe(false)
      expect(await kept('a2')).toBe(true)
      expect(await a.put(file('a5', alice, 100, T0 + 6), BOUNDS, T0 + 6)).toBe(true)
      expect([await kept('a2'), await kept('a5'), await kept('b1', bob)]).toEqual([false, true, true])
    } finally {
      await e.close()
    }
  })

  test('two nodes putting at once, round after round: never more than the bytes bound in all', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const bob = await e.account('bob')
      for (let round = 0; round < 5; round++) {
        const at = T0 + round * HOUR // the round before has expired
        const puts = await Promise.all([
          a.put(file(`a${round}`, alice, 600, at), BOUNDS, at),
          b.put(file(`b${round}`, bob, 600, at), BOUNDS, at),
        ])
        expect(puts.filter(Boolean)).toHaveLength(1)
      }
    } finally {
      await e.close()
    }
  })

  test('expired files are swept (and make room for new ones)', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const bob = await e.account('bob')
      await a.put(file('old', alice, 900), BOUNDS, T0)
      expect(await b.put(file('new', bob, 200, T0 + 1), BOUNDS, T0 + 1)).toBe(false)
      // Once the first has expired, a put clears it first.
      expect(await b.put(file('new', bob, 200, T0 + HOUR), BOUNDS, T0 + HOUR)).toBe(true)
      await a.put(file('later', alice, 100, T0 + HOUR), BOUNDS, T0 + HOUR)
      expect(await b.sweep(T0 + 2 * HOUR - 1)).toBe(0)
      expect(await b.sweep(T0 + 2 * HOUR)).toBe(2)
      expect(await a.get('later', alice, T0)).toBeNull()
    } finally {
      await e.close()
    }
  })
})
