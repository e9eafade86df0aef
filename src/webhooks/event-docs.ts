// The webhook events' docs (the OpenAPI `webhooks` section, /api/docs): each feature exports its own events' entries,
// app.ts hands them here; test/e2e/docs-webhooks.test.ts checks every body really sent against them.
import { Type } from '@sinclair/typebox'
import type { WebhookEventDoc } from '../web/openapi'
import { EVENT_TYPES } from '../kernel/outbox'

const WebhookTestSchema = Type.Object(
  {
    webhook: Type.Integer({ minimum: 1, description: 'The webhook the test was sent to' }),
    url: Type.String({ format: 'uri', description: 'Its URL' }),
  },
  {
    title: 'WebhookTest',
    additionalProperties: false,
    examples: [{ webhook: 1, url: 'https://hooks.example.com/linkbox' }],
  },
)

const WEBHOOK_TEST_DOC: WebhookEventDoc = {
  type: 'webhook.test',
  summary: 'A test event',
  description:
    'Sent to one webhook when you ask for it (the dashboard\'s "Send a test event", or `linkbox webhook test ID`), whatever events it takes.',
  data: WebhookTestSchema,
}

/** The order the documents list the events in: the subscribable ones as EVENT_TYPES has them, then the test event. */
const ORDER: readonly string[] = [...EVENT_TYPES, 'webhook.test']

/** Every event type a webhook can be sent, in the documents' order: the features' entries and webhooks' own test event. */
export function webhookEventDocs(featureDocs: readonly (readonly WebhookEventDoc[])[]): WebhookEventDoc[] {
  const docs = [...featureDocs.flat(), WEBHOOK_TEST_DOC]
  const missing = ORDER.filter((type) => !docs.some((d) => d.type === type))
  if (missing.length > 0) throw new Error(`webhook event docs: none for ${missing.join(', ')}`)
  return docs.sort((a, b) => ORDER.indexOf(a.type) - ORDER.indexOf(b.type))
}
