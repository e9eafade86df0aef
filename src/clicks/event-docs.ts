// The link.clicked webhook event as the docs show it: the counts of one flush of the click writer (batch.ts ClickItem).
import { Type, type Static } from '@sinclair/typebox'
import { CLICK_ITEMS_PER_EVENT, type ClickItem } from './batch'
import type { WebhookEventDoc } from '../web/openapi'

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

export const CLICK_EVENT_DOCS: WebhookEventDoc[] = [
  {
    type: 'link.clicked',
    summary: 'Links were visited',
    description:
      'Visits to your links, counted together: one event per account each time the counts are written (about once a second ' +
      'while visits come), never one per click. Only for webhooks that ask for it (`events=link.clicked`).',
    data: LinkClicksSchema,
  },
]
