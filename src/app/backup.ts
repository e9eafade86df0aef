// `linkbox backup FILE` and `linkbox restore FILE`: the database (a VACUUM INTO copy, taken while the service
// runs), the secrets and the mail store's files in one archive (archive.ts) that restore checks before writing.
import { randomBytes } from 'node:crypto'
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
} from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import type { Config } from '../kernel/config'
import { openDatabase, storageReason } from '../db/sqlite'
import { VERSION } from '../kernel/version'
import {
  allowedPath,
  BLOCK,
  copyRange,
  fsyncDir,
  header,
  type Manifest,
  type ManifestFile,
  readArchive,
  Refusal,
  unpackArchive,
  writeAll,
} from './archive'
import { runningService } from './lock'

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
        if (b.isDirectory())
          for (const f of list(`mail/${a.name}/${b.name}`))
            if (f.isFile()) found.push(`mail/${a.name}/${b.name}/${f.name}`)
  return found.filter(allowedPath).sort()
}

/** Ends an archive being written to `out`: the manifest last, the tar's end, fsync, and closes it. */
export function sealArchive(out: number, manifest: Manifest, now: number) {
  const body = Buffer.from(JSON.stringify(manifest, null, 2) + '\n')
  writeAll(out, header('manifest.json', body.length, now))
  writeAll(out, body)
  writeAll(out, Buffer.alloc(((BLOCK - (body.length % BLOCK)) % BLOCK) + 2 * BLOCK))
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

/**
 * Writes the archive to FILE: to FILE.tmp first (0600), fsynced, then linked to FILE — which never replaces
 * a file that is there already. The database is copied first, then the files: a message that arrives in
 * between leaves an unreferenced blob (removed by the orphan sweep after a restore), never a row without one.
 */
export function writeBackup(config: Config, file: string, now = Date.now()): Manifest {
  const dataDir = config.data_dir
  const dbPath = join(dataDir, 'linkbox.db')
  if (existsSync(file)) throw new Refusal(`backup: ${file} exists already; choose a new file`)
  // Never archive an empty database just made: a wrong --config must not look like a good backup.
  if (!existsSync(dbPath)) throw new Refusal(`backup: there is no database at ${dbPath}; check --config`)
  const folder = dirname(resolve(file))
  if (!existsSync(folder) || !statSync(folder).isDirectory())
    throw new Refusal(`backup: the folder ${folder} does not exist; create it first`)
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
      throw new Refusal(
        `backup: cannot create ${tmp}: ${exists ? 'it exists (left by a backup that was stopped?); remove it' : (err as Error).message}`,
      )
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
      const manifest: Manifest = {
        format: 'linkbox-backup',
        format_version: 1,
        version: VERSION,
        schema,
        created: new Date(now).toISOString(),
        files,
      }
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

// ---- restore

/** An ISO time fit for a file name: 20261123T195300123Z. */
export const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:.]/g, '')

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

/**
 * Puts the archive's files into data_dir. Refuses while a service runs there, a damaged archive, a database
 * that fails integrity_check or is newer than this linkbox, and a data_dir that holds anything unless
 * `force` (then its contents move to data_dir/before-restore-<time>/, nothing is deleted). The files are
 * written into a folder inside data_dir and checked there before anything in data_dir moves.
 */

export async function restoreBackup(
  config: Config,
  file: string,
  opts: { force?: boolean; now?: number } = {},
): Promise<Manifest> {
  const dataDir = config.data_dir
  const now = opts.now ?? Date.now()
  const fd = await openForRestore(config, file)
  try {
    const { manifest, entries } = readArchive(fd, file)
    const present = existsSync(dataDir) ? readdirSync(dataDir).filter((n) => !n.startsWith('before-restore-')) : []
    if (present.length > 0 && !opts.force)
      throw new Refusal(
        `restore: ${dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''}); add --force to move its contents to ${dataDir}/before-restore-<time>/ first`,
      )
    const made = !existsSync(dataDir)
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    const staging = join(dataDir, `.restore-${stamp(now)}-${randomBytes(4).toString('hex')}`)
    let restored = false
    try {
      unpackArchive(fd, file, manifest, entries, staging, { durable: true })
      if (present.length > 0) {
        const aside = join(dataDir, `before-restore-${stamp(now)}`)
        mkdirSync(aside, { mode: 0o700 })
        for (const name of present)
          if (join(dataDir, name) !== staging) renameSync(join(dataDir, name), join(aside, name))
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
