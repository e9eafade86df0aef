// Blocklists (SPEC §12 `links.blocklist_files`): hosts kept as 64-bit hashes in typed arrays, since the lists run
// to millions; a host is listed when it or a parent domain is (design notes: abuse).
import { canonicalIp } from '../kernel/net/cidr'

/**
 * Whether a host's last label is a number (the URL standard's "ends in a number": digits, or 0x and hex), which
 * makes the URL parser read the host as an IPv4 address in one of its spellings (0x01020304, 16909060, 1.2.3)
 * or refuse it: such a host is matched as the address the parser makes of it, never as a name.
 */
function endsInNumber(host: string): boolean {
  // By character codes, without a substring: every line of a million-host list asks.
  const start = host.lastIndexOf('.') + 1
  if (start === host.length) return false
  const hex = host.length - start >= 2 && host.charCodeAt(start) === 48 && (host.charCodeAt(start + 1) | 32) === 120 // 0x, 0X
  for (let i = hex ? start + 2 : start; i < host.length; i++) {
    const c = host.charCodeAt(i)
    const digit = c >= 48 && c <= 57
    if (!digit && !(hex && (c | 32) >= 97 && (c | 32) <= 102)) return false
  }
  return true
}

/**
 * A host as the lists and URLs spell it, or null when it is not one: lower case, no trailing dot, punycode for
 * IDNs; an address in one spelling whatever it was typed as (issue 36): IPv4 as a.b.c.d (from the URL
 * parser's hex, decimal and short forms too), IPv6 without brackets as RFC 5952 writes it, and an IPv6 address
 * that carries an IPv4 one (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) as that IPv4 address (net/cidr.ts canonicalIp).
 */
export function normalizeHost(raw: string): string | null {
  let host = raw.trim().toLowerCase()
  if (host.startsWith('[') || host.includes(':')) return canonicalIp(host)
  host = host.replace(/\.$/, '')
  if (host.length === 0 || host.length > 253) return null
  if (!/^[a-z0-9._-]+$/.test(host) || endsInNumber(host)) {
    // What the URL parser would read as a path, a user or a port is not part of a host.
    if (/[/?#@\\%\s]/.test(host)) return null
    // An IDN, an IPv4 address in another spelling, or something that is not a host at all: the URL parser
    // knows which (and makes the punycode, or the dotted address).
    try {
      host = new URL(`http://${host}/`).hostname.replace(/\.$/, '')
    } catch {
      return null
    }
    if (!/^[a-z0-9._-]+$/.test(host)) return null
  }
  if (host.startsWith('.') || host.includes('..')) return null
  return host
}

/** A name of a list (or of a ban): `*.host` stands for `host` and its subdomains, as every entry does. */
export function listedHost(word: string): string | null {
  return normalizeHost(word.startsWith('*.') ? word.slice(2) : word)
}

// Names that hosts files map for the machine's own sake, not as entries of the list.
const HOSTS_FILE_NOISE = new Set([
  'localhost',
  'localhost.localdomain',
  'local',
  'broadcasthost',
  'ip6-localhost',
  'ip6-loopback',
  '0.0.0.0',
])
const ADDRESS = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-f:]*:[0-9a-f:.]*)$/i

