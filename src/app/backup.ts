// `linkbox backup FILE` and `linkbox restore FILE`: one archive holding everything a data directory needs
// to come back on another machine — the database (a consistent VACUUM INTO copy, taken while the service
// runs), the secrets (signing.key: old signed /dl and mail links keep working) and the mail store's files —
// plus manifest.json (versions, and every file's size and sha256) so that restore can tell a damaged or
// tampered archive before it writes anything. The archive is a plain POSIX (ustar) tar, written and read
// here entry by entry (no tar program, no dependency, and never a whole mail store in memory); `tar tvf`
// lists it. Also here: the pid file `serve` holds (data_dir/linkbox.lock), which restore checks.
import { Database } from 'bun:sqlite'
import { createHash, randomBytes } from 'node:crypto'
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import type { Config } from '../kernel/config'
import { openDatabase, storageReason } from '../db/sqlite'
import { migrations } from '../db/sqlite/migrations'
import { VERSION } from '../kernel/version'

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
const allowedPath = (path: string): boolean =>
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
    if (cut < 0 || Buffer.byteLength(path.slice(cut + 1)) > 100) throw new Refusal(`backup: the path ${path} is too long for the archive`)
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
    if (stored !== sum) throw new Refusal(`restore: ${file} is not a linkbox backup (a damaged tar header at byte ${at})`)
    const size = parseInt(cString(h, 124, 12).trim() || '0', 8)
    const type = String.fromCharCode(h[156]!)
    const prefix = cString(h, 345, 155)
    const name = cString(h, 0, 100)
    const path = prefix ? `${prefix}/${name}` : name
    if (!Number.isSafeInteger(size) || size < 0 || at + BLOCK + size > total)
      throw new Refusal(`restore: ${file} is cut short or damaged (the entry ${path} runs past its end)`)
    if (type === '0' || type === '\0') entries.push({ path, size, offset: at + BLOCK })
    else if (type !== '5') throw new Refusal(`restore: ${file} holds ${path}, which is not a plain file; not a linkbox backup`)
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

// ---- backup

