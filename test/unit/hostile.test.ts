// Hostile input for every parameter of the five link methods, through the real app (real SQLite file):
// each case must end in the error envelope with a 4xx, a machine code and a message naming the parameter,
// or — where the hostile-looking value is in fact valid — in a 200 success. Never a 5xx.
// Plus malformed bodies, the 64 KiB body limit, repeated and unknown parameters, multipart and JSON bodies.
import { afterAll, describe, expect, test } from 'bun:test'
import { MAX_EXPIRE, MAX_URL_LENGTH } from '../../src/links/validate'
import { makeBox, readAnswer, type ApiAnswer, type TestBox } from '../support/app'

const boxes: TestBox[] = []
afterAll(async () => {
  for (const b of boxes) await b.cleanup()
})
async function freshBox(): Promise<TestBox> {
  const b = await makeBox()
  boxes.push(b)
  return b
}

// Link creation gets a box of its own: the aliases it creates ("-1", "0x10", …) must not exist where the
// code-taking methods expect "unknown code" (404).
const createBox = await freshBox()
const box = await freshBox()
const KEY = await box.account('hostile')
const AUTH = { 'x-api-key': KEY }
const FIXTURE = 'Fixture-Link'
{
  const made = await box.post('/api/getLink.json', { url: 'https://example.com/fixture', alias: FIXTURE }, AUTH)
  if (made.status !== 200) throw new Error(`fixture link not created: ${JSON.stringify(made.body)}`)
}

// ---------------------------------------------------------------------------------------------------------
// Sending and checking

function sendForm(b: TestBox, path: string, fields: Record<string, string>, key: boolean) {
  return b.post(path, fields, key ? AUTH : {})
}

async function sendJson(b: TestBox, path: string, body: string, key: boolean) {
  return readAnswer(
    await b.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? AUTH : {}) },
      body,
    }),
  )
}

async function sendRaw(b: TestBox, path: string, init: RequestInit, key = true) {
  const headers = new Headers(init.headers)
  if (key) headers.set('x-api-key', KEY)
  return readAnswer(await b.request(path, { method: 'POST', ...init, headers }))
}

const re = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** A 4xx error envelope; `param` must be named in the message (as "param" or as `param "value"`). */
function expectError(r: ApiAnswer, param: string | null, status?: number) {
  const where = `${r.status} ${JSON.stringify(r.body).slice(0, 300)}`
  expect(r.status, where).toBeGreaterThanOrEqual(400)
  expect(r.status, where).toBeLessThan(500)
  if (status !== undefined) expect(r.status, where).toBe(status)
  expect(r.headers.get('content-type') ?? '').toContain('application/json')
  expect(r.body.status, where).toBe('error')
  expect(r.body.code, where).toMatch(/^[a-z_]+$/)
  expect(typeof r.body.message, where).toBe('string')
  expect(r.body.message.length).toBeGreaterThan(0)
  expect(r.body.message).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/) // no stack trace
  expect(r.body).not.toHaveProperty('return')
  if (param && r.status !== 413) expect(r.body.message, where).toMatch(new RegExp(`"${re(param)}"|\\b${re(param)} "`))
  if (r.status === 413) expect(r.body.code).toBe('too_large')
}

function expectOk(r: ApiAnswer) {
  const where = `${r.status} ${JSON.stringify(r.body).slice(0, 300)}`
  expect(r.status, where).toBe(200)
  expect(r.body.status, where).toBe('success')
  expect(typeof r.body.return, where).toBe('object')
  expect(r.body.return, where).not.toBeNull()
}

// ---------------------------------------------------------------------------------------------------------
// The tables

/** Hostile strings tried on every parameter (form-encoded). */
const HOSTILE = {
  'empty string': '',
  '5000 characters': 'a'.repeat(5000),
  '100000 characters (over the 64 KiB body limit)': 'a'.repeat(100_000),
  NUL: 'a\u0000b',
  'CR LF': 'a\r\nb',
  tab: 'a\tb',
  DEL: 'a\u007fb',
  'right-to-left override U+202E': 'a\u202eb',
  'only spaces': '   ',
  emoji: '😀🔗',
  'RTL text': 'שלום',
  'combining marks': 'e\u0301\u0301',
  'full-width digits': '１２',
  'SQL injection': "' OR 1=1 --",
  'HTML injection': '"><script>alert(1)</script>',
  'path traversal': '../../etc/passwd',
  'javascript: URL': 'javascript:alert(1)',
  'data: URL': 'data:text/html,<script>alert(1)</script>',
  '%00': '%00',
  'template injection': '${7*7}',
  'CRLF header injection': 'a\r\nLocation: evil',
  '-1': '-1',
  '1.5': '1.5',
  '1e3': '1e3',
  '315360001': '315360001',
  '0x10': '0x10',
  '0': '0',
  'ftp: URL': 'ftp://example.com/file',
  'file: URL': 'file:///etc/passwd',
  'mailto: URL': 'mailto:someone@example.com',
  'http:// without host': 'http://',
  'https:///x without host': 'https:///x',
  "the service's own host": 'http://localhost:8080/x',
} as const
type HostileLabel = keyof typeof HOSTILE

