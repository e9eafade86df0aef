// The webhooks storage contract's parts of issue 38, on both engines (two "nodes": two connections or two pools):
// a rotation keeps the previous secret until its overlap ends (claims sign with it until then, not after; a
// second rotation drops the oldest), and each delivery's newest attempt is written with its result, under the
// same lease fence, read back by delivery(), replaced by the next attempt and gone with its delivery.
import { describe, expect, test } from 'bun:test'
import { postgresEndpointRows, postgresWebhookQueue } from '../../src/webhooks/storage/postgres'
import { sqliteEndpointRows, sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'
import type {
  AttemptDetail,
  EndpointRow,
  EndpointRows,
  LeasedAttempt,
  WebhookQueue,
} from '../../src/webhooks/storage/contract'
import { engineHarness, postgresTransaction, sqliteTransaction } from '../support/engines'

const engines = engineHarness()
const T0 = 1_800_000_000_000
const HOUR = 3_600_000

interface Node {
  endpoints: EndpointRows<any>
  queue: WebhookQueue<any>
  inTransaction<T>(work: (tx: any) => Promise<T>): Promise<T>
}
interface Engine {
  node(): Node
  account(name: string): Promise<number>
  attemptRows(): Promise<number>
  close(): Promise<void>
}

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-whattempts-')
  return {
    node() {
      const db = connect()
      return {
        endpoints: sqliteEndpointRows(db),
        queue: sqliteWebhookQueue(db),
        inTransaction: (work) => sqliteTransaction(db, work),
      }
    },
    account: async (name) =>
      (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
    attemptRows: async () => (main.query('SELECT count(*) AS n FROM webhook_attempts').get() as { n: number }).n,
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node() {
      const sql = pool()
      return {
        endpoints: postgresEndpointRows(sql),
        queue: postgresWebhookQueue(sql),
        inTransaction: (work) => postgresTransaction(sql, work),
      }
    },
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    attemptRows: async () => Number((await main.sql`SELECT count(*) AS n FROM webhook_attempts`)[0].n),
    close,
  }
}

const newEndpoint = (secret: string) => ({
  url: 'https://hooks.example.com/in',
  events: 'link.created',
  secret,
  now: T0,
})
const made = (r: EndpointRow | 'full' | 'no_account') => r as EndpointRow

const detail = (attempt: number, status: number | null, body = `answer ${attempt}`): AttemptDetail => ({
  attempt,
  url: `https://hooks.example.com/at-${attempt}`,
  request_headers: [
    ['content-type', 'application/json'],
    ['webhook-signature', `v1,sig${attempt}`],
  ],
  response_status: status,
  response_headers: status === null ? [] : [['x-trace', `t${attempt}`]],
  response_body: body,
  response_truncated: body.length >= 4096,
})
const result = (
  d: { id: number; lease: number },
  status: number | null,
  at: number,
  attempt: number,
  body?: string,
): LeasedAttempt => ({
  id: d.id,
  lease: d.lease,
  status,
  error: status === null ? 'network: refused' : status >= 200 && status < 300 ? null : `HTTP ${status}`,
  ms: 40 + attempt,
  at,
  detail: detail(attempt, status, body),
})

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('webhook rotation and attempts on %s', (_name, makeEngine) => {
  test('a rotation keeps the previous secret until its overlap ends: claims sign with both until then, the new one alone after; a second rotation drops the oldest; no overlap keeps none', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      const ep = made(await a.endpoints.insertUnder(ann, 20, newEndpoint('whsec_one')))
      const first = await b.endpoints.rotateSecret(ep.id, ann, 'whsec_two', { now: T0, previousUntil: T0 + HOUR })
      expect(first!.dropped).toBe(false)
      expect(first!.row).toMatchObject({ secret: 'whsec_two', previous_secret: 'whsec_one', previous_until: T0 + HOUR })
      expect(await a.endpoints.endpoint(ep.id)).toMatchObject({ secret: 'whsec_two', previous_secret: 'whsec_one' })

      // Claimed during the overlap: both secrets; at its end and after: the new one only.
      const claimAt = async (now: number) => {
        await a.inTransaction((tx) =>
          a.queue.enqueue(tx, { accountId: ann, type: 'link.created', at: now, data: {} }, now),
        )
        const [d] = await b.queue.claim(now, { limit: 1, leaseMs: 1_000 })
        await b.queue.markOk(result(d!, 200, now, 1), ep.id)
        return [d!.secret, d!.previous_secret ?? null]
      }
      expect(await claimAt(T0 + HOUR - 1)).toEqual(['whsec_two', 'whsec_one'])
      expect(await claimAt(T0 + HOUR)).toEqual(['whsec_two', null])

      // Rotated twice within an overlap: the oldest is dropped (and said so), the newest two stay.
      const t1 = T0 + 2 * HOUR
      expect(
        (await a.endpoints.rotateSecret(ep.id, ann, 'whsec_3', { now: t1, previousUntil: t1 + HOUR }))!.dropped,
      ).toBe(
        false, // whsec_one's overlap had ended
      )
      const second = await b.endpoints.rotateSecret(ep.id, ann, 'whsec_4', {
        now: t1 + 1,
        previousUntil: t1 + HOUR + 1,
      })
      expect(second!.dropped).toBe(true)
      expect(second!.row).toMatchObject({ secret: 'whsec_4', previous_secret: 'whsec_3' })
      expect(await claimAt(t1 + 2)).toEqual(['whsec_4', 'whsec_3'])

      // No overlap: nothing kept, and what was kept is dropped.
      const none = await a.endpoints.rotateSecret(ep.id, ann, 'whsec_5', { now: t1 + 3, previousUntil: 0 })
      expect(none!.dropped).toBe(true)
      expect(none!.row).toMatchObject({ secret: 'whsec_5', previous_secret: null, previous_until: 0 })
      expect(await claimAt(t1 + 4)).toEqual(['whsec_5', null])
    } finally {
      await e.close()
    }
  }, 60_000)

  test("an attempt's detail is written with its result and replaces the last one; a late holder's is not; delivery() reads it through the other node; it goes with its delivery", async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      const ep = made(await a.endpoints.insertUnder(ann, 20, newEndpoint('whsec_x')))
      await a.inTransaction((tx) =>
        a.queue.enqueue(tx, { accountId: ann, type: 'link.created', at: T0, data: { code: 'x' } }, T0),
      )
      const [d] = await a.queue.claim(T0, { limit: 1, leaseMs: 1_000 })
      const pending = await b.queue.delivery(ep.id, d!.event_id)
      expect(pending).toMatchObject({
        event_id: d!.event_id,
        state: 'pending',
        payload: d!.payload,
        last_attempt: null,
      })
      expect(pending!.created).toBe(T0)
      expect(await b.queue.delivery(ep.id, d!.event_id + 99)).toBeNull()

      // Attempt 1: a 500 with a long body, a retry planned.
      const long = 'x'.repeat(4096)
      expect(await a.queue.markRetry(result(d!, 500, T0 + 10, 1, long), T0 + 5_000)).toBe(true)
      const one = (await b.queue.delivery(ep.id, d!.event_id))!
      expect(one).toMatchObject({ state: 'pending', attempts: 1, last_status: 500 })
      expect(one.last_attempt).toEqual({
        attempt: 1,
        url: 'https://hooks.example.com/at-1',
        at: T0 + 10,
        ms: 41,
        error: 'HTTP 500',
        request_headers: [
          ['content-type', 'application/json'],
          ['webhook-signature', 'v1,sig1'],
        ],
        response_status: 500,
        response_headers: [['x-trace', 't1']],
        response_body: long,
        response_truncated: true,
      })

      // A holder whose lease was lost writes neither its result nor its detail.
      const [again] = await b.queue.claim(T0 + 5_000, { limit: 1, leaseMs: 1_000 })
      expect(await a.queue.markRetry(result({ id: d!.id, lease: d!.lease }, 502, T0 + 5_001, 9), T0 + 9_000)).toBe(
        false,
      )
      expect((await a.queue.delivery(ep.id, d!.event_id))!.last_attempt!.attempt).toBe(1)

      // Attempt 2: no answer, given up; then the endpoint's deletion takes its delivery and detail with it.
      expect(await b.queue.markFailed(result(again!, null, T0 + 5_010, 2), ep.id)).toBe(true)
      const two = (await a.queue.delivery(ep.id, d!.event_id))!
      expect(two.state).toBe('failed')
      expect(two.last_attempt).toMatchObject({
        attempt: 2,
        url: 'https://hooks.example.com/at-2',
        response_status: null,
        error: 'network: refused',
        response_headers: [],
      })
      expect(await e.attemptRows()).toBe(1)
      await a.endpoints.remove(ep.id)
      expect(await e.attemptRows()).toBe(0)
    } finally {
      await e.close()
    }
  }, 60_000)
})