/** The files under data_dir that go into an archive besides the database: secrets/*, mail/<xx>/<blob>/*. */
function collectFiles(dataDir: string): string[] {
  const found: string[] = []
  const list = (dir: string) => {
    try {
      return readdirSync(join(dataDir, dir), { withFileTypes: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [] // swept away meanwhile, or never made
      throw err
    }
  }
  for (const e of list('secrets')) if (e.isFile()) found.push(`secrets/${e.name}`)
  // incoming/ holds messages still arriving (not yet acknowledged); the sweep removes their leftovers.
  for (const a of list('mail'))
    if (a.isDirectory() && /^[0-9a-f]{2}$/.test(a.name))
      for (const b of list(`mail/${a.name}`))
        if (b.isDirectory()) for (const f of list(`mail/${a.name}/${b.name}`)) if (f.isFile()) found.push(`mail/${a.name}/${b.name}/${f.name}`)
  return found.filter(allowedPath).sort()
}

/**
 * Writes the archive to FILE: to FILE.tmp first (0600), fsynced, then linked to FILE — which never replaces
 * a file that is there already. The database is copied first, then the files: a message that arrives in
 * between leaves an unreferenced blob (removed by the orphan sweep after a restore), never a row without one.
 */
/** Ends an archive being written to `out`: the manifest last, the tar's end, fsync, and closes it. */
export function sealArchive(out: number, manifest: Manifest, now: number) {
  const body = Buffer.from(JSON.stringify(manifest, null, 2) + '\n')
  writeAll(out, header('manifest.json', body.length, now))
  writeAll(out, body)
  writeAll(out, Buffer.alloc((BLOCK - (body.length % BLOCK)) % BLOCK + 2 * BLOCK))
  fsyncSync(out)
  closeSync(out)
}

/** Puts the sealed archive `tmp` in place as `file`, never over a file that appeared meanwhile. */
export function placeArchive(tmp: string, file: string, folder: string) {
  try {
    linkSync(tmp, file) // fails on a FILE that appeared meanwhile, where rename would replace it
  } catch (err) {
    throw new Refusal(`backup: cannot write ${file}: ${(err as Error).message}`)
  }
  fsyncDir(folder)
}

export function writeBackup(config: Config, file: string, now = Date.now()): Manifest {
  const dataDir = config.data_dir
  const dbPath = join(dataDir, 'linkbox.db')
  if (existsSync(file)) throw new Refusal(`backup: ${file} exists already; choose a new file`)
  // Never archive an empty database just made: a wrong --config must not look like a good backup.
  if (!existsSync(dbPath)) throw new Refusal(`backup: there is no database at ${dbPath}; check --config`)
  const folder = dirname(resolve(file))
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new Refusal(`backup: the folder ${folder} does not exist; create it first`)
  const tmp = `${file}.tmp`
  const snapshot = join(dataDir, `.backup-${randomBytes(6).toString('hex')}.db`)
  let out: number | undefined
  let schema: number
  try {
    // First: a database that does not open (or is newer than us) leaves nothing behind.
    const db = openDatabase(dbPath)
    try {
      schema = (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
      closeSync(openSync(snapshot, 'wx', 0o600)) // VACUUM INTO fills an empty file, keeping its mode
      db.query('VACUUM INTO ?').run(snapshot) // a consistent snapshot, even while the service writes
    } catch (err) {
      throw new Refusal(`backup: could not copy ${dbPath}: ${storageReason(err)}`)
    } finally {
      db.close()
    }
    try {
      out = openSync(tmp, 'wx', 0o600)
    } catch (err) {
      const exists = (err as NodeJS.ErrnoException).code === 'EEXIST'
      throw new Refusal(`backup: cannot create ${tmp}: ${exists ? 'it exists (left by a backup that was stopped?); remove it' : (err as Error).message}`)
    }
    const files: ManifestFile[] = []
    let position = 0
    const add = (name: string, source: string) => {
      let fd: number
      try {
        fd = openSync(source, 'r')
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return // a message swept since the listing
        throw err
      }
      try {
        const st = statSync(source)
        writeAll(out!, header(name, st.size, st.mtimeMs))
        const sha256 = copyRange(fd, 0, st.size, out!)
        const pad = (BLOCK - (st.size % BLOCK)) % BLOCK
        writeAll(out!, Buffer.alloc(pad))
        position += BLOCK + st.size + pad
        files.push({ path: name, size: st.size, sha256 })
      } finally {
        closeSync(fd)
      }
    }
    try {
      add('linkbox.db', snapshot)
      for (const name of collectFiles(dataDir)) add(name, join(dataDir, name))
      const manifest: Manifest = { format: 'linkbox-backup', format_version: 1, version: VERSION, schema, created: new Date(now).toISOString(), files }
      sealArchive(out, manifest, now)
      out = undefined
      placeArchive(tmp, file, folder)
      return manifest
    } catch (err) {
      if (err instanceof Refusal) throw err
      throw new Refusal(`backup: could not write ${tmp}: ${storageReason(err)}`)
    }
  } finally {
    if (out !== undefined) closeSync(out)
    rmSync(tmp, { force: true }) // ours: made with 'wx' above (or linked to FILE, which stays)
    rmSync(snapshot, { force: true })
  }
}

// ---- the lock `serve` holds, and telling whether a service runs on a data_dir

const lockPath = (dataDir: string) => join(dataDir, 'linkbox.lock')

/**
 * Writes data_dir/linkbox.lock (our pid) for as long as `serve` runs; returns its release. A lock left by
 * a process that is gone (a crash, a reboot) is simply replaced: the port, not this file, keeps a second
 * service from starting, and a stale file must never keep the service from coming back after a power cut.
 */
export function holdLock(dataDir: string): () => void {
  const path = lockPath(dataDir)
  const tmp = `${path}.${process.pid}.tmp`
  writeFileSync(tmp, `${process.pid}\n`, { mode: 0o600 })
  renameSync(tmp, path)
  return () => {
    try {
      if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path)
    } catch {}
  }
}

/** The pid of a `serve` that holds data_dir's lock and is alive, else null. */
export function lockHolder(dataDir: string): number | null {
  let pid: number
  try {
    pid = Number(readFileSync(lockPath(dataDir), 'utf8').trim())
  } catch {
    return null
  }
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return null
  try {
    process.kill(pid, 0)
  } catch (err) {
    // EPERM: it exists and is another user's; only ESRCH says it is gone.
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return null
  }
  // After a reboot the pid may be another program's: where /proc says so, the lock is stale.
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    if (!args.includes('serve')) return null
  } catch {}
  return pid
}

/** Why a service seems to run on this config's data_dir (its lock, or its port answering /healthz), or null. */
export async function runningService(config: Config): Promise<string | null> {
  const pid = lockHolder(config.data_dir)
  if (pid !== null) return `linkbox (pid ${pid}) holds ${lockPath(config.data_dir)}`
  if (config.server.port === 0) return null
  const wildcard = ['0.0.0.0', '::', ''].includes(config.server.host)
  const host = wildcard ? '127.0.0.1' : config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host
  try {
    const res = await fetch(`http://${host}:${config.server.port}/healthz`, { signal: AbortSignal.timeout(2000) })
    await res.body?.cancel()
    if (res.status === 200 || res.status === 503) return `a service answers /healthz on ${host}:${config.server.port}`
  } catch {}
  return null
}

// ---- restore

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
  if (manifest.format_version !== 1) throw new Refusal(`restore: ${file} is in backup format ${manifest.format_version}, this linkbox reads 1: upgrade linkbox`)
  const named = new Set<string>()
  for (const f of manifest.files) {
    if (typeof f?.path !== 'string' || !allowedPath(f.path) || named.has(f.path))
      throw new Refusal(`restore: ${file}: manifest.json names ${JSON.stringify(f?.path)}, which a linkbox backup never holds`)
    named.add(f.path)
    const e = entries.get(f.path)
    if (!e) throw new Refusal(`restore: ${file} lacks ${f.path}, which its manifest lists`)
    if (e.size !== f.size || copyRange(fd, e.offset, e.size, null) !== f.sha256)
      throw new Refusal(`restore: ${file}: ${f.path} does not match its sha256 in manifest.json; the archive is damaged or was changed`)
  }
  for (const path of entries.keys())
    if (path !== 'manifest.json' && !named.has(path)) throw new Refusal(`restore: ${file} holds ${path}, which its manifest does not list`)
  if (!named.has('linkbox.db')) throw new Refusal(`restore: ${file} holds no linkbox.db`)
  return { manifest, entries }
}