/** Values of the wrong JSON type tried on every parameter (JSON body). */
const TYPED = {
  'number 12': 12,
  'number 1.5': 1.5,
  'number -1': -1,
  'number 1e21': 1e21,
  array: ['https://example.com/'],
  'empty array': [],
  object: {},
  'object with a value': { value: 'https://example.com/' },
  null: null,
  true: true,
  false: false,
} as const
type TypedLabel = keyof typeof TYPED

/** 'ok' = the value is valid (200); a number = that exact 4xx. */
type Outcome = 'ok' | number

interface ParamSpec {
  path: string
  param: string
  key: boolean
  /** The other fields, valid, so that this parameter is what is tested. */
  base: Record<string, string>
  /** Outcomes of HOSTILE values that differ from the default (400; 413 for the 100000 characters). */
  hostile?: Partial<Record<HostileLabel, Outcome>>
  /** Outcomes of TYPED values that differ from the default (400). */
  typed?: Partial<Record<TypedLabel, Outcome>>
  /** Further cases for this parameter: a string is sent form-encoded. */
  extra?: [label: string, value: string, outcome: Outcome][]
  /** Further cases as a raw JSON literal for the parameter (e.g. 1e3, which JSON.stringify would rewrite). */
  rawJson?: [label: string, literal: string, outcome: Outcome][]
}

const URL_CASES: [string, string, Outcome][] = [
  ['unicode path and query', 'https://example.com/ünïcødé/😀?q=١٢&r=שלום', 'ok'],
  ['IDN host', 'http://例え.jp/パス', 'ok'],
  ['upper-case scheme and host', 'HTTPS://EXAMPLE.COM/Path', 'ok'],
  ['IPv6 host', 'http://[2001:db8::1]/x', 'ok'],
  [`exactly ${MAX_URL_LENGTH} characters`, 'https://example.com/' + 'a'.repeat(MAX_URL_LENGTH - 20), 'ok'],
  [`${MAX_URL_LENGTH + 1} characters`, 'https://example.com/' + 'a'.repeat(MAX_URL_LENGTH - 19), 400],
  ['longer than the limit once normalised', 'https://example.com/' + 'é'.repeat(1000), 400],
  ['percent-encoded NUL', 'https://example.com/%00', 'ok'],
  ['template in the path', 'https://example.com/${7*7}', 'ok'],
  ['HTML in the query', 'https://example.com/?q="><script>alert(1)</script>', 'ok'],
  ['percent-encoded SQL in the query', "https://example.com/?q='%20OR%201=1%20--", 'ok'],
  ['NUL inside', 'https://example.com/\u0000', 400],
  ['CRLF header injection inside', 'https://example.com/a\r\nLocation: http://evil.example/', 400],
  ['tab inside the host', 'https://exa\tmple.com/', 400],
  ['DEL inside', 'https://example.com/\u007f', 400],
  ['C1 control inside', 'https://example.com/\u0085', 400],
  ['right-to-left override in the path', 'https://example.com/\u202egpj.exe', 400],
  ['zero-width space in the host', 'https://exa\u200bmple.com/', 400],
  ['no-break space', 'https://example.com/a\u00a0b', 400],
  ['ideographic space', 'https://example.com/a\u3000b', 400],
  ['space inside', 'https://example.com/a b', 400],
  ['leading space', ' https://example.com/', 400],
  ['trailing newline', 'https://example.com/\n', 400],
  ['backslash instead of the host', 'http://\\evil.example/', 400],
  ['https:/// before a host-like path', 'https:///example.com/x', 400],
  ['empty host before a query', 'http://?x=1', 400],
  ['scheme-relative', '//example.com/', 400],
  ['no scheme', 'example.com/path', 400],
  ['http: without slashes', 'http:example.com', 400],
  ['ws: scheme', 'ws://example.com/', 400],
  ['upper-case file: scheme', 'FILE:///etc/passwd', 400],
  ['javascript: disguised with //', 'javascript://example.com/%0aalert(1)', 400],
  ['own host in upper case', 'HTTP://LOCALHOST:8080/x', 400],
  ['own host on another port (another program)', 'http://localhost/x', 'ok'],
  ['own host with a trailing dot', 'http://localhost.:8080/x', 400],
  ['own host in full-width letters', 'http://ｌｏｃａｌｈｏｓｔ:8080/x', 400],
  ['own port on 127.1', 'http://127.1:8080/x', 400],
  ['own port on [::1]', 'http://[::1]:8080/x', 400],
  ['semicolon in the host (CSP injection)', 'https://a;sandbox/', 400],
  ['quote in the host', "https://a'b.example/", 400],
  ['own host behind userinfo', 'http://example.com@localhost:8080/', 400],
  ['port out of range', 'http://example.com:99999/', 400],
  ['invalid IPv4 address', 'http://256.256.256.256/', 400],
  ['unclosed IPv6 address', 'http://[::1/', 400],
]

