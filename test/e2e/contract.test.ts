// The contract: the OpenAPI document the service publishes must be valid, and every answer must match it.
// The app listens on a real socket; the document is fetched from it and validated with swagger-parser;
// then, for every operation, requests are generated from the document alone (examples, enum members,
// defaults, boundary values as valid input; out-of-range, wrong-type, bad-pattern and missing values as
// invalid input; with and without keys as the security asks) and every answer is checked with ajv against
// what the document declares for it: its status, headers and body. Code and document cannot drift apart
// without this failing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createQrRenderer } from '../../src/qr/renderer'
import { tempDir, testConfig, sqliteLinkbox, type SqliteLinkbox } from '../support/app'

type Schema = Record<string, any>
type Doc = Record<string, any>

interface Op {
  path: string
  verb: 'GET' | 'POST'
  op: Schema
  /** Parameter name → its schema and whether it is required (query parameters or body fields). */
  params: { name: string; schema: Schema; required: boolean }[]
  /** Parameters required when another has a given value (the body schema's allOf of if/then). */
  conditional: { param: string; value: unknown; required: string[] }[]
}

const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true })
addFormats(ajv)
const compiled = new Map<object, ValidateFunction>()
function validator(schema: Schema): ValidateFunction {
  let v = compiled.get(schema)
  if (!v) compiled.set(schema, (v = ajv.compile(schema)))
  return v
}
const valid = (schema: Schema, value: unknown) => validator(schema)(value) as boolean

const RATE = { anon_per_minute: 100_000, key_per_minute: 100_000 }
const MP = { proxy_secret: 'mp-secret' }

/** What yt-dlp -J says of the example page: one video with audio, one video-only and one audio-only format. */
const EXAMPLE_INFO = {
  id: '42',
  title: 'A walk in the park',
  extractor_key: 'Generic',
  webpage_url: 'https://video.example.com/watch/42',
  duration: 61.5,
  thumbnail: 'https://video.example.com/thumbs/42.jpg',
  formats: [
    {
      format_id: 'a',
      ext: 'm4a',
      protocol: 'https',
      url: 'https://cdn.example.com/42.m4a',
      vcodec: 'none',
      acodec: 'mp4a.40.2',
      filesize: 1000,
    },
    {
      format_id: 'v',
      ext: 'mp4',
      protocol: 'https',
      url: 'https://cdn.example.com/42-v.mp4',
      vcodec: 'avc1',
      acodec: 'none',
      width: 1280,
      height: 720,
      fps: 30,
    },
    {
      format_id: 'mp4-720p',
      ext: 'mp4',
      protocol: 'https',
      url: 'https://cdn.example.com/42.mp4',
      vcodec: 'avc1',
      acodec: 'mp4a',
      width: 1280,
      height: 720,
      fps: 30,
      format_note: '720p',
    },
  ],
}

let dir: string
let box: SqliteLinkbox
let base: string
let raw: Doc // as published
let doc: Doc // dereferenced
let ops: Op[]
const keys: Record<'owner' | 'other' | 'noScope' | 'noMail', string> = { owner: '', other: '', noScope: '', noMail: '' }
/** Status and content type of every answer seen, per operation. */
const seen = new Map<string, Set<string>>()