/** An ISO time fit for a file name: 20261123T195300123Z. */
export const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:.]/g, '')

/**
 * Puts the archive's files into data_dir. Refuses while a service runs there, a damaged archive, a database
 * that fails integrity_check or is newer than this linkbox, and a data_dir that holds anything unless
 * `force` (then its contents move to data_dir/before-restore-<time>/, nothing is deleted). The files are
 * written into a folder inside data_dir and checked there before anything in data_dir moves.
 */
/** The archive to restore, opened: refused while a service runs on the data directory, or when unreadable. */
export async function openForRestore(config: Config, file: string): Promise<number> {
  const running = await runningService(config)
  if (running) throw new Refusal(`restore: ${running}; stop it first (restore never writes under a running service)`)
  try {
    return openSync(file, 'r')
  } catch (err) {
    throw new Refusal(`restore: cannot read ${file}: ${(err as Error).message}`)
  }
}

export async function restoreBackup(config: Config, file: string, opts: { force?: boolean; now?: number } = {}): Promise<Manifest> {
  const dataDir = config.data_dir
  const now = opts.now ?? Date.now()
  const fd = await openForRestore(config, file)
  try {
    const { manifest, entries } = readArchive(fd, file)
    const present = existsSync(dataDir) ? readdirSync(dataDir).filter((n) => !n.startsWith('before-restore-')) : []
    if (present.length > 0 && !opts.force)
      throw new Refusal(`restore: ${dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''}); add --force to move its contents to ${dataDir}/before-restore-<time>/ first`)
    const made = !existsSync(dataDir)
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    const staging = join(dataDir, `.restore-${stamp(now)}-${randomBytes(4).toString('hex')}`)
    let restored = false
    try {
      unpackArchive(fd, file, manifest, entries, staging, { durable: true })
      if (present.length > 0) {
        const aside = join(dataDir, `before-restore-${stamp(now)}`)
        mkdirSync(aside, { mode: 0o700 })
        for (const name of present) if (join(dataDir, name) !== staging) renameSync(join(dataDir, name), join(aside, name))
        fsyncDir(aside)
      }
      for (const name of readdirSync(staging)) renameSync(join(staging, name), join(dataDir, name))
      fsyncDir(dataDir)
      restored = true
    } finally {
      rmSync(staging, { recursive: true, force: true })
      // A refused restore leaves nothing behind, not even the empty data_dir it made.
      if (!restored && made)
        try {
          rmdirSync(dataDir) // only while empty: what was moved in stays
        } catch {}
    }
    return manifest
  } catch (err) {
    if (err instanceof Refusal) throw err
    throw new Refusal(`restore: ${storageReason(err)}`)
  } finally {
    closeSync(fd)
  }
}