const MODE_CASES: [string, string, Outcome][] = [
  ['redirect', 'redirect', 'ok'],
  ['preview', 'preview', 'ok'],
  ['frame', 'frame', 'ok'],
  ['upper case', 'REDIRECT', 400],
  ['capitalised', 'Preview', 400],
  ['trailing space', 'redirect ', 400],
  ['leading space', ' frame', 400],
  ['NUL suffix', 'frame\u0000', 400],
  ['two modes', 'preview,frame', 400],
]

const EXPIRE_CASES: [string, string, Outcome][] = [
  [`${MAX_EXPIRE} (10 years)`, String(MAX_EXPIRE), 'ok'],
  ['60', '60', 'ok'],
  ['plus sign', '+60', 400],
  ['leading space', ' 60', 400],
  ['trailing space', '60 ', 400],
  ['unit suffix', '60s', 400],
  ['digit separator', '1_000', 400],
  ['Arabic-Indic digit', '٣', 400],
  ['NaN', 'NaN', 400],
  ['Infinity', 'Infinity', 400],
  ['ten digits over the maximum', '9999999999', 400],
  ['twenty digits', '99999999999999999999', 400],
]

const EXPIRE_JSON: [string, string, Outcome][] = [
  ['1e3 (an integer in JSON)', '1e3', 'ok'],
  ['1.0 (an integer in JSON)', '1.0', 'ok'],
  [`${MAX_EXPIRE}`, String(MAX_EXPIRE), 'ok'],
  [`${MAX_EXPIRE + 1}`, String(MAX_EXPIRE + 1), 400],
  ['1e400 (Infinity)', '1e400', 400],
  ['a fraction just over the maximum', `${MAX_EXPIRE}.5`, 400],
  ['a numeric string', '"60"', 'ok'],
  ['a numeric string with a sign', '"-60"', 400],
]

/** A code as taken by stats, update and delete: values of the code alphabet are unknown codes here (404). */
const CODE_HOSTILE: Partial<Record<HostileLabel, Outcome>> = {
  '-1': 404,
  '1e3': 404,
  '315360001': 404,
  '0x10': 404,
  '0': 404,
}
const CODE_CASES: [string, string, Outcome][] = [
  ['64 characters (unknown)', 'c'.repeat(64), 404],
  ['65 characters', 'c'.repeat(65), 400],
  ['a reserved word (unknown)', 'API', 404],
  ['the code in another case (codes are case-sensitive)', FIXTURE.toLowerCase(), 404],
  ['the code with the stats-page "+"', `${FIXTURE}+`, 400],
  ['the code with a slash', `${FIXTURE}/x`, 400],
  ['the code with a trailing newline', `${FIXTURE}\n`, 400],
  ['the code percent-encoded twice', `${FIXTURE}%2520`, 400],
  ['the code in full-width letters', 'Ｆｉｘｔｕｒｅ', 400],
]

const PASSWORD_HOSTILE: Partial<Record<HostileLabel, Outcome>> = Object.fromEntries(
  (Object.keys(HOSTILE) as HostileLabel[])
    .filter(
      (l) =>
        ![
          '5000 characters',
          '100000 characters (over the 64 KiB body limit)',
          'NUL',
          'CR LF',
          'tab',
          'DEL',
          'CRLF header injection',
        ].includes(l),
    )
    .map((l) => [l, 'ok' as Outcome]),
)
const PASSWORD_CASES: [string, string, Outcome][] = [
  ['128 characters', 'p'.repeat(128), 'ok'],
  ['129 characters', 'p'.repeat(129), 400],
  ['newline', 'a\nb', 400],
  ['escape character', 'a\u001b[31mb', 400],
]

