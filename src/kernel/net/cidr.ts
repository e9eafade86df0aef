// IP addresses as 16-byte values (IPv4 as IPv4-mapped IPv6), and CIDR ranges over them. Used for
// trusted proxies now and by the SSRF guard (address classification) for media and webhooks.
import { isIP } from './ip'

export type Bytes16 = Uint8Array

function parseV4(text: string): number[] | null {
  const parts = text.split('.')
  if (parts.length !== 4) return null
  const out: number[] = []
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null
    const n = Number(p)
    if (n > 255) return null
    out.push(n)
  }
  return out
}

/** Parses an IPv4 or IPv6 address (zone ids refused) into 16 bytes; IPv4 becomes ::ffff:a.b.c.d. */
export function parseIp(text: string): Bytes16 | null {
  let t = text.trim()
  if (t.startsWith('[') && t.endsWith(']')) t = t.slice(1, -1)
  const kind = isIP(t)
  if (kind === 4) {
    const v4 = parseV4(t)
    if (!v4) return null
    const out = new Uint8Array(16)
    out[10] = 0xff
    out[11] = 0xff
    out.set(v4, 12)
    return out
  }
  if (kind !== 6 || t.includes('%')) return null
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hex groups.
  const lastColon = t.lastIndexOf(':')
  const tail = t.slice(lastColon + 1)
  if (tail.includes('.')) {
    const v4 = parseV4(tail)
    if (!v4) return null
    t = `${t.slice(0, lastColon + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`
  }
  const [left, right, more] = t.split('::')
  if (more !== undefined) return null
  const l = left ? left.split(':') : []
  const r = right ? right.split(':') : []
  const fill = right === undefined ? 0 : 8 - l.length - r.length
  if (fill < 0) return null
  const groups = [...l, ...Array<string>(fill).fill('0'), ...r]
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return null
  const out = new Uint8Array(16)
  groups.forEach((g, i) => {
    const n = parseInt(g, 16)
    out[i * 2] = n >> 8
    out[i * 2 + 1] = n & 0xff
  })
  return out
}

export interface Cidr {
  bytes: Bytes16
  prefix: number // over the 128-bit form
}

/** "10.0.0.0/8", "::1/128", or a bare address (a single host). */
export function parseCidr(text: string): Cidr | null {
  const [addr, bits, extra] = text.split('/')
  if (extra !== undefined || !addr) return null
  const bytes = parseIp(addr)
  if (!bytes) return null
  const v4 = isIP(addr.trim()) === 4
  const max = v4 ? 32 : 128
  let prefix = max
  if (bits !== undefined) {
    if (!/^\d{1,3}$/.test(bits)) return null
    prefix = Number(bits)
    if (prefix > max) return null
  }
  return { bytes, prefix: v4 ? prefix + 96 : prefix }
}

export function cidrContains(range: Cidr, ip: Bytes16): boolean {
  let bits = range.prefix
  for (let i = 0; i < 16 && bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff
    if ((range.bytes[i]! & mask) !== (ip[i]! & mask)) return false
  }
  return true
}

/** A matcher over a list of CIDR strings (already validated by the config). */
export function cidrMatcher(list: string[]): (ip: string) => boolean {
  const ranges = list.map((c) => parseCidr(c)).filter((c): c is Cidr => c !== null)
  if (ranges.length === 0) return () => false
  return (ip) => {
    const bytes = parseIp(ip)
    return !!bytes && ranges.some((r) => cidrContains(r, bytes))
  }
}

// IPv6 prefixes whose last 32 bits are an IPv4 address that the packet reaches (issue 36): IPv4-mapped
// (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), NAT64's well-known prefix (64:ff9b::/96) and the
// deprecated IPv4-compatible form (::/96, but :: and ::1 themselves). A ban of 1.2.3.4 must hold for each.
const EMBEDS_V4: Cidr[] = ['::ffff:0:0/96', '::ffff:0:0:0/96', '64:ff9b::/96', '::/96'].map((c) => parseCidr(c)!)

/** The IPv4 address (a.b.c.d) an IPv6 one carries in a form above, or null. */
export function embeddedV4(ip: Bytes16): string | null {
  if (!EMBEDS_V4.some((r) => cidrContains(r, ip))) return null
  if (ip.subarray(0, 15).every((b) => b === 0) && ip[15]! <= 1) return null // :: and ::1
  return `${ip[12]}.${ip[13]}.${ip[14]}.${ip[15]}`
}

/** An IPv6 address as RFC 5952 writes it: lower case, no leading zeros, the first longest run of 2+ zero groups as `::`. */
export function formatV6(ip: Bytes16): string {
  const groups = Array.from({ length: 8 }, (_, i) => (ip[i * 2]! << 8) | ip[i * 2 + 1]!)
  let best = -1
  let bestLen = 1
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLen) [best, bestLen] = [i, j - i]
    i = j
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':')
  return best < 0 ? hex(0, 8) : `${hex(0, best)}::${hex(best + bestLen, 8)}`
}

/**
 * One spelling for an IP address, bracketed or not (null: not one): IPv4 as a.b.c.d, an IPv6 address that
 * carries an IPv4 one (above) as that IPv4 address, any other IPv6 as formatV6 writes it. Zone ids are refused.
 */
export function canonicalIp(text: string): string | null {
  const bytes = parseIp(text)
  if (!bytes) return null
  return embeddedV4(bytes) ?? formatV6(bytes)
}