beforeAll(async () => {
  dir = tempDir()
  // download.json's example page (video.example.com) cannot be reached from here: its name is given a public
  // address, and a stand-in for yt-dlp (a shell script, run by the service as media.ytdlp_path, through the
  // same subprocess code) describes it. The real yt-dlp against real pages is media.test.ts's business; this
  // file checks answers against the document.
  const standIn = `${dir}/yt-dlp-stand-in`
  // It answers --version as a yt-dlp the service may run (2024.07.01 or later) does.
  writeFileSync(
    standIn,
    `#!/bin/sh\nif [ "$1" = --version ]; then echo 2025.04.30; exit 0; fi\ncat <<'JSON'\n${JSON.stringify(EXAMPLE_INFO)}\nJSON\n`,
    { mode: 0o755 },
  )
  box = sqliteLinkbox(
    testConfig(dir, {
      // go.example.com: the domain parameter's documented example is one of this server's short domains.
      server: { host: '127.0.0.1', port: 0, domains: ['go.example.com'] },
      rate: RATE,
      marketplace: MP,
      media: { ytdlp_path: standIn },
    }),
    { resolve: async (host) => (host === 'video.example.com' ? ['93.184.215.14'] : []) },
  )
  base = `http://127.0.0.1:${box.listen().port}`
  keys.owner = (await box.accounts.createAccount({ name: 'owner' })).key.key
  keys.other = (await box.accounts.createAccount({ name: 'other' })).key.key
  await box.accounts.createAccount({ name: 'narrow', scopes: ['mail'] })
  keys.noScope = (await box.accounts.createKey({ account: 'narrow', scopes: ['mail'] })).key
  // For the mail methods: every scope but theirs.
  keys.noMail = (await box.accounts.createKey({ account: 'narrow', scopes: ['links', 'qr', 'media', 'webhooks'] })).key
  const res = await fetch(`${base}/api/docs/openapi.json`)
  expect(res.status).toBe(200)
  raw = await res.json()
  doc = (await SwaggerParser.dereference(structuredClone(raw) as never)) as Doc
  ops = []
  for (const [path, item] of Object.entries(doc.paths as Record<string, Schema>))
    for (const [verb, op] of Object.entries(item)) {
      const params =
        verb === 'get'
          ? (op.parameters ?? []).map((p: Schema) => ({ name: p.name, schema: p.schema, required: !!p.required }))
          : Object.entries(
              op.requestBody.content['application/x-www-form-urlencoded'].schema.properties as Record<string, Schema>,
            ).map(([name, schema]) => ({
              name,
              schema,
              required: (op.requestBody.content['application/x-www-form-urlencoded'].schema.required ?? []).includes(
                name,
              ),
            }))
      const body = verb === 'get' ? null : op.requestBody.content['application/x-www-form-urlencoded'].schema
      const conditional = ((body?.allOf ?? []) as Schema[]).map((c) => {
        const [param, cond] = Object.entries(c.if.properties as Record<string, Schema>)[0]!
        return { param, value: cond.const, required: c.then.required as string[] }
      })
      ops.push({ path, verb: verb.toUpperCase() as Op['verb'], op, params, conditional })
    }
  await fixture()
  await mailFixture()
})

/** The link the examples name ("code": "Ab3dE9"), owned by the owner's account; made again once deleted. */
/**
 * The mailbox the documents' examples name (signup-test), the owner's, holding message 17 (the example id)
 * with an attachment: delivered through the service's own delivery path, as SMTP would (mail.test.ts
 * delivers over real sockets).
 */
async function mailFixture() {
  const owner = (await box.accounts.authenticate(keys.owner))!
  await box.mail.getOrCreate(owner, 'signup-test')
  const check = await box.mail.checkRecipient('signup-test@localhost')
  if (!check.ok) throw new Error('the fixture mailbox does not take mail')
  const has17 = () =>
    box.db.query('SELECT 1 FROM mail_messages WHERE id = 17 AND mailbox_id = ?').get(check.mailboxId) !== null
  if (has17()) return
  // Made again once deleted (POST mailbox.json and message.json delete it): one message, given id 17 (ids
  // are never handed out twice, so delivery alone could not make it again).
  for (let i = mailMade ? 17 : 1; i <= 17; i++) {
    const bytes = Buffer.from(
      'From: Example <no-reply@example.com>\r\nTo: signup-test@localhost\r\nSubject: Confirm ' +
        i +
        '\r\n' +
        'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n' +
        'Confirm: https://example.com/confirm?t=' +
        i +
        '\r\n--b\r\nContent-Type: text/plain; name=a.txt\r\n' +
        'Content-Disposition: attachment; filename=a.txt\r\n\r\nhello\r\n--b--\r\n',
    )
    const [id] = await box.mail.deliver(
      { size: bytes.length, oversize: false, bytes, file: null },
      'no-reply@example.com',
      [check.mailboxId],
      () => false,
    )
    if (i === 17 && id !== 17)
      box.db.transaction(() => {
        box.db.run('PRAGMA defer_foreign_keys = ON')
        box.db.query('UPDATE mail_messages SET id = 17 WHERE id = ?').run(id!)
        box.db.query('UPDATE mail_attachments SET message_id = 17 WHERE message_id = ?').run(id!)
      })()
  }
  if (!has17()) throw new Error('the fixture message 17 is missing')
  mailMade = true
}
let mailMade = false

