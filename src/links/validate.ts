// The rules of a link's fields, as pure functions: each returns the clean value or throws an AppError
// whose message names the parameter and the rule.
import { AppError } from '../kernel/errors'
import { canonicalIp, parseIp } from '../kernel/net/cidr'

export const MAX_URL_LENGTH = 4096
export const MAX_EXPIRE = 10 * 365 * 86400
export const MAX_PASSWORD_LENGTH = 128
export const MODES = ['redirect', 'preview', 'frame'] as const
export type Mode = (typeof MODES)[number]
export const ALIAS_PATTERN = /^[A-Za-z0-9_-]{2,32}$/
export const MAX_TAGS = 10
export const MAX_TAG_LENGTH = 32

/** First path segments the service itself uses (compared case-insensitively). */
export const RESERVED_CODES = new Set([
  'api',
  'qr',
  'dl',
  'mail',
  'assets',
  'dashboard',
  'login',
  'logout',
  'docs',
  'healthz',
  'readyz',
  'metrics',
  'robots.txt',
  'favicon.ico',
  'admin',
  'static',
  'webhooks',
  'account',
  'settings',
  'stats',
  'health',
  'status',
  'well-known',
  '.well-known',
  'sitemap.xml',
  'index',
  'app',
  'signup',
  'signin',
  'register',
  '_og',
])
export const isReserved = (code: string) => RESERVED_CODES.has(code.toLowerCase())

// C0/C1 controls and every space (\s: U+0020, U+00A0, U+1680, U+2000-200A, U+2028/9, U+202F, U+205F, U+3000,
// U+FEFF), plus the invisible format characters that can disguise a URL: zero-width (U+200B-200F, U+2060-2064)
// and bidirectional controls (U+202A-202E, U+2066-2069). Sent percent-encoded they are fine.
const CONTROL_OR_SPACE = /[\s\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069]/

function asString(name: string, value: unknown, code: string): string {
  if (typeof value !== 'string') throw new AppError(400, code, `The parameter "${name}" must be a string.`)
  return value
}

export interface UrlRules {
  /** Origins that are this service, as `scheme://host:port` with the port always written (see ownUrlRules). */
  ownOrigins: string[]
  /** Ports on which every loopback spelling (localhost, 127.x.y.z, [::1], …) reaches this service. */
  loopbackPorts: number[]
  blockedDomains: string[]
  /** The short domains beside base_url's host (SPEC §13): a destination on any of them is refused, any port. */
  ownHosts?: string[]
}

const DEFAULT_PORT: Record<string, string> = { 'http:': '80', 'https:': '443' }

/** Lower case, without the trailing dot of a fully qualified name ("localhost." is "localhost"). */
const hostOf = (url: URL) => url.hostname.toLowerCase().replace(/\.$/, '')
const originOf = (url: URL) => `${url.protocol}//${hostOf(url)}:${url.port || DEFAULT_PORT[url.protocol]}`

// 127.0.0.0/8 (also as ::ffff:127.x.y.z), ::1, and the unspecified 0.0.0.0 and ::, which connect to the
// local machine too. The URL parser has already turned 2130706433, 0x7f000001, 127.1 and 0177.0.0.1 into
// 127.0.0.1, and [::ffff:127.0.0.1] into [::ffff:7f00:1].
function isLoopback(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  const ip = parseIp(host)
  if (!ip) return false
  const zeros = (from: number, to: number) => ip.subarray(from, to).every((b) => b === 0)
  if (zeros(0, 10) && ip[10] === 0xff && ip[11] === 0xff) return ip[12] === 127 || zeros(12, 16)
  return zeros(0, 15) && (ip[15] === 1 || ip[15] === 0)
}

/**
 * What counts as this service. A link whose destination is the service itself would be pointless, and two
 * links pointing at each other would send a browser round in a loop. A short link is always
 * {base_url}/<code>, on base_url's origin, so refusing every destination on that origin refuses every
 * short link as a destination: a redirect from a link always leaves the service, and no chain of links
 * can come back to it except through another server. The same service is also reached on its listening
 * address, and, when that is a loopback or unspecified address or base_url names a loopback host, through
 * every loopback spelling on the listening port. Other ports on the same host are other programs
 * (links to the other apps of a home server) and are allowed.
 */
