// The client behind a trusted proxy, and the key its requests are limited under (issue 6: IPv6 clients were
// limited per /128, and a trusted proxy's X-Forwarded-For became a bucket key even when it was not an address).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { createLinkbox, type Linkbox } from '../../src/app/app'
import { createClientIp, parseHop, rateKeyOf } from '../../src/web/client-ip'
import { tempDir, testConfig } from '../support/app'

describe('parseHop', () => {
  test.each([
    ['192.0.2.1', '192.0.2.1'],
    [' 192.0.2.1 ', '192.0.2.1'],
    ['192.0.2.1:4711', '192.0.2.1'],
    ['2001:db8::1', '2001:db8::1'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['[2001:db8::1]:4711', '2001:db8::1'],
    ['::ffff:192.0.2.1', '::ffff:192.0.2.1'],
  ])('%s is the address %s', (hop, address) => expect(parseHop(hop)).toBe(address))

  test.each([
    'unknown',
    'foo',
    '_hidden',
    'example.com',
    '',
    '192.0.2',
    '192.0.2.256',
    '192.0.2.1:',
    '192.0.2.1:123456',
    '2001:db8::1:4711x',
    '[2001:db8::1',
    'fe80::1%eth0',
    '1.2.3.4, 5.6.7.8',
    '<script>',
    '0x7f000001',
    '127.1',
  ])('%s is not an address', (hop) => expect(parseHop(hop)).toBeNull())
})

describe('the client address', () => {
  const ip = createClientIp(['127.0.0.1', '10.0.0.0/8', '2001:db8:ffff::/48'])

  test('an untrusted peer is the client, whatever it says', () => {
    expect(ip('203.0.113.9', '198.51.100.7')).toBe('203.0.113.9')
    expect(ip('203.0.113.9', 'unknown')).toBe('203.0.113.9')
  })

  test('behind trusted proxies: the first untrusted address from the right', () => {
    expect(ip('127.0.0.1', 'spoofed, 198.51.100.7, 10.0.0.5')).toBe('198.51.100.7')
    expect(ip('127.0.0.1', '198.51.100.7:4711')).toBe('198.51.100.7')
    expect(ip('127.0.0.1', '[2001:db8:1::5]:4711, 2001:db8:ffff::2')).toBe('2001:db8:1::5')
    expect(ip('127.0.0.1', '198.51.100.7,,  ')).toBe('198.51.100.7')
  })

  test('a hop that is not an address is never the client, and ends the walk: the peer is the client', () => {
    expect(ip('127.0.0.1', 'unknown')).toBe('127.0.0.1')
    expect(ip('127.0.0.1', 'foo')).toBe('127.0.0.1')
    expect(ip('127.0.0.1', '198.51.100.7, unknown')).toBe('127.0.0.1')
    expect(ip('127.0.0.1', '198.51.100.7, garbage, 10.0.0.5')).toBe('127.0.0.1')
    expect(ip('127.0.0.1', '')).toBe('127.0.0.1')
    expect(ip('127.0.0.1', ',,,')).toBe('127.0.0.1')
  })

  test('only trusted hops: the leftmost; an endless chain of them is not believed', () => {
    expect(ip('127.0.0.1', '10.1.1.1, 10.0.0.5')).toBe('10.1.1.1')
    expect(ip('127.0.0.1', Array.from({ length: 100 }, (_, i) => `10.0.0.${i}`).join(', '))).toBe('127.0.0.1')
  })
})

describe('rateKeyOf', () => {
  test('IPv4 is the address; IPv4-mapped IPv6 is the IPv4 address', () => {
    expect(rateKeyOf('192.0.2.1')).toBe('192.0.2.1')
    expect(rateKeyOf('::ffff:192.0.2.1')).toBe('192.0.2.1')
    expect(rateKeyOf('::ffff:c000:201')).toBe('192.0.2.1')
  })

  test('IPv6 is its /64, in one spelling', () => {
    const key = '2001:db8:1:2::/64'
    for (const a of [
      '2001:db8:1:2::1',
      '2001:0db8:0001:0002:ffff:ffff:ffff:ffff',
      '2001:DB8:1:2:abcd::9',
      '[2001:db8:1:2::7]',
    ])
      expect(rateKeyOf(a)).toBe(key)
    expect(rateKeyOf('2001:db8:1:3::1')).not.toBe(key)
    expect(rateKeyOf('::1')).toBe('0:0:0:0::/64')
  })

  test('what is not an address stays itself', () => {
    expect(rateKeyOf('unknown')).toBe('unknown')
  })
})

describe('over a real socket, behind a trusted proxy, 2 anonymous requests a minute', () => {
  let box: Linkbox
  let base: string
  let dir: string
  beforeAll(() => {
    dir = tempDir()
    box = createLinkbox(
      testConfig(dir, {
        server: { host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1'] },
        rate: { anon_per_minute: 2 },
      }),
    )
    base = `http://127.0.0.1:${box.listen().port}`
  })
  afterAll(async () => {
    await box.close()
    rmSync(dir, { recursive: true, force: true })
  })
  /** 'ok' for an answer within the allowance (a 405 here: wrong verb, counted all the same), or 429. */
  const statuses = async (forwarded: string[]) => {
    const out: (number | 'ok')[] = []
    for (const f of forwarded) {
      const status = (await fetch(`${base}/api/stats.json?code=aaaaaa`, { headers: { 'x-forwarded-for': f } })).status
      out.push(status === 429 ? 429 : 'ok')
    }
    return out
  }

  test('addresses of one IPv6 /64 share one allowance', async () => {
    expect(await statuses(['2001:db8:5:6::1', '2001:db8:5:6::2', '2001:db8:5:6:ffff::3'])).toEqual(['ok', 'ok', 429])
    // Another /64 has its own.
    expect(await statuses(['2001:db8:5:7::1'])).toEqual(['ok'])
  })

  test('an IPv4 client and its IPv4-mapped spelling share one allowance', async () => {
    expect(await statuses(['198.51.100.20', '::ffff:198.51.100.20', '198.51.100.20:5555'])).toEqual(['ok', 'ok', 429])
  })

  test('hops that are not addresses do not make new allowances: they count against the proxy', async () => {
    expect(await statuses(['unknown', 'garbage-1', 'garbage-2', 'x'])).toEqual(['ok', 'ok', 429, 429])
  })
})
