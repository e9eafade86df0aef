// The blocklist matcher (issue 26): the formats the public lists are published in, parent domains, and files
// that cannot be read. Its speed and memory at a million hosts are the bench's (`bun run bench -- blocklist`).
import { afterAll, describe, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { HostSet, hostsOfLine, loadBlocklist, normalizeHost } from '../src/abuse/blocklist'
import { tempDir } from './support/app'

const dir = tempDir('linkbox-blocklist-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('a line of a list', () => {
  test('one host a line, any case, a trailing dot, surrounding space', () => {
    expect(hostsOfLine('evil.example')).toEqual(['evil.example'])
    expect(hostsOfLine('  Evil.EXAMPLE.  ')).toEqual(['evil.example'])
    expect(hostsOfLine('evil.example\r')).toEqual(['evil.example'])
  })

  test('hosts-file format: the names after the address; the machine\'s own names are not entries', () => {
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
    for (const line of ['', '   ', '# a comment', '! adblock comment', '[Adblock Plus 2.0]', 'not a host!', 'a..b', '.leading.dot', 'x'.repeat(300)])
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
      { path: a, hosts: 2, mtime: expect.any(Number) },
      { path: b, hosts: 3, mtime: expect.any(Number) },
      { path: missing, hosts: 0, mtime: null, error: 'ENOENT' },
    ])
    expect(list.set.size).toBe(4)
    expect(list.loadedAt).toBe(1234)
    for (const h of ['evil.example', 'x.phish.test', 'malware.test', 'a.tracker.test']) expect(list.set.match(h), h).not.toBeNull()
    expect(list.set.match('good.example')).toBeNull()
  })
})
