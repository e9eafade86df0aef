// Cookies files in the Netscape format (as yt-dlp and browser exporters write them) and sites, as pure functions:
// parse and check a file against its site, write one back for yt-dlp, and pick the cookies a request may carry.
import { isIP } from 'node:net'

/** The largest cookies file taken, and the most cookies in one. */
export const MAX_COOKIES_BYTES = 1024 * 1024
export const MAX_COOKIES = 10_000
/** A site is a domain (it and its subdomains) or an IP address (that one only). */
export const MAX_SITE_CHARS = 253

export interface Cookie {
  /** Lower case, without the leading dot. */
  domain: string
  /** TRUE in the file: sent to the subdomains of `domain` too. */
  subdomains: boolean
  path: string
  secure: boolean
  httpOnly: boolean
  /** Unix seconds; 0: a session cookie. */
  expires: number
  name: string
  value: string
}

export interface ParsedCookies {
  cookies: Cookie[]
  /** Cookies left out because their domain is not the site or under it. */
  otherSites: number
  /** Cookies left out because they had expired. */
  expired: number
}

/** A refusal that names what is wrong (the line of the file, or the site). */
export class CookiesError extends Error {}

export const HEADER = '# Netscape HTTP Cookie File'

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/

/** The site in its one spelling (lower case, punycode, IPv4 in four parts, IPv6 in brackets), or an error. */
export function normalizeSite(input: string): string {
  const raw = input.trim().toLowerCase().replace(/^\./, '')
  const named = `site "${input.length > 80 ? `${input.slice(0, 80)}…` : input}"`
  if (!raw) throw new CookiesError('the site is empty: give a domain such as example.com, or an IP address')
  const bare = raw.replace(/^\[(.*)\]$/, '$1')
  if (raw.length > MAX_SITE_CHARS || (isIP(bare) !== 6 && /[\s/?#@:[\]]/.test(raw)))
    throw new CookiesError(`the ${named} is not a domain or an IP address (no scheme, port or path)`)
  let host: string
  try {
    host = new URL(`http://${isIP(bare) === 6 ? `[${bare}]` : raw}/`).hostname
  } catch {
    throw new CookiesError(`the ${named} is not a domain or an IP address`)
  }
  if (isIpHost(host)) return host
  const labels = host.split('.')
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^[0-9]+$/.test(labels.at(-1)!))
    throw new CookiesError(
      `the ${named} is not a domain with at least two labels, such as example.com, or an IP address`,
    )
  return host
}

const isIpHost = (host: string) => isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0

/** Whether `host` (a URL's hostname) belongs to `site`: the site itself or, for a domain, a subdomain of it. */
export function hostInSite(host: string, site: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '')
  if (h === site) return true
  return !isIpHost(site) && !isIpHost(h) && h.endsWith(`.${site}`)
}

/** The sites a host may belong to, longest first: itself and each parent domain (an IP address: itself). */
export function siteCandidates(host: string): string[] {
  const h = host.toLowerCase().replace(/\.$/, '')
  if (!h || h.length > MAX_SITE_CHARS) return []
  if (isIpHost(h)) return [h]
  const labels = h.split('.')
  const out: string[] = []
  for (let i = 0; i < labels.length - 1; i++) out.push(labels.slice(i).join('.'))
  return out
}

const FLAG: Record<string, boolean> = { TRUE: true, FALSE: false }
// A name or value that would break the Cookie header or the file: control characters, ';' and, in names, '=' and space.
const BAD_NAME = /[\u0000-\u0020\u007f;=,]/
const BAD_VALUE = /[\u0000-\u001f\u007f;]/

/** Parses a cookies file for `site`: every line checked (an error names the line), other sites' and expired cookies left out. */
export function parseCookies(text: string, site: string, nowMs: number): ParsedCookies {
  if (Buffer.byteLength(text, 'utf8') > MAX_COOKIES_BYTES)
    throw new CookiesError(`the cookies file is larger than ${MAX_COOKIES_BYTES / 1024 / 1024} MiB`)
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  const out: ParsedCookies = { cookies: [], otherSites: 0, expired: 0 }
  let seen = 0
  lines.forEach((original, i) => {
    const at = `line ${i + 1}`
    let line = original
    let httpOnly = false
    if (line.startsWith('#HttpOnly_')) {
      httpOnly = true
      line = line.slice('#HttpOnly_'.length)
    } else if (line.startsWith('#') || line.trim() === '') return
    const fields = line.split('\t')
    if (fields.length === 6) fields.push('') // an exporter that drops the tab of an empty value
    if (fields.length !== 7)
      throw new CookiesError(
        `${at} of the cookies file has ${fields.length} fields separated by tabs, not 7 (domain, subdomains, path, secure, expiry, name, value): is it a Netscape cookies file?`,
      )
    const [domainRaw, sub, path, secure, expiry, name, value] = fields as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ]
    if (++seen > MAX_COOKIES) throw new CookiesError(`the cookies file has more than ${MAX_COOKIES} cookies`)
    const domain = domainRaw.trim().toLowerCase().replace(/^\./, '')
    if (!domain || domain.length > MAX_SITE_CHARS || !/^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)$/.test(domain))
      throw new CookiesError(`${at} of the cookies file: the domain "${clip(domainRaw)}" is not a host name`)
    if (!(sub in FLAG)) throw new CookiesError(`${at} of the cookies file: the second field must be TRUE or FALSE`)
    if (!(secure in FLAG))
      throw new CookiesError(`${at} of the cookies file: the fourth field (secure) must be TRUE or FALSE`)
    if (!path.startsWith('/') || /[\u0000-\u001f\u007f]/.test(path) || path.length > 1024)
      throw new CookiesError(`${at} of the cookies file: the path must start with /`)
    if (!/^-?[0-9]{1,15}(\.[0-9]+)?$/.test(expiry))
      throw new CookiesError(`${at} of the cookies file: the expiry "${clip(expiry)}" is not a number of seconds`)
    if (!name || name.length > 4096 || BAD_NAME.test(name))
      throw new CookiesError(
        `${at} of the cookies file: the cookie name is empty or holds a character a cookie name cannot`,
      )
    if (value.length > 8192 || BAD_VALUE.test(value))
      throw new CookiesError(`${at} of the cookies file: the value of "${clip(name)}" holds a control character or ";"`)
    const expires = Math.max(0, Math.floor(Number(expiry)))
    if (!hostInSite(domain, site)) {
      out.otherSites++
      return
    }
    if (expires > 0 && expires * 1000 <= nowMs) {
      out.expired++
      return
    }
    out.cookies.push({ domain, subdomains: FLAG[sub]!, path, secure: FLAG[secure]!, httpOnly, expires, name, value })
  })
  return out
}

