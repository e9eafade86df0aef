// The service's short domains (SPEC §13): which one a request came to, the base URL of each, what a `domain`
// parameter names, and where each one's root and unknown codes go. '' is the default domain (base_url's host).
import type { Config } from '../kernel/config'
import { invalidParameter } from '../kernel/errors'

export interface Domains {
  /** More than one domain: only then is a request's host read. */
  multi: boolean
  /** The default domain's host (base_url's), lower case. */
  defaultHost: string
  /** Every host the service answers links on, the default first (the destination self-check refuses them all). */
  hosts: readonly string[]
  /** The domain of a request's Host header: a configured one, else '' (an IP address, an old name: the default). */
  ofHost(host: string | null): string
  /** The domain a `domain` parameter names ('' for the default, or when absent); throws invalid_parameter. */
  named(value: unknown, field?: string): string
  /** The base URL of a domain's links (base_url with its host swapped; scheme, port and path kept). */
  baseOf(domain: string): string
  /** The host a record names (the default host for ''). */
  hostOf(domain: string): string
  /** Where a domain's root and an unknown code go ('' : the home page, the 404 page). */
  rootRedirect(domain: string): string
  notFoundRedirect(domain: string): string
}

/** The cache key of a code on a domain: the code itself on the default one (no string built per visit). */
export const codeKey = (domain: string, code: string): string => (domain === '' ? code : `${code}@${domain}`)

export function createDomains(config: Pick<Config, 'server' | 'domains'>): Domains {
  const base = config.server.base_url
  const defaultHost = new URL(base).hostname.toLowerCase()
  const others = config.server.domains
  const bases = new Map<string, string>([['', base]])
  for (const host of others) {
    const u = new URL(base)
    u.hostname = host
    bases.set(host, u.href.replace(/\/+$/, ''))
  }
  const pages = (domain: string) => config.domains[domain === '' ? defaultHost : domain]
  const known = new Set(others)
  let lastHost = ''
  let lastDomain = ''
  return {
    multi: others.length > 0,
    defaultHost,
    hosts: [defaultHost, ...others],
    ofHost(host) {
      if (host === null || known.size === 0) return ''
      // Visits come with a few Host values over and over: the last one's answer is kept (no string made).
      if (host === lastHost) return lastDomain
      const colon = host.lastIndexOf(':')
      // "[::1]:8080" or "go.example.com:8080": the name before the port; a bare IPv6 address has no known name.
      const name = (colon > host.lastIndexOf(']') ? host.slice(0, colon) : host).toLowerCase()
      lastHost = host
      lastDomain = known.has(name) ? name : ''
      return lastDomain
    },
    named(value, field = 'domain') {
      if (value === undefined || value === null || value === '') return ''
      if (typeof value !== 'string')
        throw invalidParameter(
          field,
          `it must be one of this service's short domains (${[defaultHost, ...others].join(', ')})`,
        )
      const name = value.trim().toLowerCase()
      if (name === defaultHost) return ''
      if (known.has(name)) return name
      throw invalidParameter(
        field,
        `it must be one of this service's short domains (${[defaultHost, ...others].join(', ')})`,
      )
    },
    baseOf: (domain) => bases.get(domain) ?? base,
    hostOf: (domain) => (domain === '' ? defaultHost : domain),
    rootRedirect: (domain) => pages(domain)?.root_redirect ?? '',
    notFoundRedirect: (domain) => pages(domain)?.not_found_redirect ?? '',
  }
}
