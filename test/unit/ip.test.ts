// src/kernel/net/ip.ts: node:net's isIP without loading node:net (which brings node's streams into serve's start).
// It must answer exactly as node:net does, since the SSRF guard and the trusted-proxy ranges decide by it.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { isIP as nodeIsIP } from 'node:net'
import { isIP } from '../../src/kernel/net/ip'

const same = (s: string) => expect({ s, kind: isIP(s) as number }).toEqual({ s, kind: nodeIsIP(s) })

describe('isIP answers as node:net', () => {
  test('on the cases people write, and the near misses', () => {
    const cases = [
      '',
      ' ',
      '0.0.0.0',
      '127.0.0.1',
      '255.255.255.255',
      '256.1.1.1',
      '1.2.3',
      '1.2.3.4.5',
      '01.2.3.4',
      '1.2.3.04',
      '1.2.3.4 ',
      ' 1.2.3.4',
      '1.2.3.4\n',
      '0x7f.0.0.1',
      '127.1',
      '1..2.3',
      '::',
      '::1',
      '::ffff:10.1.2.3',
      '::ffff:a01:203',
      '2001:db8::1',
      '2001:DB8::1',
      'fe80::1%eth0',
      'fe80::1%',
      'fe80::1%eth0 ',
      '[::1]',
      '1:2:3:4:5:6:7:8',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7::',
      '::2:3:4:5:6:7:8',
      '1::2::3',
      ':::',
      '::g',
      '12345::',
      '1:2:3:4:5:6:1.2.3.4',
      '1:2:3:4:5:6:7:1.2.3.4',
      '::1.2.3.4',
      '::256.1.1.1',
      'example.com',
      'localhost',
      '1.2.3.4/32',
      '::/0',
      '１.２.３.４',
    ]
    for (const s of cases) same(s)
    expect(isIP('10.0.0.1')).toBe(4)
    expect(isIP('fd00::1')).toBe(6)
    expect(isIP('fe80::1%eth0')).toBe(6)
    expect(isIP('example.com')).toBe(0)
  })

  test('on addresses, their mangled forms and any text (property)', () => {
    const mangle = (s: string, at: number, c: string) =>
      s.slice(0, at % (s.length + 1)) + c + s.slice((at % (s.length + 1)) + 1)
    const address = fc.oneof(
      fc.ipV4(),
      fc.ipV4Extended(),
      fc.ipV6(),
      fc.ipV6().map((a) => `${a}%eth0`),
    )
    fc.assert(
      fc.property(address, (a) => same(a)),
      { numRuns: 3000 },
    )
    fc.assert(
      fc.property(address, fc.nat(), fc.constantFrom('', '.', ':', '%', '0', 'f', 'g', ' ', '::', '1.2'), (a, at, c) =>
        same(mangle(a, at, c)),
      ),
      { numRuns: 3000 },
    )
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEFg.:%[] '.split('')), maxLength: 45 }),
        (s) => same(s),
      ),
      { numRuns: 5000 },
    )
  })
})
