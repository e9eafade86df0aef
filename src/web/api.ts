// The /api surface: every method declared once and served through one pipeline (caller, rate limit, parameters,
// handler, envelope); the same declaration makes the OpenAPI document. Features add the methods.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { TSchema } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Authenticator, Caller, Scope } from '../kernel/caller'
import type { Config } from '../kernel/config'
import {
  AppError,
  internalError,
  invalidKey,
  invalidParameter,
  missingKey,
  missingParameter,
  notFound,
  rateLimited,
  scopeDenied,
} from '../kernel/errors'
import type { FaultLog } from './fault-log'
import { bodyParams, queryParams, type Params } from './params'
import { pathOf } from './path'
import { rateKeyOf } from './client-ip'
import type { RateDecision, RateLimiter } from './rate-limit'
import { assertCheckable, checkParams, isAbsent, type ApiParam } from './schema'

export const API_BODY_LIMIT = 64 * 1024

export interface ApiContext {
  params: Params
  caller: Caller | null
  request: Request
  clientIp: string
}

/** A file a POST method takes in a multipart/form-data body (qr.json's logo). */
export interface ApiFile {
  name: string
  /** The most bytes it may have: more is 413 too_large naming it. A multipart body may be this much over API_BODY_LIMIT. */
  maxBytes: number
  /** The media types it may be, for the documents (the handler sniffs the bytes, never trusts the part's type). */
  types: string[]
  description: string
  /** A blank value is kept as '' for the handler (update.json's og_image= removes the image), not dropped. */
  blankKept?: boolean
}

export interface ApiMethod {
  verb: 'GET' | 'POST'
  path: string
  /** The document's operationId when it is not the path's name (a path with two verbs needs two). */
  operationId?: string
  key: 'optional' | 'required'
  scope?: Scope
  /** Reachable through the marketplace proxy instead of a key (qr, media and mail methods). */
  marketplace?: boolean
  summary: string
  /** Longer text for the documents (Markdown in the OpenAPI document, plain text on the page). */
  description?: string
  /** The group in the documents (links, qr, …). */
  tag?: string
  /** Checked in this order before the handler runs (see schema.ts); documented in this order. */
  params: ApiParam[]
  /**
   * Parameters required only for one value of another (webhooks.json: `url` when action=create): checked
   * after `params`, a missing one is 400 missing_parameter; documented as if/then in the request schema.
   */
  requiredWhen?: { param: string; value: string; required: string[] }[]
  /** Files it takes besides `params` (POST, multipart bodies only); a text value in their place is 400. */
  files?: ApiFile[]
  /** The schema of the envelope's `return` on success, with `examples`. */
  returns?: TSchema
  /** Other 200 answers (raw=1 images): when they are given, and their content types. */
  otherContent?: { description: string; types: string[] }
  /** Optional parameters the documents' example request sends too (at their schemas' examples). */
  exampleWith?: string[]
  /** More example requests the documents show (and test/e2e/docs.test.ts runs): each sends these optional parameters too. */
  moreExamples?: { title: string; with: string[] }[]
  /** The errors the handler itself can give beyond the parameters' own, by HTTP status: machine codes. */
  errors?: Partial<Record<number, string[]>>
  /**
   * A method that takes a file (import.json): the body may be up to `limit` bytes (plus a little for a
   * multipart envelope), a multipart field `param` holding a file is read as its UTF-8 text, and a body of
   * one of `types` (text/csv) is that parameter whole. A larger file is 413 too_large naming `param`.
   */
  upload?: { param: string; limit: number; types: string[] }
  /** POST parameters may also come in the query string (the body's win): links.json?format=csv. */
  queryToo?: boolean
  /** Returns the envelope's `return`, or a Response (for raw images) that is sent as is. */
  handler: (ctx: ApiContext) => unknown | Promise<unknown>
}

