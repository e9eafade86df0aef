// The OpenAPI 3.1 document, generated from the same method declarations that serve /api (parameters, returns,
// the pipeline's error answers): nothing is written by hand per method; test/e2e/contract.test.ts holds answers to it.
import type { TSchema } from '@sinclair/typebox'
import { answerCodes, type ApiMethod } from './api'
import type { ApiParam } from './schema'
import { hoist, webhooksSection, type WebhookEventDoc } from './openapi-webhooks'

export { exampleEvent, type WebhookEventDoc } from './openapi-webhooks'

export interface OpenApiOptions {
  baseUrl: string
  version: string
  /** The marketplace route's header names, when the route is configured (marketplace.proxy_secret). */
  marketplace?: { secretHeader: string; userHeader: string } | null
  /** The webhook events and their payloads (the document's `webhooks` section); none: no section. */
  webhooks?: WebhookEventDoc[]
}

const TAGS: Record<string, string> = {
  links: 'Short links: create, list, change, delete, and their statistics',
  qr: 'QR codes for any text, as PNG or SVG',
  mail: 'Temporary e-mail addresses and the mail they receive (SMTP on the same box)',
  media: 'Video, audio and photo download from a page (yt-dlp), through signed links',
  webhooks:
    'Webhook endpoints: signed (Standard Webhooks) POSTs of link and mail events to your URL, retried, with a delivery log. ' +
    'Targets pass the same address check as media download (media.allow_private_networks lifts it for both)',
}

// What the service does, feature by feature: the first thing a reader of the document (or a generated client's
// README) sees. Markdown (CommonMark) as OpenAPI allows; test/e2e/docs.test.ts checks that it names every feature.
const DESCRIPTION = [
  'A self-hosted box for **short links** with **click statistics**, **QR codes**, **media download** and **temporary e-mail**, with **webhooks** for what happens to them.',
  '',
  '- **Short links** (tag links): create with an optional alias, mode (redirect, preview page, frame), expiry and password; list, change, delete.',
  '- **Statistics**: clicks and distinct visitors by day, referring sites, devices, browsers, operating systems and countries (and, for links with redirect rules or a split, destinations); bots and link previews counted apart. Public, like the page at `/<code>+`.',
  '- **QR codes** (tag qr): any text as PNG or SVG, colours, error correction, size; every short link also has one at `/qr/<code>.png` and `.svg`.',
  '- **Media download** (tag media): the video, audio and photo formats of a page, each as a **signed link** (`/dl/<id>?exp=…&sig=…`) that needs no key.',
  "- **Temporary e-mail** (tag mail): addresses on this box's domains that receive mail over SMTP; messages as JSON, attachments and the raw source as signed links (`/mail/attachment/…`, `/mail/raw/…`).",
  '- **Webhooks** (tag webhooks, and the `webhooks` section of this document): link and mail events POSTed to your URL, signed per Standard Webhooks, retried, with a delivery log.',
  '- **Accounts and API keys**: an account owns its links, mailboxes and webhooks; its **API keys** go in `X-Api-Key` (or `Authorization: Bearer`) and each carries **scopes** (links, qr, media, mail, webhooks). Keys are made in the dashboard or with `linkbox key create`.',
  '- **Abuse reports**: any visitor can report a link (`/<code>/report`); its owner hears of it (the `link.reported` event) and an administrator may disable the link.',
  '- **Rate limits**: per key and per address without one; every answer carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`, and a 429 `Retry-After`.',
  '',
  'Every answer is `{"status":"success","return":…}` or `{"status":"error","message":…,"code":…}`. POST methods take form fields (multipart and JSON bodies too), GET methods the query string.',
].join('\n')

