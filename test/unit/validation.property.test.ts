// Property-based tests of the pure field rules in src/links/validate.ts (fast-check). The oracles below are
// written independently of the implementation (no reuse of its regular expressions).
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { AppError } from '../../src/kernel/errors'
import {
  MAX_EXPIRE,
  MAX_URL_LENGTH,
  RESERVED_CODES,
  validateAlias,
  validateExpire,
  ownUrlRules,
  validateUrl,
} from '../../src/links/validate'

const RUNS = { numRuns: 300 }
// The defaults: base_url http://localhost:8080, listening on every address, port 8080.
const RULES = ownUrlRules({ base_url: 'http://localhost:8080', host: '0.0.0.0', port: 8080 }, [])

/** The AppError thrown by `fn`; fails when `fn` returns or throws anything else. */
function refusal(fn: () => unknown): AppError {
  let value: unknown
  try {
    value = fn()
  } catch (err) {
    if (err instanceof AppError) return err
    throw new Error(`threw a non-AppError: ${String(err)}`)
  }
  throw new Error(`accepted: ${JSON.stringify(value)}`)
}

function expectRefused(fn: () => unknown, status: number, code: string, param: string) {
  const e = refusal(fn)
  expect(e.status).toBe(status)
  expect(e.code).toBe(code)
  expect(e.message).toMatch(new RegExp(`"${param}"|\\b${param} "`))
}

// ---------------------------------------------------------------------------------------------------------
// alias: 2-32 of [A-Za-z0-9_-]; reserved words (case-insensitive) → 409; anything else → 400

const ALIAS_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-'
const aliasShaped = (s: string) => s.length >= 2 && s.length <= 32 && [...s].every((c) => ALIAS_ALPHABET.includes(c))
const reserved = (s: string) => RESERVED_CODES.has(s.toLowerCase())

/** Characters that are close to the alphabet, or dangerous, to mix into candidate aliases. */
const NEAR_MISS = [
  ' ',
  '.',
  '/',
  '+',
  '%',
  '\n',
  '\u0000',
  '\t',
  'é',
  'ß',
  'İ',
  'ı',
  'K' /* Kelvin */,
  '１',
  'ａ',
  '😀',
  '\u202e',
  '\u200b',
  '\u0301',
]
const aliasChar = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...ALIAS_ALPHABET) },
  { weight: 1, arbitrary: fc.constantFrom(...NEAR_MISS) },
)

describe('validateAlias', () => {
  test('accepts every string of the alias alphabet of 2 to 32 characters that is not reserved', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...ALIAS_ALPHABET), minLength: 2, maxLength: 32 }), (s) => {
        if (reserved(s)) expectRefused(() => validateAlias(s), 409, 'alias_reserved', 'alias')
        else expect(validateAlias(s)).toBe(s)
      }),
      RUNS,
    )
  })

  test('on mixed candidates: alias-shaped → accepted (or 409 if reserved), anything else → 400 invalid_alias', () => {
    fc.assert(
      fc.property(fc.string({ unit: aliasChar, maxLength: 40 }), (s) => {
        if (!aliasShaped(s)) expectRefused(() => validateAlias(s), 400, 'invalid_alias', 'alias')
        else if (reserved(s)) expectRefused(() => validateAlias(s), 409, 'alias_reserved', 'alias')
        else expect(validateAlias(s)).toBe(s)
      }),
      RUNS,
    )
  })

  test('arbitrary unicode strings: accepted exactly when alias-shaped', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 })),
        (s) => {
          if (aliasShaped(s) && !reserved(s)) expect(validateAlias(s)).toBe(s)
          else if (aliasShaped(s)) expectRefused(() => validateAlias(s), 409, 'alias_reserved', 'alias')
          else expectRefused(() => validateAlias(s), 400, 'invalid_alias', 'alias')
        },
      ),
      RUNS,
    )
  })

  test('wrong lengths of valid characters → 400', () => {
    const wrongLength = fc.oneof(
      fc.string({ unit: fc.constantFrom(...ALIAS_ALPHABET), maxLength: 1 }),
      fc.string({ unit: fc.constantFrom(...ALIAS_ALPHABET), minLength: 33, maxLength: 200 }),
    )
    fc.assert(
      fc.property(wrongLength, (s) => expectRefused(() => validateAlias(s), 400, 'invalid_alias', 'alias')),
      RUNS,
    )
  })

  test('reserved words in any letter case → 409 alias_reserved (those of the alias alphabet)', () => {
    const words = [...RESERVED_CODES].filter(aliasShaped)
    expect(words.length).toBeGreaterThan(10)
    const anyCase = fc
      .tuple(fc.constantFrom(...words), fc.array(fc.boolean(), { minLength: 32, maxLength: 32 }))
      .map(([w, flips]) => [...w].map((c, i) => (flips[i] ? c.toUpperCase() : c)).join(''))
    fc.assert(
      fc.property(anyCase, (s) => expectRefused(() => validateAlias(s), 409, 'alias_reserved', 'alias')),
      RUNS,
    )
  })

  test('reserved words outside the alias alphabet (robots.txt) → 400 invalid_alias', () => {
    for (const w of [...RESERVED_CODES].filter((w) => !aliasShaped(w)))
      expectRefused(() => validateAlias(w), 400, 'invalid_alias', 'alias')
  })

  test('non-strings → 400 invalid_alias', () => {
    fc.assert(
      fc.property(
        fc.anything().filter((v) => typeof v !== 'string'),
        (v) => expectRefused(() => validateAlias(v), 400, 'invalid_alias', 'alias'),
      ),
      RUNS,
    )
  })
})

