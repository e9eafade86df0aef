// The config's value checks: the small language its schema is written in (a string, a whole number, a list…)
// and the rules of single values (host names, URLs, tokens, secrets), each refusal naming the key.
import { ConfigError } from './errors'
import { canonicalIp, parseCidr } from './net/cidr'

export type Check = (value: unknown, key: string) => unknown

export const fail = (key: string, rule: string, value: unknown): never => {
  throw new ConfigError(`config: "${key}" ${rule} (got ${JSON.stringify(value)})`)
}
export const str =
  (rule?: (v: string) => string | null): Check =>
  (v, key) => {
    if (typeof v !== 'string') return fail(key, 'must be a string', v)
    const problem = rule?.(v)
    if (problem) fail(key, problem, v)
    return v
  }
export const int =
  (min: number, max: number, allowed?: number[]): Check =>
  (v, key) => {
    if (typeof v !== 'number' || !Number.isInteger(v)) return fail(key, 'must be a whole number', v)
    if (allowed && !allowed.includes(v)) fail(key, `must be one of ${allowed.join(', ')}`, v)
    if (v < min || v > max) fail(key, `must be between ${min} and ${max}`, v)
    return v
  }
export const bool: Check = (v, key) => (typeof v === 'boolean' ? v : fail(key, 'must be true or false', v))
export const list =
  (item: Check, opts: { nonEmpty?: boolean } = {}): Check =>
  (v, key) => {
    if (!Array.isArray(v)) return fail(key, 'must be a list', v)
    if (opts.nonEmpty && v.length === 0) fail(key, 'must not be empty', v)
    return v.map((x, i) => item(x, `${key}[${i}]`))
  }

export const hostname = (v: string) =>
  /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(v) ? null : 'must be a host name'
export const hostOrAddress = (v: string) =>
  hostname(v) === null || canonicalIp(v) !== null ? null : 'must be a host name or an IP address'
export const baseUrl = (v: string) => {
  try {
    const u = new URL(v)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an http or https URL'
    if (u.search || u.hash || u.username) return 'must not have a query, fragment or credentials'
    return null
  } catch {
    return 'must be an absolute http or https URL'
  }
}
/** A loopback host of a URL: the only place an http:// issuer is accepted (a provider in the same test process). */
export const isLoopbackHost = (host: string) =>
  host === 'localhost' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
/** oidc.issuer: empty (off), or an https URL (http only on a loopback address) without query or fragment. */
export const issuerUrl = (v: string) => {
  if (v === '') return null
  let u: URL
  try {
    u = new URL(v)
  } catch {
    return 'must be an absolute https URL'
  }
  if (u.search || u.hash || u.username || u.password) return 'must not have a query, fragment or credentials'
  if (u.protocol === 'https:') return null
  if (u.protocol === 'http:' && isLoopbackHost(u.hostname)) return null
  return 'must be an https URL (http is accepted only on a loopback address such as 127.0.0.1)'
}
export const cidr = (v: string) => (parseCidr(v) ? null : 'must be an IP address or CIDR range')
export const oneOf = (allowed: string[]) => (v: string) =>
  allowed.includes(v) ? null : `must be one of ${allowed.join(', ')}`
export const headerName = (v: string) => (/^[A-Za-z0-9-]{1,64}$/.test(v) ? null : 'must be an HTTP header name')
/**
 * A bearer token: empty (off), or 16 to 256 visible ASCII characters, what a header carries unchanged. A
 * shorter one could be guessed by asking often enough (nothing limits /metrics). Unlike other values, the
 * refused one is not repeated in the message: it is a secret, and the message goes to logs.
 */
export const bearerToken: Check = (v, key) => {
  if (typeof v !== 'string') return fail(key, 'must be a string', typeof v)
  if (v !== '' && !/^[\x21-\x7e]{16,256}$/.test(v))
    throw new ConfigError(
      `config: "${key}" must be empty or 16 to 256 visible ASCII characters, no spaces (got ${v.length} characters; the value is not shown)`,
    )
  return v
}

/** A secret: a string, not repeated in a message (messages go to logs). */
export const secretString: Check = (v, key) => {
  if (typeof v !== 'string') return fail(key, 'must be a string', typeof v)
  if (v.length > 1024 || /[\u0000-\u001f\u007f]/.test(v))
    throw new ConfigError(
      `config: "${key}" must be at most 1024 characters without control characters (got ${v.length} characters; the value is not shown)`,
    )
  return v
}