/** Every error answer a method can give, by HTTP status, with the machine codes of each. */
export function answerCodes(m: ApiMethod): Record<number, string[]> {
  const out: Record<number, string[]> = {}
  const add = (status: number, ...codes: string[]) => {
    const list = (out[status] ??= [])
    for (const c of codes) if (!list.includes(c)) list.push(c)
  }
  // 400: the parameters' own codes; a name or value that is not UTF-8 (params.ts); a bad body on POST.
  if (m.params.some((p) => p.required)) add(400, 'missing_parameter')
  for (const p of m.params) add(400, p.error.code)
  add(400, 'invalid_parameter')
  if (m.verb === 'POST') add(400, 'invalid_body', 'aborted')
  // 401: a key that is unknown counts even where a key is optional; "no key" only where one is required.
  add(401, ...(m.key === 'required' ? ['missing_key'] : []), 'invalid_key')
  if (m.scope) add(403, 'scope_denied')
  // 405 is the answer for this path with another verb; 408 and 413 concern request bodies (POST only).
  add(405, 'method_not_allowed')
  if (m.verb === 'POST') add(408, 'timeout')
  if (m.verb === 'POST') add(413, 'too_large')
  add(429, 'rate_limited')
  add(500, 'internal')
  for (const [status, codes] of Object.entries(m.errors ?? {})) add(Number(status), ...codes!)
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => Number(a) - Number(b)))
}

const kib = (bytes: number) => `${bytes} bytes (${Math.round(bytes / 1024)} KiB)`

/** A POST body: at most API_BODY_LIMIT bytes, and as much more as its files may be when it is multipart. */
async function readBody(method: ApiMethod, request: Request): Promise<Params> {
  const files = method.files ?? []
  const multipart = /^\s*multipart\/form-data\s*(;|$)/i.test(request.headers.get('content-type') ?? '')
  if (files.length === 0 || !multipart) return bodyParams(request, API_BODY_LIMIT, method.upload)
  const limit = API_BODY_LIMIT + files.reduce((sum, f) => sum + f.maxBytes, 0)
  try {
    return await bodyParams(request, limit)
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'too_large') throw err
    const each = files.map((f) => `"${f.name}" at most ${kib(f.maxBytes)}`).join(', ')
    throw new AppError(
      413,
      'too_large',
      `The request body is larger than the limit of ${limit} bytes: the file parameter ${each}.`,
    )
  }
}

/** Each declared file is absent, or a file within its limit; a blank text value counts as absent. */
function checkFiles(method: ApiMethod, params: Params) {
  for (const f of method.files ?? []) {
    const v = params[f.name]
    if (v === '' && f.blankKept) continue
    if (v === undefined || v === null || v === '') {
      delete params[f.name]
      continue
    }
    if (!(v instanceof Blob))
      throw invalidParameter(f.name, `it must be a file (${f.types.join(' or ')}) sent in a multipart/form-data body`)
    if (v.size > f.maxBytes)
      throw new AppError(
        413,
        'too_large',
        `The parameter "${f.name}" is larger than the limit of ${kib(f.maxBytes)}: it has ${v.size} bytes.`,
      )
  }
}

export interface ApiDeps {
  config: Config
  accounts: Authenticator
  limiter: RateLimiter
  clientIp: (request: Request) => string
  /** Where a method's unexpected error goes (with its stack; the answer never shows it). */
  faults: FaultLog
  /** An error that says the database cannot be reached, as its 503 (null for any other): app.ts, from the health. */
  unavailable?: (err: unknown) => AppError | null
  /** Told of every answer (for metrics). */
  onAnswer?: (method: ApiMethod, status: number) => void
}

// Keys travel in headers, never in cookies, so any web page may call the API with its own key: CORS is
// open, and browsers may read the rate-limit headers.
const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After',
}
const PREFLIGHT_HEADERS = {
  ...CORS_HEADERS,
  'access-control-allow-methods': 'GET, POST',
  'access-control-allow-headers': 'X-Api-Key, Authorization, Content-Type',
  'access-control-max-age': '86400',
}
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...CORS_HEADERS }

// Made once: a Response copies a Headers object into its own headers (a change to them leaves this one as it
// is), ~1 µs less per answer than reading a plain object's properties.
const JSON_HEADER_SET = new Headers(JSON_HEADERS)

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  let all = JSON_HEADER_SET
  for (const name in headers) {
    if (all === JSON_HEADER_SET) all = new Headers(JSON_HEADER_SET)
    all.set(name, headers[name]!)
  }
  return new Response(JSON.stringify(body), { status, headers: all })
}

/** The client went away mid-request: nothing to report, and nobody to answer. */
const isAbort = (err: unknown) => err instanceof Error && err.name === 'AbortError'

