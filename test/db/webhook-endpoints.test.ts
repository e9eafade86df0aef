// Webhook endpoints behind the async interface (src/webhooks/endpoints.ts), ONE suite run against both engines:
// SQLite (the synchronous store wrapped) and a real PostgreSQL server (endpoints-postgres.ts). Two "nodes" are
// two connections (SQLite) or two pools (PostgreSQL) on one database: an endpoint made through one is listed,
// edited, rotated and deleted through the other; two nodes creating an account's last allowed endpoint at
// once make exactly one; two edits at once both land; a rotation racing a deletion is one or the other.
import { describe, expect, test } from 'bun:test'
import type { SQL } from 'bun'
import type { Db } from '../../src/db/sqlite'
import { postgresEndpointRows } from '../../src/webhooks/endpoints-postgres'
import { sqliteEndpointRows, type EndpointRow, type EndpointRows, type NewEndpoint } from '../../src/webhooks/endpoints'
import { engineHarness } from '../support/engines'

interface Engine {
  node(): EndpointRows<any>
  account(name: string): Promise<number>
  removeAccount(id: number): Promise<void>
  /** An event of the account and one delivery of it to the endpoint, in that state; the delivery's id. */
  delivery(accountId: number, endpointId: number, state: 'pending' | 'ok' | 'failed', attempts: number): Promise<number>
  deliveries(endpointId: number): Promise<{ state: string; attempts: number; next_at: number }[]>
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-endpoints-')
  return {
    node: () => sqliteEndpointRows(connect()),
    account: async (name) => Number((main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id),
    removeAccount: async (id) => void main.query('DELETE FROM accounts WHERE id = ?').run(id),
    async delivery(accountId, endpointId, state, attempts) {
      const ev = main.query("INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?, 'link.created', 0, '{}') RETURNING id").get(accountId) as { id: number }
      return (main.query('INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at, attempts) VALUES (?, ?, ?, 5, ?) RETURNING id').get(ev.id, endpointId, state, attempts) as { id: number }).id
    },
    deliveries: async (endpointId) => main.query('SELECT state, attempts, next_at FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY id').all(endpointId) as any[],
    note: (tx: Db, text) => tx.query("INSERT INTO audit_log (at, actor_kind, action, detail) VALUES (0, 'system', 'test.note', ?)").run(text),
    notes: async () => (main.query("SELECT detail FROM audit_log WHERE action = 'test.note' ORDER BY id").all() as { detail: string }[]).map((r) => r.detail),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  const sql = main.sql
  return {
    node: () => postgresEndpointRows(pool()),
    account: async (name) => Number((await sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    removeAccount: async (id) => void (await sql`DELETE FROM accounts WHERE id = ${id}`),
    async delivery(accountId, endpointId, state, attempts) {
      const [ev] = await sql`INSERT INTO webhook_events (account_id, type, created, payload) VALUES (${accountId}, 'link.created', 0, '{}') RETURNING id`
      return Number((await sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at, attempts) VALUES (${ev.id}, ${endpointId}, ${state}, 5, ${attempts}) RETURNING id`)[0].id)
    },
    deliveries: async (endpointId) =>
      (await sql`SELECT state, attempts, next_at FROM webhook_deliveries WHERE endpoint_id = ${endpointId} ORDER BY id`).map((r: any) => ({ state: r.state, attempts: Number(r.attempts), next_at: Number(r.next_at) })),
    note: (tx: SQL, text) => tx`INSERT INTO audit_log (at, actor_kind, action, detail) VALUES (0, 'system', 'test.note', ${text})`,
    notes: async () => (await sql`SELECT detail FROM audit_log WHERE action = 'test.note' ORDER BY id`).map((r: { detail: string }) => r.detail),
    close,
  }
}

const T0 = 1_800_000_000_000
const made = (n: number, events = 'link.created'): NewEndpoint => ({ url: `https://hooks.example/${n}`, events, secret: `whsec_${n}`, now: T0 + n })
const row = (r: EndpointRow | 'full' | 'no_account' | null) => r as EndpointRow

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('webhook endpoints on %s', (_name, makeEngine) => {
  test('made through one node, listed through the other; `within` goes in its transaction with the owner’s name; past the limit: full; an account gone: no_account', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [ann, bob] = [await e.account('ann'), await e.account('bob')]
      const first = row(await a.insertUnder(ann, 2, made(1, 'link.created,link.deleted'), (tx, r, owner) => e.note(tx, `made ${r.id} of ${owner}`)))
      expect(first).toEqual({
        id: expect.any(Number),
        account_id: ann,
        url: 'https://hooks.example/1',
        events: 'link.created,link.deleted',
        secret: 'whsec_1',
        enabled: 1,
        failing: 0,
        disabled_reason: null,
        created: T0 + 1,
      })
      expect(await e.notes()).toEqual([`made ${first.id} of ann`])
      expect(await b.endpoint(first.id)).toEqual(first)
      expect(await b.endpoint(first.id + 100)).toBeNull()

      // A creation whose audit row fails leaves no endpoint.
      await expect(
        b.insertUnder(ann, 2, made(2), () => {
          throw new Error('the audit row could not be written')
        }),
      ).rejects.toThrow('the audit row could not be written')
      expect(await a.countOf(ann)).toBe(1)

      const second = row(await b.insertUnder(ann, 2, made(3)))
      expect(await a.insertUnder(ann, 2, made(4), (tx) => e.note(tx, 'never'))).toBe('full')
      const other = row(await a.insertUnder(bob, 2, made(5)))
      expect(await b.countOf(ann)).toBe(2)
      expect(await b.endpointsOf(ann)).toEqual([{ ...first, account_name: 'ann' }, { ...second, account_name: 'ann' }])
      expect((await a.allEndpoints()).map((r) => [r.id, r.account_name])).toEqual([
        [first.id, 'ann'],
        [second.id, 'ann'],
        [other.id, 'bob'],
      ])
      expect(await b.accountId('bob')).toBe(bob)
      expect(await b.accountId('Bob')).toBeNull()
      expect(await b.accountName(ann)).toBe('ann')
      expect(await b.accountName(ann + 100)).toBeNull()
      expect(await e.notes()).toEqual([`made ${first.id} of ann`])

      // An account deleted (on another node) since its caller was checked: no_account, never a foreign key error.
      await e.removeAccount(bob)
      expect(await b.insertUnder(bob, 2, made(6), (tx) => e.note(tx, 'never'))).toBe('no_account')
      expect(await a.endpoint(other.id)).toBeNull()
      expect(await e.notes()).toHaveLength(1)
    } finally {
      await e.close()
    }
  })

  test('two nodes creating an account’s last allowed endpoint at once, round after round: exactly one is made', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      for (let round = 0; round < 12; round++) {
        // One place left: the limit is what the account has, plus one.
        const results = await Promise.all([a, b].map((node, i) => node.insertUnder(ann, round + 1, made(10 * round + i), (tx, r) => e.note(tx, `${round}:${r.url}`))))
        expect(results.filter((r) => r === 'full')).toHaveLength(1)
        expect(await a.countOf(ann)).toBe(round + 1)
      }
      expect(await e.notes()).toHaveLength(12)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('update: `change` is given the row as it is now; another account’s, or a deleted, endpoint is null; two edits at once both land', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [ann, bob] = [await e.account('ann'), await e.account('bob')]
      const ep = row(await a.insertUnder(ann, 20, made(1)))
      const after = await b.update(
        ep.id,
        ann,
        (now) => ({ url: now.url, events: `${now.events},link.deleted`, enabled: false, disabledReason: 'disabled by its owner' }),
        (tx, before, after, owner) => e.note(tx, `${owner}: ${before.events} → ${after.events}`),
      )
      expect(after).toEqual({ ...ep, events: 'link.created,link.deleted', enabled: 0, disabled_reason: 'disabled by its owner' })
      expect(await e.notes()).toEqual(['ann: link.created → link.created,link.deleted'])
      expect(await a.update(ep.id, bob, (now) => ({ ...now, enabled: true, disabledReason: null }), (tx) => e.note(tx, 'never'))).toBeNull()
      await expect(
        a.update(ep.id, ann, (now) => ({ url: 'https://changed.example/', events: now.events, enabled: true, disabledReason: null }), () => {
          throw new Error('audit failed')
        }),
      ).rejects.toThrow('audit failed')
      expect(await b.endpoint(ep.id)).toEqual(after)

      // Round after round, one node changes the URL while the other changes the events: both changes stay.
      for (let round = 0; round < 12; round++) {
        await Promise.all([
          a.update(ep.id, ann, (now) => ({ url: `https://hooks.example/round-${round}`, events: now.events, enabled: now.enabled === 1, disabledReason: now.disabled_reason })),
          b.update(ep.id, ann, (now) => ({ url: now.url, events: round % 2 ? 'link.created' : 'link.deleted', enabled: now.enabled === 1, disabledReason: now.disabled_reason })),
        ])
        expect(await a.endpoint(ep.id)).toMatchObject({ url: `https://hooks.example/round-${round}`, events: round % 2 ? 'link.created' : 'link.deleted' })
      }

      expect(await a.remove(ep.id)).not.toBeNull()
      expect(await b.update(ep.id, ann, (now) => now as any)).toBeNull()
    } finally {
      await e.close()
    }
  }, 60_000)

  test('rotateSecret: the new secret read through the other node; another account’s is null; racing a deletion, one or the other', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [ann, bob] = [await e.account('ann'), await e.account('bob')]
      const ep = row(await a.insertUnder(ann, 20, made(1)))
      expect(await b.rotateSecret(ep.id, ann, 'whsec_new', (tx, r, owner) => e.note(tx, `rotated ${r.id} of ${owner}`))).toEqual({ ...ep, secret: 'whsec_new' })
      expect((await a.endpoint(ep.id))!.secret).toBe('whsec_new')
      expect(await a.rotateSecret(ep.id, bob, 'whsec_bobs', (tx) => e.note(tx, 'never'))).toBeNull()
      await expect(
        a.rotateSecret(ep.id, ann, 'whsec_lost', () => {
          throw new Error('the form token was taken')
        }),
      ).rejects.toThrow('the form token was taken')
      expect((await b.endpoint(ep.id))!.secret).toBe('whsec_new')
      expect(await e.notes()).toEqual([`rotated ${ep.id} of ann`])

      for (let round = 0; round < 10; round++) {
        const target = row(await a.insertUnder(ann, 20, made(100 + round)))
        const [rotated, removed] = await Promise.all([a.rotateSecret(target.id, ann, `whsec_r${round}`), b.remove(target.id)])
        expect(removed).not.toBeNull()
        // Rotated first: the deletion removed the rotated row. Deleted first: nothing was rotated.
        if (rotated) expect(removed!.secret).toBe(`whsec_r${round}`)
        else expect(removed!.secret).toBe(target.secret)
        expect(await a.endpoint(target.id)).toBeNull()
      }
    } finally {
      await e.close()
    }
  }, 60_000)

  test('remove: once, with its deliveries; requeueFailed: the failed ones pending again, due now, attempts from 0', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      const [ep, keep] = [row(await a.insertUnder(ann, 20, made(1))), row(await a.insertUnder(ann, 20, made(2)))]
      await e.delivery(ann, ep.id, 'failed', 6)
      await e.delivery(ann, ep.id, 'ok', 1)
      await e.delivery(ann, ep.id, 'failed', 6)
      await e.delivery(ann, keep.id, 'failed', 6)
      const requeued = await b.requeueFailed(ep.id, T0 + 50, (tx, r, n, owner) => e.note(tx, `${n} of ${r.id} of ${owner}`))
      expect(requeued).toEqual({ row: ep, n: 2 })
      expect(await e.deliveries(ep.id)).toEqual([
        { state: 'pending', attempts: 0, next_at: T0 + 50 },
        { state: 'ok', attempts: 1, next_at: 5 },
        { state: 'pending', attempts: 0, next_at: T0 + 50 },
      ])
      expect(await e.deliveries(keep.id)).toEqual([{ state: 'failed', attempts: 6, next_at: 5 }])
      expect(await a.requeueFailed(ep.id, T0 + 60)).toEqual({ row: ep, n: 0 })

      const removed = await Promise.all([a, b].map((node, i) => node.remove(ep.id, (tx, r, owner) => e.note(tx, `removed ${r.id} of ${owner} by ${i}`))))
      expect(removed.filter((r) => r !== null)).toEqual([ep])
      expect(await e.deliveries(ep.id)).toEqual([])
      expect(await b.requeueFailed(ep.id, T0 + 70, (tx) => e.note(tx, 'never'))).toBeNull()
      expect(await b.endpointsOf(ann)).toEqual([{ ...keep, account_name: 'ann' }])
      const notes = await e.notes()
      expect(notes).toHaveLength(2)
      expect(notes[0]).toBe(`2 of ${ep.id} of ann`)
      expect(notes[1]).toStartWith(`removed ${ep.id} of ann by `)
    } finally {
      await e.close()
    }
  })
})
