import { describe, expect, test } from 'bun:test'
import { cidrMatcher, parseCidr, parseIp } from '../src/net/cidr'
import { createClientIp } from '../src/http/client-ip'

describe('addresses and ranges', () => {
  test('IPv4, IPv6 and mapped forms parse to the same 16 bytes', () => {
    expect(parseIp('10.1.2.3')).toEqual(parseIp('::ffff:10.1.2.3'))
    expect(parseIp('::ffff:a01:203')).toEqual(parseIp('10.1.2.3'))
    expect(parseIp('2001:db8::1')![15]).toBe(1)
    expect(parseIp('[::1]')).toEqual(parseIp('0:0:0:0:0:0:0:1'))
    for (const bad of ['', '1.2.3', '256.1.1.1', '1.2.3.4.5', 'fe80::1%eth0', '::g', '1:2:3:4:5:6:7:8:9', 'example.com'])
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