/** The envelope of an error; anything but an AppError is an internal error (the caller logs it as a fault). */
export function errorResponse(err: unknown, headers: Record<string, string> = {}): Response {
  const e =
    err instanceof AppError
      ? err
      : isAbort(err)
        ? new AppError(400, 'aborted', 'The request was aborted.')
        : internalError()
  return jsonResponse(e.status, { status: 'error', message: e.message, code: e.code }, { ...headers, ...e.headers })
}

function rateHeaders(d: RateDecision | null): Record<string, string> {
  if (!d || d.limit === 0) return {}
  return {
    'RateLimit-Limit': String(d.limit),
    'RateLimit-Remaining': String(d.remaining),
    'RateLimit-Reset': String(d.reset),
  }
}

const digest = (s: string) => createHash('sha256').update(s).digest()
/** Same text, compared in constant time (digests, so that the length does not leak either). */
export function sameSecret(given: string, expected: string): boolean {
  // Compare digests so that neither the length nor the content leaks through timing.
  return timingSafeEqual(digest(given), digest(expected))
}

function keyOf(request: Request): string | null {
  const header = request.headers.get('x-api-key')
  if (header) return header.trim()
  const auth = request.headers.get('authorization')
  if (auth && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, '').trim()
  return null
}

export function createApi(methods: ApiMethod[], deps: ApiDeps) {
  const { config, accounts, limiter } = deps
  const mp = config.marketplace
  for (const m of methods) for (const p of m.params) assertCheckable(p.schema, `${m.path} ${p.name}`)

  async function resolveCaller(method: ApiMethod, request: Request): Promise<Caller | null> {
    const raw = keyOf(request)
    if (raw) {
      const caller = await accounts.authenticate(raw)
      if (!caller) throw invalidKey()
      return caller
    }
    if (method.marketplace && mp.proxy_secret) {
      const secret = request.headers.get(mp.secret_header)
      if (secret !== null) {
        if (!sameSecret(secret, mp.proxy_secret))
          throw new AppError(401, 'invalid_key', `The ${mp.secret_header} header does not match.`)
        const user = (request.headers.get(mp.user_header) ?? '').trim()
        if (!/^[\x21-\x7e]{1,128}$/.test(user))
          throw new AppError(401, 'missing_key', `A marketplace request needs the ${mp.user_header} header.`)
        return accounts.marketplaceCaller(user, deps.clientIp(request))
      }
    }
    return null
  }

  async function serve(method: ApiMethod, request: Request): Promise<Response> {
    const response = await answer(method, request)
    deps.onAnswer?.(method, response.status)
    return response
  }

  async function answer(method: ApiMethod, request: Request): Promise<Response> {
    const clientIp = deps.clientIp(request)
    let decision: RateDecision | null = null
    try {
      let caller: Caller | null
      try {
        caller = await resolveCaller(method, request)
      } catch (err) {
        // A bad credential still counts against the client's anonymous allowance.
        decision = limiter.hit(`ip:${rateKeyOf(clientIp)}`, config.rate.anon_per_minute)
        if (!decision.allowed) throw rateLimited(decision.reset)
        throw err
      }
      decision = caller
        ? limiter.hit(
            caller.keyId !== null ? `key:${caller.keyId}` : `acct:${caller.accountId}`,
            config.rate.key_per_minute,
          )
        : limiter.hit(`ip:${rateKeyOf(clientIp)}`, config.rate.anon_per_minute)
      if (!decision.allowed) throw rateLimited(decision.reset)
      if (method.key === 'required' && !caller) throw missingKey()
      if (caller && method.scope && !caller.scopes.has(method.scope)) throw scopeDenied(method.scope)
      const params = method.verb === 'GET' ? queryParams(request.url) : await readBody(method, request)
      if (method.verb === 'POST' && method.queryToo)
        for (const [k, v] of Object.entries(queryParams(request.url))) if (!(k in params)) params[k] = v
      checkFiles(method, params)
      checkParams(method.params, params)
      for (const rule of method.requiredWhen ?? []) {
        if (params[rule.param] !== rule.value) continue
        for (const name of rule.required) {
          const declared = method.params.find((p) => p.name === name)!
          if (isAbsent(declared, params[name])) throw missingParameter(name)
        }
      }
      const result = await method.handler({ params, caller, request, clientIp })
      if (result instanceof Response) {
        for (const [k, v] of Object.entries({ ...CORS_HEADERS, ...rateHeaders(decision) })) result.headers.set(k, v)
        return result
      }
      return jsonResponse(200, { status: 'success', return: result }, rateHeaders(decision))
    } catch (thrown) {
      const err = thrown instanceof AppError ? thrown : (deps.unavailable?.(thrown) ?? thrown)
      if (!(err instanceof AppError) && !isAbort(err)) deps.faults.fault('internal error', err)
      return errorResponse(err, rateHeaders(decision))
    }
  }

  const byPath = new Map<string, ApiMethod[]>()
  for (const m of methods) byPath.set(m.path, [...(byPath.get(m.path) ?? []), m])

  /** The bucket a request without a method counts against: its key's when the key is valid, else its address's. */
  async function unmatchedDecision(request: Request): Promise<RateDecision> {
    const raw = keyOf(request)
    const caller = raw ? await accounts.authenticate(raw) : null
    return caller
      ? limiter.hit(
          caller.keyId !== null ? `key:${caller.keyId}` : `acct:${caller.accountId}`,
          config.rate.key_per_minute,
        )
      : limiter.hit(`ip:${rateKeyOf(deps.clientIp(request))}`, config.rate.anon_per_minute)
  }

  async function unmatched(request: Request): Promise<Response> {
    // Never `new URL(request.url)`: a malformed Host header makes it throw (see path.ts).
    const path = pathOf(request.url)
    const known = byPath.get(path)
    if (known && request.method === 'OPTIONS') return new Response(null, { status: 204, headers: PREFLIGHT_HEADERS })
    // Unknown paths and wrong verbs count against the caller's allowance like any request, and say so.
    const decision = await unmatchedDecision(request)
    const headers = rateHeaders(decision)
    if (!decision.allowed) return errorResponse(rateLimited(decision.reset), headers)
    const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path
    if (known) {
      const allow = known.map((m) => m.verb).join(', ')
      return errorResponse(
        new AppError(405, 'method_not_allowed', `${shown} takes ${allow}, not ${request.method}.`, { Allow: allow }),
        headers,
      )
    }
    return errorResponse(notFound(`There is no API method ${shown}.`), headers)
  }

  /**
   * Answers a request for any /api path by its own path and verb. Elysia finds a route's path by searching
   * for "/" from the 12th character of the URL, which skips the first slash when the Host is shorter than
   * four characters ("nas", "pi"): such requests come here instead of through the router.
   */
  function dispatch(request: Request): Promise<Response> | Response {
    const method = methodOf(request, pathOf(request.url))
    return method ? serve(method, request) : unmatched(request)
  }

  /** The method whose path and verb the request has, or undefined. */
  const methodOf = (request: Request, path: string) => byPath.get(path)?.find((m) => m.verb === request.method)

  /**
   * The pipeline's hot route for the API (web/pipeline.ts): a request for a method's own path and verb is
   * answered as its route would answer it, without the router (~8 µs of a creation); anything else under
   * /api (a wrong verb, HEAD, an unknown method, /api/docs) goes on to the router.
   */
  function hot(request: Request, id: string): Promise<Response> | undefined {
    const path = pathOf(request.url)
    const method = path.startsWith('/api/') ? methodOf(request, path) : undefined
    if (!method) return undefined
    return serve(method, request).then((res) => {
      try {
        res.headers.set('x-request-id', id)
      } catch {
        // Immutable headers: no method answers with those (see pipeline.ts finish).
      }
      return res
    })
  }

  // Elysia registers routes on the instance itself; the chained return values only refine types.
  const plugin = new Elysia({ name: 'api' })
  for (const m of methods) {
    const handle = ({ request }: { request: Request }) => serve(m, request)
    if (m.verb === 'GET') plugin.get(m.path, handle, { parse: 'none' })
    else plugin.post(m.path, handle, { parse: 'none' })
  }
  plugin.all('/api', ({ request }) => unmatched(request), { parse: 'none' })
  plugin.all('/api/*', ({ request }) => unmatched(request), { parse: 'none' })
  return { plugin, methods, dispatch, hot }
}
