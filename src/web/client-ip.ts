// Who the client is, for rate limits: its address, and the key its requests are counted under. The socket
// peer is the client unless it is a trusted proxy; only then is X-Forwarded-For read, and only the hops that
// trusted proxies vouch for.
import { cidrMatcher, parseIp } from '../kernel/net/cidr'

/** Hops of X-Forwarded-For looked at, from the right: a longer chain of trusted proxies is not believed. */
const MAX_HOPS = 32

/**
 * One X-Forwarded-For hop as an address, or null. Accepted: IPv4, IPv6, bracketed IPv6, and either with a
 * port ("192.0.2.1:4711", "[2001:db8::1]:4711": some proxies add the client's port); the port is dropped.
 * Anything else ("unknown", an obfuscated "_hidden" node name, a host name, garbage) is not an address.
 */
export function parseHop(text: string): string | null {
  let t = text.trim()
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(t)
  if (bracketed) t = bracketed[1]!
  else {
    const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(t)
    if (v4WithPort) t = v4WithPort[1]!
  }
  return parseIp(t) ? t : null
}

/** The client address of a socket peer and X-Forwarded-For; `readsForwarded` false: the header is never read. */
export type ClientIpOf = ((peer: string | null, forwardedFor: string | null) => string) & { readsForwarded?: boolean }

/**
 * The client address: the socket peer, unless the peer is a trusted proxy. Then X-Forwarded-For is read
 * from the right, skipping trusted hops, and the first untrusted address is the client. A hop that is not
 * an address ends the walk: whoever sent the hops left of it is unknown, so they prove nothing, and the
 * client is the socket peer (its requests share the proxy's allowance rather than take one they chose).
 * When every hop is a trusted address, the leftmost is the client.
 */
export function createClientIp(trustedProxies: string[]): ClientIpOf {
  const trusted = cidrMatcher(trustedProxies)
  const clientIpOf = (peer: string | null, forwardedFor: string | null): string => {
    const socket = peer ?? 'unknown'
    if (!forwardedFor || !peer || !trusted(peer)) return socket
    const hops = forwardedFor
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean) // "a,,b" and trailing commas
    if (hops.length > MAX_HOPS) hops.splice(0, hops.length - MAX_HOPS)
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parseHop(hops[i]!)
      if (hop === null) return socket
      if (!trusted(hop)) return hop
    }
    // Every hop was a trusted proxy (a request from the proxy's own host, say). Past MAX_HOPS of them the
    // chain is not believed at all.
    return hops.length > 0 && hops.length < MAX_HOPS ? parseHop(hops[0]!)! : socket
  }
  // Without trusted proxies X-Forwarded-For is never read: the caller need not even fetch the header.
  return Object.assign(clientIpOf, { readsForwarded: trustedProxies.length > 0 })
}

/**
 * The rate-limit bucket of a client address: IPv4 (also IPv4-mapped IPv6) is the address; IPv6 is its /64,
 * the block one home or one server is given, within which a client picks any address it likes. What is not
 * an address ("unknown" without a server) stays as it is.
 */
export function rateKeyOf(ip: string): string {
  const bytes = parseIp(ip)
  if (!bytes) return ip
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff
  if (mapped) return bytes.subarray(12).join('.')
  const groups = [0, 2, 4, 6].map((i) => ((bytes[i]! << 8) | bytes[i + 1]!).toString(16))
  return `${groups.join(':')}::/64`
}
