// Who may read GET /metrics (SPEC §10): a client on loopback or a private network, or one with
// server.metrics_token as its bearer token; everyone else gets the 404 of a path that does not exist.
import type { Config } from '../kernel/config'
import { cidrMatcher } from '../kernel/net/cidr'
import { sameSecret } from './api'

/** Loopback and private networks: 127/8, ::1, RFC 1918 and IPv6 unique local addresses. */
export const LOCAL_NETWORKS: readonly string[] = [
  '127.0.0.0/8',
  '::1/128',
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  'fc00::/7',
]

export interface MetricsAccessDeps {
  /** Read on every request: server.metrics_token. */
  config: Pick<Config, 'server'>
  /** The client address, as the rest of the app finds it (web/client-ip.ts). */
  clientIp: (request: Request) => string
}

/** Whether a request may read /metrics. */
export function createMetricsAccess({ config, clientIp }: MetricsAccessDeps): (request: Request) => boolean {
  const local = cidrMatcher([...LOCAL_NETWORKS])
  return (request) => {
    const token = config.server.metrics_token
    if (token) {
      const given = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.get('authorization') ?? '')?.[1]
      // Constant time: a compare that stops at the first wrong byte would tell how much of a guess was right.
      if (given !== undefined && sameSecret(given, token)) return true
    }
    return local(clientIp(request))
  }
}