// Most lines of a million-host list are a plain lower-case name, alone or after the address: taken as they are
// (but a name whose last label is a number: an address, made canonical by the slow path).
const PLAIN =
  /^(?:(?:0\.0\.0\.0|127\.0\.0\.1)[ \t]+)?([a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*)\r?$/

const NONE: string[] = []

/**
 * The hosts one line of a list names: `host`, `*.host`, `0.0.0.0 host …`, `||host^`; comments (`#`, `!`),
 * section headers and blanks give none. `refused` is called once for a line with something that is not a
 * host (the line's other hosts are still taken), so that the loader can count and name skipped lines.
 */
export function hostsOfLine(line: string, refused?: () => void): string[] {
  const plain = PLAIN.exec(line)
  if (plain && !endsInNumber(plain[1]!)) {
    const host = plain[1]!
    if (host.length <= 253) return HOSTS_FILE_NOISE.has(host) ? NONE : [host]
  }
  const hash = line.indexOf('#')
  const text = (hash >= 0 ? line.slice(0, hash) : line).trim()
  if (text.length === 0 || text.startsWith('!') || text.startsWith('[')) return NONE
  if (text.startsWith('||')) {
    const end = text.search(/[\^/$]/)
    const host = listedHost(text.slice(2, end < 0 ? undefined : end))
    if (!host) refused?.()
    return host ? [host] : NONE
  }
  const words = text.split(/\s+/)
  // hosts format: an address, then the names mapped to it.
  const names = words.length > 1 && ADDRESS.test(words[0]!) ? words.slice(1) : words.length === 1 ? words : null
  if (names === null) {
    refused?.()
    return NONE
  }
  const out: string[] = []
  let bad = false
  for (const w of names) {
    const host = listedHost(w)
    if (host === null) bad = true
    else if (!HOSTS_FILE_NOISE.has(host)) out.push(host)
  }
  if (bad) refused?.()
  return out
}

// Two 32-bit hashes of a host, folded from its last character to its first: on the way, each '.' closes a
// suffix whose hash is then complete, so one pass over a host gives the hash of every parent domain with no
// substring made. (FNV-1a, and a multiply-xorshift with other constants; b is never 0, which marks an empty slot.)
const A0 = 0x811c9dc5
const B0 = 0x2545f491
const foldA = (a: number, c: number) => Math.imul(a ^ c, 0x01000193)
const foldB = (b: number, c: number) => Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15)

const MAX_DEPTH = 31

/** A set of hosts, matched on a host and its parent domains. */
export class HostSet {
  private keys: Uint32Array
  private mask: number
  private count = 0
  /** Bit d set: some listed host has d+1 labels (more than 32 labels share bit 31). */
  private depths = 0

  constructor(expected = 1024) {
    let cap = 1024
    while (cap < expected * 2) cap *= 2
    this.keys = new Uint32Array(cap * 2)
    this.mask = cap - 1
  }

  get size(): number {
    return this.count
  }

  /** Bytes held by the table. */
  get bytes(): number {
    return this.keys.byteLength
  }

  /** Adds a normalised host; false when it was there already. */
  add(host: string): boolean {
    if ((this.count + 1) * 2 > this.mask + 1) this.grow()
    let a = A0
    let b = B0
    let labels = 1
    for (let i = host.length - 1; i >= 0; i--) {
      const c = host.charCodeAt(i)
      if (c === 46) labels++
      a = foldA(a, c)
      b = foldB(b, c)
    }
    this.depths |= 1 << (Math.min(labels, MAX_DEPTH + 1) - 1)
    return this.insert(a >>> 0, (b | 1) >>> 0)
  }

  /** The listed domain that `host` (normalised) is or is under, or null. */
  match(host: string): string | null {
    if (this.count === 0) return null
    let a = A0
    let b = B0
    let labels = 1
    for (let i = host.length - 1; i >= 0; i--) {
      const c = host.charCodeAt(i)
      if (c === 46) {
        // host.slice(i + 1) is complete: is it listed?
        if (this.depths & (1 << (Math.min(labels, MAX_DEPTH + 1) - 1)) && this.has(a >>> 0, (b | 1) >>> 0))
          return host.slice(i + 1)
        labels++
      }
      a = foldA(a, c)
      b = foldB(b, c)
    }
    return this.depths & (1 << (Math.min(labels, MAX_DEPTH + 1) - 1)) && this.has(a >>> 0, (b | 1) >>> 0) ? host : null
  }

