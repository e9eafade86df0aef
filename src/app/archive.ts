// The backup archive: a plain POSIX (ustar) tar written and read here entry by entry, manifest.json (versions,
// every file's size and sha256) checked before restore writes anything; `tar tvf` lists it.
import { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import { closeSync, fsyncSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { storageReason } from '../db/sqlite'
import { migrations } from '../db/sqlite/migrations'

/** A refusal or failure of backup, restore or start-up: one line for the operator, exit 1. */
export class Refusal extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'Refusal'
  }
}

export interface ManifestFile {
  path: string
  size: number
  sha256: string
}
export interface Manifest {
  format: 'linkbox-backup'
  format_version: 1
  /** The linkbox that wrote it. */
  version: string
  /** PRAGMA user_version of linkbox.db in the archive. */
  schema: number
  created: string
  files: ManifestFile[]
}

export const BLOCK = 512
const CHUNK = 1024 * 1024
/** What an archive may hold: the database, the secrets and the mail store; nothing else is ever written. */
const ALLOWED = /^(linkbox\.db|secrets\/[A-Za-z0-9._-]+|mail\/[0-9a-f]{2}\/[0-9a-f]{32}\/[A-Za-z0-9._-]+)$/
/**
 * A path an archive may hold: ALLOWED, and no segment `.` or `..`, which its character class lets through
 * but which name a folder rather than a file in it (`mail/ab/<blob>/..` would be written as the file
 * mail/ab, in the way of every message stored under that prefix). No empty segment, no leading slash and
 * no backslash get past ALLOWED.
 */
export const allowedPath = (path: string): boolean =>
  ALLOWED.test(path) && path.split('/').every((segment) => segment !== '.' && segment !== '..')

// ---- the tar format (ustar): a 512-byte header per file, the bytes, padding to 512, two zero blocks at the end

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0'
}

export function header(path: string, size: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK)
  // Names up to 100 bytes go in `name`; longer ones (none of ours today) are split at a slash into `prefix`.
  let name = path
  let prefix = ''
  if (Buffer.byteLength(path) > 100) {
    const cut = path.lastIndexOf('/', 155)
    if (cut < 0 || Buffer.byteLength(path.slice(cut + 1)) > 100)
      throw new Refusal(`backup: the path ${path} is too long for the archive`)
    prefix = path.slice(0, cut)
    name = path.slice(cut + 1)
  }
  h.write(name, 0, 100, 'utf8')
  h.write(octal(0o600, 8), 100, 'ascii')
  h.write(octal(0, 8), 108, 'ascii') // uid
  h.write(octal(0, 8), 116, 'ascii') // gid
  h.write(octal(size, 12), 124, 'ascii')
  h.write(octal(Math.floor(mtime / 1000), 12), 136, 'ascii')
  h.write('        ', 148, 'ascii') // the checksum counts itself as spaces
  h.write('0', 156, 'ascii') // a regular file
  h.write('ustar\0', 257, 'ascii')
  h.write('00', 263, 'ascii')
  h.write(prefix, 345, 155, 'utf8')
  let sum = 0
  for (const byte of h) sum += byte
  h.write(octal(sum, 7) + ' ', 148, 'ascii')
  return h
}

const cString = (buf: Buffer, start: number, length: number) => {
  const field = buf.subarray(start, start + length)
  const end = field.indexOf(0)
  return field.subarray(0, end < 0 ? length : end).toString('utf8')
}

export interface TarEntry {
  path: string
  size: number
  /** Where the entry's bytes start in the archive file. */
  offset: number
}

/** The regular-file entries of a tar file, with where their bytes are; anything malformed is a Refusal. */
function listTar(fd: number, total: number, file: string): TarEntry[] {
  const entries: TarEntry[] = []
  const h = Buffer.alloc(BLOCK)
  let at = 0
  while (at + BLOCK <= total) {
    if (readSync(fd, h, 0, BLOCK, at) !== BLOCK) break
    if (h.every((b) => b === 0)) return entries // the end
    let sum = 0
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!
    const stored = parseInt(cString(h, 148, 8).trim(), 8)
    if (stored !== sum)
      throw new Refusal(`restore: ${file} is not a linkbox backup (a damaged tar header at byte ${at})`)
    const size = parseInt(cString(h, 124, 12).trim() || '0', 8)
    const type = String.fromCharCode(h[156]!)
    const prefix = cString(h, 345, 155)
    const name = cString(h, 0, 100)
    const path = prefix ? `${prefix}/${name}` : name
    if (!Number.isSafeInteger(size) || size < 0 || at + BLOCK + size > total)
      throw new Refusal(`restore: ${file} is cut short or damaged (the entry ${path} runs past its end)`)
    if (type === '0' || type === '\0') entries.push({ path, size, offset: at + BLOCK })
    else if (type !== '5')
      throw new Refusal(`restore: ${file} holds ${path}, which is not a plain file; not a linkbox backup`)
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK
  }
  throw new Refusal(`restore: ${file} is cut short (no end-of-archive marker)`)
}

