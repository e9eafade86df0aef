// Webhooks as a feature of the composition root: endpoints (service, API), the deliverer that sends the outbox
// from listen() on, its metrics and the sweep; a commit that wrote events wakes the deliverer.
import type { AuditRows } from '../audit'
import type { Outbox } from '../kernel/outbox'
import type { Feature, Shared } from '../web/feature'
import { webhookApi } from './api'
import { createDeliverer, DELIVERY_OUTCOMES } from './deliverer'
import { createWebhookService } from './service'
import type { EndpointRows, WebhookQueue } from './storage/contract'

/** What the root hands in: the storages' members (either engine) and the outbox. */
export interface WebhooksDeps<Tx> {
  endpoints: EndpointRows<Tx>
  queue: WebhookQueue<Tx>
  audit: AuditRows<Tx>
  outbox: Outbox
}

export function createWebhooksFeature<Tx>(
  shared: Shared,
  deps: WebhooksDeps<Tx>,
  opts: { schedule?: readonly number[] } = {},
) {
  const { config, clock, log } = shared
  const { endpoints, queue, audit, outbox } = deps
  const { resolve, isAllowed } = shared.guard
  // The database file only for SQLite's write failures (the 503 and /healthz): nothing of it on PostgreSQL.
  const db = shared.db ?? undefined
  const webhooks = createWebhookService({ db, config, outbox, endpoints, queue, audit, clock, resolve, isAllowed })
  const deliveries = shared.metrics.counter(
    'linkbox_webhook_deliveries_total',
    'Webhook delivery attempts by outcome (retry: failed, another attempt planned; gone: 410, endpoint disabled; private: refused by the SSRF guard).',
    'outcome',
  )
  for (const outcome of DELIVERY_OUTCOMES) deliveries.inc(outcome, 0)
  const deliverer = createDeliverer({
    queue,
    audit,
    config,
    clock,
    resolve,
    isAllowed,
    schedule: opts.schedule,
    log: (line, err) => (err === undefined ? log.info(`linkbox: ${line}`) : shared.faults.fault(line, err)),
    onOutcome: (outcome) => {
      deliveries.inc(outcome)
      // An endpoint it disabled (410) leaves the outbox's index.
      if (outcome === 'gone') outbox.reload()
    },
  })
  // A commit that wrote events wakes the deliverer.
  outbox.onEnqueued(() => deliverer.wake())

  const feature: Feature = {
    api: webhookApi(webhooks),
    metrics(m) {
      // The deliverer's loop keeps the outbox figures (a second old after a change it saw, at most 5 s otherwise).
      m.sampled(
        'linkbox_webhook_outbox',
        'Webhook deliveries waiting to be sent or retried (enabled endpoints).',
        () => deliverer.stats.outbox().pending,
      )
      m.sampled(
        'linkbox_webhook_oldest_pending_seconds',
        'Age of the oldest event with a delivery still pending (0: none).',
        () => {
          const oldest = deliverer.stats.outbox().oldest
          return oldest === null ? 0 : Math.max(0, Math.round((clock() - oldest) / 1000))
        },
      )
    },
    jobs: [{ name: 'webhook sweep', everyMs: 60_000, run: () => webhooks.sweep() }],
    listen: () => deliverer.start(),
    // Requests in flight are cut; their leases are given back, so their rows go out at once after a start.
    close: () => deliverer.stop(),
  }
  return { feature, webhooks, deliverer }
}
