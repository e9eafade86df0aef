// Several short domains (SPEC §13): [server] domains beside base_url's host, and per domain where its root and an
// unknown code go ([domains."go.example.com"] root_redirect, not_found_redirect). Checked once the rest is built.
import { type Check, fail, hostname } from './config-checks'
import { ConfigError } from './errors'

/** What one domain says about its root `/` and an unknown code ('' for each: the home page, the 404 page). */
export interface DomainPages {
  root_redirect: string
  not_found_redirect: string
}

const redirectUrl = (v: unknown, key: string): string => {
  if (typeof v !== 'string') return fail(key, 'must be a string', v)
  if (v === '') return v
  let u: URL
  try {
    u = new URL(v)
  } catch {
    return fail(key, 'must be an absolute http or https URL, or empty', v)
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || /[\s<>"]/.test(v))
    fail(key, 'must be an absolute http or https URL without credentials, or empty', v)
  return u.href
}

/** The [domains] table: one table per host name, each with root_redirect and not_found_redirect. */
export const domainTables: Check = (v, key) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return fail(key, 'must be a table ([domains."host"])', v)
  const out: Record<string, DomainPages> = {}
  for (const [host, table] of Object.entries(v as Record<string, unknown>)) {
    const at = `${key}."${host}"`
    if (hostname(host)) fail(at, 'must be named by a host name', host)
    if (typeof table !== 'object' || table === null || Array.isArray(table)) return fail(at, 'must be a table', table)
    const pages: DomainPages = { root_redirect: '', not_found_redirect: '' }
    for (const [name, value] of Object.entries(table as Record<string, unknown>)) {
      if (name !== 'root_redirect' && name !== 'not_found_redirect')
        throw new ConfigError(`config: unknown key "${at}.${name}" (root_redirect or not_found_redirect)`)
      pages[name] = redirectUrl(value, `${at}.${name}`)
    }
    out[host.toLowerCase()] = pages
  }
  return out
}

/**
 * server.domains in lower case without base_url's own host (the default domain) or repeats; every [domains."x"]
 * names one of them or the default host.
 */
export function settleDomains(
  server: { base_url: string; domains: string[] },
  tables: Record<string, DomainPages>,
): void {
  const own = new URL(server.base_url).hostname.toLowerCase()
  server.domains = [...new Set(server.domains.map((d) => d.toLowerCase()))].filter((d) => d !== own)
  for (const host of Object.keys(tables))
    if (host !== own && !server.domains.includes(host))
      throw new ConfigError(
        `config: "domains."${host}"" names a host that is neither base_url's (${own}) nor in "server.domains"`,
      )
}
