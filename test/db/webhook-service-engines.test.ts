// The webhook service (src/webhooks/service.ts) handed each engine's Storages (issue 22): the same calls give
// the same answers and the same rows on SQLite and on PostgreSQL — creation under the limit with its audit row,
// the list with its counts, an edit, a new secret, redelivery of the failed ones, the log, the test event and
// deletion. It fails when the service reads or writes anything but the storages it is handed for these
// (the PostgreSQL database would not have the rows). Redeliver and the sweep are left out: they are still on
// the synchronous store (TODO(pgwebhooks2)).
import { describe, expect, test } from 'bun:test'
import type { Caller } from '../../src/kernel/caller'
import { CLI } from '../../src/audit'
import { postgresStorages } from '../../src/app/storages-postgres'
import { sqliteStorages, type Storages } from '../../src/app/storages'
import { createOutbox } from '../../src/webhooks/outbox'
import { createWebhookService, MAX_ENDPOINTS } from '../../src/webhooks/service'
import { testConfig } from '../support/app'
import { engineHarness } from '../support/engines'

const engines = engineHarness()

interface Engine {
  open(): Promise<{
    s: Storages<any>
    account(name: string): Promise<number>
    /** A failed delivery of a new event of the account to the endpoint. */
    failed(accountId: number, endpointId: number): Promise<void>
    rows(table: 'webhook_endpoints' | 'webhook_deliveries' | 'audit_log'): Promise<number>
    close(): Promise<void>
  }>
}