// ---------------------------------------------------------------------------------------------------------
// url: http/https, absolute, with a host, no controls or spaces, at most 4096 characters, not the own host

const httpUrl = fc
  .webUrl({
    validSchemes: ['http', 'https'],
    withQueryParameters: true,
    withFragments: true,
    authoritySettings: { withPort: true, withUserInfo: true, withIPv4: true, withIPv6: true, withIPv4Extended: true },
  })
  .filter((u) => u.length <= MAX_URL_LENGTH)

/** A URL built from parts, so that the expected scheme and host are known without parsing. */
const builtUrl = fc
  .record({
    scheme: fc.constantFrom('http', 'https', 'HTTP', 'Https'),
    host: fc.domain(),
    port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
    path: fc.webPath(),
    query: fc.option(fc.webQueryParameters(), { nil: undefined }),
  })
  .map((p) => ({
    ...p,
    url: `${p.scheme}://${p.host}${p.port !== undefined ? `:${p.port}` : ''}${p.path}${p.query !== undefined ? `?${p.query}` : ''}`,
  }))

/** C0 and C1 controls, DEL, and every kind of space. */
const CONTROL_OR_SPACE_CHARS = [
  ...Array.from({ length: 0x21 }, (_, i) => String.fromCharCode(i)),
  ...Array.from({ length: 0x21 }, (_, i) => String.fromCharCode(0x7f + i)),
  '\u00a0',
  '\u1680',
  '\u2000',
  '\u2001',
  '\u2002',
  '\u2003',
  '\u2004',
  '\u2005',
  '\u2006',
  '\u2007',
  '\u2008',
  '\u2009',
  '\u200a',
  '\u2028',
  '\u2029',
  '\u202f',
  '\u205f',
  '\u3000',
  '\ufeff',
  // invisible formatting: zero-width and bidirectional controls
  '\u200b',
  '\u200c',
  '\u200d',
  '\u200e',
  '\u200f',
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2069',
]

