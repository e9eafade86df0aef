// What each webhook event's body carries, as schemas: the OpenAPI document's `webhooks` section and the
// /api/docs page are made from them. Each `data` schema is the one of what the event's payload builder
// writes (the callers of outbox.enqueue): the link events the LinkRecord that links.json lists (links/service.ts
// record()), mail.received the messages.json entry with its address (mail/service.ts), link.clicked the
// counts of a flush (clicks/store.ts ClickItem), link.reported the report (abuse/service.ts), webhook.test
// the endpoint (webhooks/service.ts). test/e2e/docs-webhooks.test.ts has every kind sent for real and checks
// each body against these schemas with ajv.
import { Type, type Static } from '@sinclair/typebox'
import { MAX_REPORT_TEXT, REPORT_REASONS } from '../abuse'
import { CLICK_ITEMS_PER_EVENT, type ClickItem } from '../clicks'
import type { WebhookEventDoc } from '../web/openapi'
import { LinkRecordSchema } from '../links/api'
import { IMPORTED_CODES_MAX } from '../links/service'
import { MailReceivedSchema } from '../mail/api'
import type { EventType } from './outbox'

const ClickItemSchema = Type.Object(
  {
    hex: Type.String({ description: 'The short code' }),
    clicks: Type.Integer({ minimum: 0, description: 'Visits by people in this flush' }),
    bots: Type.Integer({ minimum: 0, description: 'Visits by bots in this flush' }),
    day: Type.String({ format: 'date', description: 'The UTC day the visits were counted on' }),
  },
  { additionalProperties: false },
)
// The schema and the type the click writer fills agree (a change to either one stops the build).
const clickItemFits = (item: ClickItem): Static<typeof ClickItemSchema> => item
void clickItemFits

const LinkClicksSchema = Type.Object(
  {
    clicks: Type.Array(ClickItemSchema, {
      minItems: 1,
      maxItems: CLICK_ITEMS_PER_EVENT,
      description: `One item per link and day with visits since the last event (at most ${CLICK_ITEMS_PER_EVENT}; more make several events)`,
    }),
  },
  {
    title: 'LinkClicks',
    additionalProperties: false,
    examples: [{ clicks: [{ hex: 'Ab3dE9', clicks: 3, bots: 1, day: '2026-01-31' }] }],
  },
)

const LinkReportSchema = Type.Object(
  {
    hex: Type.String({ description: 'The short code of the reported link' }),
    url: Type.String({ format: 'uri', description: 'The short link' }),
    reason: Type.String({ enum: [...REPORT_REASONS], description: 'What the visitor chose' }),
    text: Type.String({ maxLength: MAX_REPORT_TEXT, description: 'What the visitor wrote ("" when nothing); their contact and address are never sent' }),
    report: Type.Integer({ minimum: 1, description: "The report's id (the administrator's reports page)" }),
  },
  {
    title: 'LinkReport',
    additionalProperties: false,
    examples: [{ hex: 'Ab3dE9', url: 'https://sho.rt/Ab3dE9', reason: 'phishing', text: 'It asks for my bank password.', report: 7 }],
  },
)

const LinksImportedSchema = Type.Object(
  {
    account: Type.String({ description: 'The account the links were imported into' }),
    created: Type.Integer({ minimum: 0, description: 'Links made' }),
    skipped: Type.Integer({ minimum: 0, description: 'Rows not imported' }),
    codes: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_-]+$' }), {
      maxItems: IMPORTED_CODES_MAX,
      description: `The short codes made, in file order: the first ${IMPORTED_CODES_MAX} (read the rest with links.json)`,
    }),
  },
  {
    title: 'LinksImported',
    additionalProperties: false,
    examples: [{ account: 'alice', created: 2, skipped: 1, codes: ['spring25', 'Ab3dE9'] }],
  },
)

const WebhookTestSchema = Type.Object(
  {
    webhook: Type.Integer({ minimum: 1, description: 'The webhook the test was sent to' }),
    url: Type.String({ format: 'uri', description: 'Its URL' }),
  },
  { title: 'WebhookTest', additionalProperties: false, examples: [{ webhook: 1, url: 'https://hooks.example.com/linkbox' }] },
)

const EVENTS: Record<EventType, Omit<WebhookEventDoc, 'type'>> = {
  'link.created': {
    summary: 'A link was made',
    description: 'A link of your account was made (through the API, the dashboard or the home page while signed in); `data` is its record, as links.json lists it.',
    data: LinkRecordSchema,
  },
  'link.updated': {
    summary: 'A link was changed',
    description: 'A link of your account was changed (update.json or the dashboard); `data` is its record after the change.',
    data: LinkRecordSchema,
  },
  'link.deleted': {
    summary: 'A link was deleted',
    description: 'A link of your account was deleted; `data` is its record as it was just before.',
    data: LinkRecordSchema,
  },
  'link.clicked': {
    summary: 'Links were visited',
    description:
      'Visits to your links, counted together: one event per account each time the counts are written (about once a second ' +
      'while visits come), never one per click. Only for webhooks that ask for it (`events=link.clicked`).',
    data: LinkClicksSchema,
  },
  'link.reported': {
    summary: 'A visitor reported a link',
    description: 'A visitor reported one of your links as abuse (the report form under the link). An administrator decides what happens to it.',
    data: LinkReportSchema,
  },
  'links.imported': {
    summary: 'Links were imported',
    description:
      'An import (import.json, `linkbox import`) into your account ended: one event for the whole file, never one ' +
      '`link.created` per imported link; `data` gives the counts and the first codes made.',
    data: LinksImportedSchema,
  },
  'mail.received': {
    summary: 'A mailbox received a message',
    description: 'A message arrived in one of your mailboxes and was stored; `data` is its messages.json entry and the address. Read it whole with message.json.',
    data: MailReceivedSchema,
  },
  'webhook.test': {
    summary: 'A test event',
    description: 'Sent to one webhook when you ask for it (the dashboard\'s "Send a test event", or `linkbox webhook test ID`), whatever events it takes.',
    data: WebhookTestSchema,
  },
}

/** Every event type a webhook can be sent, in the order the documents list them. */
export const WEBHOOK_EVENT_DOCS: WebhookEventDoc[] = Object.entries(EVENTS).map(([type, doc]) => ({ type, ...doc }))