const clip = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s).replace(/[\u0000-\u001f\u007f]/g, '?')

/** The earliest expiry of the cookies (unix ms), or null when all are session cookies. */
export function earliestExpiry(cookies: Cookie[]): number | null {
  let min: number | null = null
  for (const c of cookies) if (c.expires > 0 && (min === null || c.expires < min)) min = c.expires
  return min === null ? null : min * 1000
}

/** The cookies as a Netscape file yt-dlp reads (`--cookies`). */
export function formatCookies(cookies: Cookie[]): string {
  const lines = cookies.map((c) =>
    [
      `${c.httpOnly ? '#HttpOnly_' : ''}${c.subdomains ? '.' : ''}${c.domain}`,
      c.subdomains ? 'TRUE' : 'FALSE',
      c.path,
      c.secure ? 'TRUE' : 'FALSE',
      String(c.expires),
      c.name,
      c.value,
    ].join('\t'),
  )
  return `${HEADER}\n${lines.join('\n')}\n`
}

/** The Cookie header a request to `url` carries: the cookies whose domain, path and secure flag match, unexpired. */
export function cookieHeader(cookies: Cookie[], url: URL, nowMs: number): string | null {
  const host = url.hostname.toLowerCase()
  const https = url.protocol === 'https:'
  const path = url.pathname || '/'
  const pairs: string[] = []
  for (const c of cookies) {
    if (c.expires > 0 && c.expires * 1000 <= nowMs) continue
    if (c.secure && !https) continue
    if (!(host === c.domain || (c.subdomains && !isIpHost(host) && host.endsWith(`.${c.domain}`)))) continue
    if (!(path === c.path || (path.startsWith(c.path) && (c.path.endsWith('/') || path[c.path.length] === '/'))))
      continue
    pairs.push(`${c.name}=${c.value}`)
  }
  return pairs.length ? pairs.join('; ') : null
}
