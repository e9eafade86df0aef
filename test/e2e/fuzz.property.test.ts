// Random and hostile input against one real app on real sockets: every /api method (any verb, random and
// repeated parameters, huge, unicode, control characters, paths, SQL-ish text, wrong or broken bodies, bad
// keys), the pages (random paths, queries, headers and forms), and raw bytes to the SMTP port. What must
// hold, whatever is sent:
// - no 5xx except the documented ones: 503 busy / unavailable / storage_unavailable (SPEC §1: a full
//   queue, no yt-dlp, a database that cannot be written), and on media methods 502 upstream_failed and
//   504 timeout (extraction failures); on pages a 503 (a busy password check or QR queue) only;
// - every /api answer is the envelope (or, for a QR method with raw=1, the image it documents);
// - no answer carries a stack frame or a path of this machine;
// - afterwards /healthz answers 200 and SMTP greets a new connection with 220.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { resolve as resolvePath } from 'node:path'
import { makeBox, type TestBox } from '../support/app'

let box: TestBox
let base: string
let smtpPort: number
let key: string
let code: string
let protectedCode: string
const REPO = resolvePath(import.meta.dir, '../..')

beforeAll(async () => {
  box = await makeBox(
    {
      server: { host: '127.0.0.1', port: 0 },
      mail: { smtp_host: '127.0.0.1', domains: ['fuzz.example'], max_connections_per_ip: 1000 },
      // No yt-dlp: media methods answer 503 unavailable instead of reaching out.
      media: { ytdlp_path: '/nonexistent/yt-dlp' },
    },
    // Every name resolves to a documentation address (never the network); webhooks and media refuse it.
    { smtpPort: 0, resolve: async () => ['192.0.2.1'] },
  )
  const server = box.listen()
  base = `http://127.0.0.1:${server.port}`
  smtpPort = (await box.startSmtp())!.port
  key = await box.account('fuzz', { admin: true })
  code = (await box.post('/api/getLink.json', { url: 'https://example.com/fuzz' })).body.return.hex
  protectedCode = (await box.post('/api/getLink.json', { url: 'https://example.com/p', password: 'pw' })).body.return
    .hex
})
afterAll(async () => {
  await box?.cleanup()
})

// Text that has broken parsers before: traversal, SQL, markup, templates, control characters, numbers
// at the edges, URLs of every kind, and sizes past every limit.
const NASTY = [
  '',
  ' ',
  '../../../../etc/passwd',
  '..%2f..%2fetc%2fpasswd',
  "' OR '1'='1",
  '"; DROP TABLE links; --',
  '1; SELECT * FROM accounts',
  '<script>alert(1)</script>',
  '${7*7}',
  '{{7*7}}',
  '%00',
  '\u0000',
  '\r\nX-Injected: 1',
  '\u202e',
  '\ud800',
  '😀'.repeat(50),
  '-1',
  '0',
  '1e308',
  '-0',
  'NaN',
  'Infinity',
  '9'.repeat(40),
  'true',
  'null',
  '[]',
  '{}',
  '[object Object]',
  'https://example.com/',
  'http://127.0.0.1:1/',
  'http://[::1]/',
  'http://169.254.169.254/latest/',
  'javascript:alert(1)',
  'data:text/html,x',
  'ftp://x',
  'https://user:pass@example.com/',
  `https://example.com/${'a'.repeat(5000)}`,
  'x'.repeat(70_000),
  'all',
  'link.clicked',
  'png',
  'svg',
  '1',
  'create',
  'delete',
]
const text = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.integer().map(String) },
)
// Header values must be bytes a client can send: printable ASCII.
const headerText = fc.oneof(
  fc.constantFrom(
    '',
    'x',
    '../',
    "' OR 1=1",
    'a'.repeat(2000),
    'bytes=0-',
    'bytes=-1',
    'bytes=99999999999-',
    '*',
    'garbage;;==',
  ),
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 }),
)

