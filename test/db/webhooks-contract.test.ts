// The webhooks feature's storage contract (src/webhooks/storage), one suite on both engines: endpoints (EndpointRows)
// and the outbox with its delivery queue (WebhookQueue); two "nodes" are two connections (SQLite) or two pools.
import { describe, expect, test } from 'bun:test'
import type { SQL } from 'bun'
import { postgresEndpointRows, postgresWebhookQueue } from '../../src/webhooks/storage/postgres'
import { sqliteEndpointRows, sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'
import type {
  EndpointRow,
  EndpointRows,
  LeasedAttempt,
  NewEndpoint,
  NewEvent,
  WebhookQueue,
} from '../../src/webhooks/storage/contract'
import { engineHarness, postgresTransaction, sqliteTransaction, sqliteNotes, postgresNotes } from '../support/engines'

const engines = engineHarness()
const T0 = 1_800_000_000_000

// ---------------------------------------------------------------------------------------------------------------
// Endpoints: an endpoint made through one node is listed, edited, rotated and deleted through the other; two nodes
// creating an account's last allowed endpoint at once make exactly one; two edits at once both land.

interface EndpointsEngine {
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

async function sqliteEndpoints(): Promise<EndpointsEngine> {
  const { main, connect, close } = engines.sqlite('linkbox-endpoints-')
  return {
    node: () => sqliteEndpointRows(connect()),
    account: async (name) =>
      Number(
        (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
      ),
    removeAccount: async (id) => void main.query('DELETE FROM accounts WHERE id = ?').run(id),
    async delivery(accountId, endpointId, state, attempts) {
      const ev = main
        .query(
          "INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?, 'link.created', 0, '{}') RETURNING id",
        )
        .get(accountId) as { id: number }
      return (
        main
          .query(
            'INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at, attempts) VALUES (?, ?, ?, 5, ?) RETURNING id',
          )
          .get(ev.id, endpointId, state, attempts) as { id: number }
      ).id
    },
    deliveries: async (endpointId) =>
      main
        .query('SELECT state, attempts, next_at FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY id')
        .all(endpointId) as any[],
    ...sqliteNotes(main),
    close,
  }
}

async function postgresEndpoints(): Promise<EndpointsEngine> {
  const { main, pool, close } = await engines.postgres()
  const sql = main.sql
  return {
    node: () => postgresEndpointRows(pool()),
    account: async (name) =>
      Number((await sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    removeAccount: async (id) => void (await sql`DELETE FROM accounts WHERE id = ${id}`),
    async delivery(accountId, endpointId, state, attempts) {
      const [ev] =
        await sql`INSERT INTO webhook_events (account_id, type, created, payload) VALUES (${accountId}, 'link.created', 0, '{}') RETURNING id`
      return Number(
        (
          await sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at, attempts) VALUES (${ev.id}, ${endpointId}, ${state}, 5, ${attempts}) RETURNING id`
        )[0].id,
      )
    },
    deliveries: async (endpointId) =>
      (
        await sql`SELECT state, attempts, next_at FROM webhook_deliveries WHERE endpoint_id = ${endpointId} ORDER BY id`
      ).map((r: any) => ({ state: r.state, attempts: Number(r.attempts), next_at: Number(r.next_at) })),
    ...postgresNotes(main),
    close,
  }
}

const made = (n: number, events = 'link.created'): NewEndpoint => ({
  url: `https://hooks.example/${n}`,
  events,
  secret: `whsec_${n}`,
  now: T0 + n,
})
const row = (r: EndpointRow | 'full' | 'no_account' | null) => r as EndpointRow

describe.each([
  ['SQLite', sqliteEndpoints],
  ['PostgreSQL', postgresEndpoints],
] as const)('webhook endpoints on %s', (_name, makeEngine) => {
  test('an async `within` throws and stores nothing: SQLite refuses it, PostgreSQL rolls back what it wrote before the throw', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const ann = await e.account('ann')
      const late = async (tx: any) => {
        await e.note(tx, 'written before the await')
        throw new Error('thrown after an await')
      }
      await expect(a.insertUnder(ann, 2, made(1), late)).rejects.toThrow()
      expect(await a.endpointsOf(ann)).toEqual([])
      const kept = row(await a.insertUnder(ann, 2, made(2)))
      await expect(
        a.update(
          kept.id,
          ann,
          (now) => ({ url: 'https://hooks.example/changed', events: now.events, enabled: true, disabledReason: null }),
          late,
        ),
      ).rejects.toThrow()
      await expect(a.remove(kept.id, late)).rejects.toThrow()
      expect((await a.endpoint(kept.id))!.url).toBe(kept.url)
      expect(await e.notes()).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('made through one node, listed through the other; `within` goes in its transaction with the owner’s name; past the limit: full; an account gone: no_account', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [ann, bob] = [await e.account('ann'), await e.account('bob')]
      const first = row(
        await a.insertUnder(ann, 2, made(1, 'link.created,link.deleted'), (tx, r, owner) =>
          e.note(tx, `made ${r.id} of ${owner}`),
        ),
      )
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
        previous_secret: null,
        previous_until: 0,
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
      expect(await b.endpointsOf(ann)).toEqual([
        { ...first, account_name: 'ann' },
        { ...second, account_name: 'ann' },
      ])
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
        const results = await Promise.all(
          [a, b].map((node, i) =>
            node.insertUnder(ann, round + 1, made(10 * round + i), (tx, r) => e.note(tx, `${round}:${r.url}`)),
          ),
        )
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
        (now) => ({
          url: now.url,
          events: `${now.events},link.deleted`,
          enabled: false,
          disabledReason: 'disabled by its owner',
        }),
        (tx, before, after, owner) => e.note(tx, `${owner}: ${before.events} → ${after.events}`),
      )
      expect(after).toEqual({
        ...ep,
        events: 'link.created,link.deleted',
        enabled: 0,
        disabled_reason: 'disabled by its owner',
      })
      expect(await e.notes()).toEqual(['ann: link.created → link.created,link.deleted'])
      expect(
        await a.update(
          ep.id,
          bob,
          (now) => ({ ...now, enabled: true, disabledReason: null }),
          (tx) => e.note(tx, 'never'),
        ),
      ).toBeNull()
      await expect(
        a.update(
          ep.id,
          ann,
          (now) => ({ url: 'https://changed.example/', events: now.events, enabled: true, disabledReason: null }),
          () => {
            throw new Error('audit failed')
          },
        ),
      ).rejects.toThrow('audit failed')
      expect(await b.endpoint(ep.id)).toEqual(after)

      // Round after round, one node changes the URL while the other changes the events: both changes stay.
      for (let round = 0; round < 12; round++) {
        await Promise.all([
          a.update(ep.id, ann, (now) => ({
            url: `https://hooks.example/round-${round}`,
            events: now.events,
            enabled: now.enabled === 1,
            disabledReason: now.disabled_reason,
          })),
          b.update(ep.id, ann, (now) => ({
            url: now.url,
            events: round % 2 ? 'link.created' : 'link.deleted',
            enabled: now.enabled === 1,
            disabledReason: now.disabled_reason,
          })),
        ])
        expect(await a.endpoint(ep.id)).toMatchObject({
          url: `https://hooks.example/round-${round}`,
          events: round % 2 ? 'link.created' : 'link.deleted',
        })
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
      const none = { now: T0, previousUntil: 0 }
      expect(
        await b.rotateSecret(ep.id, ann, 'whsec_new', none, (tx, r, owner) =>
          e.note(tx, `rotated ${r.id} of ${owner}`),
        ),
      ).toEqual({ row: { ...ep, secret: 'whsec_new' }, dropped: false })
      expect((await a.endpoint(ep.id))!.secret).toBe('whsec_new')
      expect(await a.rotateSecret(ep.id, bob, 'whsec_bobs', none, (tx) => e.note(tx, 'never'))).toBeNull()
      await expect(
        a.rotateSecret(ep.id, ann, 'whsec_lost', none, () => {
          throw new Error('the form token was taken')
        }),
      ).rejects.toThrow('the form token was taken')
      expect((await b.endpoint(ep.id))!.secret).toBe('whsec_new')
      expect(await e.notes()).toEqual([`rotated ${ep.id} of ann`])

      for (let round = 0; round < 10; round++) {
        const target = row(await a.insertUnder(ann, 20, made(100 + round)))
        const [rotated, removed] = await Promise.all([
          a.rotateSecret(target.id, ann, `whsec_r${round}`, none),
          b.remove(target.id),
        ])
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
      const requeued = await b.requeueFailed(ep.id, T0 + 50, (tx, r, n, owner) =>
        e.note(tx, `${n} of ${r.id} of ${owner}`),
      )
      expect(requeued).toEqual({ row: ep, n: 2 })
      expect(await e.deliveries(ep.id)).toEqual([
        { state: 'pending', attempts: 0, next_at: T0 + 50 },
        { state: 'ok', attempts: 1, next_at: 5 },
        { state: 'pending', attempts: 0, next_at: T0 + 50 },
      ])
      expect(await e.deliveries(keep.id)).toEqual([{ state: 'failed', attempts: 6, next_at: 5 }])
      expect(await a.requeueFailed(ep.id, T0 + 60)).toEqual({ row: ep, n: 0 })

      const removed = await Promise.all(
        [a, b].map((node, i) =>
          node.remove(ep.id, (tx, r, owner) => e.note(tx, `removed ${r.id} of ${owner} by ${i}`)),
        ),
      )
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

// ---------------------------------------------------------------------------------------------------------------
// The queue: an event and its deliveries commit or roll back with the caller's transaction; each delivery is held by
// one claim at a time under a lease; a late holder cannot overwrite the next one's result; two nodes claiming at
// once take every delivery exactly once.

interface DeliveryRow {
  id: number
  event_id: number
  endpoint_id: number
  state: string
  attempts: number
  next_at: number
  claimed_until: number
  last_status: number | null
  last_error: string | null
}

/** One "node": the queue on a connection (SQLite) or a pool (PostgreSQL) of its own. */
interface Node {
  queue: WebhookQueue<any>
  /** Runs `work` in a transaction of this node's connection, then commits (or rolls back); its result. */
  inTransaction<T>(work: (tx: any) => Promise<T>, rollback?: boolean): Promise<T>
}

interface QueueEngine {
  node(): Node
  account(name: string): Promise<number>
  endpoint(accountId: number, events: string, enabled?: boolean): Promise<number>
  endpointRow(id: number): Promise<{ enabled: number; failing: number; disabled_reason: string | null }>
  deliveries(): Promise<DeliveryRow[]>
  events(): Promise<{ id: number; type: string; webhook_id: string; payload: string }[]>
  /** A row written through the transaction handle `within` gets (the audit row of a 410, say). */
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  /** A statement of the test's own ($1, $2… parameters), on the main connection. */
  exec(text: string, ...params: (number | string)[]): Promise<void>
  close(): Promise<void>
}

const NUMBERS = [
  'id',
  'event_id',
  'endpoint_id',
  'attempts',
  'next_at',
  'claimed_until',
  'last_status',
  'enabled',
  'failing',
] as const
const numbers = <T>(r: any): T => {
  const out = { ...r }
  for (const k of NUMBERS) if (k in out && out[k] !== null) out[k] = Number(out[k])
  return out
}

async function sqliteQueue(): Promise<QueueEngine> {
  const { main, connect, close } = engines.sqlite('linkbox-whqueue-')
  return {
    node() {
      const db = connect()
      return { queue: sqliteWebhookQueue(db), inTransaction: (work, rollback) => sqliteTransaction(db, work, rollback) }
    },
    account: async (name) =>
      Number(
        (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
      ),
    endpoint: async (accountId, events, enabled = true) =>
      Number(
        (
          main
            .query(
              "INSERT INTO webhook_endpoints (account_id, url, events, secret, enabled, created) VALUES (?, 'https://hooks.example.com/in', ?, 'whsec_x', ?, 0) RETURNING id",
            )
            .get(accountId, events, enabled ? 1 : 0) as { id: number }
        ).id,
      ),
    endpointRow: async (id) =>
      main.query('SELECT enabled, failing, disabled_reason FROM webhook_endpoints WHERE id = ?').get(id) as any,
    deliveries: async () =>
      main
        .query(
          'SELECT id, event_id, endpoint_id, state, attempts, next_at, claimed_until, last_status, last_error FROM webhook_deliveries ORDER BY id',
        )
        .all() as DeliveryRow[],
    events: async () => main.query('SELECT id, type, webhook_id, payload FROM webhook_events ORDER BY id').all() as any,
    ...sqliteNotes(main),
    exec: async (text, ...params) => void main.query(text.replace(/\$(\d+)/g, '?$1')).run(...params),
    close,
  }
}

async function postgresQueue(): Promise<QueueEngine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node() {
      const sql = pool()
      return {
        queue: postgresWebhookQueue(sql),
        inTransaction: (work, rollback) => postgresTransaction(sql, work, rollback),
      }
    },
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    endpoint: async (accountId, events, enabled = true) =>
      Number(
        (
          await main.sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, enabled, created) VALUES (${accountId}, 'https://hooks.example.com/in', ${events}, 'whsec_x', ${enabled ? 1 : 0}, 0) RETURNING id`
        )[0].id,
      ),
    endpointRow: async (id) =>
      numbers((await main.sql`SELECT enabled, failing, disabled_reason FROM webhook_endpoints WHERE id = ${id}`)[0]),
    deliveries: async () =>
      (
        await main.sql`SELECT id, event_id, endpoint_id, state, attempts, next_at, claimed_until, last_status, last_error FROM webhook_deliveries ORDER BY id`
      ).map(numbers<DeliveryRow>),
    events: async () =>
      (await main.sql`SELECT id, type, webhook_id, payload FROM webhook_events ORDER BY id`).map(numbers<any>),
    ...postgresNotes(main),
    exec: async (text, ...params) => void (await main.sql.unsafe(text, params)),
    close,
  }
}

const DAY = 86_400_000
/** What the sweep is given: events created before it (7 days before T0) with nothing pending go. */
const BEFORE = T0 - 7 * DAY
const LONG_AGO = T0 - 30 * DAY
const event = (accountId: number, type: NewEvent['type'] = 'link.created', code = 'abc'): NewEvent => ({
  accountId,
  type,
  at: T0 - 5,
  data: { code },
})
const attempt = (
  d: { id: number; lease: number },
  status: number | null,
  at: number,
  error: string | null = status === null ? 'network' : `HTTP ${status}`,
): LeasedAttempt => ({
  id: d.id,
  lease: d.lease,
  status,
  error: status !== null && status >= 200 && status <= 299 ? null : error,
  ms: 12,
  at,
})

describe.each([
  ['SQLite', sqliteQueue],
  ['PostgreSQL', postgresQueue],
] as const)('webhook queue on %s', (_name, makeEngine) => {
  test('an async `within` of markGone throws and stores nothing: the endpoint stays enabled, its deliveries pending', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const alice = await e.account('alice')
      const hook = await e.endpoint(alice, 'link.created')
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice), T0))
      const [d] = await a.queue.claim(T0, { limit: 10 })
      const late = async (tx: any) => {
        await e.note(tx, 'written before the await')
        throw new Error('thrown after an await')
      }
      await expect(
        a.queue.markGone(attempt(d!, 410, T0 + 1), hook, 'the receiver answered 410 Gone', late),
      ).rejects.toThrow()
      expect(await e.endpointRow(hook)).toEqual({ enabled: 1, failing: 0, disabled_reason: null })
      expect((await e.deliveries()).map((r) => [r.state, r.attempts])).toEqual([['pending', 0]])
      expect(await e.notes()).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('enqueue writes the event and one delivery per enabled subscribed endpoint in the caller’s transaction; none without a taker; a rollback leaves nothing', async () => {
    const e = await makeEngine()
    try {
      const node = e.node()
      const [alice, bob] = [await e.account('alice'), await e.account('bob')]
      const both = await e.endpoint(alice, 'link.created,link.deleted')
      const deletes = await e.endpoint(alice, 'link.deleted')
      await e.endpoint(alice, 'link.created', false)
      await e.endpoint(bob, 'link.created')

      expect(await node.inTransaction((tx) => node.queue.enqueue(tx, event(alice), T0))).toBe(1)
      expect(
        await node.inTransaction((tx) => node.queue.enqueue(tx, event(alice, 'link.deleted', 'gone'), T0 + 1)),
      ).toBe(2)
      // Nobody of alice's subscribes to clicks: no event row either.
      expect(await node.inTransaction((tx) => node.queue.enqueue(tx, event(alice, 'link.clicked'), T0))).toBe(0)
      // Rolled back with the change: nothing.
      expect(
        await node.inTransaction((tx) => node.queue.enqueue(tx, event(alice, 'link.created', 'undone'), T0), true),
      ).toBe(1)

      const events = await e.events()
      expect(events.map((r) => r.type)).toEqual(['link.created', 'link.deleted'])
      for (const r of events) expect(r.webhook_id).toMatch(/^msg_[0-9a-f]{32}$/)
      expect(events[0]!.webhook_id).not.toBe(events[1]!.webhook_id)
      expect(JSON.parse(events[1]!.payload)).toEqual({
        type: 'link.deleted',
        timestamp: new Date(T0 - 5).toISOString(),
        data: { code: 'gone' },
      })
      const rows = await e.deliveries()
      expect(rows.map((r) => [r.event_id, r.endpoint_id, r.state, r.attempts, r.next_at, r.claimed_until])).toEqual([
        [events[0]!.id, both, 'pending', 0, T0, 0],
        [events[1]!.id, both, 'pending', 0, T0 + 1, 0],
        [events[1]!.id, deletes, 'pending', 0, T0 + 1, 0],
      ])
    } finally {
      await e.close()
    }
  })

  test('several events of one account in one transaction (a group of creations): each subscribed one written, the others not; an endpoint made after that transaction takes the next one', async () => {
    const e = await makeEngine()
    try {
      const node = e.node()
      const alice = await e.account('alice')
      await e.endpoint(alice, 'link.deleted')
      const written = await node.inTransaction((tx) =>
        Promise.all([
          node.queue.enqueue(tx, event(alice, 'link.created', 'a'), T0),
          node.queue.enqueue(tx, event(alice, 'link.deleted', 'b'), T0),
          node.queue.enqueue(tx, event(alice, 'link.created', 'c'), T0),
          node.queue.enqueue(tx, event(alice, 'link.deleted', 'd'), T0),
        ]),
      )
      expect(written).toEqual([0, 1, 0, 1])
      // What one transaction read of the endpoints is not kept for the next.
      const creates = await e.endpoint(alice, 'link.created')
      expect(await node.inTransaction((tx) => node.queue.enqueue(tx, event(alice, 'link.created', 'e'), T0))).toBe(1)
      const rows = await e.deliveries()
      expect(rows.filter((r) => r.endpoint_id === creates)).toHaveLength(1)
      expect((await e.events()).map((r) => JSON.parse(r.payload).data.code)).toEqual(['b', 'd', 'e'])
    } finally {
      await e.close()
    }
  })

  test('claim takes due rows of enabled endpoints, oldest due first, under a lease; not again while it holds, again once it has run out, never once finished', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const b = e.node()
      const alice = await e.account('alice')
      const [one, two] = [await e.endpoint(alice, 'link.created'), await e.endpoint(alice, 'link.created')]
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice, 'link.created', 'first'), T0))
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice, 'link.created', 'later'), T0 + 10_000))
      const [ev1, ev2] = await e.events()

      expect(await a.queue.claim(T0 - 1, { limit: 10 })).toEqual([])
      expect(await a.queue.nextDue(T0 - 1)).toBe(T0)
      // Endpoint one is busy on this node: only two's row of the first event.
      const first = await a.queue.claim(T0, { limit: 10, busy: [one], leaseMs: 1_000 })
      expect(first).toEqual([
        {
          id: expect.any(Number),
          event_id: ev1!.id,
          webhook_id: ev1!.webhook_id,
          endpoint_id: two,
          attempts: 0,
          url: 'https://hooks.example.com/in',
          secret: 'whsec_x',
          previous_secret: null,
          payload: ev1!.payload,
          lease: T0 + 1_000,
        },
      ])
      // Held: the other node does not get it; it gets one's row, oldest first, one at a time.
      const second = await b.queue.claim(T0 + 1, { limit: 1, leaseMs: 1_000 })
      expect(second.map((d) => [d.event_id, d.endpoint_id, d.lease])).toEqual([[ev1!.id, one, T0 + 1_001]])
      expect(await b.queue.claim(T0 + 2, { limit: 10 })).toEqual([])
      expect(await a.queue.nextDue(T0 + 2)).toBe(T0 + 1_000)
      // The first holder never reports: once its lease has run out the row is the other node's, same webhook-id.
      const again = await b.queue.claim(T0 + 1_000, { limit: 10, leaseMs: 1_000 })
      expect(again.map((d) => [d.id, d.webhook_id, d.lease])).toEqual([[first[0]!.id, ev1!.webhook_id, T0 + 2_000]])
      // Finished rows are never claimed again, whatever the time.
      await b.queue.markOk(attempt(again[0]!, 200, T0 + 1_100), two)
      await b.queue.markOk(attempt(second[0]!, 204, T0 + 1_100), one)
      expect(await a.queue.claim(T0 + 9_999, { limit: 10 })).toEqual([])
      expect(await a.queue.nextDue(T0 + 9_999)).toBe(T0 + 10_000)
      const later = await a.queue.claim(T0 + 10_000, { limit: 10 })
      expect(later.map((d) => [d.event_id, d.endpoint_id])).toEqual([
        [ev2!.id, one],
        [ev2!.id, two],
      ])
      for (const d of later) await a.queue.markOk(attempt(d, 200, T0 + 10_100), d.endpoint_id)
      expect(await b.queue.claim(T0 + 10 ** 9, { limit: 10 })).toEqual([])
      expect(await b.queue.nextDue(T0)).toBeNull()
      const rows = await e.deliveries()
      expect(rows.map((r) => [r.state, r.attempts, r.claimed_until])).toEqual(rows.map(() => ['ok', 1, 0]))
    } finally {
      await e.close()
    }
  })

  test('results: a retry ends the lease and waits for its time; a late holder (lease lost) writes nothing; giving up turns the endpoint failing once; a success makes it healthy', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const hook = await e.endpoint(alice, 'link.created')
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice), T0))
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice), T0))

      const [d1, d2] = await a.queue.claim(T0, { limit: 10, leaseMs: 1_000 })
      expect(await a.queue.markRetry(attempt(d1!, 503, T0 + 50), T0 + 5_000)).toBe(true)
      expect(await b.queue.claim(T0 + 999, { limit: 10 })).toEqual([])
      expect(await b.queue.nextDue(T0 + 100)).toBe(T0 + 1_000) // d2's lease, before d1's retry
      // d2's holder is late: its lease ran out and b holds the row now (due first: next_at T0). Its retry or
      // failure changes nothing.
      const [taken] = await b.queue.claim(T0 + 5_000, { limit: 1, leaseMs: 1_000 })
      expect(taken!.id).toBe(d2!.id)
      const [retried] = await b.queue.claim(T0 + 5_000, { limit: 10, leaseMs: 1_000 })
      expect([retried!.id, retried!.attempts]).toEqual([d1!.id, 1])
      expect(await a.queue.markRetry(attempt(d2!, 500, T0 + 5_001), T0 + 6_000)).toBe(false)
      expect(await a.queue.markFailed(attempt(d2!, 500, T0 + 5_001), hook)).toBe(false)
      let rows = await e.deliveries()
      expect(rows.find((r) => r.id === d2!.id)).toMatchObject({
        state: 'pending',
        attempts: 0,
        claimed_until: T0 + 6_000,
        last_status: null,
      })

      // b gives up on both: the first failure turns the endpoint failing, the second does not turn it again.
      expect(await b.queue.markFailed(attempt(retried!, 500, T0 + 5_100), hook)).toBe(true)
      expect(await b.queue.markFailed(attempt(taken!, null, T0 + 5_100, 'timeout: no answer within 15 s'), hook)).toBe(
        false,
      )
      expect(await e.endpointRow(hook)).toMatchObject({ enabled: 1, failing: 1 })
      rows = await e.deliveries()
      expect(rows.map((r) => [r.state, r.attempts, r.claimed_until, r.last_status, r.last_error])).toEqual([
        ['failed', 2, 0, 500, 'HTTP 500'],
        ['failed', 1, 0, null, 'timeout: no answer within 15 s'],
      ])

      // A success, reported late by whoever sent it, is written (the receiver has it) and heals the endpoint.
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice), T0 + 6_000))
      const [d3] = await a.queue.claim(T0 + 6_000, { limit: 10, leaseMs: 1_000 })
      const [d3again] = await b.queue.claim(T0 + 7_000, { limit: 10, leaseMs: 1_000 })
      expect(d3again!.id).toBe(d3!.id)
      await a.queue.markOk(attempt(d3!, 200, T0 + 7_001), hook)
      expect(await b.queue.markRetry(attempt(d3again!, 502, T0 + 7_002), T0 + 9_000)).toBe(false)
      expect((await e.deliveries()).at(-1)).toMatchObject({
        state: 'ok',
        attempts: 1,
        last_status: 200,
        claimed_until: 0,
      })
      expect(await e.endpointRow(hook)).toMatchObject({ failing: 0 })

      // The delivery log and the counts, the same shapes on both engines.
      const log = await b.queue.log(hook, 10)
      const events = await e.events()
      expect(log.map((r) => [r.event_id, r.webhook_id, r.type, r.state, r.attempts, r.last_status, r.last_ms])).toEqual(
        [
          [events[2]!.id, events[2]!.webhook_id, 'link.created', 'ok', 1, 200, 12],
          [events[1]!.id, events[1]!.webhook_id, 'link.created', 'failed', 1, null, 12],
          [events[0]!.id, events[0]!.webhook_id, 'link.created', 'failed', 2, 500, 12],
        ],
      )
      expect(log[0]).toEqual({
        event_id: events[2]!.id,
        webhook_id: events[2]!.webhook_id,
        type: 'link.created',
        state: 'ok',
        attempts: 1,
        last_status: 200,
        last_error: null,
        last_ms: 12,
        last_at: T0 + 7_001,
        next_at: T0 + 6_000,
      })
      expect(await b.queue.log(hook, 1)).toHaveLength(1)
      expect(await a.queue.counts(alice)).toEqual([{ endpoint_id: hook, ok: 1, failed: 2, pending: 0, retrying: 0 }])
    } finally {
      await e.close()
    }
  })

  test('renew keeps a lease its holder still names (one statement for all of them); release gives leases back, due at once, attempts not counted; neither touches a lease lost, a row finished, or a lease another holder took', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const hook = await e.endpoint(alice, 'link.created')
      for (let i = 0; i < 4; i++)
        await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice, 'link.created', `c${i}`), T0))
      const [d1, d2, d3, d4] = await a.queue.claim(T0, { limit: 10, leaseMs: 1_000 })
      expect(await a.queue.renew([], T0 + 9_999)).toEqual([])
      expect(await a.queue.release([])).toBe(0)

      // Renewed before it ran out: the rows stay a's past their first lease; b gets none of them.
      const renewed = await a.queue.renew(
        [d1!, d2!, d3!, d4!].map((d) => ({ id: d.id, lease: d.lease })),
        T0 + 1_900,
      )
      expect(renewed.sort((x, y) => x - y)).toEqual([d1!.id, d2!.id, d3!.id, d4!.id])
      expect(await b.queue.claim(T0 + 1_500, { limit: 10 })).toEqual([])
      expect(await b.queue.nextDue(T0 + 1_500)).toBe(T0 + 1_900)
      // The old lease is no longer the fence: a result under it writes nothing, under the renewed one it does.
      expect(await a.queue.markRetry(attempt(d4!, 503, T0 + 1_600), T0 + 60_000)).toBe(false)
      expect(await a.queue.markRetry(attempt({ id: d4!.id, lease: T0 + 1_900 }, 503, T0 + 1_600), T0 + 60_000)).toBe(
        true,
      )

      // d1 finished, d2's lease runs out and b takes it: a renewal naming them (or an old lease) renews nothing of them.
      await a.queue.markOk(attempt({ id: d1!.id, lease: T0 + 1_900 }, 200, T0 + 1_700), hook)
      const [taken] = await b.queue.claim(T0 + 1_900, { limit: 1, leaseMs: 1_000 })
      expect(taken!.id).toBe(d2!.id)
      const held = [d1!, d2!, d3!].map((d) => ({ id: d.id, lease: T0 + 1_900 }))
      expect(await a.queue.renew([...held, { id: d3!.id, lease: d3!.lease }], T0 + 3_000)).toEqual([d3!.id])
      // A release by the old holder leaves b's lease alone; the finished row stays finished.
      expect(await a.queue.release(held)).toBe(0)
      expect(
        await a.queue.release([
          { id: d3!.id, lease: T0 + 3_000 },
          { id: d4!.id, lease: T0 + 1_900 },
        ]),
      ).toBe(1)
      const rows = await e.deliveries()
      expect(rows.map((r) => [r.id, r.state, r.attempts, r.next_at, r.claimed_until])).toEqual([
        [d1!.id, 'ok', 1, T0, 0],
        [d2!.id, 'pending', 0, T0, T0 + 2_900],
        [d3!.id, 'pending', 0, T0, 0],
        [d4!.id, 'pending', 1, T0 + 60_000, 0],
      ])
      // Given back: due at once, for anyone, under the same webhook-id, its attempts as they were.
      const [back] = await b.queue.claim(T0 + 2_000, { limit: 10, leaseMs: 1_000 })
      expect([back!.id, back!.attempts, back!.webhook_id]).toEqual([d3!.id, 0, d3!.webhook_id])
      expect(await b.queue.claim(T0 + 2_000, { limit: 10 })).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('a 410 disables the endpoint once, fails its pending deliveries, and runs `within` in that transaction', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const [hook, other] = [await e.endpoint(alice, 'link.created'), await e.endpoint(alice, 'link.created')]
      for (let i = 0; i < 3; i++) await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice), T0))
      const claimed = await a.queue.claim(T0, { limit: 10, busy: [other] })
      expect(claimed.map((d) => d.endpoint_id)).toEqual([hook, hook, hook])
      const reason = 'the receiver answered 410 Gone'
      expect(
        await a.queue.markGone(attempt(claimed[0]!, 410, T0 + 1), hook, reason, (tx) => e.note(tx, 'disabled by a')),
      ).toBe(true)
      // A sibling answered 410 too: the endpoint is off already; `within` is not run again.
      expect(
        await b.queue.markGone(attempt(claimed[1]!, 410, T0 + 2), hook, reason, (tx) => e.note(tx, 'disabled by b')),
      ).toBe(false)
      expect(await e.notes()).toEqual(['disabled by a'])
      expect(await e.endpointRow(hook)).toEqual({ enabled: 0, failing: 0, disabled_reason: reason })
      const rows = (await e.deliveries()).filter((r) => r.endpoint_id === hook)
      expect(rows.map((r) => [r.state, r.attempts, r.last_status, r.last_error, r.claimed_until])).toEqual([
        ['failed', 1, 410, 'HTTP 410', 0],
        ['failed', 0, null, `not sent: ${reason}`, 0],
        ['failed', 0, null, `not sent: ${reason}`, 0],
      ])
      // A disabled endpoint's rows are not claimed; the other endpoint's are.
      expect((await b.queue.claim(T0 + 10 ** 6, { limit: 10 })).map((d) => d.endpoint_id)).toEqual([
        other,
        other,
        other,
      ])
    } finally {
      await e.close()
    }
  })

  test('enqueueFor sends webhook.test to one endpoint whatever it subscribes to; subscriptions and the outbox figures', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [alice, bob] = [await e.account('alice'), await e.account('bob')]
      const created = await e.endpoint(alice, 'link.created')
      await e.endpoint(alice, 'link.deleted', false)
      const mail = await e.endpoint(bob, 'mail.received,link.created')
      const subscriptions = (await b.queue.subscriptions()).sort((x, y) => x.id - y.id)
      expect(subscriptions).toEqual([
        { id: created, account_id: alice, events: 'link.created' },
        { id: mail, account_id: bob, events: 'mail.received,link.created' },
      ])
      expect(await b.queue.outbox()).toEqual({ pending: 0, oldest: null })

      const ids = await a.queue.enqueueFor(
        created,
        { type: 'webhook.test', accountId: alice, at: T0, data: { test: true } },
        T0,
      )
      expect(ids).toEqual({ id: expect.any(Number), webhook_id: expect.stringMatching(/^msg_[0-9a-f]{32}$/) })
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(bob), T0 + 1))
      expect(await b.queue.outbox()).toEqual({ pending: 2, oldest: T0 - 5 })
      const claimed = await b.queue.claim(T0 + 1, { limit: 10 })
      expect(claimed.map((d) => [d.endpoint_id, d.event_id, d.webhook_id, JSON.parse(d.payload).type])).toEqual([
        [created, ids.id, ids.webhook_id, 'webhook.test'],
        [mail, ids.id + 1, expect.any(String), 'link.created'],
      ])
      await b.queue.markOk(attempt(claimed[0]!, 200, T0 + 2), created)
      expect(await a.queue.outbox()).toEqual({ pending: 1, oldest: T0 - 5 })
    } finally {
      await e.close()
    }
  })

  test('two nodes claiming at once while 50 events are enqueued: every delivery claimed exactly once, one webhook-id per event; a third that dies holding some gives them back after its lease', async () => {
    const e = await makeEngine()
    try {
      const [a, b, dying] = [e.node(), e.node(), e.node()]
      const alice = await e.account('alice')
      const hooks = [await e.endpoint(alice, 'link.created'), await e.endpoint(alice, 'link.created')]
      const EVENTS = 50
      const LEASE = 300
      let enqueued = 0
      const enqueue = async (i: number) => {
        const node = i % 2 ? a : b
        await node.inTransaction((tx) => node.queue.enqueue(tx, event(alice, 'link.created', `c${i}`), Date.now()))
        enqueued++
      }
      // The third node takes five deliveries of the first events, then dies: it never reports.
      for (let i = 0; i < 5; i++) await enqueue(i)
      const abandoned = await dying.queue.claim(Date.now(), { limit: 5, leaseMs: LEASE })
      expect(abandoned).toHaveLength(5)
      const producer = async () => {
        for (let i = 5; i < EVENTS; i++) {
          await enqueue(i)
          if (i % 5 === 0) await Bun.sleep(1)
        }
      }
      const claims: {
        node: string
        id: number
        event_id: number
        webhook_id: string
        endpoint_id: number
        at: number
      }[] = []
      const worker = async (node: Node, name: string) => {
        const deadline = Date.now() + 30_000
        while (Date.now() < deadline) {
          const at = Date.now()
          const got = await node.queue.claim(at, { limit: 3 })
          for (const d of got)
            claims.push({
              node: name,
              id: d.id,
              event_id: d.event_id,
              webhook_id: d.webhook_id,
              endpoint_id: d.endpoint_id,
              at,
            })
          for (const d of got) await node.queue.markOk(attempt(d, 200, Date.now()), d.endpoint_id)
          if (got.length === 0 && enqueued === EVENTS && claims.length >= EVENTS * hooks.length) return
          // A turn of the event loop: the other node's claims (and, on SQLite, whose calls do not wait) run between.
          await Bun.sleep(0)
        }
      }
      await Promise.all([producer(), worker(a, 'a'), worker(a, 'a'), worker(b, 'b'), worker(b, 'b')])

      const rows = await e.deliveries()
      expect(rows).toHaveLength(EVENTS * hooks.length)
      expect(rows.every((r) => r.state === 'ok' && r.attempts === 1 && r.claimed_until === 0)).toBe(true)
      // Exactly once between the two live nodes: every row's id once among their claims, no more claims than rows.
      expect(claims.map((c) => c.id).sort((x, y) => x - y)).toEqual(rows.map((r) => r.id))
      // The dead node's rows were taken again, only once its lease had run out, under the same webhook-ids.
      for (const d of abandoned) {
        const again = claims.find((c) => c.id === d.id)!
        expect(again.at).toBeGreaterThanOrEqual(d.lease)
        expect(again.webhook_id).toBe(d.webhook_id)
      }
      const events = await e.events()
      expect(new Set(events.map((r) => r.webhook_id)).size).toBe(EVENTS)
      for (const hook of hooks) {
        const ids = claims.filter((c) => c.endpoint_id === hook).map((c) => c.webhook_id)
        expect(new Set(ids).size).toBe(EVENTS)
      }
      // The webhook-id a claim carried is its event's, whichever node claimed it.
      const byEvent = new Map(events.map((r) => [r.id, r.webhook_id]))
      for (const c of claims) expect(c.webhook_id).toBe(byEvent.get(c.event_id)!)
      // Both nodes took part (else the test proved nothing about two of them).
      expect(new Set(claims.map((c) => c.node))).toEqual(new Set(['a', 'b']))
    } finally {
      await e.close()
    }
  }, 60_000)
  test('event reads the row; redeliver makes the endpoint’s one delivery of it pending again, due now, under the event’s webhook-id (a new row for an endpoint that never had it); one in flight keeps its lease; another account’s event or endpoint, or a gone one, writes nothing', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [alice, bob] = [await e.account('alice'), await e.account('bob')]
      const hook = await e.endpoint(alice, 'link.created')
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice), T0))
      const [ev] = await e.events()
      const stored = {
        id: ev!.id,
        account_id: alice,
        type: 'link.created',
        created: T0 - 5,
        payload: ev!.payload,
        webhook_id: ev!.webhook_id,
      }
      expect(await b.queue.event(ev!.id)).toEqual(stored)
      expect(await b.queue.event(ev!.id + 1_000)).toBeNull()

      const [d] = await a.queue.claim(T0, { limit: 10, leaseMs: 1_000 })
      expect(await a.queue.markFailed(attempt(d!, 500, T0 + 10), hook)).toBe(true)
      // Failed → pending again: the same row (so the same webhook-id), due now, attempts from 0, its last result kept.
      expect(await b.queue.redeliver(ev!.id, hook, alice, T0 + 100)).toEqual({
        event: stored,
        delivery: {
          event_id: ev!.id,
          webhook_id: ev!.webhook_id,
          type: 'link.created',
          state: 'pending',
          attempts: 0,
          last_status: 500,
          last_error: 'HTTP 500',
          last_ms: 12,
          last_at: T0 + 10,
          next_at: T0 + 100,
        },
      })
      expect((await e.deliveries()).map((r) => [r.id, r.state, r.attempts, r.next_at, r.claimed_until])).toEqual([
        [d!.id, 'pending', 0, T0 + 100, 0],
      ])
      // An endpoint subscribed since: a row of its own, the same webhook-id.
      const later = await e.endpoint(alice, 'link.deleted')
      expect(await a.queue.redeliver(ev!.id, later, alice, T0 + 200)).toMatchObject({
        delivery: {
          event_id: ev!.id,
          webhook_id: ev!.webhook_id,
          state: 'pending',
          attempts: 0,
          last_status: null,
          next_at: T0 + 200,
        },
      })
      const flying = await a.queue.claim(T0 + 200, { limit: 10, leaseMs: 1_000 })
      expect(flying.map((x) => [x.endpoint_id, x.webhook_id])).toEqual([
        [hook, ev!.webhook_id],
        [later, ev!.webhook_id],
      ])
      // Redelivered while in flight: due now, but held until its lease ends (not sent twice at once); the holder's result is still written.
      await b.queue.redeliver(ev!.id, hook, alice, T0 + 300)
      expect(await b.queue.claim(T0 + 300, { limit: 10 })).toEqual([])
      expect((await e.deliveries()).find((r) => r.id === d!.id)).toMatchObject({
        state: 'pending',
        next_at: T0 + 300,
        claimed_until: T0 + 1_200,
      })
      expect(await a.queue.markRetry(attempt(flying[0]!, 503, T0 + 400), T0 + 5_000)).toBe(true)

      // Not the account's event, not its endpoint, or gone: nothing written.
      const bobs = await e.endpoint(bob, 'link.created')
      await e.exec('DELETE FROM webhook_endpoints WHERE id = $1', later)
      const before = await e.deliveries()
      expect(await a.queue.redeliver(ev!.id, bobs, bob, T0 + 500)).toBe('no_event')
      expect(await a.queue.redeliver(ev!.id, bobs, alice, T0 + 500)).toBe('no_endpoint')
      expect(await a.queue.redeliver(ev!.id + 1_000, hook, alice, T0 + 500)).toBe('no_event')
      expect(await a.queue.redeliver(ev!.id, later, alice, T0 + 500)).toBe('no_endpoint')
      expect(await e.deliveries()).toEqual(before)
    } finally {
      await e.close()
    }
  })

  test('two nodes redelivering the same events at once make one delivery each: one row per endpoint and event, claimed once, under the event’s webhook-id', async () => {
    const e = await makeEngine()
    try {
      const [a, b, sender] = [e.node(), e.node(), e.node()]
      const alice = await e.account('alice')
      const hook = await e.endpoint(alice, 'link.created')
      for (let i = 0; i < 40; i++)
        await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice, 'link.created', `c${i}`), T0))
      const events = await e.events()
      // An endpoint that never had them: each pair of redeliveries races to insert its row. The nodes'
      // connections are open before (else the first ones opened set the pace, not the race).
      const later = await e.endpoint(alice, 'link.deleted')
      await Promise.all([a, b].flatMap((node) => Array.from({ length: 8 }, () => node.queue.event(events[0]!.id))))
      const racing = () =>
        events.flatMap((ev) => [
          a.queue.redeliver(ev.id, later, alice, T0 + 10),
          b.queue.redeliver(ev.id, later, alice, T0 + 10),
        ])
      for (const r of await Promise.all(racing()))
        expect(r).toMatchObject({ delivery: { state: 'pending', attempts: 0, next_at: T0 + 10 } })
      const rowsOf = async () =>
        (await e.deliveries())
          .filter((r) => r.endpoint_id === later)
          .map((r) => r.event_id)
          .sort((x, y) => x - y)
      expect(await rowsOf()).toEqual(events.map((ev) => ev.id))
      const byEvent = <D extends { event_id: number }>(ds: D[]) => [...ds].sort((x, y) => x.event_id - y.event_id)
      const claimed = byEvent(await sender.queue.claim(T0 + 10, { limit: 100, busy: [hook] }))
      expect(claimed.map((d) => [d.event_id, d.webhook_id])).toEqual(events.map((ev) => [ev.id, ev.webhook_id]))
      // Delivered, then redelivered by both at once: pending once more, the same rows, claimed once.
      for (const d of claimed) await sender.queue.markOk(attempt(d, 200, T0 + 20), later)
      await Promise.all(racing())
      expect(await rowsOf()).toEqual(events.map((ev) => ev.id))
      const again = byEvent(await sender.queue.claim(T0 + 30, { limit: 100, busy: [hook] }))
      expect(again.map((d) => [d.id, d.webhook_id])).toEqual(claimed.map((d) => [d.id, d.webhook_id]))
      expect(await sender.queue.claim(T0 + 30, { limit: 100, busy: [hook] })).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('event ids and webhook-ids are never given again: the newest event swept, the next one has a new id and webhook-id, and redelivering the swept one is no_event', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const alice = await e.account('alice')
      const hook = await e.endpoint(alice, 'link.created')
      await a.inTransaction((tx) => a.queue.enqueue(tx, { ...event(alice), at: LONG_AGO }, LONG_AGO))
      const [first] = await e.events()
      await e.exec("UPDATE webhook_deliveries SET state = 'ok'")
      expect(await a.queue.sweepEvents(BEFORE, 100)).toBe(1)
      expect(await e.events()).toEqual([])
      expect(await e.deliveries()).toEqual([])
      await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice), T0))
      const [next] = await e.events()
      expect(next!.id).toBeGreaterThan(first!.id)
      expect(next!.webhook_id).not.toBe(first!.webhook_id)
      expect(await a.queue.event(first!.id)).toBeNull()
      expect(await a.queue.redeliver(first!.id, hook, alice, T0)).toBe('no_event')
    } finally {
      await e.close()
    }
  })

  test('two nodes sweeping at once: every old event with nothing pending goes once, its deliveries with it; an old one with a delivery waiting, or in flight, stays whole, and the sender’s result is written', async () => {
    const e = await makeEngine()
    try {
      const [a, b, sender] = [e.node(), e.node(), e.node()]
      const alice = await e.account('alice')
      const [h1, h2] = [await e.endpoint(alice, 'link.created'), await e.endpoint(alice, 'link.created')]
      const OLD = 40
      for (let i = 0; i < OLD; i++)
        await a.inTransaction((tx) =>
          a.queue.enqueue(tx, { ...event(alice, 'link.created', `o${i}`), at: LONG_AGO + i }, LONG_AGO + i),
        )
      for (let i = 0; i < 3; i++)
        await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice, 'link.created', `n${i}`), T0))
      const events = await e.events()
      const [waiting, inFlight] = [events[5]!, events[17]!]
      // Every delivery of the old events over (ok or failed), but h2's of two of them: one waits for a retry, one is sent now.
      await e.exec(
        "UPDATE webhook_deliveries SET state = CASE WHEN id % 2 = 0 THEN 'ok' ELSE 'failed' END WHERE event_id <= $1 AND NOT (endpoint_id = $2 AND event_id IN ($3, $4))",
        events[OLD - 1]!.id,
        h2,
        waiting.id,
        inFlight.id,
      )
      await e.exec('UPDATE webhook_deliveries SET next_at = $1 WHERE event_id = $2', T0 + 10 ** 6, waiting.id)
      const [flying] = await sender.queue.claim(T0, { limit: 1, busy: [h1] })
      expect([flying!.event_id, flying!.endpoint_id]).toEqual([inFlight.id, h2])

      const sweepAll = async (node: Node) => {
        let n = 0
        for (;;) {
          const k = await node.queue.sweepEvents(BEFORE, 3)
          n += k
          if (k < 3) return n
        }
      }
      const [na, nb] = await Promise.all([sweepAll(a), sweepAll(b)])
      expect(na + nb).toBe(OLD - 2)
      expect(await a.queue.sweepEvents(BEFORE, 100)).toBe(0)
      const kept = [waiting, inFlight, ...events.slice(OLD)].map((ev) => ev.id).sort((x, y) => x - y)
      expect((await e.events()).map((ev) => ev.id)).toEqual(kept)
      const rows = await e.deliveries()
      expect([...new Set(rows.map((r) => r.event_id))]).toEqual(kept)
      expect(rows).toHaveLength(kept.length * 2)
      expect(rows.find((r) => r.id === flying!.id)).toMatchObject({ state: 'pending', claimed_until: flying!.lease })
      await sender.queue.markOk(attempt(flying!, 200, T0 + 100), h2)
      expect((await e.deliveries()).find((r) => r.id === flying!.id)).toMatchObject({
        state: 'ok',
        attempts: 1,
        claimed_until: 0,
      })
    } finally {
      await e.close()
    }
  })

  test('the cap: per endpoint the newest `cap` pending deliveries stay and the older go, but not one in flight under a live lease; finished rows and endpoints under the cap are not touched', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const [h1, h2] = [await e.endpoint(alice, 'link.created'), await e.endpoint(alice, 'link.deleted')]
      for (let i = 0; i < 15; i++)
        await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice, 'link.created', `c${i}`), T0))
      for (let i = 0; i < 3; i++)
        await a.inTransaction((tx) => a.queue.enqueue(tx, event(alice, 'link.deleted', `d${i}`), T0))
      const events = await e.events()
      // h1's oldest is in flight, its second delivered: 14 pending, one of them in flight.
      const [flying, done] = await a.queue.claim(T0, { limit: 2, leaseMs: 1_000, busy: [h2] })
      expect([flying!.event_id, done!.event_id]).toEqual([events[0]!.id, events[1]!.id])
      await a.queue.markOk(attempt(done!, 200, T0 + 1), h1)
      // Beyond the newest 10: events 0, 2, 3, 4; the one in flight stays.
      expect(await b.queue.trimPending(10, T0 + 10)).toBe(3)
      expect(await b.queue.trimPending(10, T0 + 10)).toBe(0)
      const pendingOf = async (hook: number) =>
        (await e.deliveries()).filter((r) => r.endpoint_id === hook && r.state === 'pending').map((r) => r.event_id)
      expect(await pendingOf(h1)).toEqual([events[0]!.id, ...events.slice(5, 15).map((ev) => ev.id)])
      // Its lease ran out (its holder died): now it goes too.
      expect(await a.queue.trimPending(10, T0 + 1_000)).toBe(1)
      expect(await pendingOf(h1)).toEqual(events.slice(5, 15).map((ev) => ev.id))
      expect((await e.deliveries()).find((r) => r.id === done!.id)).toMatchObject({ state: 'ok' })
      expect(await pendingOf(h2)).toEqual(events.slice(15).map((ev) => ev.id))
    } finally {
      await e.close()
    }
  })

  test('the cap across nodes: two nodes trimming at once, over and over while two others enqueue, drop each row beyond it once — never below `cap` — and leave the newest `cap`', async () => {
    const e = await makeEngine()
    try {
      const [a, b, p, q] = [e.node(), e.node(), e.node(), e.node()]
      const alice = await e.account('alice')
      await e.endpoint(alice, 'link.created')
      const CAP = 10
      const EVENTS = 80
      let enqueued = 0
      const producer = async (node: Node, from: number) => {
        for (let i = from; i < EVENTS; i += 2) {
          await node.inTransaction((tx) => node.queue.enqueue(tx, event(alice, 'link.created', `c${i}`), T0))
          enqueued++
          await Bun.sleep(0)
        }
      }
      let dropped = 0
      const seen: number[] = []
      const trimmer = async (node: Node) => {
        while (enqueued < EVENTS) {
          const n = await node.queue.trimPending(CAP, T0)
          dropped += n
          // Nothing finishes here: a trim that counted once and dropped twice would show fewer than CAP.
          const pending = (await e.deliveries()).length
          if (pending < CAP) seen.push(pending)
          await Bun.sleep(0)
        }
      }
      // Rounds of two trims at once, on a backlog: each pair must drop the excess once between them.
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 15; i++)
          await p.inTransaction((tx) => p.queue.enqueue(tx, event(alice, 'link.created', `r${round}.${i}`), T0))
        const before = (await e.deliveries()).length
        const [x, y] = await Promise.all([a.queue.trimPending(CAP, T0), b.queue.trimPending(CAP, T0)])
        expect(x + y).toBe(before - CAP)
        expect((await e.deliveries()).length).toBe(CAP)
      }
      const rowsBefore = (await e.deliveries()).length
      await Promise.all([producer(p, 0), producer(q, 1), trimmer(a), trimmer(b)])
      dropped += await a.queue.trimPending(CAP, T0)
      expect(seen).toEqual([])
      expect(dropped).toBe(rowsBefore + EVENTS - CAP)
      const newest = (await e.events()).map((ev) => ev.id).slice(-CAP)
      expect((await e.deliveries()).map((r) => r.event_id)).toEqual(newest)
    } finally {
      await e.close()
    }
  }, 60_000)
})

describe('webhook queue on PostgreSQL, an endpoint deleted at that moment', () => {
  test('enqueue waits for the deletion and leaves the endpoint out: the caller’s change commits, with no event', async () => {
    const { main, pool, close } = await engines.postgres()
    const other = pool(2)
    try {
      const queue = postgresWebhookQueue(main.sql)
      const [account] = await main.sql`INSERT INTO accounts (name, created) VALUES ('alice', 0) RETURNING id`
      const [hook] =
        await main.sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (${account.id}, 'https://h.example/', 'link.created', 's', 0) RETURNING id`
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      let deleting!: () => void
      const deleted = new Promise<void>((r) => (deleting = r))
      const deletion = other.begin(async (tx) => {
        await tx`DELETE FROM webhook_endpoints WHERE id = ${hook.id}`
        deleting()
        await held
      })
      await deleted
      let enqueued = null as number | null
      const change = main.sql.begin(async (tx) => {
        await tx`INSERT INTO links (code, long_url, account_id, created, updated) VALUES ('abc', 'https://example.com/', ${account.id}, 0, 0)`
        enqueued = await queue.enqueue(
          tx,
          { type: 'link.created', accountId: Number(account.id), at: T0, data: { code: 'abc' } },
          T0,
        )
      })
      await Bun.sleep(200)
      expect(enqueued).toBeNull() // waiting for the deletion's row lock
      release()
      await deletion
      await change
      expect(enqueued).toBe(0)
      expect(Number((await main.sql`SELECT count(*) AS n FROM links`)[0].n)).toBe(1)
      expect(Number((await main.sql`SELECT count(*) AS n FROM webhook_events`)[0].n)).toBe(0)
    } finally {
      await close()
    }
  }, 60_000)
})

describe('webhook queue on PostgreSQL, a sweep and a redelivery at the same moment', () => {
  /** An account, an endpoint and one event created long ago whose only delivery is over (ok): the sweep's to delete. */
  async function oldEvent(sql: SQL) {
    const [account] = await sql`INSERT INTO accounts (name, created) VALUES ('alice', 0) RETURNING id`
    const [hook] =
      await sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (${account.id}, 'https://h.example/', 'link.created', 's', 0) RETURNING id`
    const [ev] =
      await sql`INSERT INTO webhook_events (account_id, type, created, payload) VALUES (${account.id}, 'link.created', ${LONG_AGO}, '{}') RETURNING id, webhook_id`
    const [d] =
      await sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_at) VALUES (${ev.id}, ${hook.id}, 'ok', 1, ${LONG_AGO}) RETURNING id`
    return {
      accountId: Number(account.id),
      hookId: Number(hook.id),
      eventId: Number(ev.id),
      webhookId: ev.webhook_id as string,
      deliveryId: Number(d.id),
    }
  }

  /** A transaction of another pool that takes `lock` and holds it until release() (then commits). */
  function holding(sql: SQL, lock: (tx: SQL) => Promise<unknown>) {
    let release!: () => void
    const released = new Promise<void>((r) => (release = r))
    let locked!: () => void
    const taken = new Promise<void>((r) => (locked = r))
    const done = sql.begin(async (tx) => {
      await lock(tx)
      locked()
      await released
    })
    return { taken, release, done }
  }

  test('a sweep that started before a redelivery and its claim leaves the event and the delivery in flight', async () => {
    const { main, pool, close } = await engines.postgres()
    try {
      const [a, b, sender] = [postgresWebhookQueue(pool()), postgresWebhookQueue(pool()), postgresWebhookQueue(pool())]
      const o = await oldEvent(main.sql)
      // Something holds the event a moment (another redelivery between its statements, say), so the sweep
      // that looks now is still at work when the redelivery and its claim below commit.
      const other = holding(pool(2), (tx) => tx`SELECT id FROM webhook_events WHERE id = ${o.eventId} FOR KEY SHARE`)
      await other.taken
      let swept = null as number | null
      const sweeping = a.sweepEvents(BEFORE, 10).then((n) => (swept = n))
      await Bun.sleep(300)
      expect(await b.redeliver(o.eventId, o.hookId, o.accountId, T0)).toMatchObject({ delivery: { state: 'pending' } })
      const [flying] = await sender.claim(T0, { limit: 10 })
      expect([flying!.id, flying!.webhook_id]).toEqual([o.deliveryId, o.webhookId])
      other.release()
      await other.done
      await sweeping
      expect(swept).toBe(0)
      const [row] = await main.sql`SELECT state, claimed_until FROM webhook_deliveries WHERE id = ${o.deliveryId}`
      expect(row && [row.state, Number(row.claimed_until)]).toEqual(['pending', flying!.lease])
      // It is pending now: later sweeps leave it too, and its sender's result is written.
      expect(await a.sweepEvents(BEFORE, 10)).toBe(0)
      await sender.markOk(attempt(flying!, 200, T0 + 10), o.hookId)
      expect((await main.sql`SELECT state FROM webhook_deliveries WHERE id = ${o.deliveryId}`)[0].state).toBe('ok')
    } finally {
      await close()
    }
  }, 60_000)

  test('a sweep that meets “redeliver all failed” of the event’s endpoint keeps the event: the delivery pending again is not cascaded away', async () => {
    const { main, pool, close } = await engines.postgres()
    try {
      const a = postgresWebhookQueue(pool())
      const o = await oldEvent(main.sql)
      await main.sql`UPDATE webhook_deliveries SET state = 'failed' WHERE id = ${o.deliveryId}`
      // The requeue has turned the row pending and not committed yet (its audit row, say, is being written).
      let release!: () => void
      const released = new Promise<void>((r) => (release = r))
      let requeued!: () => void
      const inside = new Promise<void>((r) => (requeued = r))
      const requeue = postgresEndpointRows(pool()).requeueFailed(o.hookId, T0, async () => {
        requeued()
        await released
      })
      await inside
      const sweeping = a.sweepEvents(BEFORE, 10)
      await Bun.sleep(300)
      release()
      expect(await requeue).toMatchObject({ n: 1 })
      expect(await sweeping).toBe(0)
      const rows = await main.sql`SELECT id, state FROM webhook_deliveries`
      expect(rows.map((r: { id: unknown; state: string }) => [Number(r.id), r.state])).toEqual([
        [o.deliveryId, 'pending'],
      ])
    } finally {
      await close()
    }
  }, 60_000)

  test('a redelivery that meets a sweep deleting its event waits for it and answers no_event: no foreign key error, no delivery left pending', async () => {
    const { main, pool, close } = await engines.postgres()
    try {
      const [a, b] = [postgresWebhookQueue(pool()), postgresWebhookQueue(pool())]
      const o = await oldEvent(main.sql)
      // The delivery row held a moment: the sweep has locked the event and waits for it.
      const other = holding(
        pool(2),
        (tx) => tx`SELECT id FROM webhook_deliveries WHERE id = ${o.deliveryId} FOR UPDATE`,
      )
      await other.taken
      const sweeping = a.sweepEvents(BEFORE, 10)
      await Bun.sleep(300)
      let answer: unknown = null
      const redelivering = b.redeliver(o.eventId, o.hookId, o.accountId, T0).then(
        (r) => (answer = r),
        (err) => (answer = err),
      )
      await Bun.sleep(300)
      expect(answer).toBeNull() // waiting for the sweep's lock on the event
      other.release()
      await other.done
      expect(await sweeping).toBe(1)
      await redelivering
      expect(answer).toBe('no_event')
      expect(Number((await main.sql`SELECT count(*) AS n FROM webhook_deliveries`)[0].n)).toBe(0)
      expect(Number((await main.sql`SELECT count(*) AS n FROM webhook_events`)[0].n)).toBe(0)
    } finally {
      await close()
    }
  }, 60_000)
})