const SPECS: ParamSpec[] = [
  // POST /api/getLink.json (anonymous: the key is optional)
  {
    path: '/api/getLink.json',
    param: 'url',
    key: false,
    base: {},
    extra: URL_CASES,
  },
  {
    path: '/api/getLink.json',
    param: 'alias',
    key: false,
    base: { url: 'https://example.com/alias' },
    // An empty alias means "none" (a generated code); "-1", "1e3", … are letters, digits and "-": valid aliases.
    hostile: { 'empty string': 'ok', '-1': 'ok', '1e3': 'ok', '315360001': 'ok', '0x10': 'ok' },
    typed: { null: 'ok' },
    extra: [
      ['two characters', 'ab', 'ok'],
      ['32 characters', 'A'.repeat(16) + '_-'.repeat(8), 'ok'],
      ['33 characters', 'b'.repeat(33), 400],
      ['one character', 'x', 400],
      ['reserved: api', 'api', 409],
      ['reserved in another case: DashBoard', 'DashBoard', 409],
      ['reserved: healthz', 'healthz', 409],
      ['reserved with a dot: robots.txt', 'robots.txt', 400],
      ['dot', 'a.b', 400],
      ['slash', 'a/b', 400],
      ['plus (the stats-page suffix)', 'abc+', 400],
      ['percent-encoded space', 'a%20b', 400],
      ['space inside', 'a b', 400],
      ['trailing newline', 'ab\n', 400],
      ['accented letters', 'çava', 400],
      ['full-width letters', 'ａｂ', 400],
      ['emoji', '😀😀', 400],
    ],
  },
  {
    path: '/api/getLink.json',
    param: 'mode',
    key: false,
    base: { url: 'https://example.com/mode' },
    hostile: { 'empty string': 'ok' }, // not sent = the default, redirect
    typed: { null: 'ok' },
    extra: MODE_CASES,
  },
  {
    path: '/api/getLink.json',
    param: 'expire',
    key: false,
    base: { url: 'https://example.com/expire' },
    hostile: { 'empty string': 'ok', '0': 'ok' },
    typed: { 'number 12': 'ok', null: 'ok' },
    extra: EXPIRE_CASES,
    rawJson: EXPIRE_JSON,
  },
  {
    path: '/api/getLink.json',
    param: 'password',
    key: false,
    base: { url: 'https://example.com/password' },
    hostile: PASSWORD_HOSTILE, // a password may be any text without control characters
    extra: PASSWORD_CASES,
  },
  // POST /api/stats.json (key optional: sent without one)
  {
    path: '/api/stats.json',
    param: 'code',
    key: false,
    base: {},
    hostile: CODE_HOSTILE,
    extra: [['the fixture link', FIXTURE, 'ok'], ...CODE_CASES],
  },
  {
    path: '/api/stats.json',
    param: 'from',
    key: false,
    base: { code: FIXTURE, to: '2024-03-31' },
    hostile: { 'empty string': 'ok' }, // not sent = the default window
    typed: { null: 'ok' },
    extra: [
      ['a day of the window', '2024-03-01', 'ok'],
      ['366 days before "to"', '2023-04-01', 'ok'],
      ['367 days before "to"', '2023-03-31', 400],
      ['after "to"', '2024-04-01', 400],
      ['February 30', '2024-02-30', 400],
      ['month 13', '2024-13-01', 400],
      ['month 0', '2024-00-10', 400],
      ['no zero padding', '2024-3-1', 400],
      ['no dashes', '20240301', 400],
      ['with a time', '2024-03-01T00:00:00Z', 400],
      ['leading space', ' 2024-03-01', 400],
      ['trailing newline', '2024-03-01\n', 400],
      ['full-width digits', '２０２４-０３-０１', 400],
      ['five-digit year', '12024-03-01', 400],
    ],
  },
  {
    path: '/api/stats.json',
    param: 'to',
    key: false,
    base: { code: FIXTURE },
    hostile: { 'empty string': 'ok' }, // not sent = today
    typed: { null: 'ok' },
    extra: [
      ['a leap day', '2024-02-29', 'ok'],
      ['not a leap day', '2023-02-29', 400],
      ['the last day of year 9999', '9999-12-31', 'ok'],
      ['1970-01-01', '1970-01-01', 'ok'],
      ['February 30', '2024-02-30', 400],
      ['with a time', '2024-03-01T00:00:00Z', 400],
    ],
  },
  // POST /api/links.json (key required)
  {
    path: '/api/links.json',
    param: 'limit',
    key: true,
    base: {},
    hostile: { 'empty string': 'ok' },
    typed: { 'number 12': 'ok', null: 'ok' },
    extra: [
      ['1', '1', 'ok'],
      ['500', '500', 'ok'],
      ['501', '501', 400],
      ['leading zeros', '005', 'ok'],
      ['leading space', ' 5', 400],
      ['plus sign', '+5', 400],
    ],
    rawJson: [
      ['1e2 (an integer in JSON)', '1e2', 'ok'],
      ['a numeric string', '"50"', 'ok'],
      ['501', '501', 400],
    ],
  },
  {
    path: '/api/links.json',
    param: 'cursor',
    key: true,
    base: {},
    hostile: { 'empty string': 'ok', '0': 'ok', '315360001': 'ok' }, // any id is a valid position
    typed: { 'number 12': 'ok', null: 'ok' },
    extra: [
      ['15 digits', '123456789012345', 'ok'],
      ['16 digits', '1234567890123456', 400],
      ['leading space', ' 12', 400],
    ],
  },
  // POST /api/update.json (key required; the fixture link belongs to the key's account)
  {
    path: '/api/update.json',
    param: 'code',
    key: true,
    base: {},
    hostile: CODE_HOSTILE,
    extra: [['the fixture link', FIXTURE, 'ok'], ...CODE_CASES],
  },
  {
    path: '/api/update.json',
    param: 'url',
    key: true,
    base: { code: FIXTURE },
    extra: URL_CASES,
  },
  {
    path: '/api/update.json',
    param: 'mode',
    key: true,
    base: { code: FIXTURE },
    extra: MODE_CASES,
  },
  {
    path: '/api/update.json',
    param: 'expire',
    key: true,
    base: { code: FIXTURE },
    hostile: { '0': 'ok' }, // 0 removes the expiry; an empty value is not a number here (only sent fields change)
    typed: { 'number 12': 'ok' },
    extra: EXPIRE_CASES,
    rawJson: EXPIRE_JSON,
  },
  {
    path: '/api/update.json',
    param: 'password',
    key: true,
    base: { code: FIXTURE },
    hostile: PASSWORD_HOSTILE, // "" removes the password
    extra: PASSWORD_CASES,
  },
  // POST /api/delete.json (key required). Deleting the fixture itself is tested at the end.
  {
    path: '/api/delete.json',
    param: 'code',
    key: true,
    base: {},
    hostile: CODE_HOSTILE,
    extra: CODE_CASES,
  },
]