export function ownUrlRules(
  server: { base_url: string; host: string; port: number; domains?: string[] },
  blockedDomains: string[],
): UrlRules {
  const base = new URL(server.base_url)
  const origins = new Set([originOf(base)])
  // Behind a TLS proxy, http://host/ is normally redirected to https://host/, that is to base_url.
  if (base.protocol === 'https:' && (base.port === '' || base.port === '443')) origins.add(`http://${hostOf(base)}:80`)
  const listenHost = server.host.includes(':') && !server.host.startsWith('[') ? `[${server.host}]` : server.host
  let listening: URL | null = null
  try {
    listening = new URL(`http://${listenHost}:${server.port}/`)
  } catch {}
  if (listening && server.port > 0) origins.add(originOf(listening))
  const ports = new Set<number>()
  if (listening && server.port > 0 && isLoopback(hostOf(listening))) ports.add(server.port)
  if (isLoopback(hostOf(base))) ports.add(Number(base.port || DEFAULT_PORT[base.protocol]))
  return { ownOrigins: [...origins], loopbackPorts: [...ports], blockedDomains, ownHosts: server.domains ?? [] }
}

// A host a URL may name: a DNS name of letters, digits and "-" (punycode "xn--" included: the parser has
// already turned international names into it; "_" is allowed as real names carry it), an IPv4 address, or an
// IPv6 address in brackets. The URL parser lets through many more characters ("a;sandbox", "a'b", "a*b"),
// and a host may end up in a header or a page.
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9_-]{1,63}(\.[a-z0-9_-]{1,63})*$/
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/
const IPV6 = /^\[[0-9a-f:.]+\]$/
const isPlainHost = (host: string) => DNS_NAME.test(host) || IPV4.test(host) || IPV6.test(host)

// An address matches only itself, in any spelling ([::ffff:1.2.3.4] is 1.2.3.4); a name, itself and its subdomains.
function blockedBy(host: string, domains: readonly string[]): boolean {
  if (domains.length === 0) return false
  const ip = canonicalIp(host)
  if (ip !== null) return domains.includes(ip) // the config writes addresses as canonicalIp does
  return domains.some((d) => host === d || host.endsWith(`.${d}`))
}

export function validateUrl(value: unknown, rules: UrlRules, name = 'url'): string {
  const fail = (rule: string) => {
    throw new AppError(400, 'invalid_url', `The parameter "${name}" ${rule}.`)
  }
  const raw = asString(name, value, 'invalid_url')
  if (raw === '') fail('must not be empty')
  if (raw.length > MAX_URL_LENGTH) fail(`must be at most ${MAX_URL_LENGTH} characters`)
  if (CONTROL_OR_SPACE.test(raw))
    fail('must not contain spaces, control characters or invisible formatting characters (percent-encode them)')
  if (!/^https?:\/\//i.test(raw)) fail('must be an absolute URL with the scheme http or https')
  // The URL parser would take "https:///x" or "http://\x" as the host x; the sender gave no host.
  if (/^https?:\/\/[/\\]/i.test(raw)) fail('must have a host')
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail('is not a valid URL')
  }
  // Each part read once (every creation comes here; each getter of a URL is a call into the runtime).
  const protocol = url.protocol
  if (protocol !== 'http:' && protocol !== 'https:') fail('must use the scheme http or https')
  const host = hostOf(url)
  if (!host) fail('must have a host')
  if (!isPlainHost(host))
    fail(
      'must have a host that is a DNS name (letters, digits, "-" and "."), an IPv4 address or an IPv6 address in brackets',
    )
  // "https://bank.example@evil.example/" reads as the first host but leads to the second.
  if (url.username || url.password) fail('must not contain a user name or password before the host')
  const href = url.href
  if (href.length > MAX_URL_LENGTH) fail(`must be at most ${MAX_URL_LENGTH} characters once normalised`)
  const port = url.port || DEFAULT_PORT[protocol]!
  const origin = `${protocol}//${host}:${port}` // originOf(url)
  if (rules.ownOrigins.includes(origin))
    fail(`must not point at this service's own origin ${origin} (a link to itself would loop)`)
  if (rules.ownHosts?.includes(host))
    fail(`must not point at ${host}: it is one of this service's own short domains (a link to itself would loop)`)
  if (rules.loopbackPorts.includes(Number(port)) && isLoopback(host))
    fail(
      `must not point at ${origin}: a loopback address on the port this service listens on, that is the service itself`,
    )
  if (blockedBy(host, rules.blockedDomains)) fail(`must not point at the blocked domain ${host}`)
  return href
}

export function validateAlias(value: unknown, name = 'alias'): string {
  const raw = asString(name, value, 'invalid_alias')
  if (!ALIAS_PATTERN.test(raw))
    throw new AppError(
      400,
      'invalid_alias',
      `The parameter "${name}" must be 2 to 32 characters: letters, digits, _ and -.`,
    )
  if (isReserved(raw)) throw new AppError(409, 'alias_reserved', `The alias "${raw}" is reserved by the service.`)
  return raw
}

export function validateMode(value: unknown, name = 'mode'): Mode {
  const raw = asString(name, value, 'invalid_mode')
  if (!(MODES as readonly string[]).includes(raw))
    throw new AppError(400, 'invalid_mode', `The parameter "${name}" must be one of: ${MODES.join(', ')}.`)
  return raw as Mode
}

