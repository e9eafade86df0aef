// Webhooks as a feature of the composition root: endpoints (service, API), the deliverer that sends the
// outbox from listen() on, their metrics and the sweep of old deliveries. Events are written into the
// outbox (Shared) by the services, in the transaction of each change; a commit wakes the deliverer (on
// PostgreSQL every node's, through the change feed: outbox.ts's createQueueOutbox). The deliverer and the
// service are handed Storages' members only; the database file only on SQLite, for the service's 503.
import type { Feature, Shared } from '../web/feature'
import { webhookApi } from './api'
import { createDeliverer, DELIVERY_OUTCOMES } from './deliverer'
import { createWebhookService } from './service'

export function createWebhooksFeature(shared: Shared, opts: { schedule?: readonly number[] } = {}) {
  const { config, outbox, clock, log } = shared
  const { endpoints, queue, audit } = shared.storages
  const { resolve, isAllowed } = shared.guard
  // The database file only for SQLite's write failures (the 503 and /healthz): nothing of it on PostgreSQL.
  const db = shared.db ?? undefined
  const webhooks = createWebhookService({ db, config, outbox, endpoints, queue, audit, clock, resolve, isAllowed })
  const deliveries = shared.metrics.counter('linkbox_webhook_deliveries_total', 'Webhook delivery attempts by outcome (retry: failed, another attempt planned; gone: 410, endpoint disabled; private: refused by the SSRF guard).', 'outcome')
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
      m.sampled('linkbox_webhook_outbox', 'Webhook deliveries waiting to be sent or retried (enabled endpoints).', () => deliverer.stats.outbox().pending)
      m.sampled('linkbox_webhook_oldest_pending_seconds', 'Age of the oldest event with a delivery still pending (0: none).', () => {
        const oldest = deliverer.stats.outbox().oldest
        return oldest === null ? 0 : Math.max(0, Math.round((clock() - oldest) / 1000))
      })
    },
    jobs: [{ name: 'webhook sweep', everyMs: 60_000, run: () => webhooks.sweep() }],
    listen: () => deliverer.start(),
    // Requests in flight are cut; their leases are given back, so their rows go out at once after a start.
    close: () => deliverer.stop(),
  }
  return { feature, webhooks, deliverer }
}
