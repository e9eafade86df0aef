// Webhook delivery from several nodes of one PostgreSQL database (issue 22, SPEC §11: each webhook event is
// delivered by one node only, under one webhook-id). Real deliverers on pools of their own, a real receiver
// on 127.0.0.1 checking every signature, a real PostgreSQL server; one node is a process of its own
// (support/deliverer-node.ts) that the test SIGKILLs. The outbox without `db` (createQueueOutbox): an event
// committed on a node whose deliverer is not running is sent by another node's within a second, and an
// endpoint made on one node is wanted on the others.
import { afterEach, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { SQL, TransactionSQL } from 'bun'
import { postgresAuditRows } from '../../src/audit/storage/postgres'
import type { ChangeFeed } from '../../src/db/changes'
import { postgresChangeFeed } from '../../src/db/postgres/changes'
import { createDeliverer, type Deliverer } from '../../src/webhooks/deliverer'
import { createQueueOutbox, INDEX_MAX_AGE_MS } from '../../src/webhooks/outbox'
import type { Outbox } from '../../src/kernel/outbox'
import type { NewEvent } from '../../src/webhooks/storage/contract'
import { postgresWebhookQueue } from '../../src/webhooks/storage/postgres'
import { newSecret } from '../../src/webhooks/sign'
import { testConfig } from '../support/app'
import { engineHarness, postgresTransaction, type PostgresDatabase } from '../support/engines'
import { startReceiver, until, type Receiver } from '../support/webhooks'

const engines = engineHarness()
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** A node: a deliverer (started or not) on a pool of its own. */
interface Node {
  sql: SQL
  deliverer: Deliverer
  logs: string[]
}

function node(p: PostgresDatabase, leaseMs?: number): Node {
  const sql = p.pool()
  const logs: string[] = []
  const deliverer = createDeliverer({
    queue: postgresWebhookQueue(sql),
    audit: postgresAuditRows(sql),
    config: testConfig(engines.tracked('linkbox-whnodes-'), { media: { allow_private_networks: true } }),
    clock: Date.now,
    leaseMs,
    log: (line, err) => logs.push(err === undefined ? line : `${line}: ${err}`),
  })
  cleanups.push(() => deliverer.stop())
  return { sql, deliverer, logs }
}

async function database(): Promise<PostgresDatabase> {
  const p = await engines.postgres()
  cleanups.push(() => p.close())
  return p
}

function receiver(answer?: Parameters<typeof startReceiver>[0]): Receiver {
  const r = startReceiver(answer)
  cleanups.push(() => r.stop())
  return r
}

/** An account and one endpoint of it for the receiver (subscribed to link.created), its secret handed to the receiver. */
async function endpointFor(
  p: PostgresDatabase,
  r: Receiver,
  name = 'owner',
): Promise<{ account: number; endpoint: number }> {
  const [a] = await p.main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`
  r.secret = newSecret()
  const [e] = await p.main.sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, created)
                               VALUES (${a.id}, ${r.url}, 'link.created', ${r.secret}, 0) RETURNING id`
  return { account: Number(a.id), endpoint: Number(e.id) }
}

const created = (account: number, i: number): NewEvent => ({
  type: 'link.created',
  accountId: account,
  at: Date.now(),
  data: { code: `c${i}` },
})

/** Enqueued in a transaction of `sql`, as a converted service does; committed when this resolves. */
const enqueue = (sql: SQL, e: NewEvent) =>
  postgresTransaction(sql, (tx) => postgresWebhookQueue(sql).enqueue(tx as TransactionSQL, e, Date.now()))

interface Row {
  id: number
  state: string
  attempts: number
  claimed_until: number
  webhook_id: string
}

async function rows(p: PostgresDatabase): Promise<Row[]> {
  const all = await p.main.sql`SELECT d.id, d.state, d.attempts, d.claimed_until, e.webhook_id FROM webhook_deliveries d
                               JOIN webhook_events e ON e.id = d.event_id ORDER BY d.id`
  return all.map((r: Record<string, unknown>) => ({
    id: Number(r.id),
    state: r.state as string,
    attempts: Number(r.attempts),
    claimed_until: Number(r.claimed_until),
    webhook_id: r.webhook_id as string,
  }))
}

test('two deliverers on two pools deliver 50 events exactly once each, under distinct webhook-ids, both taking part', async () => {
  const p = await database()
  // A little slow, so that each node has requests in flight while the other claims.
  const r = receiver(async () => {
    await Bun.sleep(15)
    return new Response('ok')
  })
  const { account } = await endpointFor(p, r)
  const [a, b] = [node(p), node(p)]
  for (let i = 0; i < 25; i++) await enqueue(a.sql, created(account, i))
  a.deliverer.start()
  b.deliverer.start()
  // The other half while both run, from both nodes, each waking its own deliverer after the commit.
  for (let i = 25; i < 50; i++) {
    const n = i % 2 ? a : b
    await enqueue(n.sql, created(account, i))
    n.deliverer.wake()
  }
  await until(() => a.deliverer.stats.outcomes.ok + b.deliverer.stats.outcomes.ok >= 50, 'all 50 delivered', 30_000)
  await Bun.sleep(300) // a second sending of any of them would arrive by now

  const all = await rows(p)
  expect(all).toHaveLength(50)
  expect(all.every((d) => d.state === 'ok' && d.attempts === 1 && d.claimed_until === 0)).toBe(true)
  // Exactly once each: 50 requests, 50 distinct ids, each the id of its event, each signature good.
  expect(r.got).toHaveLength(50)
  expect(new Set(r.got.map((g) => g.id))).toEqual(new Set(all.map((d) => d.webhook_id)))
  expect(r.got.every((g) => g.verifyError === null)).toBe(true)
  expect(a.deliverer.stats.outcomes.ok + b.deliverer.stats.outcomes.ok).toBe(50)
  // Both nodes sent some (else this proved nothing about two of them).
  expect(a.deliverer.stats.outcomes.ok).toBeGreaterThan(0)
  expect(b.deliverer.stats.outcomes.ok).toBeGreaterThan(0)
  expect([...a.logs, ...b.logs]).toEqual([])
}, 60_000)

test('a node SIGKILLed with requests in flight: its renewed leases keep the rows from the other node while it lives; once it is dead the other sends them after the lease, under the same webhook-ids', async () => {
  const p = await database()
  const LEASE = 1_500
  let hold = true
  const arrivals: number[] = []
  const r = receiver(async () => {
    arrivals.push(Date.now())
    while (hold) await Bun.sleep(10)
    return new Response('ok')
  })
  const { account } = await endpointFor(p, r)
  const survivor = node(p, LEASE)
  await enqueue(survivor.sql, created(account, 1))
  await enqueue(survivor.sql, created(account, 2))

  const child = Bun.spawn(
    [process.execPath, join(import.meta.dir, '../support/deliverer-node.ts'), p.url, String(LEASE)],
    {
      stdout: 'pipe',
      stderr: 'inherit',
    },
  )
  cleanups.push(() => child.kill(9))
  // Its two slots for the endpoint: both requests held at the receiver.
  await until(() => r.got.length === 2, 'the child node sends both', 20_000)
  survivor.deliverer.start()
  // Held for more than two leases: the child's renewals keep both rows, the survivor sends neither.
  await Bun.sleep(LEASE * 2.5)
  expect(r.got).toHaveLength(2)
  const held = await rows(p)
  expect(held.every((d) => d.state === 'pending' && d.claimed_until > Date.now())).toBe(true)

  child.kill(9)
  await child.exited
  const leases = (await rows(p)).map((d) => d.claimed_until)
  hold = false
  await until(() => survivor.deliverer.stats.outcomes.ok === 2, 'the survivor sends both', 20_000)
  // Not before the dead node's leases ran out, and under the ids the dead node sent them with.
  expect(arrivals.slice(2).every((t) => t >= Math.min(...leases))).toBe(true)
  expect(
    r.got
      .map((g) => g.id)
      .slice(2)
      .sort(),
  ).toEqual(
    r.got
      .map((g) => g.id)
      .slice(0, 2)
      .sort(),
  )
  expect(new Set(r.got.map((g) => g.id)).size).toBe(2)
  expect((await rows(p)).map((d) => [d.state, d.attempts, d.claimed_until])).toEqual([
    ['ok', 1, 0],
    ['ok', 1, 0],
  ])
}, 60_000)

test("the outbox without db: a change's event is always tried (its transaction decides); an endpoint made on one node has its clicks wanted on another at once; an event committed on a node whose deliverer is not running is sent by another node’s within a second", async () => {
  const p = await database()
  const r = receiver()
  const feeds: ChangeFeed[] = []
  const outboxes: Outbox[] = []
  const nodeOutbox = async (sql: SQL) => {
    const changes = await postgresChangeFeed(sql)
    const outbox = createQueueOutbox({ queue: postgresWebhookQueue(sql), changes })
    feeds.push(changes)
    outboxes.push(outbox)
    return outbox
  }
  cleanups.push(async () => {
    for (const o of outboxes) o.close()
    for (const f of feeds) await f.close()
  })
  const [a, b] = [node(p), node(p)]
  const [outA, outB] = [await nodeOutbox(a.sql), await nodeOutbox(b.sql)]
  outB.onEnqueued(() => b.deliverer.wake())
  const [acct] = await p.main.sql`INSERT INTO accounts (name, created) VALUES ('owner', 0) RETURNING id`
  const account = Number(acct.id)

  // Not read yet: everything is wanted (a "no" would lose an event). Once read: nobody subscribes to clicks.
  expect(outB.wanted('link.clicked', account)).toBe(true)
  await until(() => outB.wanted('link.clicked', account) === false, 'node B has read its index', 5_000)
  expect(outB.wanted('link.clicked', null)).toBe(false)
  // Any other event is tried in its change's transaction, which reads the endpoints: the index never says no.
  expect(outB.wanted('link.created', account)).toBe(true)
  expect(outB.wanted('link.created', null)).toBe(false)

  // Node A makes an endpoint (as the webhook service does: the row, then reload() after the commit).
  r.secret = newSecret()
  await p.main
    .sql`INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (${account}, ${r.url}, 'link.created,link.clicked', ${r.secret}, 0)`
  const madeAt = Date.now()
  outA.reload()
  // Read again (not merely "everything, while reading"): it wants the clicks of that account, not another's.
  await until(
    () => outB.wanted('link.clicked', account) && !outB.wanted('link.clicked', account + 1),
    'node B wants it',
    5_000,
  )
  // Told through the feed, not by the index growing old.
  expect(Date.now() - madeAt).toBeLessThan(INDEX_MAX_AGE_MS / 2)

  // Only B's deliverer runs; after its first look it sleeps for its timer (5 s).
  b.deliverer.start()
  await Bun.sleep(200)
  const committedAt = Date.now()
  expect(await enqueue(a.sql, created(account, 1))).toBe(1)
  outA.wake()
  await until(() => r.got.length === 1, 'sent by node B', 5_000)
  expect(Date.now() - committedAt).toBeLessThan(1_000)
  expect(r.got[0]!.verifyError).toBeNull()
  await until(() => b.deliverer.stats.outcomes.ok === 1, 'recorded by node B', 5_000)
  expect(a.deliverer.stats.outcomes.ok).toBe(0)

  // The synchronous enqueue is SQLite's alone.
  expect(() => outA.enqueue('link.created', account, {})).toThrow('enqueue through Storages')
}, 60_000)
