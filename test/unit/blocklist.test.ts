// The blocklist matcher (issue 26): the formats the public lists are published in, parent domains, and files
// that cannot be read. Its speed and memory at a million hosts are the bench's (`bun run bench -- blocklist`).
import { afterAll, describe, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { HostSet, hostsOfLine, loadBlocklist, normalizeHost } from '../../src/abuse/blocklist'
import { tempDir } from '../support/app'

const dir = tempDir('linkbox-blocklist-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('a line of a list', () => {
  test('one host a line, any case, a trailing dot, surrounding space', () => {
    expect(hostsOfLine('evil.example')).toEqual(['evil.example'])
    expect(hostsOfLine('  Evil.EXAMPLE.  ')).toEqual(['evil.example'])
    expect(hostsOfLine('evil.example\r')).toEqual(['evil.example'])
  })

  test("hosts-file format: the names after the address; the machine's own names are not entries", () => {
    expect(hostsOfLine('0.0.0.0 evil.example')).toEqual(['evil.example'])
    expect(hostsOfLine('127.0.0.1\tevil.example   other.example # comment')).toEqual(['evil.example', 'other.example'])
    expect(hostsOfLine(':: evil.example')).toEqual(['evil.example'])
    expect(hostsOfLine('127.0.0.1 localhost')).toEqual([])
    expect(hostsOfLine('255.255.255.255 broadcasthost')).toEqual([])
    expect(hostsOfLine('0.0.0.0 0.0.0.0')).toEqual([])
  })

  test("adblock's ||host^", () => {
    expect(hostsOfLine('||evil.example^')).toEqual(['evil.example'])
    expect(hostsOfLine('||evil.example^$third-party')).toEqual(['evil.example'])
  })

  test('comments, blank lines, section headers and junk give nothing', () => {
    for (const line of [
      '',
      '   ',
      '# a comment',
      '! adblock comment',
      '[Adblock Plus 2.0]',
      'not a host!',
      'a..b',
      '.leading.dot',
      'x'.repeat(300),
    ])
      expect(hostsOfLine(line), JSON.stringify(line)).toEqual([])
  })

  test('an IDN is kept as its punycode, as URLs carry it', () => {
    expect(normalizeHost('bücher.example')).toBe('xn--bcher-kva.example')
    expect(hostsOfLine('0.0.0.0 BÜCHER.example')).toEqual(['xn--bcher-kva.example'])
  })
})

describe('matching', () => {
  const set = new HostSet()
  for (const h of ['evil.example', 'phish.co.uk', 'tk', 'a.b.c.d.e.f.g.h.deep.example']) set.add(h)

  test('the host itself and every subdomain of it; not a sibling, a parent or a look-alike', () => {
    expect(set.match('evil.example')).toBe('evil.example')
    expect(set.match('www.evil.example')).toBe('evil.example')
    expect(set.match('a.b.c.evil.example')).toBe('evil.example')
    expect(set.match('example')).toBeNull()
    expect(set.match('notevil.example')).toBeNull()
    expect(set.match('evil.example.com')).toBeNull()
    expect(set.match('co.uk')).toBeNull()
    expect(set.match('login.phish.co.uk')).toBe('phish.co.uk')
  })

  test('a whole top-level domain, and a deep entry', () => {
    expect(set.match('anything.tk')).toBe('tk')
    expect(set.match('x.a.b.c.d.e.f.g.h.deep.example')).toBe('a.b.c.d.e.f.g.h.deep.example')
    expect(set.match('b.c.d.e.f.g.h.deep.example')).toBeNull()
  })

  test('duplicates count once; the table grows past its first size and keeps every entry', () => {
    const grown = new HostSet(10)
    for (let i = 0; i < 50_000; i++) expect(grown.add(`h${i}.example`)).toBe(true)
    expect(grown.add('h7.example')).toBe(false)
    expect(grown.size).toBe(50_000)
    for (let i = 0; i < 50_000; i += 997) expect(grown.match(`www.h${i}.example`)).toBe(`h${i}.example`)
    expect(grown.match('h50000.example')).toBeNull()
  })

  test('an empty set matches nothing', () => {
    expect(new HostSet().match('evil.example')).toBeNull()
  })
})

