// The yt-dlp bundled into the binary, extracted into data_dir/bin, with a sidecar that records what each file is.
import { createHash, randomBytes } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  type Stats,
} from 'node:fs'
import { basename, dirname, join } from 'node:path'
import {
  BUNDLED_NAME,
  EMBEDDED_FILE,
  EMBEDDED_META,
  STALE_TEMP_MS,
  type Sidecar,
  type YtdlpMeta,
} from './ytdlp-version'

export const sameFile = (st: Stats, s: { size: number; mtimeMs: number; ino: number }) =>
  st.size === s.size && st.mtimeMs === s.mtimeMs && st.ino === s.ino

export function readSidecar(path: string): Sidecar | null {
  try {
    const s = JSON.parse(readFileSync(path, 'utf8')) as Sidecar
    return typeof s.version === 'string' && typeof s.sha256 === 'string' && typeof s.size === 'number' ? s : null
  } catch {
    return null
  }
}

export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

export const tempName = (dir: string, name: string) =>
  join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)

/** Writes a small file under a temporary name, fsyncs it and renames it into place. */
export function writeAtomic(path: string, data: string | Uint8Array, mode: number): void {
  const tmp = tempName(dirname(path), basename(path))
  try {
    const fd = openSync(tmp, 'wx', mode)
    try {
      const bytes = typeof data === 'string' ? Buffer.from(data) : data
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    chmodSync(tmp, mode) // the umask may have taken bits away
    renameSync(tmp, path)
  } finally {
    rmSync(tmp, { force: true })
  }
}

/** Records the file's identity with its meta, so later starts and `current()` trust the version without running it. */
export function writeSidecar(file: string, meta: YtdlpMeta): void {
  const st = statSync(file)
  const sidecar: Sidecar = {
    version: meta.version,
    sha256: meta.sha256,
    source: meta.source,
    size: st.size,
    mtimeMs: st.mtimeMs,
    ino: st.ino,
  }
  writeAtomic(`${file}.json`, JSON.stringify(sidecar) + '\n', 0o644)
}

export const binDir = (dataDir: string) => join(dataDir, 'bin')

/** The yt-dlp compiled into this binary, or null (run from source, or built without one). */
export async function embeddedYtdlp(): Promise<{ file: Blob; meta: YtdlpMeta } | null> {
  if (!Bun.isStandaloneExecutable) return null
  const named = (name: string) =>
    Bun.embeddedFiles.find((b) => {
      const n = (b as Blob & { name?: string }).name ?? ''
      return n === name || n.endsWith(`/${name}`)
    })
  const file = named(EMBEDDED_FILE)
  const meta = named(EMBEDDED_META)
  if (!file || !meta) return null
  return { file, meta: JSON.parse(await meta.text()) as YtdlpMeta }
}

/**
 * The meta of the yt-dlp compiled into this binary, read from its file alone: compile.assets puts it at
 * /$bunfs/root/yt-dlp.json, beside the modules (see qr/renderer.ts for import.meta.url there). Bun.embeddedFiles,
 * which embeddedYtdlp() needs for the yt-dlp itself, costs 5 ms and more at its first use in this binary: a
 * start whose data_dir/bin already holds this build's yt-dlp does not pay it. null when it cannot be read
 * (run from source; another layout): prepare() then asks embeddedYtdlp() as before.
 */
export async function embeddedMeta(): Promise<YtdlpMeta | null> {
  if (!Bun.isStandaloneExecutable) return null
  try {
    const meta = JSON.parse(await Bun.file(new URL(`./${EMBEDDED_META}`, import.meta.url)).text()) as YtdlpMeta
    return typeof meta.sha256 === 'string' ? meta : null
  } catch {
    return null
  }
}

/** Whether data_dir/bin/yt-dlp-bundled is the one `meta` describes: its sidecar has that sha256 and names the file as it is. */
export function bundledInstalled(dataDir: string, meta: YtdlpMeta): boolean {
  const target = join(binDir(dataDir), BUNDLED_NAME)
  const have = readSidecar(`${target}.json`)
  if (!have || have.sha256 !== meta.sha256) return false
  try {
    return sameFile(statSync(target), have)
  } catch {
    return false
  }
}

/**
 * Puts `file` at data_dir/bin/yt-dlp-bundled when it is missing or another build's: the sidecar's sha256 is
 * compared, not the file's bytes, so an unchanged start costs a stat and a small read. Written to a temporary
 * name, fsynced, renamed (a crash leaves the old one or the new one, never half). Returns whether it wrote.
 */
export async function installBundled(dataDir: string, file: Blob, meta: YtdlpMeta): Promise<boolean> {
  const dir = binDir(dataDir)
  const target = join(dir, BUNDLED_NAME)
  if (bundledInstalled(dataDir, meta)) return false
  const bytes = new Uint8Array(await file.arrayBuffer())
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  if (sha256 !== meta.sha256)
    throw new Error(`the bundled yt-dlp is damaged: its SHA-256 is ${sha256}, the build recorded ${meta.sha256}`)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  writeAtomic(target, bytes, 0o755)
  writeSidecar(target, meta)
  fsyncDir(dir)
  return true
}

/** Removes what a crash in the middle of an install or an update left behind. */
export function sweepTemps(dir: string, now: number): void {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return
  }
  for (const name of names) {
    if (!name.startsWith('.') || !name.endsWith('.tmp')) continue
    try {
      if (now - statSync(join(dir, name)).mtimeMs > STALE_TEMP_MS) rmSync(join(dir, name), { force: true })
    } catch {}
  }
}