const label = (o: Outcome) => (o === 'ok' ? '200 success' : `${o} error`)
const boxFor = (spec: ParamSpec) => (spec.path === '/api/getLink.json' ? createBox : box)

async function check(r: ApiAnswer, spec: ParamSpec, outcome: Outcome) {
  if (outcome === 'ok') expectOk(r)
  else expectError(r, spec.param, outcome)
}

for (const spec of SPECS) {
  describe(`${spec.path} ${spec.param}`, () => {
    for (const [name, value] of Object.entries(HOSTILE) as [HostileLabel, string][]) {
      const outcome = spec.hostile?.[name] ?? (name.startsWith('100000') ? 413 : 400)
      test(`form: ${name} → ${label(outcome)}`, async () => {
        const r = await sendForm(boxFor(spec), spec.path, { ...spec.base, [spec.param]: value }, spec.key)
        await check(r, spec, outcome)
      })
    }
    for (const [name, value] of Object.entries(TYPED) as [TypedLabel, unknown][]) {
      const outcome = spec.typed?.[name] ?? 400
      test(`JSON: ${name} → ${label(outcome)}`, async () => {
        const r = await sendJson(
          boxFor(spec),
          spec.path,
          JSON.stringify({ ...spec.base, [spec.param]: value }),
          spec.key,
        )
        await check(r, spec, outcome)
      })
    }
    for (const [name, value, outcome] of spec.extra ?? []) {
      test(`form: ${name} → ${label(outcome)}`, async () => {
        const r = await sendForm(boxFor(spec), spec.path, { ...spec.base, [spec.param]: value }, spec.key)
        await check(r, spec, outcome)
      })
    }
    for (const [name, literal, outcome] of spec.rawJson ?? []) {
      test(`JSON literal: ${name} → ${label(outcome)}`, async () => {
        const fields = JSON.stringify(spec.base).slice(1, -1)
        const body = `{${fields}${fields ? ',' : ''}${JSON.stringify(spec.param)}:${literal}}`
        const r = await sendJson(boxFor(spec), spec.path, body, spec.key)
        await check(r, spec, outcome)
      })
    }
  })
}

// ---------------------------------------------------------------------------------------------------------
// What the accepted hostile-looking values turned into