const ENGINES: [string, Engine][] = [
  [
    'SQLite',
    {
      async open() {
        const d = engines.sqlite('linkbox-webhook-service-')
        const main = d.main
        return {
          s: sqliteStorages(main),
          account: async (name) =>
            (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number })
              .id,
          async failed(accountId, endpointId) {
            const ev = main
              .query(
                "INSERT INTO webhook_events (account_id, type, created, payload) VALUES (?, 'link.created', 0, '{}') RETURNING id",
              )
              .get(accountId) as { id: number }
            main
              .query(
                "INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_at) VALUES (?, ?, 'failed', 8, 0)",
              )
              .run(ev.id, endpointId)
          },
          rows: async (table) => (main.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
          close: d.close,
        }
      },
    },
  ],
  [
    'PostgreSQL',
    {
      async open() {
        const d = await engines.postgres()
        const sql = d.main.sql
        return {
          s: postgresStorages(sql),
          account: async (name) =>
            Number((await sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
          async failed(accountId, endpointId) {
            const [ev] =
              await sql`INSERT INTO webhook_events (account_id, type, created, payload) VALUES (${accountId}, 'link.created', 0, '{}') RETURNING id`
            await sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_at) VALUES (${ev.id}, ${endpointId}, 'failed', 8, 0)`
          },
          rows: async (table) => Number((await sql.unsafe(`SELECT count(*) AS n FROM ${table}`))[0].n),
          close: d.close,
        }
      },
    },
  ],
]

const callerOf = (accountId: number, accountName: string): Caller => ({
  accountId,
  accountName,
  admin: false,
  scopes: new Set(),
  keyId: null,
  via: 'key',
})

describe.each(ENGINES)('the webhook service on %s', (_name, engine) => {
  test('create, list, update, rotate, redeliver the failed, log, test event, delete: the rows and the audit rows through the storages', async () => {
    const e = await engine.open()
    // Only the redeliver and the sweep (not called here) read this SQLite file; the PostgreSQL engine's rows are elsewhere.
    const local = engines.sqlite('linkbox-webhook-service-local-')
    try {
      const config = testConfig(local.dir, { media: { allow_private_networks: true } })
      const { endpoints, queue, audit } = e.s
      const webhooks = createWebhookService({
        db: local.main,
        config,
        outbox: createOutbox(local.main),
        endpoints,
        queue,
        audit,
      })
      const ann = await e.account('ann')
      const caller = callerOf(ann, 'ann')

      const made = await webhooks.create(caller, { url: 'http://127.0.0.1:9/in', events: 'link.created' })
      expect(made).toMatchObject({ url: 'http://127.0.0.1:9/in', events: 'link.created' })
      expect(made.secret).toMatch(/^whsec_/)
      expect(await webhooks.accountId('ann')).toBe(ann)
      expect((await webhooks.list(caller)).webhooks).toEqual([
        expect.objectContaining({
          id: made.id,
          enabled: true,
          deliveries: { ok: 0, failed: 0, pending: 0, retrying: 0 },
        }),
      ])

      const off = await webhooks.update(caller, { id: made.id, enabled: false, events: 'link.created,mail.received' })
      expect(off).toEqual({
        id: made.id,
        url: 'http://127.0.0.1:9/in',
        events: 'link.created,mail.received',
        enabled: false,
        disabled_reason: 'disabled by its owner',
      })
      const rotated = await webhooks.rotate(caller, { id: made.id })
      expect(rotated.secret).not.toBe(made.secret)

      await e.failed(ann, made.id)
      expect(await webhooks.redeliverFailed(caller, { id: made.id })).toEqual({
        id: made.id,
        redelivered: 1,
        enabled: false,
      })
      const t = await webhooks.test(made.id)
      expect(t.webhook_id).toMatch(/^msg_[0-9a-f]{32}$/)
      const log = (await webhooks.deliveries(caller, { id: made.id })).deliveries
      expect(log.map((d) => [d.type, d.state])).toEqual([
        ['webhook.test', 'pending'],
        ['link.created', 'pending'],
      ])
      expect(log[0]!.webhook_id).toBe(t.webhook_id)

      // Another account's endpoint is not yours; one that is gone is a 404.
      const bob = await e.account('bob')
      await expect(webhooks.rotate(callerOf(bob, 'bob'), { id: made.id })).rejects.toMatchObject({
        status: 403,
        code: 'not_owner',
      })
      expect(await webhooks.deleteById(made.id, CLI)).toEqual({ id: made.id, deleted: true })
      await expect(webhooks.update(caller, { id: made.id, enabled: true })).rejects.toMatchObject({ status: 404 })
      expect(await e.rows('webhook_endpoints')).toBe(0)
      expect(await e.rows('webhook_deliveries')).toBe(0)
      const actions = (
        await audit.page({
          actor: null,
          action: null,
          from: 0,
          to: Number.MAX_SAFE_INTEGER,
          before: Number.MAX_SAFE_INTEGER,
          limit: 10,
        })
      )
        .map((r) => r.action)
        .reverse()
      expect(actions).toEqual([
        'webhook.create',
        'webhook.update',
        'webhook.rotate',
        'webhook.redeliver',
        'webhook.delete',
      ])
      // Nothing of it went to the SQLite file the service was also given (on SQLite it is another database).
      expect(local.main.query('SELECT count(*) AS n FROM audit_log').get()).toEqual({ n: 0 })
    } finally {
      await local.close()
      await e.close()
    }
  }, 60_000)

  test('the 21st endpoint is refused with nothing written; an account gone meanwhile is a 404, not a foreign-key error', async () => {
    const e = await engine.open()
    const local = engines.sqlite('linkbox-webhook-service-local-')
    try {
      const config = testConfig(local.dir, { media: { allow_private_networks: true } })
      const { endpoints, queue, audit } = e.s
      const webhooks = createWebhookService({
        db: local.main,
        config,
        outbox: createOutbox(local.main),
        endpoints,
        queue,
        audit,
      })
      const ann = await e.account('ann')
      const made = await Promise.all(
        Array.from({ length: MAX_ENDPOINTS + 3 }, (_, i) =>
          webhooks.createFor(ann, { url: `http://127.0.0.1:9/${i}` }).then(
            () => 'made',
            (err) => err.code,
          ),
        ),
      )
      expect(made.filter((m) => m === 'made')).toHaveLength(MAX_ENDPOINTS)
      expect(made.filter((m) => m === 'too_many_webhooks')).toHaveLength(3)
      expect(await e.rows('webhook_endpoints')).toBe(MAX_ENDPOINTS)
      expect(await e.rows('audit_log')).toBe(MAX_ENDPOINTS)
      await expect(webhooks.createFor(ann + 1000, { url: 'http://127.0.0.1:9/x' })).rejects.toMatchObject({
        status: 404,
        code: 'not_found',
      })
      expect(await e.rows('webhook_endpoints')).toBe(MAX_ENDPOINTS)
    } finally {
      await local.close()
      await e.close()
    }
  }, 60_000)
})
