import { cidrMatcher } from '../net/cidr'

/**
 * The client address: the socket peer, unless the peer is a trusted proxy; then X-Forwarded-For is read
 * from the right, skipping trusted hops, and the first untrusted address is the client.
 */
export function createClientIp(trustedProxies: string[]) {
  const trusted = cidrMatcher(trustedProxies)
  return (peer: string | null, forwardedFor: string | null): string => {
    const socket = peer ?? 'unknown'
    if (!forwardedFor || !peer || !trusted(peer)) return socket
    const hops = forwardedFor.split(',').map((h) => h.trim()).filter(Boolean)
    for (let i = hops.length - 1; i >= 0; i--) {
      if (!trusted(hops[i]!)) return hops[i]!
    }
    return hops[0] ?? socket
  }
}