describe('accepted values are stored as given', () => {
  test('an empty alias means a generated code', async () => {
    const r = await createBox.post('/api/getLink.json', { url: 'https://example.com/e', alias: '' })
    expectOk(r)
    expect(r.body.return.hex).toMatch(/^[A-Za-z0-9]{6}$/)
  })
  test('an alias made of digits and "-" is the code', async () => {
    const r = await createBox.post('/api/getLink.json', { url: 'https://example.com/e', alias: '-42' })
    expectOk(r)
    expect(r.body.return.hex).toBe('-42')
    expect(r.body.return.url).toBe('http://localhost:8080/-42')
  })
  test('an alias already in use → 409 alias_taken', async () => {
    expectOk(await createBox.post('/api/getLink.json', { url: 'https://example.com/t', alias: 'taken-1' }))
    const r = await createBox.post('/api/getLink.json', { url: 'https://example.com/t', alias: 'taken-1' })
    expectError(r, 'alias', 409)
    expect(r.body.code).toBe('alias_taken')
  })
  test('a reserved alias → 409 alias_reserved', async () => {
    const r = await createBox.post('/api/getLink.json', { url: 'https://example.com/t', alias: 'Metrics' })
    expectError(r, 'alias', 409)
    expect(r.body.code).toBe('alias_reserved')
  })
  test('a unicode URL is stored normalised (percent-encoded, punycode host)', async () => {
    const r = await createBox.post('/api/getLink.json', { url: 'http://例え.jp/パス?q="<x>"' })
    expectOk(r)
    expect(r.body.return.long_url).toBe('http://xn--r8jz45g.jp/%E3%83%91%E3%82%B9?q=%22%3Cx%3E%22')
  })
  test('a password of hostile text is accepted and only reported as a flag', async () => {
    const r = await createBox.post('/api/getLink.json', { url: 'https://example.com/p', password: "' OR 1=1 --" })
    expectOk(r)
    expect(r.body.return.password).toBe(true)
    expect(JSON.stringify(r.body)).not.toContain('OR 1=1')
  })
  test('expire given as the JSON number 1e3 sets an expiry 1000 s ahead', async () => {
    const before = Date.now()
    const r = await sendJson(createBox, '/api/getLink.json', '{"url":"https://example.com/x","expire":1e3}', false)
    expectOk(r)
    const expires = Date.parse(r.body.return.expires)
    expect(expires).toBeGreaterThanOrEqual(before + 999_000)
    expect(expires).toBeLessThanOrEqual(Date.now() + 1_001_000)
  })
  test('expire "0" means no expiry', async () => {
    const r = await createBox.post('/api/getLink.json', { url: 'https://example.com/x', expire: '0' })
    expectOk(r)
    expect(r.body.return.expires).toBeNull()
  })
  test('update with expire "0" removes the expiry', async () => {
    expectOk(await box.post('/api/update.json', { code: FIXTURE, expire: '60' }, AUTH))
    const r = await box.post('/api/update.json', { code: FIXTURE, expire: '0' }, AUTH)
    expectOk(r)
    expect(r.body.return.expires).toBeNull()
  })
  test('a refused update changes nothing', async () => {
    const before = await box.post(
      '/api/update.json',
      { code: FIXTURE, url: 'https://example.com/kept', mode: 'preview' },
      AUTH,
    )
    expectOk(before)
    const r = await box.post(
      '/api/update.json',
      { code: FIXTURE, url: 'https://example.com/changed', mode: 'bogus' },
      AUTH,
    )
    expectError(r, 'mode', 400)
    const after = await box.post('/api/update.json', { code: FIXTURE }, AUTH)
    expect(after.body.return.long_url).toBe('https://example.com/kept')
    expect(after.body.return.mode).toBe('preview')
  })
})

// A "to" in the first days of year 0000 used to pass the date check; the default "from" (29 days earlier)
// then fell in year -1 and was rendered "-000001-12" — a 200 whose from/days were not dates.
test('stats.json: to = 0000-01-01 is refused or answered with real dates', async () => {
  const r = await box.post('/api/stats.json', { code: FIXTURE, to: '0000-01-01' })
  if (r.status !== 200) return expectError(r, 'to')
  const DAY = /^\d{4}-\d{2}-\d{2}$/
  expect(r.body.return.from).toMatch(DAY)
  for (const d of r.body.return.days) expect(d.date).toMatch(DAY)
})

// ---------------------------------------------------------------------------------------------------------
// Malformed bodies, for every method

const METHODS: { path: string; fields: Record<string, string> }[] = [
  { path: '/api/getLink.json', fields: { url: 'https://example.com/body' } },
  { path: '/api/stats.json', fields: { code: FIXTURE } },
  { path: '/api/links.json', fields: { limit: '5' } },
  { path: '/api/update.json', fields: { code: FIXTURE, mode: 'redirect' } },
  { path: '/api/delete.json', fields: { code: 'no-such-code' } },
]

const utf8 = (s: string) => new TextEncoder().encode(s)
const concat = (...parts: (Uint8Array | string)[]) => {
  const bytes = parts.map((p) => (typeof p === 'string' ? utf8(p) : p))
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0))
  let at = 0
  for (const b of bytes) {
    out.set(b, at)
    at += b.length
  }
  return out
}
const formBody = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const JSONCT = { 'content-type': 'application/json' }