  /** Whether `host` (normalised) itself is in the set: its parent domains not looked at (an address has none). */
  includes(host: string): boolean {
    if (this.count === 0) return false
    let a = A0
    let b = B0
    for (let i = host.length - 1; i >= 0; i--) {
      const c = host.charCodeAt(i)
      a = foldA(a, c)
      b = foldB(b, c)
    }
    return this.has(a >>> 0, (b | 1) >>> 0)
  }

  private has(a: number, b: number): boolean {
    const keys = this.keys
    for (let i = a & this.mask; ; i = (i + 1) & this.mask) {
      const k = keys[i * 2 + 1]!
      if (k === 0) return false
      if (k === b && keys[i * 2] === a) return true
    }
  }

  private insert(a: number, b: number): boolean {
    const keys = this.keys
    for (let i = a & this.mask; ; i = (i + 1) & this.mask) {
      const k = keys[i * 2 + 1]!
      if (k === 0) {
        keys[i * 2] = a
        keys[i * 2 + 1] = b
        this.count++
        return true
      }
      if (k === b && keys[i * 2] === a) return false
    }
  }

  private grow() {
    const old = this.keys
    this.keys = new Uint32Array(old.length * 2)
    this.mask = (this.mask + 1) * 2 - 1
    this.count = 0
    for (let i = 0; i < old.length; i += 2) if (old[i + 1] !== 0) this.insert(old[i]!, old[i + 1]!)
  }
}

export interface ListFile {
  path: string
  /** Hosts the file named (duplicates across files counted once in the set, here per file). */
  hosts: number
  /** Last change of the file (unix ms), null when it could not be read. */
  mtime: number | null
  /** Why it could not be read. */
  error?: string
  /** Lines with something that is not a host (counted once each), and the first SKIPPED_SHOWN of them. */
  skipped: number
  skippedLines: { line: number; text: string }[]
}

/** Skipped lines named in the reload's log line, each cut to SKIPPED_TEXT characters. */
export const SKIPPED_SHOWN = 3
const SKIPPED_TEXT = 60

export interface Blocklist {
  set: HostSet
  files: ListFile[]
  /** When it was loaded (unix ms) and how long that took. */
  loadedAt: number
  ms: number
}

/** Reads every file (a missing or unreadable one is reported, not fatal: the others still hold). */
export async function loadBlocklist(paths: string[], clock: () => number = Date.now): Promise<Blocklist> {
  const started = performance.now()
  const texts: { path: string; text: string | null; mtime: number | null; error?: string }[] = []
  let bytes = 0
  for (const path of paths) {
    try {
      const file = Bun.file(path)
      const text = await file.text()
      bytes += text.length
      texts.push({ path, text, mtime: file.lastModified })
    } catch (err) {
      texts.push({
        path,
        text: null,
        mtime: null,
        error: (err as NodeJS.ErrnoException).code ?? (err as Error).message,
      })
    }
  }
  // Size the table once for lines of ~32 bytes (it grows past that) instead of through a million adds.
  const set = new HostSet(Math.ceil(bytes / 32))
  const files: ListFile[] = texts.map(({ path, text, mtime, error }) => {
    if (text === null) return { path, hosts: 0, mtime, error, skipped: 0, skippedLines: [] }
    let hosts = 0
    let start = 0
    let lineNo = 0
    let line = ''
    const skippedLines: ListFile['skippedLines'] = []
    let skipped = 0
    const refused = () => {
      if (skipped++ < SKIPPED_SHOWN) skippedLines.push({ line: lineNo, text: line.trim().slice(0, SKIPPED_TEXT) })
    }
    while (start < text.length) {
      let end = text.indexOf('\n', start)
      if (end < 0) end = text.length
      lineNo++
      line = text.slice(start, end)
      for (const host of hostsOfLine(line, refused)) {
        set.add(host)
        hosts++
      }
      start = end + 1
    }
    return { path, hosts, mtime, skipped, skippedLines }
  })
  return { set, files, loadedAt: clock(), ms: performance.now() - started }
}
