// POST /api/webhooks.json (SPEC §9): one method, `action` says what — create, list, delete, the delivery
// log (deliveries) and redeliver. Parameters and the answer are declared here once, as schemas: the /api
// pipeline checks requests against them and the documents are made from them.
import { Type, type TSchema } from '@sinclair/typebox'
import type { ApiMethod } from '../http/api'
import type { ApiParam } from '../http/schema'
import { DEFAULT_EVENTS, EVENT_TYPES } from './outbox'
import { LOG_LIMIT, MAX_ENDPOINTS, MAX_URL_LENGTH, type WebhookService } from './service'

const ACTIONS = ['list', 'create', 'delete', 'deliveries', 'redeliver'] as const
const MAX_ID = 999_999_999_999_999
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])
const Iso = (description: string) => Type.String({ format: 'date-time', description })

function idParam(name: string, description: string): ApiParam {
  return {
    name,
    absent: ['', null],
    schema: Type.Integer({ minimum: 1, maximum: MAX_ID, description, examples: [1] }),
    error: { code: 'invalid_parameter', messages: { default: `The parameter "${name}" is invalid: a whole number from 1 to ${MAX_ID}.` } },
  }
}

const params: ApiParam[] = [
  {
    name: 'action',
    required: true,
    absent: ['', null],
    schema: Type.String({
      enum: [...ACTIONS],
      description:
        'list: your webhooks with delivery counts; create: a new one (`url`, `events`), the answer carries its secret, shown ' +
        'only then; delete: the webhook `id`; deliveries: the delivery log of webhook `id`, newest first; redeliver: sends ' +
        'event `event` to webhook `id` again, under the same webhook-id',
      examples: ['list'],
    }),
    error: { code: 'invalid_parameter', messages: { default: `The parameter "action" must be one of ${ACTIONS.join(', ')}.` } },
  },
  {
    name: 'url',
    absent: ['', null],
    schema: Type.String({
      minLength: 1,
      maxLength: MAX_URL_LENGTH,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      description:
        `create: where events are POSTed; an http or https URL, at most ${MAX_URL_LENGTH} characters, without a user name or ` +
        'password. Its host must not be on a private or local network (unless media.allow_private_networks)',
      examples: ['https://hooks.example.com/linkbox'],
    }),
    error: {
      code: 'invalid_url',
      messages: {
        type: 'The parameter "url" must be a string.',
        maxLength: `The parameter "url" must be at most ${MAX_URL_LENGTH} characters.`,
        default: 'The parameter "url" must be an absolute URL with the scheme http or https.',
      },
    },
  },
  {
    name: 'events',
    absent: ['', null],
    schema: Type.String({
      maxLength: 200,
      pattern: '^ *[a-z]+\\.[a-z]+ *(, *[a-z]+\\.[a-z]+ *)*$',
      description: `create: the event types to send, comma-separated, of ${EVENT_TYPES.join(', ')} (default: ${DEFAULT_EVENTS.join(',')}; link.clicked only when asked for)`,
      examples: ['link.created,mail.received'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { default: `The parameter "events" is invalid: a comma-separated list of ${EVENT_TYPES.join(', ')}.` },
    },
  },
  idParam('id', 'delete, deliveries, redeliver: the webhook'),
  idParam('event', 'redeliver: the event (its `event_id` in the delivery log)'),
  {
    name: 'limit',
    absent: ['', null],
    schema: Type.Integer({ minimum: 1, maximum: LOG_LIMIT.max, description: `deliveries: how many (default ${LOG_LIMIT.default})`, examples: [LOG_LIMIT.default] }),
    error: { code: 'invalid_parameter', messages: { default: `The parameter "limit" is invalid: a whole number from 1 to ${LOG_LIMIT.max}.` } },
  },
]

const Counts = Type.Object(
  { ok: Type.Integer({ minimum: 0 }), failed: Type.Integer({ minimum: 0 }), pending: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false, description: 'Deliveries kept (7 days) by state' },
)
const WebhookSchema = Type.Object(
  {
    id: Type.Integer({ minimum: 1 }),
    url: Type.String({ format: 'uri' }),
    events: Type.String({ description: 'Comma-separated event types' }),
    enabled: Type.Boolean({ description: 'False once disabled (the receiver answered 410 Gone)' }),
    failing: Type.Boolean({ description: 'True once a delivery used up its retries; false again after a success' }),
    disabled_reason: Nullable(Type.String()),
    created: Iso('When it was created'),
    deliveries: Counts,
  },
  { title: 'Webhook', additionalProperties: false },
)
const DeliverySchema = Type.Object(
  {
    event_id: Type.Integer({ minimum: 1 }),
    webhook_id: Type.String({ description: 'The webhook-id header: msg_ and 32 random hex digits (events stored before version 9 of the schema: msg_<event_id>), the same on every attempt and redelivery' }),
    type: Type.String(),
    state: Type.Union([Type.Literal('pending'), Type.Literal('ok'), Type.Literal('failed')]),
    attempts: Type.Integer({ minimum: 0 }),
    last_status: Nullable(Type.Integer({ description: 'HTTP status of the last attempt; null when none answered' })),
    last_error: Nullable(Type.String()),
    last_ms: Nullable(Type.Integer({ minimum: 0, description: 'Response time of the last attempt' })),
    last_at: Nullable(Iso('When the last attempt ended')),
    next_at: Iso('When a pending delivery is due'),
  },
  { title: 'Delivery', additionalProperties: false },
)

// One method, five answers: every field is optional here and each action's answer has its own required set.
const ResultSchema = Type.Object(
  {
    id: Type.Optional(Type.Integer({ minimum: 1, description: 'The webhook' })),
    url: Type.Optional(Type.String({ format: 'uri' })),
    events: Type.Optional(Type.String()),
    secret: Type.Optional(Type.String({ pattern: '^whsec_', description: 'create only: the signing secret (Standard Webhooks), shown this once' })),
    deleted: Type.Optional(Type.Literal(true)),
    webhooks: Type.Optional(Type.Array(WebhookSchema, { maxItems: MAX_ENDPOINTS })),
    deliveries: Type.Optional(Type.Array(DeliverySchema, { maxItems: LOG_LIMIT.max, description: 'Newest event first' })),
    event_id: Type.Optional(Type.Integer({ minimum: 1 })),
    webhook_id: Type.Optional(Type.String()),
    state: Type.Optional(Type.Literal('pending')),
    attempts: Type.Optional(Type.Integer({ minimum: 0 })),
    next_at: Type.Optional(Iso('When it is sent')),
  },
  {
    title: 'WebhookResult',
    additionalProperties: false,
    description:
      'create: id, url, events, secret; list: webhooks; delete: id, deleted; deliveries: id, deliveries; redeliver: id, ' +
      'event_id, webhook_id, state, attempts, next_at',
    // Each answer's fields (the properties are listed again: a `required` names only what its schema defines).
    anyOf: [
      ['id', 'url', 'events', 'secret'],
      ['webhooks'],
      ['id', 'deleted'],
      ['id', 'deliveries'],
      ['id', 'event_id', 'webhook_id', 'state', 'attempts', 'next_at'],
    ].map((fields) => ({ required: fields, properties: Object.fromEntries(fields.map((f) => [f, {}])) })),
    examples: [{ id: 1, url: 'https://hooks.example.com/linkbox', events: 'link.created,mail.received', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
  },
)

export function webhookApi(webhooks: WebhookService): ApiMethod[] {
  return [
    {
      verb: 'POST',
      path: '/api/webhooks.json',
      key: 'required',
      scope: 'webhooks',
      tag: 'webhooks',
      summary: 'Your webhook endpoints: create, list, delete, their delivery log, redeliver',
      description:
        'Events (`link.created`, `link.updated`, `link.deleted`, `link.clicked`, `link.reported`, `mail.received`) are POSTed as ' +
        '`{"type","timestamp","data"}`, signed per the Standard Webhooks spec (headers webhook-id, webhook-timestamp, ' +
        'webhook-signature) with the secret that `create` shows once. An event is stored with the change that caused it and ' +
        'retried until a 2xx (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); 410 Gone disables the webhook. At most ' +
        `${MAX_ENDPOINTS} webhooks per account; the log keeps 7 days.`,
      params,
      requiredWhen: [
        { param: 'action', value: 'create', required: ['url'] },
        { param: 'action', value: 'delete', required: ['id'] },
        { param: 'action', value: 'deliveries', required: ['id'] },
        { param: 'action', value: 'redeliver', required: ['id', 'event'] },
      ],
      returns: ResultSchema,
      errors: { 400: ['invalid_url', 'private_address', 'too_many_webhooks'], 403: ['not_owner'], 404: ['not_found'], 503: ['storage_unavailable'] },
      handler: ({ params: p, caller }) => {
        const c = caller!
        switch (p.action as (typeof ACTIONS)[number]) {
          case 'create':
            return webhooks.create(c, { url: p.url, events: p.events })
          case 'delete':
            return webhooks.delete(c, { id: p.id })
          case 'deliveries':
            return webhooks.deliveries(c, { id: p.id, limit: p.limit })
          case 'redeliver':
            return webhooks.redeliver(c, { id: p.id, event: p.event })
          default:
            return webhooks.list(c)
        }
      },
    },
  ]
}