/** integrity_check, and a schema this linkbox knows (older ones are migrated by the next start). */
/**
 * Writes every file of a checked archive into the new directory `staging` (0700, files 0600), each hashed
 * again as written (the archive could have changed since it was checked), fsynced when `durable`; then
 * checks the database among them.
 */
export function unpackArchive(fd: number, file: string, manifest: Manifest, entries: Map<string, TarEntry>, staging: string, opts: { durable: boolean }) {
  mkdirSync(staging, { mode: 0o700 })
  for (const f of manifest.files) {
    const e = entries.get(f.path)!
    const target = join(staging, f.path)
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    const out = openSync(target, 'wx', 0o600)
    try {
      if (copyRange(fd, e.offset, e.size, out) !== f.sha256) throw new Refusal(`restore: ${file} changed while it was read`)
      if (opts.durable) fsyncSync(out)
    } finally {
      closeSync(out)
    }
  }
  checkDatabase(join(staging, 'linkbox.db'), file)
}

export function checkDatabase(path: string, file: string) {
  let db: Database | undefined
  try {
    db = new Database(path) // read-write: a WAL-mode file needs its -shm even to be read; it exists, so nothing is created
    const version = (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
    if (version > migrations.length)
      throw new Refusal(`restore: the linkbox.db in ${file} has schema ${version}, this linkbox knows ${migrations.length}: upgrade linkbox first`)
    const rows = db.query('PRAGMA integrity_check').all() as { integrity_check: string }[]
    if (rows.length !== 1 || rows[0]!.integrity_check !== 'ok')
      throw new Refusal(`restore: the linkbox.db in ${file} fails integrity_check: ${rows[0]?.integrity_check ?? 'no answer'}`)
  } catch (err) {
    if (err instanceof Refusal) throw err
    throw new Refusal(`restore: the linkbox.db in ${file} is not a usable database: ${storageReason(err)}`)
  } finally {
    db?.close()
  }
}

/** Start-up: a data_dir anyone may write to lets anyone replace the database or the signing secret. */
export function checkDataDirMode(dataDir: string): string | null {
  let mode: number
  try {
    mode = statSync(dataDir).mode // a symlink's own mode is always 777: the folder it names is what counts
  } catch {
    return null // made (0700) at start
  }
  if ((mode & 0o002) === 0) return null
  return `data_dir ${dataDir} is world-writable (mode ${(mode & 0o7777).toString(8)}): any local user could replace the database or the signing secret; fix it with: chmod 700 ${dataDir}`
}
