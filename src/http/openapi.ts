// The OpenAPI document, generated from the same method list that serves /api, so the two cannot drift.
import type { ApiMethod } from './api'

const ERROR_CODES: Record<string, string> = {
  '400': 'Bad input: code invalid_url, invalid_alias, invalid_mode, invalid_expire, missing_parameter, invalid_parameter or invalid_body; the message names the parameter',
  '401': 'missing_key (a key is required) or invalid_key (unknown or revoked)',
  '403': 'scope_denied (the key lacks the scope) or not_owner (another account\'s link)',
  '404': 'not_found',
  '409': 'alias_taken or alias_reserved',
  '413': 'too_large: the body is over 64 KiB',
  '429': 'rate_limited: see Retry-After',
}

export function openApiDocument(methods: ApiMethod[], opts: { baseUrl: string; version: string }) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const m of methods) {
    const properties: Record<string, unknown> = {}
    const required: string[] = []
    for (const p of m.params) {
      properties[p.name] = { type: p.type ?? 'string', description: p.description }
      if (p.required) required.push(p.name)
    }
    const op: Record<string, unknown> = {
      summary: m.summary,
      operationId: m.path.replace(/^\/api\//, '').replace(/\.json$/, ''),
      security: m.key === 'required' ? [{ apiKey: [] }, ...(m.marketplace ? [{ marketplace: [] }] : [])] : [{}, { apiKey: [] }],
      responses: {
        '200': {
          description: 'Success: {"status":"success","return":{…}}',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Success' } } },
        },
        ...Object.fromEntries(
          Object.entries(ERROR_CODES).map(([status, description]) => [
            status,
            { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
          ]),
        ),
      },
    }
    if (m.scope) op['x-scope'] = m.scope
    if (m.verb === 'GET') {
      op.parameters = m.params.map((p) => ({
        name: p.name,
        in: 'query',
        required: !!p.required,
        description: p.description,
        schema: { type: p.type ?? 'string' },
      }))
    } else {
      const schema = { type: 'object', properties, ...(required.length ? { required } : {}) }
      op.requestBody = {
        required: required.length > 0,
        content: {
          'application/x-www-form-urlencoded': { schema },
          'multipart/form-data': { schema },
          'application/json': { schema },
        },
      }
    }
    paths[m.path] = { ...(paths[m.path] ?? {}), [m.verb.toLowerCase()]: op }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'linkbox',
      version: opts.version,
      description:
        'Short links with click statistics, QR codes, media download and temporary mail. Every answer is ' +
        '{"status":"success","return":…} or {"status":"error","message":…,"code":…}, with RateLimit-* headers.',
    },
    servers: [{ url: opts.baseUrl }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'Also accepted as Authorization: Bearer <key>' },
        marketplace: { type: 'apiKey', in: 'header', name: 'X-RapidAPI-Proxy-Secret', description: 'Marketplace route, when configured' },
      },
      schemas: {
        Success: {
          type: 'object',
          required: ['status', 'return'],
          properties: { status: { const: 'success' }, return: { type: 'object' } },
        },
        Error: {
          type: 'object',
          required: ['status', 'message', 'code'],
          properties: { status: { const: 'error' }, message: { type: 'string' }, code: { type: 'string' } },
        },
      },
    },
  }
}
