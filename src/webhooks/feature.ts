// Webhooks as a feature of the composition root: endpoints (service, API), the deliverer that sends the
// outbox from listen() on, their metrics and the sweep of old deliveries. Events are written into the
// outbox (Shared) by the services, in the transaction of each change; a commit wakes the deliverer.
import type { Feature, Shared } from '../feature'
import { webhookApi } from './api'
import { createDeliverer, DELIVERY_OUTCOMES } from './deliverer'
import { createWebhookService } from './service'

export function createWebhooksFeature(shared: Shared, opts: { schedule?: readonly number[] } = {}) {
  const { db, config, outbox, clock, log } = shared
  const { endpoints, queue, audit } = shared.storages
  const { resolve, isAllowed } = shared.guard
  const webhooks = createWebhookService({ db, config, outbox, endpoints, queue, audit, clock, resolve, isAllowed })
  const deliveries = shared.metrics.counter('linkbox_webhook_deliveries_total', 'Webhook delivery attempts by outcome (retry: failed, another attempt planned; gone: 410, endpoint disabled; private: refused by the SSRF guard).', 'outcome')
  for (const outcome of DELIVERY_OUTCOMES) deliveries.inc(outcome, 0)
  const deliverer = createDeliverer({
    db,
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
      // One query for both outbox gauges of a scrape.
      let outboxGauge = { at: -1, value: { pending: 0, oldest: null as number | null } }
      const outboxNow = () => {
        if (Date.now() - outboxGauge.at > 1000) outboxGauge = { at: Date.now(), value: deliverer.stats.outbox() }
        return outboxGauge.value
      }
      m.sampled('linkbox_webhook_outbox', 'Webhook deliveries waiting to be sent or retried (enabled endpoints).', () => outboxNow().pending)
      m.sampled('linkbox_webhook_oldest_pending_seconds', 'Age of the oldest event with a delivery still pending (0: none).', () => {
        const oldest = outboxNow().oldest
        return oldest === null ? 0 : Math.max(0, Math.round((clock() - oldest) / 1000))
      })
    },
    jobs: [{ name: 'webhook sweep', everyMs: 60_000, run: () => webhooks.sweep() }],
    listen: () => deliverer.start(),
    // Requests in flight are cut; their rows stay pending and go out after the restart.
    close: () => deliverer.stop(),
  }
  return { feature, webhooks, deliverer }
}