export function validateExpire(value: unknown, name = 'expire'): number {
  const fail = () => {
    throw new AppError(
      400,
      'invalid_expire',
      `The parameter "${name}" must be a whole number of seconds from 0 (no expiry) to ${MAX_EXPIRE} (10 years).`,
    )
  }
  let n: number
  if (typeof value === 'number') n = value
  else if (typeof value === 'string' && /^\d{1,10}$/.test(value)) n = Number(value)
  else return fail()
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_EXPIRE) fail()
  return n
}

/** The password, or null for "" (which removes it on update). */
export function validatePassword(value: unknown, opts: { allowEmpty: boolean }, name = 'password'): string | null {
  const raw = asString(name, value, 'invalid_parameter')
  if (raw === '' && opts.allowEmpty) return null
  const length = [...raw].length // characters as people count them, not UTF-16 units
  if (length < 1 || length > MAX_PASSWORD_LENGTH)
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${name}" must be 1 to ${MAX_PASSWORD_LENGTH} characters.`,
    )
  if (/[\u0000-\u001f\u007f-\u009f]/.test(raw))
    throw new AppError(400, 'invalid_parameter', `The parameter "${name}" must not contain control characters.`)
  return raw
}

/** A short code as sent to stats/update/delete: the generated and the alias alphabet. */
export function validateCode(value: unknown, name = 'code'): string {
  if (value === undefined || value === '')
    throw new AppError(400, 'missing_parameter', `The parameter "${name}" is required.`)
  const raw = asString(name, value, 'invalid_parameter')
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(raw))
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${name}" must be a short code: letters, digits, _ and -.`,
    )
  return raw
}

const TAG_RULE = `comma-separated tags, at most ${MAX_TAGS}, each 1 to ${MAX_TAG_LENGTH} of letters, digits, _ and - (stored lower-case)`

/**
 * Tags as sent ("News, 2026,spring-sale"): split at commas, spaces around each trimmed, lower-cased, each
 * once, sorted; "" (or only spaces) is none. The letters are checked before lower-casing, so that a
 * character that lower-cases to ASCII (the Kelvin sign to "k") is refused rather than stored as another.
 */
export function validateTags(value: unknown, name = 'tags'): string[] {
  const raw = asString(name, value, 'invalid_parameter')
  if (/^ *$/.test(raw)) return []
  const items = raw.split(',').map((item) => item.replace(/^ +| +$/g, ''))
  if (items.length > MAX_TAGS)
    throw new AppError(400, 'invalid_parameter', `The parameter "${name}" is invalid: at most ${MAX_TAGS} tags.`)
  for (const tag of items) {
    if (!/^[A-Za-z0-9_-]*$/.test(tag) || tag === '')
      throw new AppError(
        400,
        'invalid_parameter',
        `The parameter "${name}" is invalid: ${TAG_RULE}; ${tag === '' ? 'one is empty' : `"${tag.slice(0, 40)}" is not one`}.`,
      )
    if (tag.length > MAX_TAG_LENGTH)
      throw new AppError(
        400,
        'invalid_parameter',
        `The parameter "${name}" is invalid: each tag at most ${MAX_TAG_LENGTH} characters; "${tag.slice(0, 40)}…" is longer.`,
      )
  }
  return [...new Set(items.map((t) => t.toLowerCase()))].sort()
}

/** One tag as a filter (links.json tag=, the dashboard's ?tag=): the rule of a tag, lower-cased. */
export function validateTag(value: unknown, name = 'tag'): string {
  const raw = asString(name, value, 'invalid_parameter')
  if (!/^[A-Za-z0-9_-]+$/.test(raw) || raw.length > MAX_TAG_LENGTH)
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${name}" is invalid: a tag, 1 to ${MAX_TAG_LENGTH} of letters, digits, _ and -.`,
    )
  return raw.toLowerCase()
}

export const MAX_TITLE_LENGTH = 200
/** Control characters a title may not hold: C0 but tab, line feed and carriage return (a title over two lines is kept), DEL, C1. */
export const TITLE_CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/

/** A link's title (SPEC §2a): 0-200 characters (code points), no control characters but line breaks and tabs; "" is none. */
export function validateTitle(value: unknown, name = 'title'): string {
  const raw = asString(name, value, 'invalid_parameter')
  if (TITLE_CONTROLS.test(raw))
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${name}" is invalid: a title must not contain control characters.`,
    )
  if (raw.length > MAX_TITLE_LENGTH && [...raw].length > MAX_TITLE_LENGTH)
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${name}" is invalid: at most ${MAX_TITLE_LENGTH} characters (it has ${[...raw].length}).`,
    )
  return raw
}
