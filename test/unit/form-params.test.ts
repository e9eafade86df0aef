// Form decoding (web/params.ts): a form component is percent-decoded like URLSearchParams ("+" a space, a
// stray "%" kept), except that escaped bytes which are not UTF-8 make the parameter invalid instead of U+FFFD.
// The decoder takes decodeURIComponent's fast path when it succeeds: these tests hold it to the byte-by-byte
// rule (the reference below), on chosen cases and on random mixes of escapes, stray signs and literal text.
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { AppError } from '../../src/kernel/errors'
import { bodyParams, queryParams } from '../../src/web/params'

const isHex = (b: number | undefined) => b !== undefined && /^[0-9A-Fa-f]$/.test(String.fromCharCode(b))

/** The rule, byte by byte: valid %XX escapes decoded, everything else kept, the bytes then strict UTF-8 (a BOM kept). */
function reference(s: string): string | null {
  const bytes = new TextEncoder().encode(s.replaceAll('+', ' '))
  const out: number[] = []
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x25 && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
      out.push(parseInt(String.fromCharCode(bytes[i + 1]!, bytes[i + 2]!), 16))
      i += 2
    } else out.push(bytes[i]!)
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(new Uint8Array(out))
  } catch {
    return null
  }
}

/** What queryParams makes of `?v=<s>`: the value, or null when it is refused as not UTF-8. */
function decoded(s: string): string | null {
  try {
    return queryParams(`http://x/?v=${s}`).v as string
  } catch (err) {
    if (err instanceof AppError && err.code === 'invalid_parameter') return null
    throw err
  }
}

test('chosen components decode as the byte rule says', () => {
  const cases: [string, string | null][] = [
    ['https%3A%2F%2Fexample.com%2Fnew%2F1%3Fref%3Dbench', 'https://example.com/new/1?ref=bench'],
    ['a+b%20c', 'a b c'],
    ['100%', '100%'], // a stray sign stays
    ['%4', '%4'],
    ['%%41', '%A'],
    ['%zz%41', '%zzA'],
    ['%C3%A9t%C3%A9', 'été'],
    ['%E2%82%AC', '€'],
    ['%F0%9F%98%80', '😀'],
    ['%EF%BB%BFx', '\uFEFFx'], // a byte order mark is a character like any other here
    ['%00', '\0'],
    ['été%21', 'été!'], // literal text beside escapes
    ['%FF%FE', null],
    ['%C3', null], // a sequence cut short
    ['%C3%28', null],
    ['%C0%AF', null], // overlong
    ['%ED%A0%80', null], // a surrogate
    ['%F4%90%80%80', null], // beyond U+10FFFF
    ['%C3é', null], // an escaped lead byte followed by a literal character's bytes
    ['%C3%A9%', 'é%'],
  ]
  for (const [given, want] of cases) {
    expect({ given, got: decoded(given) }).toEqual({ given, got: want })
    expect({ given, got: decoded(given) }).toEqual({ given, got: reference(given) })
  }
})

test('random mixes of escapes, stray signs and literal text decode as the byte rule says', () => {
  const hex = fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, '0')}`)
  const utf8Escaped = fc.string({ minLength: 1, maxLength: 3, unit: 'grapheme' }).map((t) => encodeURIComponent(t))
  const piece = fc.oneof(
    hex,
    hex.map((h) => h.toUpperCase()),
    utf8Escaped,
    fc.constantFrom('%', '%4', '%g1', '+', '%2B', 'é', '€', '😀', '=', 'a', 'Z09'),
    fc.string({ maxLength: 4 }).filter((t) => !/[&=#]/.test(t)),
  )
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 8 }), (pieces) => {
      const s = pieces.join('').replace(/[&#]/g, '')
      expect(decoded(s)).toBe(reference(s))
    }),
    { numRuns: 3000 },
  )
})

test('a form body: the URL of a creation, a value that is not UTF-8 refused naming its parameter', async () => {
  const post = (body: string) =>
    bodyParams(
      new Request('http://x/api/getLink.json', {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      65536,
    )
  expect({ ...(await post('url=https%3A%2F%2Fexample.com%2Fnew%2F7%3Fref%3Dbench&tags=a%2Cb')) }).toEqual({
    url: 'https://example.com/new/7?ref=bench',
    tags: 'a,b',
  })
  const refused = await post('url=https%3A%2F%2Fexample.com%2F%E9').catch((err) => err)
  expect(refused).toBeInstanceOf(AppError)
  expect(refused.message).toContain('"url"')
  // A body that is not UTF-8 as a whole is refused before any decoding.
  const raw = new Uint8Array([...new TextEncoder().encode('url=a'), 0xff])
  const whole = await bodyParams(
    new Request('http://x/', {
      method: 'POST',
      body: raw,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }),
    65536,
  ).catch((err) => err)
  expect(whole.code).toBe('invalid_body')
})
