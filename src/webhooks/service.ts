// Webhook endpoints: the rules of creating, listing, changing and deleting them, their delivery log, redelivery,
// the test event and the sweep. No HTTP here (api.ts), no sending (deliverer.ts); each write's re-check is the store's.
import { newSecret } from './sign'
import type { Caller } from '../kernel/caller'
import { auditRow, byAccount, SYSTEM, webhookTarget, type AuditEntry, type AuditRows, type Who } from '../audit'
import type { Config } from '../kernel/config'
import { iso, noteWriteSuccess, storageError, type Db } from '../db/sqlite'
import { AppError, invalidParameter, missingParameter, notFound, notOwner } from '../kernel/errors'
import { privateAddress } from '../kernel/net/private-address'
import { checkUrl, GuardError } from '../kernel/net/guard'
import { DEFAULT_EVENTS, EVENT_TYPES, type Outbox, type SubscribableType } from '../kernel/outbox'
import { allWritten } from '../db/written'
import type { EndpointRow, EndpointRows, WebhookQueue } from './storage/contract'

export const MAX_URL_LENGTH = 2048
/** Endpoints per account: each one multiplies every event the account causes. */
export const MAX_ENDPOINTS = 20
export const LOG_LIMIT = { default: 50, max: 200 }
/** Delivered and failed events are kept this long for the log and redelivery. */
export const RETENTION_MS = 7 * 24 * 60 * 60 * 1000
/** Pending deliveries kept per endpoint; beyond it the oldest are dropped (a receiver gone for days). */
export const MAX_PENDING = 10_000
const SWEEP_BATCH = 1_000

const present = (v: unknown) => v !== undefined && v !== null && v !== ''

/** What the disabled_reason of an endpoint its owner turned off says. */
export const DISABLED_BY_OWNER = 'disabled by its owner'

/** The `enabled` parameter: true or 1, false or 0 (a form's text or a JSON body's boolean). */
function parseEnabled(input: unknown): boolean {
  if (input === true || input === 'true' || input === '1' || input === 1) return true
  if (input === false || input === 'false' || input === '0' || input === 0) return false
  throw invalidParameter('enabled', 'true or 1 (send events to it), false or 0 (send none)')
}

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