async function fixture() {
  await webhookFixture()
  await mailFixture()
  if (await box.links.resolve('Ab3dE9')) return
  await box.links.create(
    { url: 'https://example.com/fixture', alias: 'Ab3dE9' },
    (await box.accounts.authenticate(keys.owner))!,
  )
}

/**
 * The webhook and the event the examples name (id 1, event 1), the owner's. Rows with given ids, made again
 * once deleted (ids are never handed out twice, so the API could not make id 1 again).
 */
async function webhookFixture() {
  const owner = (await box.accounts.authenticate(keys.owner))!.accountId
  box.db
    .query(
      "INSERT OR IGNORE INTO webhook_endpoints (id, account_id, url, events, secret, created) VALUES (1, ?, 'https://hooks.example.com/linkbox', 'link.created', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 0)",
    )
    .run(owner)
  box.db
    .query(
      `INSERT OR IGNORE INTO webhook_events (id, account_id, type, created, payload) VALUES (1, ?, 'link.created', 0, '{"type":"link.created","timestamp":"1970-01-01T00:00:00.000Z","data":{}}')`,
    )
    .run(owner)
  box.outbox.reload()
}

afterAll(async () => {
  await box?.close()
  rmSync(dir, { recursive: true, force: true })
})

// ---------------------------------------------------------------------------------------------------------
// Values from schemas

const examplesOf = (s: Schema): unknown[] => [
  ...(s.examples ?? []),
  ...(s.enum ?? []),
  ...(s.default !== undefined ? [s.default] : []),
  ...(s.anyOf ?? []).flatMap(examplesOf),
]

/** Values the schema accepts: its examples, enum members, default and boundaries. */
function validValues(s: Schema): unknown[] {
  const out = [...examplesOf(s)]
  for (const b of [s, ...(s.anyOf ?? [])]) {
    if (b.minimum !== undefined) out.push(b.minimum)
    if (b.maximum !== undefined) out.push(b.maximum)
    if (b.minLength !== undefined) out.push('a'.repeat(Math.max(1, b.minLength)))
    if (b.maxLength !== undefined) out.push('a'.repeat(b.maxLength))
  }
  return [...new Set(out)].filter((v) => valid(s, v))
}

/** Values the schema refuses (the empty string is left out: a blank field means "not given"). */
function invalidValues(s: Schema): unknown[] {
  const example = String(examplesOf(s)[0] ?? 'x')
  const out: unknown[] = [
    'not-a-member',
    'abc',
    '!',
    ` ${example}`,
    `${example}\u0000`,
    'ftp://example.com/',
    '2024-02-30',
    '１２',
    '-1',
    '1.5',
  ]
  for (const b of [s, ...(s.anyOf ?? [])]) {
    if (b.minimum !== undefined) out.push(b.minimum - 1)
    if (b.maximum !== undefined) out.push(b.maximum + 1)
    if (b.minLength > 1) out.push('a'.repeat(b.minLength - 1))
    if (b.maxLength !== undefined) out.push('a'.repeat(b.maxLength + 1))
  }
  return [...new Set(out)].filter((v) => !valid(s, v))
}

/** How a form or query string carries a value of this schema: integers as digits, booleans as true/false. */
function fromForm(s: Schema, text: string): unknown {
  if (s.type === 'integer' && /^-?[0-9]+$/.test(text)) return Number(text)
  if (s.type === 'boolean' && (text === 'true' || text === 'false')) return text === 'true'
  return text
}

