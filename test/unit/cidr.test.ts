import { describe, expect, test } from 'bun:test'
import { canonicalIp, cidrMatcher, parseCidr, parseIp } from '../../src/kernel/net/cidr'
import { createClientIp } from '../../src/web/client-ip'

describe('addresses and ranges', () => {
  test('IPv4, IPv6 and mapped forms parse to the same 16 bytes', () => {
    expect(parseIp('10.1.2.3')).toEqual(parseIp('::ffff:10.1.2.3'))
    expect(parseIp('::ffff:a01:203')).toEqual(parseIp('10.1.2.3'))
    expect(parseIp('2001:db8::1')![15]).toBe(1)
    expect(parseIp('[::1]')).toEqual(parseIp('0:0:0:0:0:0:0:1'))
    for (const bad of [
      '',
      '1.2.3',
      '256.1.1.1',
      '1.2.3.4.5',
      'fe80::1%eth0',
      '::g',
      '1:2:3:4:5:6:7:8:9',
      'example.com',
    ])
      expect(parseIp(bad)).toBeNull()
  })
  test('CIDR matching', () => {
    const m = cidrMatcher(['10.0.0.0/8', '192.168.1.0/24', 'fd00::/8', '127.0.0.1'])
    expect(m('10.255.0.1')).toBe(true)
    expect(m('::ffff:10.0.0.1')).toBe(true)
    expect(m('11.0.0.1')).toBe(false)
    expect(m('192.168.1.77')).toBe(true)
    expect(m('192.168.2.1')).toBe(false)
    expect(m('fd12::1')).toBe(true)
    expect(m('fe80::1')).toBe(false)
    expect(m('127.0.0.1')).toBe(true)
    expect(m('127.0.0.2')).toBe(false)
    expect(parseCidr('10.0.0.0/33')).toBeNull()
    expect(parseCidr('::/129')).toBeNull()
    expect(parseCidr('0.0.0.0/0')!.prefix).toBe(96)
  })
  test('X-Forwarded-For is believed only from trusted proxies, read from the right', () => {
    const ip = createClientIp(['127.0.0.1', '10.0.0.0/8'])
    expect(ip('203.0.113.9', '1.2.3.4')).toBe('203.0.113.9')
    expect(ip('127.0.0.1', '198.51.100.7')).toBe('198.51.100.7')
    expect(ip('127.0.0.1', 'spoofed, 198.51.100.7, 10.0.0.5')).toBe('198.51.100.7')
    expect(ip('127.0.0.1', null)).toBe('127.0.0.1')
    expect(createClientIp([])('127.0.0.1', '1.2.3.4')).toBe('127.0.0.1')
  })
})

describe('canonicalIp (issue 36: one spelling for bans and blocklists)', () => {
  test('IPv6 as RFC 5952 writes it: lower case, no leading zeros, the first longest zero run as ::, not a single group', () => {
    expect(canonicalIp('2001:0DB8:0000:0000:0000:0000:0000:0001')).toBe('2001:db8::1')
    expect(canonicalIp('[2001:db8::1]')).toBe('2001:db8::1')
    expect(canonicalIp('2001:db8:0:1:0:0:0:1')).toBe('2001:db8:0:1::1')
    expect(canonicalIp('1:0:0:2:0:0:3:4')).toBe('1::2:0:0:3:4')
    expect(canonicalIp('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1')
    expect(canonicalIp('::1')).toBe('::1')
    expect(canonicalIp('::')).toBe('::')
    expect(canonicalIp('fe80::')).toBe('fe80::')
  })

  test('an IPv6 address that carries an IPv4 one is that IPv4 address', () => {
    for (const t of [
      '::ffff:1.2.3.4',
      '::FFFF:0102:0304',
      '[0:0:0:0:0:ffff:102:304]',
      '::ffff:0:1.2.3.4',
      '64:ff9b::1.2.3.4',
      '::1.2.3.4',
      '1.2.3.4',
    ])
      expect(canonicalIp(t), t).toBe('1.2.3.4')
    // 6to4 and the NAT64 local-use prefix name other hosts: kept as IPv6.
    expect(canonicalIp('2002:102:304::1')).toBe('2002:102:304::1')
    expect(canonicalIp('64:ff9b:1::102:304')).toBe('64:ff9b:1::102:304')
  })

  test('zone ids and non-addresses are refused', () => {
    for (const t of ['fe80::1%eth0', '2001', '1.2.3', 'example.com', '1:2:3:4:5:6:7:8:9', ''])
      expect(canonicalIp(t), t).toBeNull()
  })
})
