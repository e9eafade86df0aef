// The link.reported webhook event as the docs show it: the report, never the reporter's contact or address.
import { Type } from '@sinclair/typebox'
import { MAX_REPORT_TEXT } from './service'
import { REPORT_REASONS } from './storage/contract'
import type { WebhookEventDoc } from '../web/openapi'

const LinkReportSchema = Type.Object(
  {
    hex: Type.String({ description: 'The short code of the reported link' }),
    url: Type.String({ format: 'uri', description: 'The short link' }),
    reason: Type.String({ enum: [...REPORT_REASONS], description: 'What the visitor chose' }),
    text: Type.String({
      maxLength: MAX_REPORT_TEXT,
      description: 'What the visitor wrote ("" when nothing); their contact and address are never sent',
    }),
    report: Type.Integer({ minimum: 1, description: "The report's id (the administrator's reports page)" }),
  },
  {
    title: 'LinkReport',
    additionalProperties: false,
    examples: [
      {
        hex: 'Ab3dE9',
        url: 'https://sho.rt/Ab3dE9',
        reason: 'phishing',
        text: 'It asks for my bank password.',
        report: 7,
      },
    ],
  },
)

export const ABUSE_EVENT_DOCS: WebhookEventDoc[] = [
  {
    type: 'link.reported',
    summary: 'A visitor reported a link',
    description:
      'A visitor reported one of your links as abuse (the report form under the link). An administrator decides what happens to it.',
    data: LinkReportSchema,
  },
]