/** What each HTTP status of an /api answer means (the document's responses, the page's error tables). */
export const STATUS_TEXT: Record<number, string> = {
  400: 'Bad input: the message names the parameter and the rule',
  401: 'No key where one is required, or a key that is unknown or revoked',
  403: 'The key lacks the scope, or the link or mailbox belongs to another account',
  404: 'No link with that code, or no such mailbox or message',
  405: 'This path answers another HTTP method (see Allow)',
  408: 'A chunked request body (no Content-Length) did not arrive within 15 s; a connection silent for 10 s is closed without an answer',
  409: 'The alias is in use or reserved',
  413: 'The request body is over 64 KiB',
  429: 'Too many requests from this caller (see Retry-After)',
  500: 'Internal error; no details are shown',
  502: 'The page (or the site behind it) could not be read',
  503: 'Busy or storage unavailable: try again later',
  504: 'The page could not be read in time',
}

const EXAMPLE_MESSAGES: Record<string, string> = {
  missing_parameter: 'The parameter "url" is required.',
  invalid_parameter: 'The parameter "limit" is invalid: a whole number from 1 to 500.',
  missing_key: 'This method needs an API key: send it in the X-Api-Key header.',
  invalid_key: 'The API key is unknown or has been revoked.',
  scope_denied: 'The API key does not have the "links" scope.',
  not_owner: 'This link belongs to another account.',
  not_found: 'No link with the code "Ab3dE9".',
  method_not_allowed: '/api/getLink.json takes POST, not GET.',
  timeout: 'The request body did not arrive within 15 s.',
  alias_taken: 'The alias "spring-sale" is already in use.',
  too_large: 'The request body is larger than the limit of 65536 bytes.',
  rate_limited: 'Too many requests: try again in 12 s.',
  internal: 'Internal error: the request could not be completed.',
  busy: 'Too many QR codes are being rendered: try again in 1 s.',
  address_taken: 'The address signup-test@mail.example.com belongs to another account.',
  unsupported_url: 'The parameter "url" names a page with no video, audio or photo that could be found.',
  private_address:
    'The parameter "url" leads to a private or local network address, which this service does not fetch.',
  upstream_failed: 'The page could not be read: HTTP Error 404: Not Found.',
  unavailable: 'Media download is not available: no yt-dlp was found (see `linkbox doctor`).',
  invalid_url: 'The parameter "url" must be an absolute URL with the scheme http or https.',
  too_many_webhooks: 'An account can have at most 20 webhooks: delete one first.',
  storage_unavailable:
    'The change could not be stored: the database cannot be written right now (disk full or read-only). Try again later.',
}

const integerHeader = (description: string, required = false, minimum = 0) => ({
  description,
  required,
  schema: { type: 'integer', minimum },
})
/** On every /api answer while the caller has a limit (rate.*_per_minute is not 0). */
const RATE_HEADERS = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
}

function headersFor(status: number) {
  if (status === 429)
    return { ...RATE_HEADERS, 'Retry-After': integerHeader('Seconds until a request is allowed again', true, 1) }
  if (status === 503)
    return { ...RATE_HEADERS, 'Retry-After': integerHeader('Seconds to wait before trying again, when known') }
  if (status === 405)
    return {
      ...RATE_HEADERS,
      Allow: { description: 'The methods this path answers', required: true, schema: { type: 'string' } },
    }
  return RATE_HEADERS
}

/** 413 for a method that takes files: the body's limit grows by theirs, and each has its own. */
function fileLimitText(m: ApiMethod): string {
  const files = m.files!
  const each = files.map((f) => `${f.name} over ${f.maxBytes / 1024} KiB`).join(', ')
  const extra = files.reduce((sum, f) => sum + f.maxBytes, 0) / 1024
  return `The request body is over 64 KiB (a multipart one over ${64 + extra} KiB), or a file is over its limit (${each})`
}

/** The path's name (qr, getLink); a path's second verb adds its own (qrPost), so that ids stay unique. */
const plain = (s: TSchema) => JSON.parse(JSON.stringify(s)) as Record<string, unknown>

function paramDescription(p: ApiParam): string {
  const text = String((p.schema as { description?: string }).description ?? '')
  return p.absent?.includes('') && !p.required ? `${text}. An empty value means the default.` : text
}

