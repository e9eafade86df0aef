// Outbound HTTP on a visitor's or caller's behalf (frame checks, media, webhooks), guarded against SSRF: every
// hop's host resolves to public addresses only, and the request goes to the very address that was checked.
import { lookup } from 'node:dns/promises'
import { isIP } from './ip'
import { cidrContains, parseCidr, parseIp, type Bytes16, type Cidr } from './cidr'

// Not the public internet: "this network", private, CGNAT, loopback, link-local, IETF/benchmark/
// documentation ranges, multicast, reserved, broadcast; IPv6 unspecified, loopback, IPv4-compatible
// (and everything else in ::/8 but the IPv4-mapped range, whose IPv4 ranges above apply), NAT64 local
// use, discard, IETF assignments (Teredo among them), documentation, 6to4, ULA, link- and site-local,
// multicast. NAT64's well-known prefix is judged by the IPv4 address it carries (see below).
const NOT_PUBLIC: Cidr[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/96',
  '::ffff:0:0:0/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/23',
  '2001:db8::/32',
  '2002::/16',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
].map((c) => parseCidr(c)!)
const MAPPED = parseCidr('::ffff:0:0/96')!
const NAT64 = parseCidr('64:ff9b::/96')!

function isPublicBytes(bytes: Bytes16): boolean {
  if (cidrContains(NAT64, bytes)) {
    // 64:ff9b::a.b.c.d reaches a.b.c.d through a NAT64 gateway: public exactly when a.b.c.d is.
    const v4 = new Uint8Array(16)
    v4[10] = v4[11] = 0xff
    v4.set(bytes.subarray(12), 12)
    return isPublicBytes(v4)
  }
  // ::/8 is reserved as a whole; besides NAT64 only its IPv4-mapped part holds real (IPv4) addresses.
  if (bytes[0] === 0 && !cidrContains(MAPPED, bytes)) return false
  return !NOT_PUBLIC.some((r) => cidrContains(r, bytes))
}

/** True when `ip` is an address on the public internet (an unparseable text is not). */
export function isPublicAddress(ip: string): boolean {
  const bytes = parseIp(ip)
  return !!bytes && isPublicBytes(bytes)
}

export type GuardFailure = 'scheme' | 'private' | 'dns' | 'redirects' | 'timeout' | 'network' | 'aborted'

/** Why a guarded request did not get an answer; `reason` is stable, the message is for logs and pages. */
export class GuardError extends Error {
  constructor(
    readonly reason: GuardFailure,
    message: string,
  ) {
    super(message)
    this.name = 'GuardError'
  }
}

export interface GuardOptions {
  /** `media.allow_private_networks`: lifts the address check only (names are still resolved and pinned). */
  allowPrivate: boolean
  /** Until the final answer's headers, for the whole chain of requests, DNS included; never the body. */
  timeoutMs?: number
  maxRedirects?: number
  /**
   * A POST (webhooks) sends `body` once and is never re-sent on a redirect: its 3xx is the answer, returned
   * as it is (re-posting to wherever a receiver points would let it aim our signed request anywhere).
   */
  method?: 'HEAD' | 'GET' | 'POST'
  /** The request body (POST only); a string, so that trying a name's next address can send it again. */
  body?: string
  /** Sent on every hop; `cookie` and `authorization` are dropped once a redirect changes the origin. */
  headers?: Record<string, string>
  /** The caller's: aborts the request and, after the headers, the body (e.g. the client went away). */
  signal?: AbortSignal
  /** Name → addresses (tests replace it); default the system resolver. */
  resolve?: (host: string) => Promise<string[]>
  /**
   * Which addresses count as public (default isPublicAddress). Tests replace it to let one loopback
   * address stand for "the internet" while another stays refused; the service never sets it.
   */
  isAllowed?: (address: string) => boolean
  /** Extra TLS trust (PEM), for tests with a self-signed local server; default the system's CAs. */
  ca?: string | string[]
}

const systemResolve = async (host: string) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address)

const DEFAULT_TIMEOUT_MS = 3_000
// A name with more addresses than this is cut: we check all we keep and try them in order.
const MAX_ADDRESSES = 16

function withDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e) => (signal.removeEventListener('abort', onAbort), reject(e)),
    )
  })
}

/** The GuardError for an abort: the caller's signal wins over our deadline. */
function abortError(caller: AbortSignal | undefined): GuardError {
  return caller?.aborted
    ? new GuardError('aborted', 'the request was cancelled')
    : new GuardError('timeout', 'no answer in time')
}

/** A URL's host without brackets or a trailing dot (`localhost.` is the name `localhost`). */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '')
}

async function checkWith(url: URL, opts: GuardOptions, signal: AbortSignal): Promise<string[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new GuardError('scheme', `only http and https can be fetched, not ${url.protocol}`)
  const host = bareHost(url)
  let addresses: string[]
  if (isIP(host)) addresses = [host]
  else {
    try {
      addresses = await withDeadline((opts.resolve ?? systemResolve)(host), signal)
    } catch (err) {
      if (signal.aborted) throw abortError(opts.signal)
      throw new GuardError('dns', `the host name could not be resolved (${(err as Error).message})`)
    }
  }
  addresses = addresses.slice(0, MAX_ADDRESSES)
  if (!opts.allowPrivate) {
    // One private address among public ones is enough to refuse: which one a connection gets is not ours to choose
    // once another resolver (yt-dlp's) is involved.
    const allowed = opts.isAllowed ?? isPublicAddress
    if (!addresses.every((a) => parseIp(a) !== null && allowed(a)))
      throw new GuardError('private', 'the host is on a private or local network')
  }
  // Only addresses we can write back into a URL are kept (a resolver's zone-scoped fe80::1%eth0 is not).
  addresses = addresses.filter((a) => parseIp(a) !== null)
  if (addresses.length === 0) throw new GuardError('dns', 'the host name has no address')
  return addresses
}