/** Copies `size` bytes at `offset` of fd to `out` (a fd, or null to only hash); returns their sha256. */
export function copyRange(fd: number, offset: number, size: number, out: number | null): string {
  const hash = createHash('sha256')
  const buf = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)))
  let done = 0
  while (done < size) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, size - done), offset + done)
    if (n <= 0) throw new Error('unexpected end of file')
    hash.update(buf.subarray(0, n))
    if (out !== null) writeAll(out, buf.subarray(0, n))
    done += n
  }
  return hash.digest('hex')
}

export function writeAll(fd: number, data: Uint8Array) {
  let done = 0
  while (done < data.length) done += writeSync(fd, data, done, data.length - done)
}

export function fsyncDir(path: string) {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Reads and checks FILE completely (tar, manifest, every sha256); nothing is written. */
export function readArchive(fd: number, file: string): { manifest: Manifest; entries: Map<string, TarEntry> } {
  const total = statSync(file).size
  const list = listTar(fd, total, file)
  const entries = new Map<string, TarEntry>()
  for (const e of list) {
    if (entries.has(e.path)) throw new Refusal(`restore: ${file} holds ${e.path} twice; not a linkbox backup`)
    entries.set(e.path, e)
  }
  const m = entries.get('manifest.json')
  if (!m || m.size > 64 * 1024 * 1024) throw new Refusal(`restore: ${file} has no manifest.json; not a linkbox backup`)
  let manifest: Manifest
  try {
    const buf = Buffer.alloc(m.size)
    readSync(fd, buf, 0, m.size, m.offset)
    manifest = JSON.parse(buf.toString('utf8'))
  } catch (err) {
    throw new Refusal(`restore: ${file}: manifest.json does not read (${(err as Error).message})`)
  }
  if (manifest?.format !== 'linkbox-backup' || !Array.isArray(manifest.files))
    throw new Refusal(`restore: ${file}: manifest.json is not a linkbox backup's`)
  if (manifest.format_version !== 1)
    throw new Refusal(
      `restore: ${file} is in backup format ${manifest.format_version}, this linkbox reads 1: upgrade linkbox`,
    )
  const named = new Set<string>()
  for (const f of manifest.files) {
    if (typeof f?.path !== 'string' || !allowedPath(f.path) || named.has(f.path))
      throw new Refusal(
        `restore: ${file}: manifest.json names ${JSON.stringify(f?.path)}, which a linkbox backup never holds`,
      )
    named.add(f.path)
    const e = entries.get(f.path)
    if (!e) throw new Refusal(`restore: ${file} lacks ${f.path}, which its manifest lists`)
    if (e.size !== f.size || copyRange(fd, e.offset, e.size, null) !== f.sha256)
      throw new Refusal(
        `restore: ${file}: ${f.path} does not match its sha256 in manifest.json; the archive is damaged or was changed`,
      )
  }
  for (const path of entries.keys())
    if (path !== 'manifest.json' && !named.has(path))
      throw new Refusal(`restore: ${file} holds ${path}, which its manifest does not list`)
  if (!named.has('linkbox.db')) throw new Refusal(`restore: ${file} holds no linkbox.db`)
  return { manifest, entries }
}

/**
 * Writes every file of a checked archive into the new directory `staging` (0700, files 0600), each hashed
 * again as written (the archive could have changed since it was checked), fsynced when `durable`; then
 * checks the database among them.
 */
export function unpackArchive(
  fd: number,
  file: string,
  manifest: Manifest,
  entries: Map<string, TarEntry>,
  staging: string,
  opts: { durable: boolean },
) {
  mkdirSync(staging, { mode: 0o700 })
  for (const f of manifest.files) {
    const e = entries.get(f.path)!
    const target = join(staging, f.path)
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    const out = openSync(target, 'wx', 0o600)
    try {
      if (copyRange(fd, e.offset, e.size, out) !== f.sha256)
        throw new Refusal(`restore: ${file} changed while it was read`)
      if (opts.durable) fsyncSync(out)
    } finally {
      closeSync(out)
    }
  }
  checkDatabase(join(staging, 'linkbox.db'), file)
}

/** integrity_check, and a schema this linkbox knows (older ones are migrated by the next start). */
export function checkDatabase(path: string, file: string) {
  let db: Database | undefined
  try {
    db = new Database(path) // read-write: a WAL-mode file needs its -shm even to be read; it exists, so nothing is created
    const version = (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
    if (version > migrations.length)
      throw new Refusal(
        `restore: the linkbox.db in ${file} has schema ${version}, this linkbox knows ${migrations.length}: upgrade linkbox first`,
      )
    const rows = db.query('PRAGMA integrity_check').all() as { integrity_check: string }[]
    if (rows.length !== 1 || rows[0]!.integrity_check !== 'ok')
      throw new Refusal(
        `restore: the linkbox.db in ${file} fails integrity_check: ${rows[0]?.integrity_check ?? 'no answer'}`,
      )
  } catch (err) {
    if (err instanceof Refusal) throw err
    throw new Refusal(`restore: the linkbox.db in ${file} is not a usable database: ${storageReason(err)}`)
  } finally {
    db?.close()
  }
}
