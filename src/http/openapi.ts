// The OpenAPI 3.1 document, generated from the same method declarations that serve /api: the parameter
// schemas the pipeline checks requests against, the schema of each method's `return`, and the error
// answers the pipeline can give for it (answerCodes in api.ts). Nothing here is written by hand per method,
// so the document and the code cannot drift; test/contract.test.ts holds every answer to it.
import type { TSchema } from '@sinclair/typebox'
import { answerCodes, type ApiMethod } from './api'
import type { ApiParam } from './schema'

export interface OpenApiOptions {
  baseUrl: string
  version: string
  /** The marketplace route's header names, when the route is configured (marketplace.proxy_secret). */
  marketplace?: { secretHeader: string; userHeader: string } | null
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

const STATUS_TEXT: Record<number, string> = {
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
  private_address: 'The parameter "url" leads to a private or local network address, which this service does not fetch.',
  upstream_failed: 'The page could not be read: HTTP Error 404: Not Found.',
  unavailable: 'Media download is not available: no yt-dlp was found (see `linkbox doctor`).',
  invalid_url: 'The parameter "url" must be an absolute URL with the scheme http or https.',
  too_many_webhooks: 'An account can have at most 20 webhooks: delete one first.',
  storage_unavailable: 'The change could not be stored: the database cannot be written right now (disk full or read-only). Try again later.',
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
  if (status === 429) return { ...RATE_HEADERS, 'Retry-After': integerHeader('Seconds until a request is allowed again', true, 1) }
  if (status === 503) return { ...RATE_HEADERS, 'Retry-After': integerHeader('Seconds to wait before trying again, when known') }
  if (status === 405) return { ...RATE_HEADERS, Allow: { description: 'The methods this path answers', required: true, schema: { type: 'string' } } }
  return RATE_HEADERS
}

/** A plain JSON copy (TypeBox marks its schemas with symbol keys) in which every schema with a `title`
 *  becomes a named component, referenced where it is used. */
function hoist(schema: TSchema, components: Record<string, unknown>): unknown {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk)
    if (typeof v !== 'object' || v === null) return v
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) out[k] = k === 'examples' || k === 'default' || k === 'enum' ? structuredClone(x) : walk(x)
    const title = (v as { title?: unknown }).title
    if (typeof title === 'string') {
      components[title] = out
      return { $ref: `#/components/schemas/${title}` }
    }
    return out
  }
  return walk(schema)
}

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
          ...(example !== undefined ? { examples: { success: { value: { status: 'success', return: example } } } } : {}),
        },
        ...Object.fromEntries((m.otherContent?.types ?? []).map((type) => [type, { schema: { description: m.otherContent!.description } }])),
      },
    }
    const responses: Record<string, unknown> = { '200': ok }
    for (const [status, codes] of Object.entries(answerCodes(m))) {
      responses[status] = {
        description: `${STATUS_TEXT[Number(status)] ?? 'Error'}: ${codes.join(', ')}`,
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
      operationId: m.operationId ?? m.path.replace(/^\/api\//, '').replace(/\.json$/, ''),
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
      const conditional = (m.requiredWhen ?? []).map((r) => ({
        if: { properties: { [r.param]: { const: r.value } }, required: [r.param] },
        then: { required: r.required },
      }))
      const schema = { type: 'object', properties, ...(required.length ? { required } : {}), ...(conditional.length ? { allOf: conditional } : {}) }
      const example = Object.fromEntries(
        m.params.flatMap((p) => {
          const ex = (p.schema as { examples?: unknown[] }).examples?.[0]
          return ex === undefined ? [] : [[p.name, ex]]
        }),
      )
      op.requestBody = {
        required: required.length > 0,
        description: 'Form fields (multipart and JSON bodies work too); unknown fields are ignored, and of a field given twice the last one counts.',
        content: {
          'application/x-www-form-urlencoded': { schema, example },
          'multipart/form-data': { schema },
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

  return {
    openapi: '3.1.0',
    info: {
      title: 'linkbox',
      version: opts.version,
      description:
        'Short links with click statistics, QR codes, temporary e-mail inboxes, media download with signed ' +
        'links, and webhooks for link and mail events. Every answer is ' +
        '{"status":"success","return":…} or {"status":"error","message":…,"code":…}, with RateLimit-* headers ' +
        'while the caller has a rate limit. POST methods take form fields, GET methods the query string.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: opts.baseUrl }],
    tags,
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'An API key (see `linkbox key create`)' },
        bearer: { type: 'http', scheme: 'bearer', description: 'The same API key, as Authorization: Bearer <key>' },
        ...(mp
          ? {
              marketplace: { type: 'apiKey', in: 'header', name: mp.secretHeader, description: 'Marketplace route: the proxy secret' },
              marketplaceUser: { type: 'apiKey', in: 'header', name: mp.userHeader, description: 'Marketplace route: the buying user' },
            }
          : {}),
      },
      headers: {
        'RateLimit-Limit': integerHeader('Requests allowed per minute to this caller (absent while it has no limit)', false, 1),
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