const MALFORMED: [string, (fields: Record<string, string>) => RequestInit, number?][] = [
  ['invalid JSON', () => ({ headers: JSONCT, body: '{"url": "https://example.com/",' })],
  ['JSON with a trailing comma', (f) => ({ headers: JSONCT, body: JSON.stringify(f).replace(/}$/, ',}') })],
  ['a JSON array body', (f) => ({ headers: JSONCT, body: JSON.stringify([f]) })],
  ['a JSON string body', () => ({ headers: JSONCT, body: '"url=https://example.com/"' })],
  ['a JSON null body', () => ({ headers: JSONCT, body: 'null' })],
  ['a JSON number body', () => ({ headers: JSONCT, body: '42' })],
  [
    'invalid UTF-8 bytes in a form body',
    (f) => ({ headers: FORM, body: concat(formBody(f), '&x=', new Uint8Array([0xff, 0xfe])) }),
  ],
  [
    'invalid UTF-8 bytes in a JSON body',
    (f) => ({
      headers: JSONCT,
      body: concat(JSON.stringify(f).slice(0, -1), ',"x":"', new Uint8Array([0xc0, 0x80]), '"}'),
    }),
  ],
  [
    'an overlong UTF-8 NUL in a form body',
    (f) => ({ headers: FORM, body: concat(formBody(f), '&x=a', new Uint8Array([0xc0, 0x80])) }),
  ],
  [
    'a UTF-16 surrogate encoded as UTF-8',
    (f) => ({ headers: FORM, body: concat(formBody(f), '&x=', new Uint8Array([0xed, 0xa0, 0x80])) }),
  ],
  ['percent-encoded invalid UTF-8 in a form value', (f) => ({ headers: FORM, body: `${formBody(f)}&x=%FF%FE` })],
  ['percent-encoded invalid UTF-8 in a form name', (f) => ({ headers: FORM, body: `${formBody(f)}&%C0%80=1` })],
  [
    'multipart without the closing boundary',
    () => ({
      headers: { 'content-type': 'multipart/form-data; boundary=XyZ' },
      body: '--XyZ\r\nContent-Disposition: form-data; name="url"\r\n\r\nhttps://example.com/',
    }),
  ],
  [
    'multipart without a boundary parameter',
    () => ({ headers: { 'content-type': 'multipart/form-data' }, body: 'url=https://example.com/' }),
  ],
  [
    'multipart with an empty boundary',
    () => ({ headers: { 'content-type': 'multipart/form-data; boundary=' }, body: '--\r\n\r\n' }),
  ],
  [
    'multipart with garbage between boundaries',
    () => ({
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
      body: 'garbage\r\n--b\r\ngarbage\r\n--b--',
    }),
  ],
  ['a body over 64 KiB', (f) => ({ headers: FORM, body: `${formBody(f)}&pad=${'a'.repeat(64 * 1024)}` }), 413],
  [
    'a streamed body over 64 KiB without Content-Length',
    (f) =>
      ({
        headers: FORM,
        body: new ReadableStream({
          start(c) {
            c.enqueue(utf8(`${formBody(f)}&pad=`))
            for (let i = 0; i < 20; i++) c.enqueue(utf8('a'.repeat(8192)))
            c.close()
          },
        }),
        duplex: 'half',
      }) as RequestInit,
    413,
  ],
]

describe('malformed bodies', () => {
  for (const m of METHODS) {
    for (const [name, init, status] of MALFORMED) {
      test(`${m.path}: ${name} → ${status ?? '4xx'} error`, async () => {
        const r = await sendRaw(box, m.path, init(m.fields))
        expectError(r, null, status)
      })
    }
    test(`${m.path}: a body of exactly 64 KiB is read (not too_large)`, async () => {
      const head = `${formBody(m.fields)}&pad=`
      const r = await sendRaw(box, m.path, { headers: FORM, body: head + 'a'.repeat(64 * 1024 - head.length) })
      expect(r.status).toBeLessThan(500)
      expect(r.body.code).not.toBe('too_large')
    })
  }
  test('the percent-encoded invalid UTF-8 refusal names the parameter', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      { headers: FORM, body: 'url=https%3A%2F%2Fexample.com%2F%E9' },
      false,
    )
    expectError(r, 'url', 400)
  })
  test('an invalid UTF-8 body is refused even without a content type', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      { body: concat('url=https://example.com/', new Uint8Array([0xff])) },
      false,
    )
    expectError(r, null, 400)
  })
})

// ---------------------------------------------------------------------------------------------------------
// Multipart files, repeated and unknown parameters, the other encodings

function multipart(fields: Record<string, string | File>) {
  const fd = new FormData()
  for (const [k, v] of Object.entries(fields)) fd.append(k, v)
  return fd
}
const file = (text: string) => new File([text], 'value.txt', { type: 'text/plain' })

describe('multipart bodies', () => {
  test('a file in url → 400 naming url', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      { body: multipart({ url: file('https://example.com/') }) },
      false,
    )
    expectError(r, 'url', 400)
  })
  test('a file in alias → 400 naming alias', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      { body: multipart({ url: 'https://example.com/', alias: file('abc') }) },
      false,
    )
    expectError(r, 'alias', 400)
  })
  test('a file in update url → 400 naming url', async () => {
    const r = await sendRaw(box, '/api/update.json', {
      body: multipart({ code: FIXTURE, url: file('https://example.com/') }),
    })
    expectError(r, 'url', 400)
  })
  for (const path of ['/api/stats.json', '/api/update.json', '/api/delete.json']) {
    test(`${path}: a file in code → 400 naming code`, async () => {
      const r = await sendRaw(box, path, { body: multipart({ code: file(FIXTURE) }) })
      expectError(r, 'code', 400)
    })
  }
  test('links.json: a file in limit → 400 naming limit', async () => {
    const r = await sendRaw(box, '/api/links.json', { body: multipart({ limit: file('5') }) })
    expectError(r, 'limit', 400)
  })
  test('a valid creation with every field', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      {
        body: multipart({
          url: 'https://example.com/multi',
          alias: 'multi-part',
          mode: 'frame',
          expire: '3600',
          password: 'sesame',
        }),
      },
      false,
    )
    expectOk(r)
    expect(r.body.return).toMatchObject({
      hex: 'multi-part',
      mode: 'frame',
      long_url: 'https://example.com/multi',
      password: true,
    })
    expect(r.body.return.expires).not.toBeNull()
  })
})