function errorExample(m: ApiMethod, code: string) {
  let message = EXAMPLE_MESSAGES[code] ?? `${code.replaceAll('_', ' ')}.`
  if (code === 'missing_parameter') message = `The parameter "${m.params.find((p) => p.required)!.name}" is required.`
  return { status: 'error', message, code }
}

/** The operation's id in the document, and its anchor on /api/docs: "getLink" for /api/getLink.json. */
export const operationId = (m: ApiMethod) => m.operationId ?? m.path.replace(/^\/api\//, '').replace(/\.json$/, '')

export function allErrorCodes(methods: ApiMethod[]): string[] {
  // not_found is also the answer for an /api path that does not exist.
  const codes = new Set<string>(['not_found'])
  for (const m of methods) for (const list of Object.values(answerCodes(m))) for (const c of list) codes.add(c)
  return [...codes].sort()
}

export function openApiDocument(methods: ApiMethod[], opts: OpenApiOptions) {
  const schemas: Record<string, unknown> = {}
  const paths: Record<string, Record<string, unknown>> = {}
  const mp = opts.marketplace ?? null

  for (const m of methods) {
    const success = {
      type: 'object',
      required: ['status', 'return'],
      additionalProperties: false,
      properties: { status: { const: 'success' }, return: m.returns ? hoist(m.returns, schemas) : {} },
    }
    const example = (m.returns as { examples?: unknown[] } | undefined)?.examples?.[0]
    const ok = {
      description: m.otherContent ? `Success: the envelope; ${m.otherContent.description}` : 'Success',
      headers: RATE_HEADERS,
      content: {
        'application/json': {
          schema: success,
          ...(example !== undefined
            ? { examples: { success: { value: { status: 'success', return: example } } } }
            : {}),
        },
        ...Object.fromEntries(
          (m.otherContent?.types ?? []).map((type) => [type, { schema: { description: m.otherContent!.description } }]),
        ),
      },
    }
    const responses: Record<string, unknown> = { '200': ok }
    for (const [status, codes] of Object.entries(answerCodes(m))) {
      const text = status === '413' && m.files?.length ? fileLimitText(m) : (STATUS_TEXT[Number(status)] ?? 'Error')
      responses[status] = {
        description: `${text}: ${codes.join(', ')}`,
        headers: headersFor(Number(status)),
        content: {
          'application/json': {
            schema: { allOf: [{ $ref: '#/components/schemas/Error' }], properties: { code: { enum: codes } } },
            examples: Object.fromEntries(codes.map((c) => [c, { value: errorExample(m, c) }])),
          },
        },
      }
    }

    const keyed = [{ apiKey: [] }, { bearer: [] }]
    const op: Record<string, unknown> = {
      operationId: operationId(m),
      summary: m.summary,
      ...(m.description ? { description: m.description } : {}),
      ...(m.tag ? { tags: [m.tag] } : {}),
      security:
        m.key === 'required'
          ? [...keyed, ...(m.marketplace && mp ? [{ marketplace: [], marketplaceUser: [] }] : [])]
          : [{}, ...keyed],
      responses,
    }
    if (m.scope) op['x-scope'] = m.scope
    // A method that takes a file takes a larger body than the others' 64 KiB.
    if (m.upload) {
      op['x-body-limit'] = m.upload.limit
      responses['413'] = {
        ...(responses['413'] as object),
        description: `The file is over ${m.upload.limit / 1048576} MiB: too_large`,
      }
    }

    if (m.verb === 'GET') {
      op.parameters = m.params.map((p) => {
        const schema = plain(p.schema)
        return {
          name: p.name,
          in: 'query',
          required: !!p.required,
          description: paramDescription(p),
          schema,
          ...(Array.isArray(schema.examples) ? { example: schema.examples[0] } : {}),
        }
      })
    } else {
      const properties: Record<string, unknown> = {}
      for (const p of m.params) properties[p.name] = { ...plain(p.schema), description: paramDescription(p) }
      const required = m.params.filter((p) => p.required).map((p) => p.name)
      // A parameter needed for one value of another (action=create needs url): JSON Schema's if/then.
      // The `then` names what it requires among its own properties too (the schema is the outer one's), so
      // that a linter that looks only inside `then` (redocly's no-required-schema-properties-undefined) finds them.
      const conditional = (m.requiredWhen ?? []).map((r) => ({
        if: { properties: { [r.param]: { const: r.value } }, required: [r.param] },
        then: {
          properties: Object.fromEntries(
            r.required.map((name) => [name, { description: `Required when ${r.param} is ${JSON.stringify(r.value)}` }]),
          ),
          required: r.required,
        },
      }))
      const schema = {
        type: 'object',
        properties,
        ...(required.length ? { required } : {}),
        ...(conditional.length ? { allOf: conditional } : {}),
      }
      const example = Object.fromEntries(
        m.params.flatMap((p) => {
          const ex = (p.schema as { examples?: unknown[] }).examples?.[0]
          return ex === undefined ? [] : [[p.name, ex]]
        }),
      )
      // Files come only in a multipart body: the other encodings cannot carry them.
      const files = m.files ?? []
      const multipart = files.length
        ? {
            schema: {
              ...schema,
              properties: {
                ...properties,
                ...Object.fromEntries(
                  files.map((f) => [f.name, { type: 'string', format: 'binary', description: f.description }]),
                ),
              },
            },
            encoding: Object.fromEntries(files.map((f) => [f.name, { contentType: f.types.join(', ') }])),
          }
        : { schema }
      op.requestBody = {
        required: required.length > 0,
        description:
          'Form fields (multipart and JSON bodies work too); unknown fields are ignored, and of a field given twice the last one counts.' +
          (files.length ? ` Files (${files.map((f) => f.name).join(', ')}) only in a multipart/form-data body.` : ''),
        content: {
          'application/x-www-form-urlencoded': { schema, example },
          'multipart/form-data': multipart,
          'application/json': { schema, example },
        },
      }
    }
    paths[m.path] = { ...(paths[m.path] ?? {}), [m.verb.toLowerCase()]: op }
  }

  const tags = [...new Set(methods.flatMap((m) => (m.tag ? [m.tag] : [])))].map((name) => ({
    name,
    ...(TAGS[name] ? { description: TAGS[name] } : {}),
  }))

  const webhooks = opts.webhooks?.length ? { webhooks: webhooksSection(opts.webhooks, schemas) } : {}

  return {
    openapi: '3.1.0',
    info: {
      title: 'linkbox',
      version: opts.version,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: opts.baseUrl }],
    tags,
    paths,
    ...webhooks,
    components: {
      securitySchemes: {
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Api-Key',
          description: 'An API key (see `linkbox key create`)',
        },
        bearer: { type: 'http', scheme: 'bearer', description: 'The same API key, as Authorization: Bearer <key>' },
        ...(mp
          ? {
              marketplace: {
                type: 'apiKey',
                in: 'header',
                name: mp.secretHeader,
                description: 'Marketplace route: the proxy secret',
              },
              marketplaceUser: {
                type: 'apiKey',
                in: 'header',
                name: mp.userHeader,
                description: 'Marketplace route: the buying user',
              },
            }
          : {}),
      },
      headers: {
        'RateLimit-Limit': integerHeader(
          'Requests allowed per minute to this caller (absent while it has no limit)',
          false,
          1,
        ),
        'RateLimit-Remaining': integerHeader('Requests left in the current minute'),
        'RateLimit-Reset': integerHeader('Seconds until the allowance is whole again', false, 1),
      },
      schemas: {
        ...schemas,
        Error: {
          type: 'object',
          required: ['status', 'message', 'code'],
          additionalProperties: false,
          properties: {
            status: { const: 'error' },
            message: { type: 'string', minLength: 1, description: 'For people: names the parameter or the cause' },
            code: { type: 'string', enum: allErrorCodes(methods), description: 'For programs: stable' },
          },
        },
      },
    },
  }
}
