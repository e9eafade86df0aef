// The mail.received webhook event as the docs show it: the messages.json entry with its address.
import { MailReceivedSchema } from './api'
import type { WebhookEventDoc } from '../web/openapi'

export const MAIL_EVENT_DOCS: WebhookEventDoc[] = [
  {
    type: 'mail.received',
    summary: 'A mailbox received a message',
    description:
      'A message arrived in one of your mailboxes and was stored; `data` is its messages.json entry and the address. Read it whole with message.json.',
    data: MailReceivedSchema,
  },
]
