// The three mail methods (mailbox.json, messages.json, message.json), their POST forms, and the signed downloads
// their answers link to; parameters and answers declared once, as schemas (the pipeline's checks, the documents).
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { ApiMethod } from '../web/api'
import { contentDisposition } from '../web/disposition'
import { queryParams } from '../web/params'
import type { ApiParam } from '../web/schema'
import { INTRO_CHARS } from './parse'
import { LIST_LIMIT, MAX_WAIT_SECONDS, type MailService } from './service'

const named = (name: string) => `The parameter "${name}"`

/** A pattern that matches `text` in any letter case (JSON Schema patterns have no "i" flag). */
const anyCase = (text: string) =>
  text
    .replace(/[a-z]/gi, (c) => `[${c.toLowerCase()}${c.toUpperCase()}]`)
    .replace(/\./g, '\\.')
    .replace(/-/g, '[-]') // in a u-pattern \- is an error

function addressParam(required: boolean, domains: readonly string[]): ApiParam {
  const rule =
    'a name of 1-64 characters (a-z, 0-9, ".", "_", "-"; any letter case), optionally followed by "@" and one of the ' +
    `domains this service receives mail for: ${domains.join(', ')}`
  return {
    name: 'address',
    required,
    absent: ['', null],
    schema: Type.String({
      pattern: `^[A-Za-z0-9._-]{1,64}(@(${domains.map(anyCase).join('|')}))?$`,
      description: required
        ? `The mailbox: ${rule}; a bare name is on the default domain (${domains[0]})`
        : `The address to get or create: ${rule}. Empty: a random name on the default domain (${domains[0]}); a bare ` +
          'name: on the default domain',
      examples: ['signup-test'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: {
        type: `${named('address')} must be a string.`,
        default: `${named('address')} is invalid: ${rule}.`,
      },
    },
  }
}

function wholeParam(
  name: string,
  min: number,
  max: number,
  description: string,
  example: number,
  required = false,
): ApiParam {
  return {
    name,
    required,
    absent: ['', null],
    schema: Type.Integer({ minimum: min, maximum: max, description, examples: [example] }),
    error: {
      code: 'invalid_parameter',
      messages: { default: `${named(name)} is invalid: a whole number from ${min} to ${max}.` },
    },
  }
}

const MAX_ID = 999_999_999_999_999

const Iso = (description: string) => Type.String({ format: 'date-time', description })
const PersonSchema = Type.Object(
  {
    address: Type.String({ description: 'E-mail address ("" when the message gave none)' }),
    name: Type.String({ description: 'Display name, or ""' }),
  },
  { additionalProperties: false },
)

const MailboxSchema = Type.Object(
  {
    address: Type.String({ description: 'The full address' }),
    created: Iso('When the mailbox was made'),
    expires: Iso('When it is deleted with its mail unless used again (every use renews it)'),
    messages: Type.Integer({ minimum: 0, description: 'Messages in it' }),
  },
  {
    title: 'Mailbox',
    additionalProperties: false,
    examples: [
      {
        address: 'signup-test@mail.example.com',
        created: '2026-01-31T09:30:00.000Z',
        expires: '2026-02-01T09:30:00.000Z',
        messages: 0,
      },
    ],
  },
)

const summaryFields = {
  id: Type.Integer({ minimum: 1, description: 'Message id (grows with every message the service receives)' }),
  from: PersonSchema,
  subject: Type.String(),
  date: Type.Union([Iso('The Date header'), Type.Null()]),
  received: Iso('When the service received it'),
  size: Type.Integer({ minimum: 0, description: 'Bytes of the message as received' }),
  seen: Type.Boolean({
    description:
      'Whether it counts as read: message.json marks it when it shows it; POST message.json with action=seen or unseen sets it',
  }),
}

const SummarySchema = Type.Object(
  {
    ...summaryFields,
    intro: Type.String({ maxLength: INTRO_CHARS, description: `The first ${INTRO_CHARS} characters of its text` }),
    attachments: Type.Integer({ minimum: 0, description: 'Number of attachments' }),
  },
  { title: 'MessageSummary', additionalProperties: false },
)

const exampleSummary = {
  id: 17,
  from: { address: 'no-reply@example.com', name: 'Example' },
  subject: 'Confirm your e-mail address',
  date: '2026-01-31T09:31:00.000Z',
  received: '2026-01-31T09:31:01.000Z',
  size: 2310,
  seen: false,
  intro: 'Welcome! Click the link below to confirm your address: https://example.com/confirm?t=abc',
  attachments: 0,
}

/** The data of a mail.received webhook event (mail/service.ts writes it): the messages.json entry and its mailbox. */
export const MailReceivedSchema = Type.Object(
  { address: Type.String({ description: 'The mailbox it went to (the full address)' }), ...SummarySchema.properties },
  {
    title: 'MailReceived',
    additionalProperties: false,
    examples: [{ address: 'signup-test@mail.example.com', ...exampleSummary }],
  },
)

const MessagesSchema = Type.Object(
  { address: Type.String(), messages: Type.Array(SummarySchema, { description: 'Newest first' }) },
  {
    title: 'MessageList',
    additionalProperties: false,
    examples: [{ address: 'signup-test@mail.example.com', messages: [exampleSummary] }],
  },
)

const SignedUrl = (what: string) =>
  Type.String({ format: 'uri', description: `${what}: a signed link, valid for an hour, no key needed` })

const MessageSchema = Type.Object(
  {
    ...summaryFields,
    address: Type.String({ description: 'The mailbox' }),
    to: Type.Array(PersonSchema),
    cc: Type.Array(PersonSchema),
    text: Type.String({ description: 'The plain-text body (made from the HTML when the message has none)' }),
    html: Type.Union([
      Type.String({ description: 'The HTML body as sent: untrusted, never show it unsandboxed' }),
      Type.Null(),
    ]),
    attachments: Type.Array(
      Type.Object(
        {
          id: Type.Integer({ minimum: 1 }),
          filename: Type.String(),
          content_type: Type.String(),
          size: Type.Integer({ minimum: 0 }),
          url: SignedUrl('The file'),
        },
        { additionalProperties: false },
      ),
    ),
    raw: SignedUrl('The message as received (.eml)'),
    links: Type.Array(Type.String({ format: 'uri' }), {
      description:
        "The http(s) links a reader can follow, each once, in order: URLs written in the text, then the HTML's " +
        "<a href> and <area href>, then URLs written in the HTML's text. What the HTML only loads (<img src>: " +
        'images, tracking pixels) is not listed',
    }),
  },
  {
    title: 'Message',
    additionalProperties: false,
    examples: [
      {
        ...(({ intro: _, ...rest }) => rest)(exampleSummary),
        seen: true,
        address: 'signup-test@mail.example.com',
        to: [{ address: 'signup-test@mail.example.com', name: '' }],
        cc: [],
        text: 'Welcome! Click the link below to confirm your address:\nhttps://example.com/confirm?t=abc',
        html: '<p>Welcome! <a href="https://example.com/confirm?t=abc">Confirm</a></p>',
        attachments: [],
        raw: 'https://sho.rt/mail/raw/17?exp=1769855400&sig=7yKx2l3m0Vh0m3a9c8b7a6Z5Y4X3W2V1U0T9S8R7Q6P',
        links: ['https://example.com/confirm?t=abc'],
      },
    ],
  },
)

const MESSAGE_ACTIONS = ['delete', 'seen', 'unseen'] as const
const MAILBOX_ACTIONS = ['delete'] as const

function actionParam(actions: readonly string[], description: string): ApiParam {
  return {
    name: 'action',
    required: true,
    absent: ['', null],
    schema: Type.String({ enum: [...actions], description, examples: [actions[0]] }),
    error: {
      code: 'invalid_parameter',
      messages: { default: `${named('action')} must be one of ${actions.join(', ')}.` },
    },
  }
}

const MailboxDeletedSchema = Type.Object(
  { address: Type.String({ description: 'The address, free again' }), deleted: Type.Literal(true) },
  {
    title: 'MailboxDeleted',
    additionalProperties: false,
    examples: [{ address: 'signup-test@mail.example.com', deleted: true }],
  },
)

// One method, two answers (as webhooks.json): each action's fields are required by its own branch.
const MessageChangedSchema = Type.Object(
  {
    id: Type.Integer({ minimum: 1, description: 'The message' }),
    deleted: Type.Optional(Type.Literal(true)),
    seen: Type.Optional(Type.Boolean({ description: 'seen, unseen: whether it counts as read now' })),
  },
  {
    title: 'MessageChanged',
    additionalProperties: false,
    description: 'delete: id, deleted; seen and unseen: id, seen',
    anyOf: [
      ['id', 'deleted'],
      ['id', 'seen'],
    ].map((fields) => ({ required: fields, properties: Object.fromEntries(fields.map((f) => [f, {}])) })),
    examples: [
      { id: 17, deleted: true },
      { id: 17, seen: false },
    ],
  },
)

const num = (v: unknown) => (v === undefined || v === '' || v === null ? undefined : Number(v))

export interface MailApiDeps {
  /** Keeps a held request's connection open past the server's idle timeout (wait=N). */
  holdOpen?: (request: Request, seconds: number) => void
}

export function mailApi(mail: MailService, deps: MailApiDeps = {}): ApiMethod[] {
  const common = { verb: 'GET', key: 'required', scope: 'mail', marketplace: true, tag: 'mail' } as const
  return [
    {
      ...common,
      path: '/api/mailbox.json',
      summary: 'Get or create a temporary e-mail address',
      description:
        "Returns the caller's mailbox at the address, creating it when it does not exist (or has expired). Its expiry is " +
        'renewed on every use. An address that belongs to another account gives 403 address_taken.',
      params: [addressParam(false, mail.domains)],
      returns: MailboxSchema,
      errors: { 403: ['address_taken'], 503: ['storage_unavailable'] },
      handler: ({ params, caller }) => mail.getOrCreate(caller!, params.address as string | undefined),
    },
    {
      ...common,
      path: '/api/messages.json',
      summary: 'List the messages in a mailbox, newest first',
      description:
        `With \`after\` only messages newer than that id are listed. With \`wait\` (seconds, at most ${MAX_WAIT_SECONDS}) an ` +
        'answer that would be empty is held until a message arrives or the time runs out (then the list is empty): ' +
        'one request instead of a polling loop.',
      params: [
        addressParam(true, mail.domains),
        wholeParam('after', 0, MAX_ID, 'Only messages with a larger id (the id of the newest one you have)', 12),
        wholeParam('wait', 0, MAX_WAIT_SECONDS, 'Seconds to hold an empty answer until mail arrives', 30),
        wholeParam('limit', 1, LIST_LIMIT.max, `Most messages to list (default ${LIST_LIMIT.default})`, 50),
      ],
      returns: MessagesSchema,
      errors: { 403: ['not_owner'], 404: ['not_found'], 503: ['busy'] },
      handler: ({ params, caller, request }) => {
        const wait = num(params.wait)
        if (wait) deps.holdOpen?.(request, wait + 10)
        return mail.listMessages(caller!, {
          address: params.address as string,
          after: num(params.after),
          limit: num(params.limit),
          wait,
          signal: request.signal,
        })
      },
    },
    {
      ...common,
      path: '/api/message.json',
      summary: 'Read one message (and mark it seen)',
      description:
        'The text, the HTML as sent (untrusted: show it only in a sandbox), the attachments and the raw source as signed ' +
        'links (valid for an hour, no key needed), and `links`: the http(s) links found in the text and the HTML ' +
        '(`<a href>`, `<area href>`, URLs written out; not image sources).',
      params: [
        addressParam(true, mail.domains),
        wholeParam('id', 1, MAX_ID, 'Message id, from messages.json', 17, true),
      ],
      returns: MessageSchema,
      errors: { 403: ['not_owner'], 404: ['not_found'] },
      handler: ({ params, caller }) =>
        mail.readMessage(caller!, { address: params.address as string, id: Number(params.id) }),
    },
    {
      ...common,
      verb: 'POST',
      path: '/api/mailbox.json',
      operationId: 'deleteMailbox',
      summary: 'Delete a mailbox with all its mail',
      description:
        'With `action=delete`: the mailbox, its messages and their files are deleted at once (not at expiry), and the ' +
        'address may be handed out again, to any account. Only its owner may delete it.',
      params: [
        addressParam(true, mail.domains),
        actionParam(MAILBOX_ACTIONS, 'delete: the mailbox and everything in it'),
      ],
      returns: MailboxDeletedSchema,
      errors: { 403: ['not_owner'], 404: ['not_found'], 503: ['storage_unavailable'] },
      handler: ({ params, caller }) => mail.deleteMailbox(caller!, { address: params.address as string }),
    },
    {
      ...common,
      verb: 'POST',
      path: '/api/message.json',
      operationId: 'changeMessage',
      summary: 'Delete a message, or mark it read or unread',
      description:
        '`action=delete` deletes the message with its attachments; `seen` and `unseen` set whether it counts as read ' +
        '(message.json marks a message seen when it shows it; `unseen` makes it new again).',
      params: [
        addressParam(true, mail.domains),
        wholeParam('id', 1, MAX_ID, 'Message id, from messages.json', 17, true),
        actionParam(
          MESSAGE_ACTIONS,
          'delete: the message and its attachments; seen: mark it read; unseen: mark it unread',
        ),
      ],
      returns: MessageChangedSchema,
      errors: { 403: ['not_owner'], 404: ['not_found'], 503: ['storage_unavailable'] },
      handler: ({ params, caller }) => {
        const input = { address: params.address as string, id: Number(params.id) }
        if (params.action === 'delete') return mail.deleteMessage(caller!, input)
        return mail.setSeen(caller!, { ...input, seen: params.action === 'seen' })
      },
    },
  ]
}

/** GET /mail/raw/<id> and /mail/attachment/<id>: the bytes behind a signed link, always as a download. */
export function createMailRoutes(mail: MailService) {
  const serve =
    (kind: 'raw' | 'attachment') =>
    async ({ params, request }: { params: { id: string }; request: Request }) => {
      const query = queryParams(request.url)
      const text = (v: unknown) => (typeof v === 'string' ? v : null)
      // The bytes as the store has them: a file (SQLite, a larger message), bytes, or a stream of chunks (PostgreSQL).
      const file = await mail.download(kind, params.id, text(query.exp), text(query.sig))
      return new Response(file.body as BodyInit, {
        headers: {
          'content-type': file.contentType,
          'content-disposition': contentDisposition(file.filename),
          // Whatever the file is (an HTML attachment, an SVG), it is never run or shown as a page of this origin.
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; sandbox",
          'cache-control': 'private, max-age=3600',
          'referrer-policy': 'no-referrer',
        },
      })
    }
  return new Elysia({ name: 'mail-files' })
    .get('/mail/raw/:id', serve('raw'))
    .get('/mail/attachment/:id', serve('attachment'))
}
