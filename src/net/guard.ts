// Outbound HTTP requests the service makes on a visitor's or a caller's behalf (today: asking a frame
// link's destination whether it may be framed). Whoever chooses the URL must not be able to reach the
// machine's own network through us (SSRF): every hop's host must resolve to public addresses only,
// redirects are followed here, one by one, and each is checked again; the whole chain has one deadline.
// Known gap: the name is resolved for the check and again by fetch, so a DNS answer that changes in
// between (rebinding) is not caught; callers here only read headers, never hand a body back.
import { lookup } from 'node:dns/promises'
import { cidrContains, parseCidr, parseIp, type Cidr } from './cidr'

// Not the public internet: "this network", private, CGNAT, loopback, link-local, IETF/benchmark/
// documentation ranges, multicast, reserved, broadcast; IPv6 unspecified, loopback, IPv4-compatible
// and -mapped (the IPv4 ranges above apply to them through the mapped form), NAT64, discard,
// IETF assignments (Teredo among them), documentation, 6to4, ULA, link- and site-local, multicast.
const NOT_PUBLIC: Cidr[] = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12',
  '192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24',
  '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
  '::/96', '64:ff9b::/96', '64:ff9b:1::/48', '100::/64', '2001::/23', '2001:db8::/32', '2002::/16',
  'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8',
].map((c) => parseCidr(c)!)

/** True when `ip` is an address on the public internet (an unparseable text is not). */
export function isPublicAddress(ip: string): boolean {
  const bytes = parseIp(ip)
  return !!bytes && !NOT_PUBLIC.some((r) => cidrContains(r, bytes))
}

export type GuardFailure = 'scheme' | 'private' | 'dns' | 'redirects' | 'timeout' | 'network'

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
  /** `media.allow_private_networks`: lifts the address check (tests with local servers need it). */
  allowPrivate: boolean
  /** For the whole chain of requests, DNS included. */
  timeoutMs?: number
  maxRedirects?: number
  method?: 'HEAD' | 'GET'
  /** Name → addresses (tests replace it); default the system resolver. */
  resolve?: (host: string) => Promise<string[]>
}

const systemResolve = async (host: string) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address)

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

/** Refuses a URL that is not http(s) or whose host has a non-public address (unless allowed). */
async function checkTarget(url: URL, opts: GuardOptions, signal: AbortSignal): Promise<void> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new GuardError('scheme', `only http and https can be fetched, not ${url.protocol}`)
  if (opts.allowPrivate) return
  const host = url.hostname.replace(/^\[|\]$/g, '')
  let addresses: string[]
  if (parseIp(host)) addresses = [host]
  else {
    try {
      addresses = await withDeadline((opts.resolve ?? systemResolve)(host), signal)
    } catch (err) {
      if (signal.aborted) throw new GuardError('timeout', 'no answer in time')
      throw new GuardError('dns', `the host name could not be resolved (${(err as Error).message})`)
    }
  }
  if (addresses.length === 0) throw new GuardError('dns', 'the host name has no address')
  if (!addresses.every(isPublicAddress)) throw new GuardError('private', 'the host is on a private or local network')
}

/**
 * Fetches `url` (HEAD by default) under the guard and returns the final answer and its URL. Redirects
 * (at most `maxRedirects`, default 5) are followed here, each target checked before it is asked. The
 * caller owns the body of the returned response (cancel it when it is not read).
 */
export async function guardedFetch(url: string, opts: GuardOptions): Promise<{ response: Response; url: string }> {
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 3_000)
  const maxRedirects = opts.maxRedirects ?? 5
  let current: URL
  try {
    current = new URL(url)
  } catch {
    throw new GuardError('scheme', 'not an absolute URL')
  }
  for (let hop = 0; ; hop++) {
    await checkTarget(current, opts, signal)
    let response: Response
    try {
      response = await fetch(current, {
        method: opts.method ?? 'HEAD',
        redirect: 'manual',
        signal,
        headers: { 'user-agent': 'linkbox (+frame check)', accept: 'text/html,*/*;q=0.5' },
      })
    } catch (err) {
      if (signal.aborted) throw new GuardError('timeout', 'no answer in time')
      throw new GuardError('network', `the request failed (${(err as Error).message})`)
    }
    const location = response.headers.get('location')
    if (response.status < 300 || response.status > 399 || response.status === 304 || !location)
      return { response, url: current.href }
    void response.body?.cancel().catch(() => {})
    if (hop >= maxRedirects) throw new GuardError('redirects', `more than ${maxRedirects} redirects`)
    try {
      current = new URL(location, current)
    } catch {
      throw new GuardError('network', 'a redirect to an invalid URL')
    }
  }
}