describe('JSON bodies', () => {
  test('a valid creation with every field', async () => {
    const r = await sendJson(
      createBox,
      '/api/getLink.json',
      JSON.stringify({
        url: 'https://example.com/json',
        alias: 'json_1',
        mode: 'preview',
        expire: 60,
        password: 'sesame',
      }),
      false,
    )
    expectOk(r)
    expect(r.body.return).toMatchObject({
      hex: 'json_1',
      mode: 'preview',
      long_url: 'https://example.com/json',
      password: true,
    })
  })
  test('content type with parameters and odd case', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      { headers: { 'content-type': 'Application/JSON; charset=UTF-8' }, body: '{"url":"https://example.com/ct"}' },
      false,
    )
    expectOk(r)
  })
  test('a key given twice: the last one wins', async () => {
    const r = await sendJson(
      createBox,
      '/api/getLink.json',
      '{"url":"https://first.example/","url":"https://second.example/"}',
      false,
    )
    expectOk(r)
    expect(r.body.return.long_url).toBe('https://second.example/')
  })
  test('deeply nested JSON in a parameter → 400, not a crash', async () => {
    const r = await sendJson(createBox, '/api/getLink.json', `{"url":${'['.repeat(20000)}${']'.repeat(20000)}}`, false)
    expectError(r, 'url', 400)
  })
})

describe('repeated and unknown parameters', () => {
  test('form: url given twice → the last one wins', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      { headers: FORM, body: 'url=https://first.example/&url=https://second.example/' },
      false,
    )
    expectOk(r)
    expect(r.body.return.long_url).toBe('https://second.example/')
  })
  test('form: an invalid url then a valid one → the valid last one wins', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      { headers: FORM, body: 'url=javascript:alert(1)&url=https://last.example/' },
      false,
    )
    expectOk(r)
    expect(r.body.return.long_url).toBe('https://last.example/')
  })
  test('form: a valid url then an invalid one → the invalid last one is refused', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      { headers: FORM, body: 'url=https://first.example/&url=ftp://last.example/' },
      false,
    )
    expectError(r, 'url', 400)
  })
  test('multipart: url given twice → the last one wins', async () => {
    const fd = new FormData()
    fd.append('url', 'https://first.example/')
    fd.append('url', 'https://second.example/')
    const r = await sendRaw(createBox, '/api/getLink.json', { body: fd }, false)
    expectOk(r)
    expect(r.body.return.long_url).toBe('https://second.example/')
  })
  test('unknown parameters are ignored (also hostile names)', async () => {
    const r = await sendRaw(
      createBox,
      '/api/getLink.json',
      {
        headers: FORM,
        body: formBody({
          url: 'https://example.com/unknown',
          foo: 'bar',
          hex: 'forced',
          account_id: '1',
          ['__proto__']: 'x',
          constructor: 'y',
          "'; DROP TABLE links; --": '1',
        }),
      },
      false,
    )
    expectOk(r)
    expect(r.body.return.hex).not.toBe('forced')
    expect(r.body.return.long_url).toBe('https://example.com/unknown')
  })
  test('JSON: unknown and prototype-polluting keys are ignored', async () => {
    const r = await sendJson(
      createBox,
      '/api/getLink.json',
      '{"url":"https://example.com/proto","__proto__":{"alias":"polluted","mode":"frame"},"constructor":{"prototype":{"x":1}}}',
      false,
    )
    expectOk(r)
    expect(r.body.return.hex).not.toBe('polluted')
    expect(r.body.return.mode).toBe('redirect')
    expect(({} as any).alias).toBeUndefined()
  })
  test('links.json: an unknown parameter is ignored', async () => {
    const r = await box.post('/api/links.json', { limit: '2', sort: 'DROP TABLE links' }, AUTH)
    expectOk(r)
    expect(Array.isArray(r.body.return.links)).toBe(true)
  })
})

describe('no header injection through a refused value', () => {
  test('a CRLF url gives no Location header', async () => {
    const r = await createBox.post('/api/getLink.json', {
      url: 'https://example.com/\r\nLocation: http://evil.example/',
    })
    expectError(r, 'url', 400)
    expect(r.headers.get('location')).toBeNull()
  })
})

// Last: the fixture is deleted here.
describe('delete.json with a valid code', () => {
  test('deletes the link, then the code is unknown (404)', async () => {
    const r = await box.post('/api/delete.json', { code: FIXTURE }, AUTH)
    expectOk(r)
    expect(r.body.return).toEqual({ hex: FIXTURE, deleted: true })
    expectError(await box.post('/api/delete.json', { code: FIXTURE }, AUTH), 'code', 404)
  })
})
