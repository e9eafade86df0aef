// Webhook endpoints: the rules of creating, listing, changing and deleting them (their parameters: params.ts; their
// log, redelivery, test event and sweep: deliveries.ts). No HTTP here (api.ts), no sending (deliverer.ts).
import { newSecret } from './sign'
import type { Caller } from '../kernel/caller'
import { auditRow, byAccount, SYSTEM, webhookTarget, type AuditEntry, type AuditRows, type Who } from '../audit'
import type { Config } from '../kernel/config'
import { iso, noteWriteSuccess, storageError, type Db } from '../db/sqlite'
import { AppError, invalidParameter, notFound, notOwner } from '../kernel/errors'
import type { Outbox } from '../kernel/outbox'
import { allWritten } from '../db/written'
import type { EndpointRow, EndpointRows, WebhookQueue } from './storage/contract'
import { createDeliveries } from './deliveries'
import { createTargetCheck, parseEnabled, parseEvents, present } from './params'

/** Endpoints per account: each one multiplies every event the account causes. */
export const MAX_ENDPOINTS = 20

/** What the disabled_reason of an endpoint its owner turned off says. */
export const DISABLED_BY_OWNER = 'disabled by its owner'

/**
 * `within` runs in the transaction that inserts the endpoint (or writes its new secret), after the write,
 * with that transaction's handle; throwing undoes it. On SQLite it must be synchronous.
 */
export interface CreateOptions<Tx = unknown> {
  within?: (endpoint: { id: number }, tx: Tx) => unknown
}

export interface WebhookServiceDeps<Tx> {
  /**
   * SQLite only (a SQLite-file concern, handed in by feature.ts when storages.engine is 'sqlite'): its write
   * failures (a full disk, a read-only file) become the 503 and are remembered for /healthz (storageError).
   * Without it a failed write is thrown as it is.
   */
  db?: Db
  config: Config
  outbox: Outbox
  /** Storages' members (db/storages.ts). */
  endpoints: EndpointRows<Tx>
  queue: WebhookQueue<Tx>
  audit: AuditRows<Tx>
  clock?: () => number
  /** Name resolution and address rule for the SSRF check (tests); see net/guard.ts. */
  resolve?: (host: string) => Promise<string[]>
  isAllowed?: (address: string) => boolean
}

