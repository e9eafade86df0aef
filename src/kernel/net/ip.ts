// isIP of node:net without loading node:net (~4 ms of serve's start): Node.js's own expressions (MIT licence),
// compared with node:net's answers by test/unit/ip.test.ts.
const v4Seg = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])'
const v4Str = `(?:${v4Seg}\\.){3}${v4Seg}`
const IPV4 = new RegExp(`^${v4Str}$`)
const v6Seg = '(?:[0-9a-fA-F]{1,4})'
const IPV6 = new RegExp(
  '^(?:' +
    `(?:${v6Seg}:){7}(?:${v6Seg}|:)|` +
    `(?:${v6Seg}:){6}(?:${v4Str}|:${v6Seg}|:)|` +
    `(?:${v6Seg}:){5}(?::${v4Str}|(?::${v6Seg}){1,2}|:)|` +
    `(?:${v6Seg}:){4}(?:(?::${v6Seg}){0,1}:${v4Str}|(?::${v6Seg}){1,3}|:)|` +
    `(?:${v6Seg}:){3}(?:(?::${v6Seg}){0,2}:${v4Str}|(?::${v6Seg}){1,4}|:)|` +
    `(?:${v6Seg}:){2}(?:(?::${v6Seg}){0,3}:${v4Str}|(?::${v6Seg}){1,5}|:)|` +
    `(?:${v6Seg}:){1}(?:(?::${v6Seg}){0,4}:${v4Str}|(?::${v6Seg}){1,6}|:)|` +
    `(?::(?:(?::${v6Seg}){0,5}:${v4Str}|(?::${v6Seg}){1,7}|:))` +
    ')(?:%[0-9a-zA-Z-.:]{1,})?$',
)

/** 4 for an IPv4 address, 6 for an IPv6 one (a zone allowed), 0 for anything else: node:net's isIP. */
export function isIP(input: string): 0 | 4 | 6 {
  if (IPV4.test(input)) return 4
  if (IPV6.test(input)) return 6
  return 0
}
