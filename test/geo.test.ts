// Countries from the embedded database and from an owner's file (SPEC §4, geo.database).
import { describe, expect, test } from 'bun:test'
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import embeddedPath from '@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb' with { type: 'file' }
import { buildConfig } from '../src/config'
import { createGeo } from '../src/geo'

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
    for (const a of ['127.0.0.1', '10.1.2.3', '::1', 'fe80::1%eth0', '', 'not an address', '999.1.1.1']) expect(geo.country(a)).toBeNull()
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

describe('geo.database: the owner\'s own file', () => {
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
    expect(() => createGeo({ database: join(dir, 'missing.mmdb') })).toThrow(/"geo\.database" cannot be read: .*missing\.mmdb: ENOENT/)
  })
  test('a file that is not a database is refused with the key named', () => {
    writeFileSync(join(dir, 'junk.mmdb'), 'not a database')
    expect(() => createGeo({ database: join(dir, 'junk.mmdb') })).toThrow(/"geo\.database" .*junk\.mmdb is not a MaxMind-format/)
  })
  test('the key must be a string', () => {
    expect(() => buildConfig({ geo: { database: 3 } })).toThrow(/"geo\.database" must be a string/)
    expect(() => buildConfig({ geo: { file: 'x' } })).toThrow(/unknown key "geo\.file"/)
  })
})