describe('validateUrl', () => {
  test('accepts generated http/https URLs; the result parses with the same scheme and host', () => {
    fc.assert(
      fc.property(httpUrl, (u) => {
        // Bun's URL parser (WebKit's) refuses some valid IPv6 forms with an embedded IPv4 part, such as
        // [0::0:0:0:0.0.0.0], which Node and the WHATWG spec accept. Then the only demand is a clean 400.
        if (!URL.canParse(u) && /\[[^\]]*\.[^\]]*\]/.test(u))
          return expectRefused(() => validateUrl(u, RULES), 400, 'invalid_url', 'url')
        const given = new URL(u)
        fc.pre(given.hostname !== 'localhost')
        // A user name before the host ("https://bank.example@evil.example/") is a phishing disguise: refused.
        if (given.username || given.password)
          return expectRefused(() => validateUrl(u, RULES), 400, 'invalid_url', 'url')
        const out = validateUrl(u, RULES)
        expect(typeof out).toBe('string')
        expect(out.length).toBeLessThanOrEqual(MAX_URL_LENGTH)
        const parsed = new URL(out)
        expect(parsed.protocol).toBe(u.slice(0, u.indexOf(':') + 1).toLowerCase())
        expect(parsed.host).toBe(given.host)
        expect(validateUrl(out, RULES)).toBe(out) // normalising is idempotent
      }),
      RUNS,
    )
  })

  test('URLs built from a scheme, a domain, a port and a path keep that scheme, host and port', () => {
    fc.assert(
      fc.property(builtUrl, ({ url, scheme, host, port }) => {
        fc.pre(url.length <= MAX_URL_LENGTH)
        const parsed = new URL(validateUrl(url, RULES))
        expect(parsed.protocol).toBe(`${scheme.toLowerCase()}:`)
        expect(parsed.hostname).toBe(host.toLowerCase())
        const defaultPort = scheme.toLowerCase() === 'http' ? 80 : 443
        expect(parsed.port).toBe(port === undefined || port === defaultPort ? '' : String(port))
      }),
      RUNS,
    )
  })

  test('refuses every string whose scheme is not http or https', () => {
    const scheme = fc
      .stringMatching(/^[A-Za-z][A-Za-z0-9+.-]{0,11}$/)
      .filter((s) => s.toLowerCase() !== 'http' && s.toLowerCase() !== 'https')
    const rest = fc.oneof(
      httpUrl.map((u) => u.slice(u.indexOf(':') + 1)), // "//host/path…"
      fc.constantFrom(
        '//example.com/',
        '///etc/passwd',
        'alert(1)',
        'text/html,<script>alert(1)</script>',
        'a@example.com',
      ),
      fc.string({ maxLength: 40 }),
    )
    fc.assert(
      fc.property(scheme, rest, (s, r) =>
        expectRefused(() => validateUrl(`${s}:${r}`, RULES), 400, 'invalid_url', 'url'),
      ),
      RUNS,
    )
  })

  test('refuses strings that do not start with http:// or https:// (no scheme, relative, scheme without //)', () => {
    const notAbsolute = fc
      .oneof(
        fc.string({ maxLength: 60 }),
        httpUrl.map((u) => u.slice(u.indexOf(':') + 3)), // "host/path…"
        httpUrl.map((u) => u.slice(u.indexOf(':') + 1)), // "//host/path…"
        httpUrl.map((u) => u.replace('://', ':')), // "http:host/path…"
      )
      .filter((s) => !/^https?:\/\//i.test(s))
    fc.assert(
      fc.property(notAbsolute, (s) => expectRefused(() => validateUrl(s, RULES), 400, 'invalid_url', 'url')),
      RUNS,
    )
  })

  test('refuses a valid URL with a control character or a space inserted anywhere', () => {
    fc.assert(
      fc.property(httpUrl, fc.constantFrom(...CONTROL_OR_SPACE_CHARS), fc.nat(), (u, c, at) => {
        const i = at % (u.length + 1)
        expectRefused(() => validateUrl(u.slice(0, i) + c + u.slice(i), RULES), 400, 'invalid_url', 'url')
      }),
      RUNS,
    )
  })

  test(`refuses strings over ${MAX_URL_LENGTH} characters, accepts up to ${MAX_URL_LENGTH}`, () => {
    const prefix = 'https://example.com/'
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 70_000 }), fc.constantFrom('a', '-', '~', '%41'), (n, unit) => {
        const url = (prefix + unit.repeat(Math.ceil(n / unit.length))).slice(0, prefix.length + n)
        // cut percent escapes at the end would be legal anyway ("%4" stays as is), so length is what matters
        if (url.length > MAX_URL_LENGTH) expectRefused(() => validateUrl(url, RULES), 400, 'invalid_url', 'url')
        else expect(validateUrl(url, RULES)).toBe(new URL(url).href)
      }),
      RUNS,
    )
    expect(validateUrl(prefix + 'a'.repeat(MAX_URL_LENGTH - prefix.length), RULES)).toHaveLength(MAX_URL_LENGTH)
    expectRefused(
      () => validateUrl(prefix + 'a'.repeat(MAX_URL_LENGTH - prefix.length + 1), RULES),
      400,
      'invalid_url',
      'url',
    )
  })

  test('refuses http/https URLs without a host', () => {
    const hostless = fc
      .tuple(
        fc.constantFrom('http', 'https', 'HTTP'),
        fc.constantFrom('', '/', '\\', '?', '#', '/x', '\\x', '//x'),
        fc.webPath(),
      )
      .map(([s, h, p]) => `${s}://${h}${p}`)
    fc.assert(
      fc.property(hostless, (u) => expectRefused(() => validateUrl(u, RULES), 400, 'invalid_url', 'url')),
      RUNS,
    )
  })

  test("refuses URLs that point at the service's own origin (port 8080), in any spelling of a loopback host", () => {
    const own = fc
      .tuple(
        fc.constantFrom('http', 'https'),
        fc.constantFrom(
          'localhost',
          'LOCALHOST',
          'LocalHost',
          'localhost.',
          'ｌｏｃａｌｈｏｓｔ',
          'user:pw@localhost',
          'a.localhost',
          '127.0.0.1',
          '127.1',
          '2130706433',
          '0x7f000001',
          '0177.0.0.1',
          '127.255.0.9',
          '[::1]',
          '[::ffff:127.0.0.1]',
          '0.0.0.0',
          '[::]',
        ),
        fc.webPath(),
      )
      .map(([s, h, p]) => `${s}://${h}:8080${p}`)
    fc.assert(
      fc.property(own, (u) => expectRefused(() => validateUrl(u, RULES), 400, 'invalid_url', 'url')),
      RUNS,
    )
  })

  test('accepts the same loopback hosts on other ports: other programs of the same machine', () => {
    const other = fc
      .tuple(
        fc.constantFrom('http', 'https'),
        fc.constantFrom('localhost', '127.0.0.1', '127.1', '2130706433', '[::1]', '[::ffff:127.0.0.1]'),
        fc.integer({ min: 1, max: 65535 }).filter((p) => p !== 8080),
        fc.webPath(),
      )
      .map(([s, h, port, p]) => `${s}://${h}:${port}${p}`)
    fc.assert(
      fc.property(other, (u) => expect(validateUrl(u, RULES)).toBe(new URL(u).href)),
      RUNS,
    )
  })

  test('refuses non-strings', () => {
    fc.assert(
      fc.property(
        fc.anything().filter((v) => typeof v !== 'string'),
        (v) => expectRefused(() => validateUrl(v, RULES), 400, 'invalid_url', 'url'),
      ),
      RUNS,
    )
  })

  test('arbitrary strings: either refused with 400 invalid_url, or accepted as an http(s) URL with a host', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 80 }),
          httpUrl.map((u) => u + '\u0000'),
        ),
        (s) => {
          let out: string
          try {
            out = validateUrl(s, RULES)
          } catch (err) {
            expect(err).toBeInstanceOf(AppError)
            expect((err as AppError).status).toBe(400)
            expect((err as AppError).message).toContain('"url"')
            return
          }
          const parsed = new URL(out)
          expect(['http:', 'https:']).toContain(parsed.protocol)
          expect(parsed.hostname.length).toBeGreaterThan(0)
        },
      ),
      RUNS,
    )
  })
})

