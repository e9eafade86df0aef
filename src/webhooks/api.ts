// POST /api/webhooks.json (SPEC §9): one method, `action` says what; parameters and answers declared once, as
// schemas, which the /api pipeline checks requests against and the documents are made from.
import { Type, type TSchema } from '@sinclair/typebox'
import { byAccount } from '../audit'
import type { ApiMethod } from '../web/api'
import type { ApiParam } from '../web/schema'
import { DEFAULT_EVENTS, EVENT_TYPES } from '../kernel/outbox'
import { LOG_LIMIT } from './deliveries'
import { MAX_URL_LENGTH } from './params'
import { MAX_ENDPOINTS, type WebhookService } from './service'

const ACTIONS = ['list', 'create', 'update', 'rotate', 'delete', 'deliveries', 'redeliver', 'redeliver_failed'] as const
const MAX_ID = 999_999_999_999_999
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])
const Iso = (description: string) => Type.String({ format: 'date-time', description })

function idParam(name: string, description: string): ApiParam {
  return {
    name,
    absent: ['', null],
    schema: Type.Integer({ minimum: 1, maximum: MAX_ID, description, examples: [1] }),
    error: {
      code: 'invalid_parameter',
      messages: { default: `The parameter "${name}" is invalid: a whole number from 1 to ${MAX_ID}.` },
    },
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
        'only then; update: webhook `id` gets any of `url`, `events`, `enabled`; rotate: webhook `id` gets a new secret, ' +
        'shown only in that answer; the one before stays valid until `previous_secret_expires` ([webhooks] rotation_overlap, ' +
        'default 24 h), every send meanwhile (retries too) signed with both, then with the new one alone; delete: the webhook `id`; ' +
        'deliveries: the delivery log of webhook `id`, newest first; redeliver: sends event `event` to webhook `id` again, ' +
        'under the same webhook-id; redeliver_failed: every failed delivery of webhook `id` is sent again, each under its ' +
        "event's webhook-id",
      examples: ['list'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { default: `The parameter "action" must be one of ${ACTIONS.join(', ')}.` },
    },
  },
  {
    name: 'url',
    absent: ['', null],
    schema: Type.String({
      minLength: 1,
      maxLength: MAX_URL_LENGTH,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      description:
        `create, update: where events are POSTed; an http or https URL, at most ${MAX_URL_LENGTH} characters, without a user name or ` +
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
      description:
        `create, update: the event types to send, comma-separated, of ${EVENT_TYPES.join(', ')} (create's default: ` +
        `${DEFAULT_EVENTS.join(',')}; link.clicked only when asked for). An update changes what later events are sent; ` +
        'deliveries already queued still go out',
      examples: ['link.created,mail.received'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { default: `The parameter "events" is invalid: a comma-separated list of ${EVENT_TYPES.join(', ')}.` },
    },
  },
  {
    name: 'enabled',
    absent: ['', null],
    schema: Type.Boolean({
      description:
        'update: false or 0 stops sending (events meanwhile are not kept for it; deliveries already queued wait), true or 1 ' +
        'sends again (also after a 410 disabled it)',
      examples: [false],
    }),
    error: {
      code: 'invalid_parameter',
      messages: {
        default: 'The parameter "enabled" is invalid: true or 1 (send events to it), false or 0 (send none).',
      },
    },
  },
  idParam('id', 'update, rotate, delete, deliveries, redeliver, redeliver_failed: the webhook'),
  idParam('event', 'redeliver: the event (its `event_id` in the delivery log)'),
  {
    name: 'limit',
    absent: ['', null],
    schema: Type.Integer({
      minimum: 1,
      maximum: LOG_LIMIT.max,
      description: `deliveries: how many (default ${LOG_LIMIT.default})`,
      examples: [LOG_LIMIT.default],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { default: `The parameter "limit" is invalid: a whole number from 1 to ${LOG_LIMIT.max}.` },
    },
  },
]

const Counts = Type.Object(
  {
    ok: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    pending: Type.Integer({ minimum: 0 }),
    retrying: Type.Integer({
      minimum: 0,
      description: 'Of the pending ones, those whose last attempt failed (a retry is planned)',
    }),
  },
  { additionalProperties: false, description: 'Deliveries kept (7 days) by state' },
)
const WebhookSchema = Type.Object(
  {
    id: Type.Integer({ minimum: 1 }),
    url: Type.String({ format: 'uri' }),
    events: Type.String({ description: 'Comma-separated event types' }),
    enabled: Type.Boolean({
      description: 'False once disabled: by its owner (update), or because the receiver answered 410 Gone',
    }),
    failing: Type.Boolean({
      description:
        'True once a delivery used up its retries or was refused for good (a private address); false again after a ' +
        'success. An endpoint needs looking at ("failing" in the dashboard) when this is true or deliveries.retrying > 0',
    }),
    disabled_reason: Nullable(Type.String()),
    created: Iso('When it was created'),
    previous_secret_expires: Nullable(
      Iso(
        'After a rotate: until when the secret before it still verifies (deliveries carry both signatures); null: none',
      ),
    ),
    deliveries: Counts,
  },
  { title: 'Webhook', additionalProperties: false },
)
const DeliverySchema = Type.Object(
  {
    event_id: Type.Integer({ minimum: 1 }),
    webhook_id: Type.String({
      description:
        'The webhook-id header: msg_ and 32 random hex digits (events stored before version 9 of the schema: msg_<event_id>), the same on every attempt and redelivery',
    }),
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
    secret: Type.Optional(
      Type.String({
        pattern: '^whsec_',
        description: 'create and rotate only: the signing secret (Standard Webhooks), shown this once',
      }),
    ),
    previous_secret_expires: Type.Optional(
      Nullable(
        Iso(
          'rotate only: until when the secret before it stays valid, every delivery meanwhile signed with both ' +
            '(`webhook-signature: v1,<new> v1,<old>`); null when [webhooks] rotation_overlap is 0',
        ),
      ),
    ),
    earlier_secret_dropped: Type.Optional(
      Type.Boolean({
        description:
          'rotate only: true when a secret kept from a rotation before (still in its overlap) stopped verifying now: only ' +
          'the newest two are ever valid',
      }),
    ),
    enabled: Type.Optional(Type.Boolean()),
    disabled_reason: Type.Optional(Nullable(Type.String())),
    redelivered: Type.Optional(
      Type.Integer({ minimum: 0, description: 'redeliver_failed: how many failed deliveries are pending again' }),
    ),
    deleted: Type.Optional(Type.Literal(true)),
    webhooks: Type.Optional(Type.Array(WebhookSchema, { maxItems: MAX_ENDPOINTS })),
    deliveries: Type.Optional(
      Type.Array(DeliverySchema, { maxItems: LOG_LIMIT.max, description: 'Newest event first' }),
    ),
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
      'create: id, url, events, secret; list: webhooks; update: id, url, events, enabled, disabled_reason; rotate: id, ' +
      'secret, previous_secret_expires, earlier_secret_dropped; delete: id, deleted; deliveries: id, deliveries; redeliver: id, event_id, webhook_id, state, attempts, ' +
      'next_at; redeliver_failed: id, redelivered, enabled (false: they wait until the webhook is enabled)',
    // Each answer's fields (the properties are listed again: a `required` names only what its schema defines).
    anyOf: [
      ['id', 'url', 'events', 'secret'],
      ['webhooks'],
      ['id', 'url', 'events', 'enabled', 'disabled_reason'],
      ['id', 'secret', 'previous_secret_expires', 'earlier_secret_dropped'],
      ['id', 'redelivered', 'enabled'],
      ['id', 'deleted'],
      ['id', 'deliveries'],
      ['id', 'event_id', 'webhook_id', 'state', 'attempts', 'next_at'],
    ].map((fields) => ({ required: fields, properties: Object.fromEntries(fields.map((f) => [f, {}])) })),
    examples: [
      {
        id: 1,
        url: 'https://hooks.example.com/linkbox',
        events: 'link.created,mail.received',
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      },
    ],
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
      summary: 'Your webhook endpoints: create, list, update, rotate the secret, delete, their delivery log, redeliver',
      description:
        'Events (`link.created`, `link.updated`, `link.deleted`, `link.clicked`, `link.reported`, `links.imported`, `mail.received`) are POSTed as ' +
        '`{"type","timestamp","data"}`, signed per the Standard Webhooks spec (headers webhook-id, webhook-timestamp, ' +
        'webhook-signature) with the secret that `create` (and each `rotate`) shows once; after a `rotate` the old secret signs ' +
        'too (space-separated signatures) until `previous_secret_expires`. An event is stored with the change that caused it and ' +
        'retried until a 2xx (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); 410 Gone disables the webhook. At most ' +
        `${MAX_ENDPOINTS} webhooks per account; the log keeps 7 days.`,
      params,
      requiredWhen: [
        { param: 'action', value: 'create', required: ['url'] },
        { param: 'action', value: 'update', required: ['id'] },
        { param: 'action', value: 'rotate', required: ['id'] },
        { param: 'action', value: 'delete', required: ['id'] },
        { param: 'action', value: 'deliveries', required: ['id'] },
        { param: 'action', value: 'redeliver', required: ['id', 'event'] },
        { param: 'action', value: 'redeliver_failed', required: ['id'] },
      ],
      returns: ResultSchema,
      errors: {
        400: ['invalid_url', 'private_address', 'too_many_webhooks'],
        403: ['not_owner'],
        404: ['not_found'],
        503: ['storage_unavailable'],
      },
      handler: ({ params: p, caller, clientIp }) => {
        const c = caller!
        // Creations and deletions are audited: who (the key's account) and from where.
        const by = byAccount(c, clientIp)
        switch (p.action as (typeof ACTIONS)[number]) {
          case 'create':
            return webhooks.create(c, { url: p.url, events: p.events }, {}, by)
          case 'update':
            return webhooks.update(c, { id: p.id, url: p.url, events: p.events, enabled: p.enabled }, by)
          case 'rotate':
            return webhooks.rotate(c, { id: p.id }, {}, by)
          case 'redeliver_failed':
            return webhooks.redeliverFailed(c, { id: p.id }, by)
          case 'delete':
            return webhooks.delete(c, { id: p.id }, by)
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
