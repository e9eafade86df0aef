// Countries of visitors' addresses (SPEC §4) from a MaxMind-format database: the embedded one (read at the first
// lookup) or geo.database (read at start); lookups are synchronous tree walks behind a bounded cache.
import { readFileSync } from 'node:fs'
import { Reader, type Response } from 'mmdb-lib'
import embeddedPath from '@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb' with { type: 'file' }
import { ConfigError } from './errors'
import { parseIp } from './net/cidr'
import { isPublicAddress } from './net/guard'

/** Credit for the embedded database, as its licence (CC BY 4.0) asks: the README and /api/docs show it. */
export const EMBEDDED_ATTRIBUTION =
  'Country data: ip-location-db (geo-whois-asn-country), from data by the Number Resource Organization (NRO), CC BY 4.0'

export interface Geo {
  /** The ISO 3166-1 alpha-2 code of the address's country (upper case), or null: not located, or not an address. */
  country(address: string): string | null
  /** Which database: 'embedded', or the owner's file path, with its build time when it says. */
  source(): { database: string; built: string | null }
}

export interface GeoOptions {
  /** A .mmdb file; empty or absent: the embedded one. */
  database?: string
  /** Addresses remembered (default 10,000). */
  cacheSize?: number
}

// The shapes countries come in: ip-location-db's `country_code`; MaxMind's and DB-IP's `country.iso_code`,
// with `registered_country` when an address has no located country (anycast, satellite).
interface CountryRecord {
  country_code?: string
  country?: { iso_code?: string }
  registered_country?: { iso_code?: string }
}

export function createGeo(opts: GeoOptions = {}): Geo {
  const path = opts.database || ''
  const capacity = opts.cacheSize ?? 10_000
  let reader: Reader<Response> | null = path ? open(path) : null
  // Two generations of at most capacity/2 addresses each, the older dropped whole when the younger is full:
  // evicting the oldest entry one at a time (delete of keys().next()) made a miss cost ~18 µs at 10,000
  // entries, where the lookup itself costs ~2 µs — JavaScriptCore finds a Map's first key by scanning past
  // the slots of the keys deleted before it.
  let young = new Map<string, string | null>()
  let old = new Map<string, string | null>()

  function lookup(address: string): string | null {
    reader ??= open(embeddedPath)
    const zone = address.indexOf('%')
    let ip = zone >= 0 ? address.slice(0, zone) : address
    // An IPv4-mapped address (an IPv4 client on an IPv6 socket, in either spelling) is judged, and looked
    // up, as its IPv4 address.
    if (ip.includes(':')) {
      const b = parseIp(ip)
      if (b === null) return null // not an address
      if (
        b[10] === 0xff &&
        b[11] === 0xff &&
        b[0] === 0 &&
        b[1] === 0 &&
        b[2] === 0 &&
        b[3] === 0 &&
        b[4] === 0 &&
        b[5] === 0 &&
        b[6] === 0 &&
        b[7] === 0 &&
        b[8] === 0 &&
        b[9] === 0
      )
        ip = `${b[12]}.${b[13]}.${b[14]}.${b[15]}`
    }
    // Special-purpose ranges (RFC 6890 and IANA's registries: private, loopback, link-local, CGNAT,
    // documentation, benchmarking, ULA, multicast, reserved, 6to4, Teredo…) are nobody's country, whatever a
    // database says (the embedded one put 192.168.1.1 in Australia): the SSRF guard's list, so that one list
    // says what is public. Not an address at all: not public either.
    if (!isPublicAddress(ip)) return null
    let record: CountryRecord | null
    try {
      record = reader.get(ip) as CountryRecord | null
    } catch {
      return null // not an address
    }
    const code = record?.country_code ?? record?.country?.iso_code ?? record?.registered_country?.iso_code
    return typeof code === 'string' && /^[A-Za-z]{2}$/.test(code) ? code.toUpperCase() : null
  }

  return {
    country(address) {
      const hit = young.get(address)
      if (hit !== undefined) return hit
      const held = old.get(address)
      const code = held !== undefined ? held : lookup(address)
      if (young.size >= Math.max(1, capacity / 2)) {
        old = young
        young = new Map()
      }
      young.set(address, code)
      return code
    },
    source() {
      reader ??= open(embeddedPath)
      const epoch = reader.metadata.buildEpoch
      return {
        database: path || 'embedded',
        built: epoch instanceof Date && !Number.isNaN(epoch.getTime()) ? epoch.toISOString() : null,
      }
    },
  }
}

function open(path: string): Reader<Response> {
  let bytes: Buffer
  try {
    bytes = readFileSync(path)
  } catch (err) {
    throw new ConfigError(
      `config: "geo.database" cannot be read: ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    )
  }
  try {
    return new Reader<Response>(bytes)
  } catch (err) {
    throw new ConfigError(
      `config: "geo.database" ${path} is not a MaxMind-format (.mmdb) database: ${(err as Error).message}`,
    )
  }
}
