// The links feature's webhook events as the docs show them (the order of the list is the webhooks feature's).
import { Type } from '@sinclair/typebox'
import { LinkRecordSchema } from './api'
import { IMPORTED_CODES_MAX } from './service-inputs'
import type { WebhookEventDoc } from '../web/openapi'

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

export const LINK_EVENT_DOCS: WebhookEventDoc[] = [
  {
    type: 'link.created',
    summary: 'A link was made',
    description:
      'A link of your account was made (through the API, the dashboard or the home page while signed in); `data` is its record, as links.json lists it.',
    data: LinkRecordSchema,
  },
  {
    type: 'link.updated',
    summary: 'A link was changed',
    description:
      'A link of your account was changed (update.json, the dashboard, or its title fetched from its destination ' +
      'after its creation: links.fetch_metadata); `data` is its record after the change.',
    data: LinkRecordSchema,
  },
  {
    type: 'link.deleted',
    summary: 'A link was deleted',
    description: 'A link of your account was deleted; `data` is its record as it was just before.',
    data: LinkRecordSchema,
  },
  {
    type: 'links.imported',
    summary: 'Links were imported',
    description:
      'An import (import.json, `linkbox import`) into your account ended: one event for the whole file, never one ' +
      '`link.created` per imported link; `data` gives the counts and the first codes made.',
    data: LinksImportedSchema,
  },
]