describe('loading files', () => {
  test('several files in several formats, one missing: the others hold, the missing one is named', async () => {
    const a = join(dir, 'plain.txt')
    const b = join(dir, 'hosts.txt')
    writeFileSync(a, '# phishing\nevil.example\nphish.test\n\n')
    writeFileSync(b, '127.0.0.1 localhost\n0.0.0.0 malware.test tracker.test\n0.0.0.0 evil.example\n')
    const missing = join(dir, 'missing.txt')
    const list = await loadBlocklist([a, b, missing], () => 1234)
    expect(list.files).toEqual([
      { path: a, hosts: 2, mtime: expect.any(Number), skipped: 0, skippedLines: [] },
      { path: b, hosts: 3, mtime: expect.any(Number), skipped: 0, skippedLines: [] },
      { path: missing, hosts: 0, mtime: null, error: 'ENOENT', skipped: 0, skippedLines: [] },
    ])
    expect(list.set.size).toBe(4)
    expect(list.loadedAt).toBe(1234)
    for (const h of ['evil.example', 'x.phish.test', 'malware.test', 'a.tracker.test'])
      expect(list.set.match(h), h).not.toBeNull()
    expect(list.set.match('good.example')).toBeNull()
  })
})

describe('addresses and wildcards (issue 36)', () => {
  test('every spelling of an address is one host: IPv4 forms the URL parser reads, IPv6 compressed or not, mapped to IPv4, bracketed', () => {
    for (const [typed, host] of <[string, string][]>[
      ['1.2.3.4', '1.2.3.4'],
      ['01.02.03.04', '1.2.3.4'],
      ['0x01020304', '1.2.3.4'],
      ['16909060', '1.2.3.4'],
      ['1.2.3.4.', '1.2.3.4'],
      ['1.2.0.3', '1.2.0.3'],
      ['1.2.3', '1.2.0.3'],
      ['::ffff:1.2.3.4', '1.2.3.4'],
      ['[::ffff:102:304]', '1.2.3.4'],
      ['::FFFF:0102:0304', '1.2.3.4'],
      ['64:ff9b::1.2.3.4', '1.2.3.4'],
      ['2001:db8::1', '2001:db8::1'],
      ['[2001:DB8:0:0:0:0:0:1]', '2001:db8::1'],
      ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
      ['2001:db8:0:1:0:0:0:1', '2001:db8:0:1::1'],
    ])
      expect(normalizeHost(typed), typed).toBe(host)
    for (const bad of [
      '2001:db8::1%eth0',
      '[2001:db8::1',
      '1.2.3.4.5',
      'a.b.0x1',
      'evil.123',
      'evil.example/path',
      'user@evil.example',
      '999.1.1.1',
    ])
      expect(normalizeHost(bad), bad).toBeNull()
  })

  test('list lines: `*.host` is host and its subdomains; addresses in any spelling; IPv6 entries', () => {
    expect(hostsOfLine('*.evil.example')).toEqual(['evil.example'])
    expect(hostsOfLine('0.0.0.0 *.evil.example other.example')).toEqual(['evil.example', 'other.example'])
    expect(hostsOfLine('||*.evil.example^')).toEqual(['evil.example'])
    expect(hostsOfLine('0x01020304')).toEqual(['1.2.3.4'])
    expect(hostsOfLine('2001:DB8::0:1')).toEqual(['2001:db8::1'])
    expect(hostsOfLine('[::ffff:1.2.3.4]')).toEqual([]) // a section header, as adblock lists write them
    const set = new HostSet()
    for (const line of ['*.evil.example', '01.02.03.04', '2001:0db8::1']) for (const h of hostsOfLine(line)) set.add(h)
    expect(set.match('evil.example')).toBe('evil.example')
    expect(set.match('a.evil.example')).toBe('evil.example')
    expect(set.includes('1.2.3.4')).toBe(true)
    expect(set.includes('2001:db8::1')).toBe(true)
    expect(set.includes('2001:db8::2')).toBe(false)
  })

  test('a line with something that is not a host is skipped, counted and named (the first few), its good hosts kept', async () => {
    const f = join(dir, 'skips.txt')
    writeFileSync(
      f,
      [
        '# header',
        'good.example',
        'not a host!',
        '0.0.0.0 fine.example bad!name',
        'two words',
        '1.2.3.4.5',
        '||^',
        '',
        '! comment',
        'ok.example',
      ].join('\n'),
    )
    const list = await loadBlocklist([f])
    expect(list.files[0]).toMatchObject({
      hosts: 3,
      skipped: 5,
      skippedLines: [
        { line: 3, text: 'not a host!' },
        { line: 4, text: '0.0.0.0 fine.example bad!name' },
        { line: 5, text: 'two words' },
      ],
    })
    for (const h of ['good.example', 'fine.example', 'ok.example']) expect(list.set.match(h), h).toBe(h)
    let refused = 0
    for (const line of [
      '',
      '# c',
      '! c',
      '[Adblock Plus 2.0]',
      '127.0.0.1 localhost',
      '0.0.0.0 0.0.0.0',
      'evil.example',
    ])
      hostsOfLine(line, () => refused++)
    expect(refused).toBe(0)
  })
})
