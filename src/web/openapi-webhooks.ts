// The OpenAPI document's `webhooks` section (one POST per event type) and the schema hoisting the document shares.
import type { TSchema } from '@sinclair/typebox'

/** One webhook event type: what it is, and the schema of its body's `data` (with `examples`). */
export interface WebhookEventDoc {
  type: string
  summary: string
  description: string
  data: TSchema
}

/** A plain JSON copy (TypeBox marks its schemas with symbol keys) in which every schema with a `title`
 *  becomes a named component, referenced where it is used. */
export function hoist(schema: TSchema, components: Record<string, unknown>): unknown {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk)
    if (typeof v !== 'object' || v === null) return v
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v))
      out[k] = k === 'examples' || k === 'default' || k === 'enum' ? structuredClone(x) : walk(x)
    const title = (v as { title?: unknown }).title
    if (typeof title === 'string') {
      components[title] = out
      return { $ref: `#/components/schemas/${title}` }
    }
    return out
  }
  return walk(schema)
}

/** The document's component name of an event's body: "link.created" → "LinkCreatedEvent". */
const eventSchemaName = (type: string) =>
  `${type
    .split(/[._-]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')}Event`

/** The example body of an event: its type, a time, and the first example of its `data`. */
export const exampleEvent = (e: WebhookEventDoc) => ({
  type: e.type,
  timestamp: '2026-01-31T09:30:00.000Z',
  data: (e.data as { examples?: unknown[] }).examples?.[0] ?? {},
})

const WEBHOOK_HEADERS = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description:
      "The event's id: the same on every attempt and redelivery, never used for another event (drop ids you have seen)",
    schema: { type: 'string', pattern: '^msg_[0-9a-z_]+$', examples: ['msg_5f0c9d2e8b1a4c7d9e3f2a1b0c9d8e7f'] },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'When this attempt was sent, in seconds since 1970 (refuse ones more than 5 minutes off)',
    schema: { type: 'string', pattern: '^[0-9]+$', examples: ['1769851800'] },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      'v1, and the base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" keyed with the base64-decoded part of the ' +
      'secret after whsec_ (Standard Webhooks); space-separated when there are several',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$' },
  },
]

/** The document's `webhooks` section: one POST per event type, its body's schema a named component. */
export function webhooksSection(events: WebhookEventDoc[], components: Record<string, unknown>) {
  return Object.fromEntries(
    events.map((e) => {
      const name = eventSchemaName(e.type)
      components[name] = {
        type: 'object',
        description: e.description,
        required: ['type', 'timestamp', 'data'],
        additionalProperties: false,
        properties: {
          type: { const: e.type },
          timestamp: { type: 'string', format: 'date-time', description: 'When the change happened (UTC)' },
          data: hoist(e.data, components),
        },
      }
      const post = {
        operationId: `event-${e.type}`,
        summary: e.summary,
        description: e.description,
        tags: ['webhooks'],
        // linkbox sends the request: no API key of the receiver's is involved (the body's signature is the proof).
        security: [],
        parameters: WEBHOOK_HEADERS,
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { $ref: `#/components/schemas/${name}` },
              examples: { event: { value: exampleEvent(e) } },
            },
          },
        },
        responses: {
          '2XX': { description: 'Received: the delivery is done' },
          '410': { description: 'Gone: the webhook is disabled and gets nothing more' },
          default: {
            description:
              'Any other answer, or none within 15 s: sent again after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h',
          },
        },
      }
      return [e.type, { post }]
    }),
  )
}