// ---------------------------------------------------------------------------------------------------------
// Sending and checking

type Auth = 'none' | 'key' | 'bearer' | 'otherKey' | 'noScope' | 'noMail' | 'badKey' | 'marketplace'
function authHeaders(auth: Auth): Record<string, string> {
  switch (auth) {
    case 'none':
      return {}
    case 'key':
      return { 'X-Api-Key': keys.owner }
    case 'bearer':
      return { Authorization: `Bearer ${keys.owner}` }
    case 'otherKey':
      return { 'X-Api-Key': keys.other }
    case 'noScope':
      return { 'X-Api-Key': keys.noScope }
    case 'noMail':
      return { 'X-Api-Key': keys.noMail }
    case 'badKey':
      return { 'X-Api-Key': 'lbk_unknown' }
    case 'marketplace':
      return { 'X-RapidAPI-Proxy-Secret': MP.proxy_secret, 'X-RapidAPI-User': 'buyer-1' }
  }
}

/** The auth a valid request of this operation uses: none where a key is optional, else a key. */
const keyOptional = (o: Op) => (o.op.security as Schema[]).some((r) => Object.keys(r).length === 0)

async function send(
  o: Op,
  fields: Record<string, unknown>,
  opts: { auth: Auth; json?: boolean; verb?: string; target?: string; headers?: Record<string, string> },
) {
  const headers = opts.headers ?? authHeaders(opts.auth)
  const verb = opts.verb ?? o.verb
  const at = opts.target ?? base
  if (verb === 'GET') {
    const qs = new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, String(v)])).toString()
    return fetch(`${at}${o.path}${qs ? `?${qs}` : ''}`, { headers })
  }
  const body = opts.json
    ? JSON.stringify(fields)
    : new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, String(v)])).toString()
  const type = opts.json ? 'application/json' : 'application/x-www-form-urlencoded'
  return fetch(`${at}${o.path}`, { method: verb, headers: { ...headers, 'content-type': type }, body })
}

const RATE_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']
const WATCHED = [...RATE_HEADERS, 'Retry-After', 'Allow']