export function createWebhookService<Tx>({
  db,
  config,
  outbox,
  endpoints,
  queue,
  audit,
  clock = Date.now,
  resolve,
  isAllowed,
}: WebhookServiceDeps<Tx>) {
  /** A change's audit row, inside its transaction. */
  const record = (tx: Tx, who: Who, entry: AuditEntry) => audit.insert(tx, auditRow(who, entry, clock()))

  /** Awaits a write; a storage failure becomes the 503 (and is remembered for /healthz), as stored() does. */
  async function written<T>(write: Promise<T>): Promise<T> {
    try {
      const result = await write
      if (db) noteWriteSuccess(db)
      return result
    } catch (err) {
      throw db ? storageError(db, err) : err
    }
  }

  const checkTarget = createTargetCheck({ config, resolve, isAllowed })

  async function owned(caller: Caller, idInput: unknown): Promise<EndpointRow> {
    const id = Number(idInput)
    if (!present(idInput) || !Number.isSafeInteger(id) || id < 1)
      throw invalidParameter('id', 'the id of one of your webhooks')
    const row = await endpoints.endpoint(id)
    if (!row) throw notFound(`There is no webhook ${id}.`)
    if (row.account_id !== caller.accountId) throw notOwner('webhook')
    return row
  }

  /** Inside a write's transaction: the caller's endpoint as it is now (deleted since it was read: 404). */
  const stillThere = <T>(row: T | null | undefined, id: number): T => {
    if (!row) throw notFound(`There is no webhook ${id}.`)
    return row
  }

  const outgoing = createDeliveries({ endpoints, queue, outbox, clock, owned, written, record, stillThere })

  /** Until when the secret before the last rotation still verifies (ISO), or null when it no longer does. */
  const previousExpires = (row: EndpointRow) =>
    row.previous_secret !== null && row.previous_until > clock() ? iso(row.previous_until) : null

  function summary(row: EndpointRow, counts?: { ok: number; failed: number; pending: number; retrying: number }) {
    return {
      id: row.id,
      url: row.url,
      events: row.events,
      enabled: row.enabled === 1,
      failing: row.failing === 1,
      disabled_reason: row.disabled_reason,
      created: iso(row.created)!,
      previous_secret_expires: previousExpires(row),
      deliveries: {
        ok: counts?.ok ?? 0,
        failed: counts?.failed ?? 0,
        pending: counts?.pending ?? 0,
        retrying: counts?.retrying ?? 0,
      },
    }
  }

  /**
   * Creates an endpoint for an account (the API's caller or the CLI's ACCOUNT); its secret is shown only here.
   * `within` runs in the transaction that inserts it (the dashboard claims its form token there); when it
   * throws, no endpoint is made.
   */
  async function createFor(
    accountId: number,
    input: { url?: unknown; events?: unknown },
    opts: CreateOptions<Tx> = {},
    by: Who = SYSTEM,
  ) {
    const url = await checkTarget(input.url)
    const events = parseEvents(input.events).join(',')
    const secret = newSecret()
    // Counted and inserted in one decision of the store: two creations at once cannot both be the 20th.
    const row = await written(
      endpoints.insertUnder(accountId, MAX_ENDPOINTS, { url, events, secret, now: clock() }, (tx, inserted, owner) =>
        allWritten([
          record(tx, by, {
            action: 'webhook.create',
            target: webhookTarget(inserted.id, owner, url),
            detail: `events ${events}`,
          }),
          opts.within?.(inserted, tx),
        ]),
      ),
    )
    if (row === 'full')
      throw new AppError(
        400,
        'too_many_webhooks',
        `An account can have at most ${MAX_ENDPOINTS} webhooks: delete one first.`,
      )
    if (row === 'no_account') throw notFound(`There is no account #${accountId}.`)
    outbox.reload()
    return { id: row.id, url: row.url, events: row.events, secret: row.secret }
  }

  async function listFor(accountId: number) {
    const [counts, rows] = await Promise.all([queue.counts(accountId), endpoints.endpointsOf(accountId)])
    const byId = new Map(counts.map((c) => [c.endpoint_id, c]))
    return { webhooks: rows.map((r) => summary(r, byId.get(r.id))) }
  }

  async function removeRow(row: EndpointRow, by: Who) {
    // Its deliveries go with it (ON DELETE CASCADE); its events stay until the sweep, for other endpoints.
    const gone = await written(
      endpoints.remove(row.id, (tx, removed, owner) =>
        record(tx, by, { action: 'webhook.delete', target: webhookTarget(removed.id, owner, removed.url) }),
      ),
    )
    if (!gone) throw notFound(`There is no webhook ${row.id}.`)
    outbox.reload()
    return { id: row.id, deleted: true as const }
  }

  /**
   * An owner's edit of any of url (through the SSRF check, as at creation), events and enabled. The row is
   * read again in the write's transaction: one deleted while the URL was checked is a 404. None of them
   * given: the endpoint as it is (nothing changes). Enabling clears
   * the reason it was disabled (a 410, or its owner); deliveries pending when it was disabled go out again.
   */
  async function update(
    caller: Caller,
    input: { id?: unknown; url?: unknown; events?: unknown; enabled?: unknown },
    by: Who = byAccount(caller, ''),
  ) {
    const before = await owned(caller, input.id)
    const url = present(input.url) ? await checkTarget(input.url) : undefined
    const events = present(input.events) ? parseEvents(input.events).join(',') : undefined
    const enabled = present(input.enabled) ? parseEnabled(input.enabled) : undefined
    // The store reads the row again in the write's transaction and hands it to the change.
    const updated = await written(
      endpoints.update(
        before.id,
        caller.accountId,
        (now) => {
          const on = enabled ?? now.enabled === 1
          const reason = on ? null : enabled === false && now.enabled === 1 ? DISABLED_BY_OWNER : now.disabled_reason
          return { url: url ?? now.url, events: events ?? now.events, enabled: on, disabledReason: reason }
        },
        (tx, now, after, owner) => {
          const changed = [
            after.url !== now.url ? `url ${now.url} → ${after.url}` : '',
            after.events !== now.events ? `events ${now.events} → ${after.events}` : '',
            after.enabled !== now.enabled ? (after.enabled === 1 ? 'enabled' : 'disabled') : '',
          ].filter(Boolean)
          if (changed.length > 0)
            return record(tx, by, {
              action: 'webhook.update',
              target: webhookTarget(after.id, owner, after.url),
              detail: changed.join('; '),
            })
        },
      ),
    )
    const row = stillThere(updated, before.id)
    outbox.reload()
    if (row.enabled === 1) outbox.wake()
    return {
      id: row.id,
      url: row.url,
      events: row.events,
      enabled: row.enabled === 1,
      disabled_reason: row.disabled_reason,
    }
  }

  /**
   * A new signing secret, shown only in this answer. The one before stays valid for [webhooks] rotation_overlap
   * (every send meanwhile, retries too, carries both signatures); one kept from a rotation before is dropped.
   */
  async function rotate(
    caller: Caller,
    input: { id?: unknown },
    opts: CreateOptions<Tx> = {},
    by: Who = byAccount(caller, ''),
  ) {
    const before = await owned(caller, input.id)
    const secret = newSecret()
    const now = clock()
    const overlap = config.webhooks.rotation_overlap * 1000
    const times = { now, previousUntil: overlap > 0 ? now + overlap : 0 }
    const rotated = await written(
      endpoints.rotateSecret(before.id, caller.accountId, secret, times, (tx, r, owner) =>
        // Never the secret itself: that a new one was made, and when.
        allWritten([
          opts.within?.(r, tx),
          record(tx, by, {
            action: 'webhook.rotate',
            target: webhookTarget(r.id, owner, r.url),
            detail: times.previousUntil
              ? `the old secret valid until ${iso(times.previousUntil)}`
              : 'the old secret no longer valid',
          }),
        ]),
      ),
    )
    const { row, dropped } = stillThere(rotated, before.id)
    return {
      id: row.id,
      secret: row.secret,
      previous_secret_expires: previousExpires(row),
      earlier_secret_dropped: dropped,
    }
  }

  return {
    create: (
      caller: Caller,
      input: { url?: unknown; events?: unknown },
      opts: CreateOptions<Tx> = {},
      by: Who = byAccount(caller, ''),
    ) => createFor(caller.accountId, input, opts, by),
    createFor,
    /** The account of that name (the CLI's ACCOUNT), or 404. */
    async accountId(name: string): Promise<number> {
      const id = await endpoints.accountId(name)
      if (id === null) throw notFound(`No account named "${name}".`)
      return id
    },
    list: (caller: Caller) => listFor(caller.accountId),
    listFor,
    /**
     * The dashboard's list: the API's, and for each endpoint the deliveries waiting for a retry after a
     * failed attempt (the API's `failing` says only that one used up its retries, hours later).
     */
    async overview(caller: Caller) {
      const [counts, rows] = await Promise.all([
        queue.counts(caller.accountId),
        endpoints.endpointsOf(caller.accountId),
      ])
      const byId = new Map(counts.map((c) => [c.endpoint_id, c]))
      return rows.map((r) => ({ ...summary(r, byId.get(r.id)), retrying: byId.get(r.id)?.retrying ?? 0 }))
    },
    /** Every endpoint with its account's name (the CLI's `webhook list` without an account). */
    listAll: () => endpoints.allEndpoints(),
    delete: async (caller: Caller, input: { id?: unknown }, by: Who = byAccount(caller, '')) =>
      removeRow(await owned(caller, input.id), by),
    update,
    rotate,
    redeliverFailed: outgoing.redeliverFailed,
    /** The CLI: any endpoint by id. */
    async deleteById(id: number, by: Who = SYSTEM) {
      const row = await endpoints.endpoint(id)
      if (!row) throw notFound(`There is no webhook ${id}.`)
      return removeRow(row, by)
    },
    /** The delivery log of one endpoint, newest event first. */
    deliveries: async (caller: Caller, input: { id?: unknown; limit?: unknown }) =>
      outgoing.log(await owned(caller, input.id), input.limit),
    async deliveriesById(id: number, limit?: number) {
      const row = await endpoints.endpoint(id)
      if (!row) throw notFound(`There is no webhook ${id}.`)
      return outgoing.log(row, limit)
    },

    redeliver: outgoing.redeliver,
    /** One delivery of the log with its newest attempt as sent and answered (the dashboard's detail page). */
    delivery: outgoing.delivery,

    /** `linkbox webhook test ID`: a webhook.test event for this endpoint alone; its webhook-id. */
    async test(id: number) {
      const row = await endpoints.endpoint(id)
      if (!row) throw notFound(`There is no webhook ${id}.`)
      return outgoing.testRow(row)
    },
    /** The dashboard's "Send a test event": the same, for one of the caller's own endpoints. */
    testOwned: async (caller: Caller, input: { id?: unknown }) => outgoing.testRow(await owned(caller, input.id)),

    sweep: outgoing.sweep,
    /** Pending deliveries dropped by the cap since start (for /metrics). */
    get dropped() {
      return outgoing.dropped
    },
  }
}
export type WebhookService = ReturnType<typeof createWebhookService<unknown>>