function parseTarget(url: string | URL): URL {
  try {
    return new URL(url)
  } catch {
    throw new GuardError('scheme', 'not an absolute URL')
  }
}

/**
 * Checks `url` as guardedFetch would before a request: http(s) only, and every address its host resolves
 * to public (unless `allowPrivate`). Returns the parsed URL and the addresses to connect to (at least one).
 * Throws GuardError 'scheme' | 'private' | 'dns' | 'timeout' | 'aborted'.
 */
export async function checkUrl(url: string | URL, opts: GuardOptions): Promise<{ url: URL; addresses: string[] }> {
  const target = parseTarget(url)
  const deadline = AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS)
  const signal = opts.signal ? AbortSignal.any([deadline, opts.signal]) : deadline
  return { url: target, addresses: await checkWith(target, opts, signal) }
}

/** `url` with its host replaced by `address` and no credentials: what fetch connects to. */
function pinnedUrl(url: URL, address: string): URL {
  const pinned = new URL(url)
  pinned.username = ''
  pinned.password = ''
  pinned.hostname = isIP(address) === 6 ? `[${address}]` : address
  return pinned
}

// Errors that mean "nothing answered at this address": the next address of the name may do better.
const UNREACHABLE = new Set(['ECONNREFUSED', 'ConnectionRefused', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL'])

/**
 * Fetches `url` (HEAD by default) under the guard and returns the final answer, its URL and the address it
 * came from. Redirects (at most `maxRedirects`, default 5; none for a POST) are followed here, each target checked before it
 * is asked, and each request connects to the address that was checked. The caller owns the body of the
 * returned response (cancel it when it is not read); with `method: 'GET'` it streams, unbuffered.
 */
export async function guardedFetch(
  url: string | URL,
  opts: GuardOptions,
): Promise<{ response: Response; url: string; address: string }> {
  const maxRedirects = opts.maxRedirects ?? 5
  let current = parseTarget(url)
  // One controller for the whole exchange: our deadline aborts it only until the headers are in, the
  // caller's signal at any time (the body's reads included).
  const controller = new AbortController()
  const onCallerAbort = () => controller.abort(opts.signal!.reason)
  if (opts.signal?.aborted) throw abortError(opts.signal)
  opts.signal?.addEventListener('abort', onCallerAbort, { once: true })
  const timer = setTimeout(
    () => controller.abort(new GuardError('timeout', 'no answer in time')),
    opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  )
  const signal = controller.signal
  const given = Object.entries(opts.headers ?? {}).filter(([k]) => k.toLowerCase() !== 'host')
  const origin = current.origin
  try {
    for (let hop = 0; ; hop++) {
      const addresses = await checkWith(current, opts, signal)
      const sameOrigin = current.origin === origin
      const headers = new Headers({ 'user-agent': 'linkbox', accept: '*/*' })
      for (const [k, v] of given) {
        const name = k.toLowerCase()
        if (!sameOrigin && (name === 'cookie' || name === 'authorization')) continue
        headers.set(k, v)
      }
      headers.set('host', current.host)
      const name = bareHost(current)
      const tls: Record<string, unknown> = {}
      if (current.protocol === 'https:' && !isIP(name)) tls.serverName = name
      if (opts.ca) tls.ca = opts.ca
      let response: Response | undefined
      let address = ''
      for (let i = 0; !response; i++) {
        address = addresses[i]!
        try {
          response = await fetch(pinnedUrl(current, address), {
            method: opts.method ?? 'HEAD',
            body: opts.method === 'POST' ? (opts.body ?? '') : undefined,
            redirect: 'manual',
            signal,
            headers,
            tls,
          } as RequestInit)
        } catch (err) {
          if (signal.aborted) throw abortError(opts.signal)
          if (i + 1 < addresses.length && UNREACHABLE.has((err as { code?: string }).code ?? '')) continue
          throw new GuardError('network', `the request failed (${(err as Error).message})`)
        }
      }
      const location = response.headers.get('location')
      if (
        opts.method === 'POST' ||
        response.status < 300 ||
        response.status > 399 ||
        response.status === 304 ||
        !location
      ) {
        // The deadline ends with the headers; the caller's signal stays on, for the body's reads.
        clearTimeout(timer)
        return { response, url: current.href, address }
      }
      void response.body?.cancel().catch(() => {})
      if (hop >= maxRedirects) throw new GuardError('redirects', `more than ${maxRedirects} redirects`)
      try {
        current = new URL(location, current)
      } catch {
        throw new GuardError('network', 'a redirect to an invalid URL')
      }
    }
  } catch (err) {
    clearTimeout(timer)
    opts.signal?.removeEventListener('abort', onCallerAbort)
    throw err
  }
}