/** The comma-separated `events` parameter: known types, each once, in the order given. */
export function parseEvents(input: unknown): SubscribableType[] {
  if (!present(input)) return [...DEFAULT_EVENTS]
  if (typeof input !== 'string') throw invalidParameter('events', `a comma-separated list of ${EVENT_TYPES.join(', ')}`)
  const out: SubscribableType[] = []
  for (const raw of input.split(',')) {
    const t = raw.trim()
    if (!t) continue
    if (!(EVENT_TYPES as readonly string[]).includes(t))
      throw new AppError(
        400,
        'invalid_parameter',
        `The parameter "events" names an unknown event type "${t.slice(0, 40)}": the types are ${EVENT_TYPES.join(', ')}.`,
      )
    if (!out.includes(t as SubscribableType)) out.push(t as SubscribableType)
  }
  if (out.length === 0) throw invalidParameter('events', `at least one of ${EVENT_TYPES.join(', ')}`)
  return out
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
  let dropped = 0

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

  /** http(s), at most 2048 characters, no credentials, and (unless media.allow_private_networks) not private. */
  async function checkTarget(input: unknown): Promise<string> {
    if (!present(input)) throw missingParameter('url')
    const bad = () =>
      new AppError(400, 'invalid_url', 'The parameter "url" must be an absolute URL with the scheme http or https.')
    if (typeof input !== 'string' || input.length > MAX_URL_LENGTH)
      throw new AppError(
        400,
        'invalid_url',
        `The parameter "url" must be an http or https URL of at most ${MAX_URL_LENGTH} characters.`,
      )
    let url: URL
    try {
      url = new URL(input)
    } catch {
      throw bad()
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad()
    // The guard would drop them silently on every delivery; say so now instead.
    if (url.username || url.password)
      throw new AppError(400, 'invalid_url', 'The parameter "url" must not contain a user name or password.')
    url.hash = ''
    try {
      await checkUrl(url, { allowPrivate: config.media.allow_private_networks, resolve, isAllowed, timeoutMs: 5_000 })
    } catch (err) {
      if (!(err instanceof GuardError)) throw err
      if (err.reason === 'private') throw privateAddress()
      // A name that does not resolve now may later (and the deliverer checks every send again): accepted;
      // its deliveries fail and are retried, in the log for the owner to see.
    }
    return url.href
  }

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

  function summary(row: EndpointRow, counts?: { ok: number; failed: number; pending: number; retrying: number }) {
    return {
      id: row.id,
      url: row.url,
      events: row.events,
      enabled: row.enabled === 1,
      failing: row.failing === 1,
      disabled_reason: row.disabled_reason,
      created: iso(row.created)!,
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

  async function log(row: EndpointRow, limitInput: unknown) {
    let limit = LOG_LIMIT.default
    if (present(limitInput)) {
      limit = Number(limitInput)
      if (!Number.isInteger(limit) || limit < 1 || limit > LOG_LIMIT.max)
        throw invalidParameter('limit', `a whole number from 1 to ${LOG_LIMIT.max}`)
    }
    return {
      id: row.id,
      deliveries: (await queue.log(row.id, limit)).map((d) => ({
        event_id: d.event_id,
        webhook_id: d.webhook_id,
        type: d.type,
        state: d.state,
        attempts: d.attempts,
        last_status: d.last_status,
        last_error: d.last_error,
        last_ms: d.last_ms,
        last_at: iso(d.last_at),
        next_at: iso(d.next_at)!,
      })),
    }
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

  /** A new signing secret, shown only in this answer: every send from now on (retries too) is signed with it alone. */
  async function rotate(
    caller: Caller,
    input: { id?: unknown },
    opts: CreateOptions<Tx> = {},
    by: Who = byAccount(caller, ''),
  ) {
    const before = await owned(caller, input.id)
    const secret = newSecret()
    const rotated = await written(
      endpoints.rotateSecret(before.id, caller.accountId, secret, (tx, r, owner) =>
        // Never the secret itself: that a new one was made, and when.
        allWritten([
          opts.within?.(r, tx),
          record(tx, by, { action: 'webhook.rotate', target: webhookTarget(r.id, owner, r.url) }),
        ]),
      ),
    )
    const row = stillThere(rotated, before.id)
    return { id: row.id, secret: row.secret }
  }

  /** Every failed delivery of the endpoint is sent again (each under its event's webhook-id); how many. */
  async function redeliverFailed(caller: Caller, input: { id?: unknown }, by: Who = byAccount(caller, '')) {
    const before = await owned(caller, input.id)
    const requeued = await written(
      endpoints.requeueFailed(before.id, clock(), (tx, now, n, owner) => {
        if (n > 0)
          return record(tx, by, {
            action: 'webhook.redeliver',
            target: webhookTarget(now.id, owner, now.url),
            detail: `${n} failed deliveries sent again`,
          })
      }),
    )
    const { row, n } = stillThere(requeued, before.id)
    if (n > 0) outbox.wake()
    return { id: before.id, redelivered: n, enabled: row.enabled === 1 }
  }

  async function testRow(row: EndpointRow) {
    const now = clock()
    const event = await queue.enqueueFor(
      row.id,
      { type: 'webhook.test', accountId: row.account_id, at: now, data: { webhook: row.id, url: row.url } },
      now,
    )
    outbox.wake()
    return { event_id: event.id, webhook_id: event.webhook_id, enabled: row.enabled === 1 }
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
    redeliverFailed,
    /** The CLI: any endpoint by id. */
    async deleteById(id: number, by: Who = SYSTEM) {
      const row = await endpoints.endpoint(id)
      if (!row) throw notFound(`There is no webhook ${id}.`)
      return removeRow(row, by)
    },
    /** The delivery log of one endpoint, newest event first. */
    deliveries: async (caller: Caller, input: { id?: unknown; limit?: unknown }) =>
      log(await owned(caller, input.id), input.limit),
    async deliveriesById(id: number, limit?: number) {
      const row = await endpoints.endpoint(id)
      if (!row) throw notFound(`There is no webhook ${id}.`)
      return log(row, limit)
    },

    /** Sends an event to an endpoint again, under the same webhook-id: pending now, attempts kept. */
    async redeliver(caller: Caller, input: { id?: unknown; event?: unknown }) {
      const row = await owned(caller, input.id)
      if (!present(input.event)) throw missingParameter('event')
      const eventId = Number(input.event)
      if (!Number.isSafeInteger(eventId) || eventId < 1)
        throw invalidParameter('event', 'the event_id of a delivery in the log')
      // The event's account and the endpoint are checked again in the redelivery's own transaction.
      const done = await written(queue.redeliver(eventId, row.id, row.account_id, clock()))
      if (done === 'no_event') throw notFound(`There is no event ${eventId} of this account (events are kept 7 days).`)
      if (done === 'no_endpoint') throw notFound(`There is no webhook ${row.id}.`)
      outbox.wake()
      const d = done.delivery
      return {
        id: row.id,
        event_id: eventId,
        webhook_id: done.event.webhook_id,
        state: d.state,
        attempts: d.attempts,
        next_at: iso(d.next_at)!,
      }
    },

    /** `linkbox webhook test ID`: a webhook.test event for this endpoint alone; its webhook-id. */
    async test(id: number) {
      const row = await endpoints.endpoint(id)
      if (!row) throw notFound(`There is no webhook ${id}.`)
      return testRow(row)
    },
    /** The dashboard's "Send a test event": the same, for one of the caller's own endpoints. */
    testOwned: async (caller: Caller, input: { id?: unknown }) => testRow(await owned(caller, input.id)),

    /**
     * Keeps the outbox bounded: events delivered or failed (nothing pending) more than 7 days ago go with
     * their rows; an endpoint with more than 10,000 pending deliveries loses the oldest. Returns what went.
     */
    async sweep(now: number = clock()) {
      let events = 0
      for (;;) {
        const n = await queue.sweepEvents(now - RETENTION_MS, SWEEP_BATCH)
        events += n
        if (n < SWEEP_BATCH) break
      }
      const cut = await queue.trimPending(MAX_PENDING, now)
      dropped += cut
      return { events, dropped: cut }
    },
    /** Pending deliveries dropped by the cap since start (for /metrics). */
    get dropped() {
      return dropped
    },
  }
}
export type WebhookService = ReturnType<typeof createWebhookService<unknown>>
