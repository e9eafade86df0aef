// What stops a link for its visitors (a verdict), and hosts as bans and blocklists spell them.
import { type HostSet, listedHost, normalizeHost } from './blocklist'
import { badRequest } from '../kernel/errors'
import type { LinkRow } from '../links'

export type Verdict =
  | { kind: 'disabled'; reason: string }
  | { kind: 'banned'; host: string; reason: string }
  | { kind: 'listed'; host: string }
  | { kind: 'account' }

/** The destinations a link's row can send visitors to: long_url, its expired_url, then its rules' and split's urls (validated JSON). */
export function destinationsOf(row: LinkRow): string[] {
  const urls = row.expired_url ? [row.long_url, row.expired_url] : [row.long_url]
  for (const json of [row.rules, row.split]) {
    if (!json) continue
    try {
      for (const item of JSON.parse(json) as { url?: unknown }[]) if (typeof item?.url === 'string') urls.push(item.url)
    } catch {
      // Stored only after validation (links/validate.ts): never malformed.
    }
  }
  return urls
}

/** The host of a stored destination as the lists and bans spell hosts (addresses in one form); null for one that does not parse. */
export function destinationHost(url: string): string | null {
  try {
    return normalizeHost(new URL(url).hostname)
  } catch {
    return null
  }
}

/** Whether a normalised host is an address: matched as itself only (a.b.c.d has no parent domains). */
const isAddress = (host: string) => host.includes(':') || /^[0-9.]+$/.test(host)

/** The entry of `set` that a normalised host is listed under: a name by itself or a parent domain, an address exactly. */
export function matchHost(set: HostSet, host: string): string | null {
  return isAddress(host) ? (set.includes(host) ? host : null) : set.match(host)
}

/**
 * A host to ban, as an admin types it — a name, `*.name`, an IPv4 or IPv6 address (bracketed or not), or a
 * URL with any of them — in the one spelling destinations are matched in; or 400 naming the field.
 */
export function hostToBan(input: string): string {
  const text = input.trim()
  const rest = text.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
  const range = rest === text ? /^([^/?#]+)\/\d{1,3}$/.exec(text) : null
  if (range && (range[1]!.includes(':') || /^[0-9.]+$/.test(range[1]!)))
    throw badRequest(
      'invalid_parameter',
      'The field "host" must be one host or address: a range of addresses (/prefix) cannot be banned.',
    )
  let authority = rest.split(/[/?#]/)[0] ?? ''
  authority = authority.slice(authority.lastIndexOf('@') + 1)
  // [v6]:port, a bare IPv6 address (two colons or more), or name:port.
  const host = authority.startsWith('[')
    ? authority.slice(0, authority.indexOf(']') + 1)
    : authority.indexOf(':') !== authority.lastIndexOf(':')
      ? authority
      : authority.split(':')[0]!
  const canonical = listedHost(host)
  if (!canonical)
    throw badRequest(
      'invalid_parameter',
      'The field "host" must be a host name or an address, such as phish.example or 2001:db8::1.',
    )
  return canonical
}

/** The 451 page's words for a verdict: why, never the destination. */
export function verdictText(v: Verdict): string {
  switch (v.kind) {
    case 'disabled':
      return `The administrator of this service disabled this short link: ${v.reason}`
    case 'banned':
      return `This short link leads to a site that the administrator of this service has banned${v.reason ? `: ${v.reason}` : '.'}`
    case 'listed':
      return 'This short link leads to a site on a blocklist of phishing and malware sites, so this service does not send visitors there.'
    case 'account':
      return 'The account that made this short link has been disabled by the administrator of this service.'
  }
}
