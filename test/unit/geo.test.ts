// Countries from the embedded database and from an owner's file (SPEC §4, geo.database).
import { describe, expect, test } from 'bun:test'
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import embeddedPath from '@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb' with { type: 'file' }
import { buildConfig } from '../../src/kernel/config'
import { createGeo } from '../../src/kernel/geo'

describe('the embedded country database', () => {
  const geo = createGeo()
  test('known public addresses are where every database puts them', () => {
    expect(geo.country('8.8.8.8')).toBe('US')
    expect(geo.country('200.160.2.3')).toBe('BR')
    expect(geo.country('193.0.6.139')).toBe('NL')
    expect(geo.country('133.11.0.1')).toBe('JP')
    expect(geo.country('2001:4860:4860::8888')).toBe('US')
  })
  test('an IPv4 address seen on an IPv6 socket is looked up as IPv4', () => {
    expect(geo.country('::ffff:8.8.8.8')).toBe('US')
  })
  test('private, loopback and malformed addresses are not located', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '::1', 'fe80::1%eth0', '', 'not an address', '999.1.1.1'])
      expect(geo.country(a)).toBeNull()
  })
  // Issue 36: the embedded data put 192.168.1.1, 172.16.5.4, 198.51.100.x and 203.0.113.1 in Australia and
  // 2001:db8::1 in Japan. One address of each special-purpose range (RFC 6890, IANA's registries): no country.
  test.each([
    ['this network 0/8', '0.1.2.3'],
    ['private 10/8', '10.20.30.40'],
    ['CGNAT 100.64/10', '100.64.1.1'],
    ['CGNAT, top', '100.127.255.254'],
    ['loopback 127/8', '127.8.9.10'],
    ['link-local 169.254/16', '169.254.10.20'],
    ['private 172.16/12', '172.16.5.4'],
    ['private 172.16/12, top', '172.31.255.1'],
    ['IETF protocol assignments 192.0.0/24', '192.0.0.9'],
    ['documentation 192.0.2/24', '192.0.2.1'],
    ['6to4 relay anycast 192.88.99/24', '192.88.99.1'],
    ['private 192.168/16', '192.168.1.1'],
    ['benchmarking 198.18/15', '198.19.4.5'],
    ['documentation 198.51.100/24', '198.51.100.7'],
    ['documentation 203.0.113/24', '203.0.113.1'],
    ['multicast 224/4', '239.1.2.3'],
    ['reserved 240/4', '240.1.2.3'],
    ['broadcast', '255.255.255.255'],
    ['unspecified ::', '::'],
    ['loopback ::1', '::1'],
    ['IPv4-compatible ::/96', '::8.8.8.8'],
    ['discard 100::/64', '100::1'],
    ['Teredo 2001::/32', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
    ['benchmarking 2001:2::/48', '2001:2::1'],
    ['documentation 2001:db8::/32', '2001:db8::1'],
    ['6to4 2002::/16', '2002:c000:204::1'],
    ['ULA fc00::/7', 'fd12:3456:789a::1'],
    ['ULA fc00::/7, fc half', 'fc00::1'],
    ['link-local fe80::/10', 'fe80::1%eth0'],
    ['site-local fec0::/10', 'fec0::1'],
    ['multicast ff00::/8', 'ff02::1'],
    ['IPv4-mapped private', '::ffff:192.168.1.1'],
    ['IPv4-mapped private, hex form', '::ffff:c0a8:101'],
    ['IPv4-mapped documentation', '::ffff:203.0.113.1'],
  ])('special-purpose: %s (%s) has no country', (_, address) => {
    expect(geo.country(address)).toBeNull()
  })
  test('an IPv4-mapped public address is judged and located as its IPv4 address, in either spelling', () => {
    expect(geo.country('::ffff:808:808')).toBe('US')
    expect(geo.country('[::ffff:8.8.8.8]')).toBe('US')
    expect(geo.country('1.1.1.1')).not.toBeNull() // public neighbours of the ranges above still are located
    expect(geo.country('100.128.0.1')).not.toBeNull()
    expect(geo.country('172.32.0.1')).not.toBeNull()
  })
  test("an owner's database does not locate them either", () => {
    const own = createGeo({ database: embeddedPath })
    for (const a of ['192.168.1.1', '172.16.5.4', '198.51.100.20', '203.0.113.1', '2001:db8::1'])
      expect(own.country(a)).toBeNull()
  })
  test('the source says which database and when it was built', () => {
    const s = geo.source()
    expect(s.database).toBe('embedded')
    expect(s.built).toMatch(/^\d{4}-\d\d-\d\dT/)
  })
  test('the cache is bounded and answers the same as a lookup', () => {
    const small = createGeo({ cacheSize: 3 })
    for (let i = 0; i < 50; i++) expect(small.country(`8.8.${i}.8`)).toBe(geo.country(`8.8.${i}.8`))
    expect(small.country('133.11.0.1')).toBe('JP')
  })
})

describe("geo.database: the owner's own file", () => {
  const dir = mkdtempSync(join(tmpdir(), 'linkbox-geo-'))
  test('a relative path is relative to the config file, and the file is used', () => {
    copyFileSync(embeddedPath, join(dir, 'own.mmdb'))
    const config = buildConfig({ geo: { database: 'own.mmdb' } }, dir)
    expect(config.geo.database).toBe(join(dir, 'own.mmdb'))
    const geo = createGeo({ database: config.geo.database })
    expect(geo.country('8.8.8.8')).toBe('US')
    expect(geo.source().database).toBe(join(dir, 'own.mmdb'))
  })
  test('a missing file stops start-up with the key named', () => {
    expect(() => createGeo({ database: join(dir, 'missing.mmdb') })).toThrow(
      /"geo\.database" cannot be read: .*missing\.mmdb: ENOENT/,
    )
  })
  test('a file that is not a database is refused with the key named', () => {
    writeFileSync(join(dir, 'junk.mmdb'), 'not a database')
    expect(() => createGeo({ database: join(dir, 'junk.mmdb') })).toThrow(
      /"geo\.database" .*junk\.mmdb is not a MaxMind-format/,
    )
  })
  test('the key must be a string', () => {
    expect(() => buildConfig({ geo: { database: 3 } })).toThrow(/"geo\.database" must be a string/)
    expect(() => buildConfig({ geo: { file: 'x' } })).toThrow(/unknown key "geo\.file"/)
  })
})