/** Checks an answer against the operation's declared response; returns the parsed JSON body (if any). */
async function check(o: Op, res: Response, where: string, opts: { limited?: boolean } = { limited: true }) {
  const bytes = new Uint8Array(await res.arrayBuffer())
  const text = new TextDecoder().decode(bytes)
  const at = `${o.verb} ${o.path} ${where}: ${res.status} ${text.slice(0, 300)}`
  const declared = o.op.responses[String(res.status)]
  expect(declared, `status not in the document — ${at}`).toBeDefined()
  // Headers: the required ones present, every present one declared (for this status) and of its schema.
  const headers = (declared.headers ?? {}) as Record<string, Schema>
  for (const [name, h] of Object.entries(headers)) {
    const value = res.headers.get(name)
    if (h.required) expect(value, `${name} missing — ${at}`).not.toBeNull()
    if (value !== null) expect(valid(h.schema, fromForm(h.schema, value)), `${name}: ${value} — ${at}`).toBe(true)
  }
  for (const name of WATCHED)
    if (res.headers.has(name)) expect(Object.keys(headers), `${name} not declared — ${at}`).toContain(name)
  // With rate limits configured, every answer carries the RateLimit-* headers.
  if (opts.limited) for (const name of RATE_HEADERS) expect(res.headers.get(name), `${name} — ${at}`).not.toBeNull()
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim()
  expect(Object.keys(declared.content ?? {}), `content type ${type} — ${at}`).toContain(type)
  seen.get(`${o.verb} ${o.path}`)?.add(`${res.status} ${type}`) ??
    seen.set(`${o.verb} ${o.path}`, new Set([`${res.status} ${type}`]))
  if (type === 'application/json') {
    const body = JSON.parse(text)
    const v = validator(declared.content[type].schema)
    expect(v(body), `${JSON.stringify(v.errors)} — ${at}`).toBe(true)
    return body
  }
  if (type === 'image/png') expect([...bytes.slice(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  else if (type === 'image/svg+xml') expect(text).toContain('<svg')
  return null
}

/**
 * import.json's file must be of the format asked for: with a format other than linkbox's own, the request
 * carries that tool's sample export (test/fixtures/import) instead of the document's example file.
 */
function withFileOfFormat(o: Op, fields: Record<string, unknown>): Record<string, unknown> {
  if (o.path !== '/api/import.json' || typeof fields.format !== 'string' || fields.format === 'csv') return fields
  // auto: a file recognised by its header row (Shlink's export here).
  const name = fields.format === 'kutt' ? 'kutt.json' : fields.format === 'auto' ? 'shlink.csv' : `${fields.format}.csv`
  return { ...fields, file: readFileSync(join(import.meta.dir, '..', 'fixtures', 'import', name), 'utf8') }
}

/** Valid values of every required parameter: the base that one varied parameter is added to. */
function requiredBase(o: Op): Record<string, unknown> {
  return complete(
    o,
    Object.fromEntries(o.params.filter((p) => p.required).map((p) => [p.name, validValues(p.schema)[0]])),
  )
}

/** `fields` with the parameters its values make required (action=create needs url) added at a valid value. */
function complete(o: Op, fields: Record<string, unknown>): Record<string, unknown> {
  const out = { ...fields }
  for (const c of o.conditional)
    if (out[c.param] === c.value)
      for (const name of c.required)
        if (out[name] === undefined) out[name] = validValues(o.params.find((p) => p.name === name)!.schema)[0]
  return out
}

/** A base per value that makes other parameters required (each action of webhooks.json), or just the one base. */
function actionBases(o: Op): Record<string, unknown>[] {
  const values = [...new Set(o.conditional.map((c) => c.value))]
  if (values.length === 0) return [requiredBase(o)]
  const param = o.conditional[0]!.param
  return [requiredBase(o), ...values.map((v) => complete(o, { ...requiredBase(o), [param]: v }))]
}

// ---------------------------------------------------------------------------------------------------------
// The document itself

describe('the document', () => {
  test('is a valid OpenAPI 3.1 document (swagger-parser)', async () => {
    expect(raw.openapi).toBe('3.1.0')
    await SwaggerParser.validate(structuredClone(raw) as never)
    expect(raw.info.license).toEqual({ name: 'MIT', identifier: 'MIT' })
    expect(Object.keys(raw.components.securitySchemes)).toEqual(expect.arrayContaining(['apiKey', 'bearer']))
    expect(raw.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(raw.tags.map((t: Schema) => t.name)).toEqual(expect.arrayContaining(['links', 'qr']))
  })

  test("the README's API table has a row for every method, and no method is said to be still to come", () => {
    const readme = readFileSync(join(import.meta.dir, '../..', 'README.md'), 'utf8')
    const rows = readme.split('\n').filter((l) => /^\| [0-9–-]+ \| `(GET|POST) \/api\//.test(l))
    for (const m of box.methods)
      expect(
        rows.some((r) => r.includes(`\`${m.verb} ${m.path}\``)),
        `${m.verb} ${m.path}`,
      ).toBe(true)
    expect(readme).not.toMatch(/still to come/i)
  })

  test('its description names every feature the methods cover', () => {
    const description = String(raw.info.description).toLowerCase()
    for (const feature of ['short links', 'statistics', 'qr codes', 'temporary e-mail', 'media download', 'webhooks'])
      expect(description, feature).toContain(feature)
  })

  test('every operation declares a real return schema, a tag, and the statuses of its kind', () => {
    expect(ops.length).toBe(box.methods.length)
    for (const o of ops) {
      const ret = o.op.responses['200'].content['application/json'].schema.properties.return
      expect(ret.type, o.path).toBe('object')
      expect(Object.keys(ret.properties).length, o.path).toBeGreaterThan(1)
      expect(ret.additionalProperties, o.path).toBe(false)
      expect(o.op.tags?.length, o.path).toBe(1)
      const statuses = Object.keys(o.op.responses)
      for (const s of ['200', '400', '401', '405', '429', '500']) expect(statuses, o.path).toContain(s)
      // Bodies exist only on POST; aliases only on creation.
      expect(statuses.includes('413'), o.path).toBe(o.verb === 'POST')
      expect(statuses.includes('408'), o.path).toBe(o.verb === 'POST')
      expect(statuses.includes('409'), o.path).toBe(o.path === '/api/getLink.json')
      expect(o.op.responses['429'].headers['Retry-After'].required).toBe(true)
      expect(o.op.responses['405'].headers.Allow.required).toBe(true)
    }
  })

  test('the examples in the document are valid against their own schemas', () => {
    for (const o of ops) {
      for (const p of o.params)
        for (const ex of p.schema.examples ?? []) expect(valid(p.schema, ex), `${o.path} ${p.name}`).toBe(true)
      for (const [status, r] of Object.entries(o.op.responses as Record<string, Schema>)) {
        const json = r.content?.['application/json']
        for (const [name, ex] of Object.entries((json?.examples ?? {}) as Record<string, Schema>))
          expect(
            valid(json.schema, ex.value),
            `${o.path} ${status} ${name}: ${JSON.stringify(validator(json.schema).errors)}`,
          ).toBe(true)
      }
    }
  })
})

// ---------------------------------------------------------------------------------------------------------
// Every operation, from the document alone

describe('every operation answers as documented', () => {
  test('valid requests: each parameter at each valid value, form-encoded and (POST) as JSON', async () => {
    for (const o of ops) {
      const auth: Auth = keyOptional(o) ? 'none' : 'key'
      const reqd = requiredBase(o)
      const cases: [string, Record<string, unknown>][] = [['required only', reqd]]
      cases.push([
        'every parameter at its example',
        Object.fromEntries(o.params.map((p) => [p.name, validValues(p.schema)[0]])),
      ])
      for (const p of o.params)
        for (const v of validValues(p.schema))
          cases.push([`${p.name}=${String(v).slice(0, 40)}`, complete(o, { ...reqd, [p.name]: v })])
      for (const [label, fields] of cases) {
        for (const json of o.verb === 'POST' ? [false, true] : [false]) {
          await fixture() // what a request before this one deleted (a link, a mailbox, a message)
          const res = await send(o, withFileOfFormat(o, fields), { auth, json })
          await check(o, res, `${label}${json ? ' (JSON)' : ''}`)
          // Valid by the document: never refused as bad input (an unknown code or a taken alias may be).
          expect(res.status, `${o.path} ${label}`).not.toBe(400)
        }
      }
    }
  })

  test('invalid requests: 400 with a documented code and a message naming the parameter', async () => {
    for (const o of ops) {
      const auth: Auth = keyOptional(o) ? 'none' : 'key'
      const reqd = requiredBase(o)
      const cases: [string, Record<string, unknown>, string, boolean][] = []
      for (const p of o.params) {
        if (p.required) {
          const { [p.name]: _, ...rest } = reqd
          cases.push([`${p.name} missing`, rest, p.name, false])
        }
        for (const v of invalidValues(p.schema)) {
          // A form carries text: only values that are still invalid once read as the schema's type.
          if (
            typeof v === 'string'
              ? !valid(p.schema, fromForm(p.schema, v))
              : !valid(p.schema, fromForm(p.schema, String(v)))
          )
            cases.push([`${p.name}=${JSON.stringify(v).slice(0, 40)}`, { ...reqd, [p.name]: v }, p.name, false])
          if (o.verb === 'POST')
            cases.push([`${p.name}=${JSON.stringify(v).slice(0, 40)} (JSON)`, { ...reqd, [p.name]: v }, p.name, true])
        }
        // A parameter that a value of another makes required, left out.
        for (const c of o.conditional)
          if (c.required.includes(p.name)) {
            const { [p.name]: _, ...rest } = complete(o, { ...reqd, [c.param]: c.value })
            cases.push([`${p.name} missing with ${c.param}=${String(c.value)}`, rest, p.name, false])
          }
        if (o.verb === 'POST')
          for (const v of [true, [], {}, 1.5, p.schema.type === 'integer' ? 'abc' : 12])
            if (!valid(p.schema, v))
              cases.push([`${p.name}=${JSON.stringify(v)} (JSON)`, { ...reqd, [p.name]: v }, p.name, true])
      }
      expect(cases.length, o.path).toBeGreaterThan(0)
      for (const [label, fields, name, json] of cases) {
        const res = await send(o, fields, { auth, json })
        const body = await check(o, res, label)
        expect(res.status, `${o.path} ${label}`).toBe(400)
        expect(body.message, `${o.path} ${label}`).toContain(`"${name}"`)
      }
    }
  })

  test("keys: as the security asks, by X-Api-Key or Bearer; unknown, scope-less and other accounts' keys", async () => {
    for (const o of ops)
      for (const base of actionBases(o)) {
        // A mail method is asked about the owner's mailbox (mailbox.json would make a random one without it).
        const fields = o.params.some((p) => p.name === 'address') ? { ...base, address: 'signup-test' } : base
        const schemes = new Set((o.op.security as Schema[]).flatMap((r) => Object.keys(r)))
        const codes403: string[] = o.op.responses['403']?.content['application/json'].schema.properties.code.enum ?? []
        // Another account's key may read and create, not change or delete the owner's link nor use its mailbox.
        // Of an action-driven method (webhooks.json), only the actions that name the owner's thing (an id) are bound.
        const ownerBound =
          (codes403.includes('not_owner') || codes403.includes('address_taken')) &&
          (o.conditional.length === 0 || 'id' in fields)
        const mail = o.op['x-scope'] === 'mail'
        const outcomes: Partial<Record<Auth, number[]>> = {
          none: keyOptional(o) ? [200, 404] : [401],
          key: [200, 404],
          bearer: [200, 404],
          badKey: [401],
          [mail ? 'noMail' : 'noScope']: o.op['x-scope'] ? [403] : [200, 404],
          otherKey: ownerBound ? [403] : [200, 404],
        }
        // The marketplace caller is an account of its own: it reaches the method (not 401), which refuses it
        // the owner's mailbox like any other account's key.
        if (schemes.has('marketplace')) outcomes.marketplace = ownerBound ? [403] : [200]
        for (const [auth, want] of Object.entries(outcomes) as [Auth, number[]][]) {
          await fixture()
          const res = await send(o, fields, { auth })
          const body = await check(o, res, `auth ${auth}`)
          expect(want, `${o.path} auth ${auth}: ${res.status} ${JSON.stringify(body)}`).toContain(res.status)
        }
      }
  })

  test('another verb → 405 with Allow; (POST) a body over the limit → 413; unknown codes → 404; a taken alias → 409', async () => {
    for (const o of ops) {
      const auth: Auth = keyOptional(o) ? 'none' : 'key'
      // A verb the path does not answer: the other of GET and POST, or PUT where it answers both (qr.json).
      const verbs = ops.filter((x) => x.path === o.path).map((x) => x.verb)
      const other = (['GET', 'POST', 'PUT'] as const).find((v) => !verbs.includes(v as Op['verb']))!
      const res = await send(o, requiredBase(o), { auth, verb: other })
      await check(o, res, 'other verb')
      expect(res.status).toBe(405)
      if (o.verb === 'POST') {
        const big = await fetch(`${base}${o.path}`, {
          method: 'POST',
          headers: { ...authHeaders(auth), 'content-type': 'application/x-www-form-urlencoded' },
          // A method that takes a file says its own limit (x-body-limit); the others take 64 KiB.
          body: `pad=${'a'.repeat((o.op['x-body-limit'] ?? 64 * 1024) + 70 * 1024)}`,
        })
        await check(o, big, 'body over the limit')
        expect(big.status).toBe(413)
      }
      if (o.op.responses['404']) {
        // An action-driven method is asked about an unknown id by the first action that needs one.
        const byId = o.conditional.find((c) => c.required.includes('id'))
        const unknown = o.params.some((p) => p.name === 'address')
          ? { address: 'no-such-mailbox' }
          : byId
            ? complete(o, { [byId.param]: byId.value, id: 999_999_999 })
            : { code: 'no-such-code' }
        const nf = await send(o, { ...requiredBase(o), ...unknown }, { auth })
        await check(o, nf, 'unknown code')
        expect(nf.status).toBe(404)
      }
      if (o.op.responses['409']) {
        const fields = { ...requiredBase(o), alias: 'twice-taken' }
        await check(o, await send(o, fields, { auth }), 'alias, first')
        const again = await send(o, fields, { auth })
        await check(o, again, 'alias, again')
        expect(again.status).toBe(409)
      }
    }
  })

  test('past the rate limit → 429 with Retry-After; a full QR queue → 503', async () => {
    const d = tempDir()
    const tight = sqliteLinkbox(
      testConfig(d, { server: { host: '127.0.0.1', port: 0 }, rate: { anon_per_minute: 1, key_per_minute: 1 } }),
    )
    try {
      const at = `http://127.0.0.1:${tight.listen().port}`
      for (const o of ops) {
        // One account (one allowance) per operation; its second request is one too many.
        const key = (await tight.accounts.createAccount({ name: `k${o.op.operationId}` })).key.key
        const fields = requiredBase(o)
        const headers = { 'X-Api-Key': key }
        const first =
          o.verb === 'GET'
            ? await fetch(`${at}${o.path}?${new URLSearchParams(fields as Record<string, string>)}`, { headers })
            : await fetch(`${at}${o.path}`, {
                method: 'POST',
                headers,
                body: new URLSearchParams(fields as Record<string, string>),
              })
        await check(o, first, 'first (tight limit)')
        const over =
          o.verb === 'GET'
            ? await fetch(`${at}${o.path}?${new URLSearchParams(fields as Record<string, string>)}`, { headers })
            : await fetch(`${at}${o.path}`, {
                method: 'POST',
                headers,
                body: new URLSearchParams(fields as Record<string, string>),
              })
        await check(o, over, 'over the limit')
        expect(over.status).toBe(429)
      }
    } finally {
      await tight.close()
      rmSync(d, { recursive: true, force: true })
    }
    // A renderer that takes one rendering at a time and queues none: of several at once, some are refused.
    const qrOp = ops.find((o) => o.op.responses['503'] && o.verb === 'GET')!
    const d2 = tempDir()
    const busy = sqliteLinkbox(testConfig(d2, { server: { host: '127.0.0.1', port: 0 } }), {
      qrRenderer: createQrRenderer({ maxWaiting: 0, inFlight: 1 }),
    })
    try {
      const at = `http://127.0.0.1:${busy.listen().port}`
      const headers = { 'X-Api-Key': (await busy.accounts.createAccount({ name: 'q' })).key.key }
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          send(qrOp, { ...requiredBase(qrOp), data: `x${i}`, size: 2048 }, { auth: 'key', target: at, headers }).then(
            async (r) => {
              // This box has no rate limits: no RateLimit-* headers to expect.
              await check(qrOp, r, 'queue full', { limited: false })
              return r.status
            },
          ),
        ),
      )
      expect(answers).toContain(503)
    } finally {
      await busy.close()
      rmSync(d2, { recursive: true, force: true })
    }
  })

  test('each operation was seen answering 200 in each declared content type, and 400', () => {
    for (const o of ops) {
      const got = seen.get(`${o.verb} ${o.path}`)!
      for (const type of Object.keys(o.op.responses['200'].content)) expect([...got], o.path).toContain(`200 ${type}`)
      expect([...got], o.path).toContain('400 application/json')
    }
  })
})