// ---------------------------------------------------------------------------------------------------------
// expire: whole seconds 0..MAX_EXPIRE, as a number or a decimal string (at most 10 digits)

/** The oracle: a safe integer in range as a number, or a string of 1 to 10 ASCII digits whose value is in range. */
function expireOracle(v: unknown): number | null {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= MAX_EXPIRE ? v : null
  if (typeof v === 'string' && v.length >= 1 && v.length <= 10 && [...v].every((c) => c >= '0' && c <= '9')) {
    const n = Number(v)
    return n <= MAX_EXPIRE ? n : null
  }
  return null
}

const attempt = (f: () => unknown) => {
  try {
    return f()
  } catch {
    return 'unprintable'
  }
}

describe('validateExpire', () => {
  test('accepts every integer from 0 to the maximum, as a number and as a decimal string', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_EXPIRE }), (n) => {
        expect(validateExpire(n)).toBe(n)
        expect(validateExpire(String(n))).toBe(n)
      }),
      RUNS,
    )
    for (const n of [0, 1, MAX_EXPIRE]) {
      expect(validateExpire(n)).toBe(n)
      expect(validateExpire(String(n))).toBe(n)
    }
  })

  test('refuses negative integers, as numbers and as strings', () => {
    fc.assert(
      fc.property(fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -1 }), (n) => {
        expectRefused(() => validateExpire(n), 400, 'invalid_expire', 'expire')
        expectRefused(() => validateExpire(String(n)), 400, 'invalid_expire', 'expire')
      }),
      RUNS,
    )
  })

  test('refuses integers over the maximum, as numbers and as strings', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: MAX_EXPIRE + 1 }), fc.bigInt({ min: BigInt(MAX_EXPIRE) + 1n }).map(Number)),
        (n) => {
          expectRefused(() => validateExpire(n), 400, 'invalid_expire', 'expire')
          expectRefused(() => validateExpire(String(n)), 400, 'invalid_expire', 'expire')
        },
      ),
      RUNS,
    )
    expectRefused(() => validateExpire(MAX_EXPIRE + 1), 400, 'invalid_expire', 'expire')
  })

  test('refuses fractions, NaN and infinities, as numbers and as strings', () => {
    fc.assert(
      fc.property(
        fc.double().filter((d) => !Number.isInteger(d)),
        (d) => {
          expectRefused(() => validateExpire(d), 400, 'invalid_expire', 'expire')
          expectRefused(() => validateExpire(String(d)), 400, 'invalid_expire', 'expire')
        },
      ),
      RUNS,
    )
  })

  test('refuses decorated decimal strings (sign, spaces, exponent, hex, separators, unicode digits)', () => {
    const decorated = fc
      .tuple(
        fc.integer({ min: 0, max: MAX_EXPIRE }),
        fc.constantFrom<(s: string) => string>(
          (s) => `+${s}`,
          (s) => ` ${s}`,
          (s) => `${s} `,
          (s) => `${s}\n`,
          (s) => `${s}.0`,
          (s) => `${s}e0`,
          (s) => `0x${s}`,
          (s) => `${s}s`,
          (s) => s.replace(/\d/g, (d) => String.fromCharCode(0xff10 + Number(d))), // full-width
          (s) => s.replace(/\d/g, (d) => String.fromCharCode(0x0660 + Number(d))), // Arabic-Indic
          (s) => `${s[0]}_${s.slice(1)}`,
        ),
      )
      .map(([n, f]) => f(String(n)))
    fc.assert(
      fc.property(decorated, (s) => expectRefused(() => validateExpire(s), 400, 'invalid_expire', 'expire')),
      RUNS,
    )
  })

  test('digit strings: accepted exactly when 1 to 10 digits with a value in range (leading zeros allowed)', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 0, maxLength: 14 }), (s) => {
        const want = expireOracle(s)
        if (want === null) expectRefused(() => validateExpire(s), 400, 'invalid_expire', 'expire')
        else expect(validateExpire(s)).toBe(want)
      }),
      RUNS,
    )
  })

  test('anything, and anything turned into a string or JSON: accepted exactly per the oracle', () => {
    const values = fc.anything().chain((v) =>
      fc.constantFrom<unknown>(
        v,
        attempt(() => String(v)),
        attempt(() => JSON.stringify(v)),
      ),
    )
    fc.assert(
      fc.property(values, (v) => {
        const want = expireOracle(v)
        if (want === null) expectRefused(() => validateExpire(v), 400, 'invalid_expire', 'expire')
        else expect(validateExpire(v)).toBe(want)
      }),
      RUNS,
    )
  })
})
