// How close the embedded country database (src/kernel/geo.ts) is to a second source, GeoLite2 Country (issue 36): both are
// asked, through linkbox's own lookup, about a deterministic spread of public addresses, and the share of
// addresses on which they name the same country is printed. GeoLite2 is a devDependency used only here, never
// built into the binary (its data: CC BY-SA 4.0 under MaxMind's GeoLite2 EULA; "This product includes GeoLite2
// Data created by MaxMind, available from https://www.maxmind.com/").
//
//   bun scripts/geo-agreement.ts            the summary
//   bun scripts/geo-agreement.ts --list     and every address on which they differ
//
// The addresses: IPv4, four in each /8 from 1 to 223 (a.37.91.13, a.101.13.201, a.165.201.77, a.229.77.139),
// those in special-purpose ranges left out (they have no country, src/kernel/geo.ts); IPv6, 64 in each regional
// registry's main /12 (2400::/12 APNIC, 2600::/12 ARIN, 2800::/12 LACNIC, 2a00::/12 RIPE NCC, 2c00::/12
// AFRINIC) and in 2001::/16 (the first allocations), at steps through the first two groups. Counted: addresses
// that at least one of the two locates; agreement = the same country / those.
import geolitePath from '@ip-location-db/geolite2-country-mmdb/geolite2-country.mmdb' with { type: 'file' }
import { createGeo } from '../src/kernel/geo'
import { isPublicAddress } from '../src/kernel/net/guard'

export function sampleAddresses(): string[] {
  const out: string[] = []
  for (let a = 1; a <= 223; a++)
    for (const [b, c, d] of [
      [37, 91, 13],
      [101, 13, 201],
      [165, 201, 77],
      [229, 77, 139],
    ] as const) {
      const ip = `${a}.${b}.${c}.${d}`
      if (isPublicAddress(ip)) out.push(ip)
    }
  for (const block of [0x2400, 0x2600, 0x2800, 0x2a00, 0x2c00])
    for (let i = 0; i < 64; i++)
      out.push(`${(block + (i % 16)).toString(16)}:${((i >> 4) * 0x2000 + (i % 16) * 0x0110).toString(16)}::1`)
  for (let i = 0; i < 64; i++) out.push(`2001:${(0x0200 + i * 0x0380).toString(16)}::1`)
  return out.filter((ip) => isPublicAddress(ip))
}

export interface Agreement {
  sampled: number
  /** Located by at least one of the two. */
  compared: number
  same: number
  /** Located by GeoLite2 only, by the embedded one only, by both but differently. */
  onlyGeolite: number
  onlyEmbedded: number
  different: { ip: string; embedded: string | null; geolite: string | null }[]
}

export function measure(addresses = sampleAddresses()): Agreement {
  const embedded = createGeo()
  const geolite = createGeo({ database: geolitePath })
  const result: Agreement = {
    sampled: addresses.length,
    compared: 0,
    same: 0,
    onlyGeolite: 0,
    onlyEmbedded: 0,
    different: [],
  }
  for (const ip of addresses) {
    const e = embedded.country(ip)
    const g = geolite.country(ip)
    if (e === null && g === null) continue
    result.compared++
    if (e === g) result.same++
    else {
      if (e === null) result.onlyGeolite++
      else if (g === null) result.onlyEmbedded++
      result.different.push({ ip, embedded: e, geolite: g })
    }
  }
  return result
}

if (import.meta.main) {
  const all = sampleAddresses()
  const r = measure(all)
  const v4 = measure(all.filter((ip) => !ip.includes(':')))
  const v6 = measure(all.filter((ip) => ip.includes(':')))
  const pct = (x: Agreement) => `${((100 * x.same) / Math.max(1, x.compared)).toFixed(1)}%`
  const built = (db?: string) =>
    createGeo(db ? { database: db } : {})
      .source()
      .built?.slice(0, 10) ?? '?'
  console.log(`embedded (built ${built()}) against GeoLite2 Country (built ${built(geolitePath)})`)
  for (const [name, x] of [
    ['all', r],
    ['IPv4', v4],
    ['IPv6', v6],
  ] as const)
    console.log(
      `${name.padEnd(5)} ${pct(x).padStart(6)} the same country: ${x.same} of ${x.compared} located (of ${x.sampled} sampled); located by GeoLite2 only ${x.onlyGeolite}, by the embedded only ${x.onlyEmbedded}, differently ${x.different.length - x.onlyGeolite - x.onlyEmbedded}`,
    )
  if (process.argv.includes('--list'))
    for (const d of r.different)
      console.log(`${d.ip.padEnd(24)} embedded ${d.embedded ?? '-'}  GeoLite2 ${d.geolite ?? '-'}`)
}