const STACK = /\n\s+at [^\n]*:\d+(:\d+)?|\bat <anonymous>|node_modules|bun:\/\/|\.ts:\d+/

function checkBody(body: string) {
  expect(body).not.toMatch(STACK)
  expect(body).not.toContain(REPO)
  expect(body).not.toContain(box.dir)
}

type Encoding = 'query' | 'form' | 'json' | 'multipart' | 'broken-json' | 'broken-multipart' | 'text' | 'none'

function build(pairs: [string, string][], encoding: Encoding): { query: string; body?: BodyInit; type?: string } {
  const form = new URLSearchParams(pairs)
  switch (encoding) {
    case 'query':
      return { query: `?${form}` }
    case 'form':
      return { query: '', body: form.toString(), type: 'application/x-www-form-urlencoded' }
    case 'json':
      return { query: '', body: JSON.stringify(Object.fromEntries(pairs)), type: 'application/json' }
    case 'multipart': {
      const fd = new FormData()
      for (const [k, v] of pairs) fd.append(k, v)
      return { query: '', body: fd }
    }
    case 'broken-json':
      return { query: '', body: `{"${pairs[0]?.[0] ?? 'url'}": [1, {`, type: 'application/json' }
    case 'broken-multipart':
      return {
        query: '',
        body: `--xyz\r\nContent-Disposition: form-data; name="url"\r\n\r\n${pairs[0]?.[1] ?? ''}`,
        type: 'multipart/form-data; boundary=xyz',
      }
    case 'text':
      return { query: '', body: form.toString(), type: 'text/plain' }
    case 'none':
      return { query: '' }
  }
}

const DOCUMENTED_5XX: Record<number, string[]> = { 503: ['busy', 'unavailable', 'storage_unavailable'] }
const MEDIA_5XX: Record<number, string[]> = { 502: ['upstream_failed'], 504: ['timeout'] }

