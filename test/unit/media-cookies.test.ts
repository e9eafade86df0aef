// Cookies files (media/cookies-file.ts) and their sealing (media/cookies.ts), without a database or yt-dlp.
import { describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { cookieKey, seal, unseal } from '../../src/media/cookies'
import {
  CookiesError,
  cookieHeader,
  earliestExpiry,
  formatCookies,
  hostInSite,
  MAX_COOKIES,
  normalizeSite,
  parseCookies,
  siteCandidates,
} from '../../src/media/cookies-file'

const NOW = 1_800_000_000_000
const FUTURE = NOW / 1000 + 86_400
const file = (...lines: string[]) => `# Netscape HTTP Cookie File\n# a comment\n\n${lines.join('\n')}\n`
const line = (
  domain: string,
  name: string,
  value: string,
  o: { sub?: string; path?: string; secure?: string; exp?: number } = {},
) => [domain, o.sub ?? 'TRUE', o.path ?? '/', o.secure ?? 'FALSE', String(o.exp ?? FUTURE), name, value].join('\t')

describe('sites', () => {
  test('a domain or an IP address, in one spelling; anything else named in the error', () => {
    expect(normalizeSite(' .Example.COM ')).toBe('example.com')
    expect(normalizeSite('bücher.example')).toBe('xn--bcher-kva.example')
    expect(normalizeSite('127.1')).toBe('127.0.0.1')
    expect(normalizeSite('::1')).toBe('[::1]')
    expect(normalizeSite('[::1]')).toBe('[::1]')
    for (const bad of [
      '',
      'com',
      'https://example.com',
      'example.com/x',
      'example.com:8080',
      'a b.com',
      'user@x.com',
      '-a.com',
    ])
      expect(() => normalizeSite(bad), bad).toThrow(CookiesError)
    expect(() => normalizeSite('https://example.com')).toThrow('site "https://example.com"')
  })

  test('a domain covers its subdomains, an IP address only itself', () => {
    expect(hostInSite('example.com', 'example.com')).toBe(true)
    expect(hostInSite('www.Example.com', 'example.com')).toBe(true)
    expect(hostInSite('badexample.com', 'example.com')).toBe(false)
    expect(hostInSite('example.com.evil.net', 'example.com')).toBe(false)
    expect(hostInSite('127.0.0.1', '127.0.0.1')).toBe(true)
    expect(hostInSite('127.0.0.2', '127.0.0.1')).toBe(false)
    expect(siteCandidates('a.b.example.com')).toEqual(['a.b.example.com', 'b.example.com', 'example.com'])
    expect(siteCandidates('127.0.0.1')).toEqual(['127.0.0.1'])
  })
})

describe('parsing a cookies file', () => {
  test("the site's cookies kept (#HttpOnly_ too), other domains' and expired ones counted and left out", () => {
    const text = file(
      line('.example.com', 'sid', 'a=b/c'),
      `#HttpOnly_${line('www.example.com', 'h', '1', { sub: 'FALSE', secure: 'TRUE', exp: 0 })}`,
      line('.other.net', 'x', 'y'),
      line('.example.com', 'old', 'z', { exp: NOW / 1000 - 1 }),
    )
    const r = parseCookies(text, 'example.com', NOW)
    expect(r.otherSites).toBe(1)
    expect(r.expired).toBe(1)
    expect(r.cookies).toEqual([
      {
        domain: 'example.com',
        subdomains: true,
        path: '/',
        secure: false,
        httpOnly: false,
        expires: FUTURE,
        name: 'sid',
        value: 'a=b/c',
      },
      {
        domain: 'www.example.com',
        subdomains: false,
        path: '/',
        secure: true,
        httpOnly: true,
        expires: 0,
        name: 'h',
        value: '1',
      },
    ])
    expect(earliestExpiry(r.cookies)).toBe(FUTURE * 1000)
    expect(earliestExpiry([r.cookies[1]!])).toBeNull()
    // Written back as yt-dlp reads it, and read again the same.
    expect(parseCookies(formatCookies(r.cookies), 'example.com', NOW).cookies).toEqual(r.cookies)
    expect(formatCookies(r.cookies).split('\n')[0]).toBe('# Netscape HTTP Cookie File')
  })

  test('errors name the line and what is wrong', () => {
    const bad = (l: string) => () => parseCookies(file(line('.example.com', 'ok', '1'), l), 'example.com', NOW)
    expect(bad('example.com TRUE / FALSE 0 a b')).toThrow('line 5 of the cookies file has 1 fields')
    expect(bad(line('.example.com', 'a', 'b', { sub: 'yes' }))).toThrow('line 5 of the cookies file: the second field')
    expect(bad(line('.example.com', 'a', 'b', { secure: '1' }))).toThrow('line 5 of the cookies file: the fourth field')
    expect(bad(line('.example.com', 'a', 'b', { path: 'x' }))).toThrow('line 5 of the cookies file: the path')
    expect(bad(line('.example.com', 'a', 'b;c'))).toThrow('line 5 of the cookies file: the value of "a"')
    expect(bad(line('.example.com', 'a b', 'c'))).toThrow('line 5 of the cookies file: the cookie name')
    expect(bad(line('exa mple.com', 'a', 'b'))).toThrow('line 5 of the cookies file: the domain')
    expect(bad(line('.example.com', 'a', 'b').replace(String(FUTURE), 'soon'))).toThrow('the expiry "soon"')
  })

  test('bounded: 1 MiB and 10,000 cookies', () => {
    expect(() => parseCookies('#'.repeat(1024 * 1024 + 1), 'example.com', NOW)).toThrow('larger than 1 MiB')
    const many = file(...Array.from({ length: MAX_COOKIES + 1 }, (_, i) => line('.e.com', `c${i}`, '1')))
    expect(() => parseCookies(many, 'example.com', NOW)).toThrow('more than 10000 cookies')
  })
})

test('the Cookie header of a request: domain, path, secure and expiry as the fields say', () => {
  const { cookies } = parseCookies(
    file(
      line('.example.com', 'all', '1'),
      line('www.example.com', 'host', '2', { sub: 'FALSE' }),
      line('.example.com', 'sec', '3', { secure: 'TRUE' }),
      line('.example.com', 'path', '4', { path: '/media' }),
    ),
    'example.com',
    NOW,
  )
  const header = (url: string) => cookieHeader(cookies, new URL(url), NOW)
  expect(header('http://example.com/x')).toBe('all=1')
  expect(header('https://www.example.com/media/a.mp4')).toBe('all=1; host=2; sec=3; path=4')
  expect(header('http://cdn.www.example.com/mediaX')).toBe('all=1')
  expect(header('http://other.net/')).toBeNull()
  expect(cookieHeader(cookies, new URL('http://example.com/'), (FUTURE + 1) * 1000)).toBeNull()
})

test('sealed under a key from the secret, the site bound: another site or another secret does not open it', () => {
  const key = cookieKey(randomBytes(32))
  const { cookies } = parseCookies(file(line('.example.com', 'sid', 'secret-value')), 'example.com', NOW)
  const sealed = seal(key, 'example.com', cookies)
  expect(Buffer.from(sealed).toString('latin1')).not.toContain('secret-value')
  expect(unseal(key, 'example.com', sealed)).toEqual(cookies)
  expect(unseal(key, 'evil.example', sealed)).toBeNull()
  expect(unseal(cookieKey(randomBytes(32)), 'example.com', sealed)).toBeNull()
  const changed = new Uint8Array(sealed)
  changed[changed.length - 1]! ^= 1
  expect(unseal(key, 'example.com', changed)).toBeNull()
})