describe('fuzz', () => {
  test('every /api method: no undocumented 5xx, always the envelope, never a stack or a path', async () => {
    const methods = box.methods
    const arb = fc.record({
      // An index, not the method: a counterexample then prints short.
      m: fc.nat({ max: methods.length - 1 }),
      verb: fc.constantFrom('own', 'own', 'own', 'GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
      // The method's own parameter names (so the handlers run), some unknown ones, names given twice.
      pairs: fc.array(fc.tuple(fc.oneof(fc.constant('own'), text), text), { maxLength: 8 }),
      encoding: fc.constantFrom<Encoding>(
        'query',
        'form',
        'form',
        'json',
        'multipart',
        'broken-json',
        'broken-multipart',
        'text',
        'none',
      ),
      auth: fc.constantFrom('none', 'key', 'key', 'garbage', 'both'),
      pick: fc.array(fc.nat(), { minLength: 8, maxLength: 8 }),
      // Start from the documented examples (so that the handlers run, not only the checks in front of them).
      examples: fc.boolean(),
    })
    const exampleOf = (schema: { examples?: unknown[] }) => {
      const ex = schema.examples?.[0]
      return ex === undefined ? null : typeof ex === 'object' ? JSON.stringify(ex) : String(ex)
    }
    await fc.assert(
      fc.asyncProperty(arb, async ({ m, verb, pairs, encoding, auth, pick, examples }) => {
        const method = methods[m]!
        const names = method.params.map((p) => p.name)
        const start: [string, string][] = examples
          ? method.params.flatMap((p): [string, string][] => {
              const ex = exampleOf(p.schema)
              return ex === null ? [] : [[p.name, ex]]
            })
          : []
        const named: [string, string][] = pairs.map(([n, v], i) => {
          const own = n === 'own' && names.length > 0
          const name = own ? names[pick[i]! % names.length]! : n
          // A documented example with hostile text after it: past the pattern checks, into the handler.
          const example = own && pick[i]! % 3 === 0 ? exampleOf(method.params[pick[i]! % names.length]!.schema) : null
          const value = example === null ? v : example + v
          return [name, value]
        })
        named.unshift(...start)
        // messages.json holds an empty answer for `wait` seconds: kept at 0 so the run stays short.
        for (const pair of named) if (pair[0] === 'wait' && /\d/.test(pair[1])) pair[1] = '0'
        const httpVerb = verb === 'own' ? method.verb : verb
        const { query, body, type } = build(named, httpVerb === 'GET' && encoding !== 'query' ? 'query' : encoding)
        const headers: Record<string, string> = {}
        if (type) headers['content-type'] = type
        if (auth === 'key' || auth === 'both') headers['x-api-key'] = key
        if (auth === 'garbage') headers['x-api-key'] = 'lbk_' + 'x'.repeat(pick[0]! % 80)
        if (auth === 'both') headers.authorization = 'Bearer nonsense'
        const res = await fetch(`${base}${method.path}${query}`, {
          method: httpVerb,
          headers,
          body: httpVerb === 'GET' ? undefined : body,
        })
        const raw = await res.text()
        checkBody(raw)
        // A request line past Bun's limit is answered by Bun itself, before any of our code runs.
        if ((res.status === 414 || res.status === 431) && raw === '' && query.length > 8000) return
        if (httpVerb === 'OPTIONS' && res.status < 400 && raw === '') return // a preflight, if one is answered
        const type_ = res.headers.get('content-type') ?? ''
        if (res.status === 200 && method.otherContent && method.otherContent.types.some((t) => type_.startsWith(t)))
          return
        expect(type_).toStartWith('application/json')
        const env = JSON.parse(raw)
        if (env.status === 'success') {
          expect(res.status).toBe(200)
          expect(env).toHaveProperty('return')
        } else {
          expect(env.status).toBe('error')
          expect(typeof env.message).toBe('string')
          expect(typeof env.code).toBe('string')
          if (res.status >= 500) {
            const allowed = {
              ...DOCUMENTED_5XX,
              ...(method.tag === 'media' || method.path.includes('download') ? MEDIA_5XX : {}),
            }
            expect({
              path: method.path,
              status: res.status,
              code: env.code,
              allowed: (allowed[res.status] ?? []).includes(env.code),
            }).toMatchObject({ allowed: true })
          }
        }
      }),
      { numRuns: 2000 },
    )
  }, 60_000)

  test('pages: random paths, queries, headers and forms: no 5xx but a documented 503, never a stack or a path', async () => {
    const PAGES = [
      '/',
      `/${code}`,
      `/${code}+`,
      `/${protectedCode}`,
      '/login',
      '/signup',
      '/logout',
      '/dashboard',
      '/dashboard/keys',
      '/dashboard/mail',
      '/dashboard/webhooks',
      `/dashboard/links/${code}`,
      '/dashboard/links/x/delete',
      '/dashboard/mail/a@fuzz.example',
      '/dashboard/mail/a@fuzz.example/1/html',
      '/dashboard/webhooks/1/test',
      '/qr/x.png',
      `/qr/${code}.png`,
      `/qr/${code}.svg`,
      '/dl/x',
      '/mail/raw/x',
      '/mail/attachment/x',
      '/api/docs',
      '/healthz',
      '/metrics',
      '/assets/style.css',
      '/favicon.ico',
      '/robots.txt',
    ]
    const segment = fc.oneof(
      fc.constantFrom(
        '',
        '+',
        '..',
        '%2e%2e',
        '%00',
        '%ff',
        '.png',
        '.svg',
        '/x',
        '//',
        '/../../etc/passwd',
        '%2F',
        '?',
        '#x',
      ),
      fc
        .string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 20 })
        .map(encodeURIComponent),
    )
    const arb = fc.record({
      page: fc.constantFrom(...PAGES),
      suffix: segment,
      query: fc.array(
        fc.tuple(fc.constantFrom('sig', 'exp', 'size', 'format', 'next', 'page', 'q', 'sort', 'code', 'x'), text),
        { maxLength: 4 },
      ),
      verb: fc.constantFrom('GET', 'GET', 'POST', 'HEAD', 'PUT', 'DELETE'),
      headers: fc.dictionary(
        fc.constantFrom(
          'cookie',
          'content-type',
          'x-forwarded-for',
          'accept-language',
          'if-none-match',
          'range',
          'referer',
          'user-agent',
          'origin',
          'x-link-password',
          'accept',
        ),
        headerText,
        { maxKeys: 4 },
      ),
      form: fc.array(
        fc.tuple(fc.constantFrom('password', 'name', 'url', 'alias', 'csrf', 'label', 'scopes', 'events', 'x'), text),
        { maxLength: 5 },
      ),
    })
    await fc.assert(
      fc.asyncProperty(arb, async ({ page, suffix, query, verb, headers, form }) => {
        const qs = query.length ? `?${new URLSearchParams(query)}` : ''
        let url: string
        try {
          url = new URL(`${base}${page}${suffix}${qs}`).href
        } catch {
          return
        }
        const res = await fetch(url, {
          method: verb,
          redirect: 'manual',
          headers,
          body: verb === 'GET' || verb === 'HEAD' ? undefined : new URLSearchParams(form).toString(),
        })
        const raw = await res.text()
        checkBody(raw)
        if (res.status >= 500) expect({ url, verb, status: res.status }).toMatchObject({ status: 503 })
      }),
      { numRuns: 1500 },
    )
  }, 60_000)

  test('raw bytes to SMTP: answers are SMTP lines, never a stack; the receiver keeps greeting', async () => {
    const arb = fc.record({
      prefix: fc.constantFrom(
        '',
        'EHLO fuzz\r\n',
        'HELO x\r\nMAIL FROM:<a@b>\r\n',
        'EHLO x\r\nMAIL FROM:<a@b>\r\nRCPT TO:<x@fuzz.example>\r\n',
        'STARTTLS\r\n',
        'AUTH PLAIN\r\n',
      ),
      bytes: fc.oneof(
        fc.uint8Array({ maxLength: 2048 }),
        fc.string({ maxLength: 300 }).map((s) => new TextEncoder().encode(s)),
        fc.constantFrom(new Uint8Array(70_000).fill(65)),
      ),
    })
    await fc.assert(
      fc.asyncProperty(arb, async ({ prefix, bytes }) => {
        let received = ''
        let closed!: () => void
        const done = new Promise<void>((r) => (closed = r))
        const socket = await Bun.connect({
          hostname: '127.0.0.1',
          port: smtpPort,
          socket: {
            data: (_s, d) => {
              received += d.toString('latin1')
            },
            close: () => closed(),
            error: () => closed(),
          },
        })
        socket.write(prefix)
        socket.write(bytes)
        socket.write('\r\nQUIT\r\n')
        socket.flush()
        // The garbage may have started a DATA section the QUIT is part of: then stop waiting after a moment.
        await Promise.race([done, Bun.sleep(300)])
        socket.end()
        expect(received).not.toMatch(STACK)
        for (const line of received.split('\r\n').filter(Boolean)) expect(line).toMatch(/^\d{3}[ -]/)
      }),
      { numRuns: 60 },
    )
  }, 60_000)

  test('afterwards: /healthz answers 200 and SMTP greets a new connection with 220', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200)
    const greeting = await new Promise<string>((resolveGreeting, reject) => {
      void Bun.connect({
        hostname: '127.0.0.1',
        port: smtpPort,
        socket: {
          data: (s, d) => {
            resolveGreeting(d.toString())
            s.end()
          },
          error: (_s, e) => reject(e),
        },
      })
    })
    expect(greeting).toStartWith('220 ')
  })
})
