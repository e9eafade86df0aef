// Which yt-dlp the media service runs, and how a newer one gets in. Sites change and a frozen extractor rots
// within months, so there are up to four: the admin's own (media.ytdlp_path), one installed later by
// `linkbox ytdlp update` into data_dir/bin, the one bundled into the binary (extracted into data_dir/bin at
// start), and one on PATH. The choice is re-made before every extraction from a few stat calls, so an update
// takes effect without a restart; a program is only spawned (`--version`) when a file changed.
import { createHash, randomBytes } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  createReadStream,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  type Stats,
} from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'

export interface YtdlpChoice {
  /** The command prefix: [python3, file] for a zipapp, [file] for an ELF or any other executable. */
  argv: string[]
  path: string
  source: 'config' | 'updated' | 'bundled' | 'path'
  /** From the sidecar json or `--version`, cached per (path, inode, mtime, size). */
  version: string | null
}

export interface Ytdlp {
  /** Cheap enough to call before every extraction (stat calls, no spawn when nothing changed). null: none found. */
  current(): Promise<YtdlpChoice | null>
  /** Extract the embedded one when needed (idempotent). */
  prepare(): Promise<void>
}

/** What scripts/bundle-ytdlp.ts writes beside vendor/yt-dlp, and what is kept beside each file in data_dir/bin. */
export interface YtdlpMeta {
  version: string
  sha256: string
  /** Where it came from: a release URL, or `zipapp from <package folder>` when built on the build machine. */
  source: string
}

/** A sidecar also names the file it describes (inode, size, mtime): a file replaced behind its back is not trusted. */
interface Sidecar extends YtdlpMeta {
  size: number
  mtimeMs: number
  ino: number
}

export const BUNDLED_NAME = 'yt-dlp-bundled'
export const UPDATED_NAME = 'yt-dlp-updated'
/** Names inside the binary: `compile.assets` names a file by its base name (by its path under a folder given). */
const EMBEDDED_FILE = 'yt-dlp'
const EMBEDDED_META = 'yt-dlp.json'

/** The official release folder: `yt-dlp` (a zipapp; needs python3) and `SHA2-256SUMS` beside it. */
export const OFFICIAL_RELEASE = 'https://github.com/yt-dlp/yt-dlp/releases/latest/download/'
/** The official standalone builds are ~35 MiB; anything much larger is not a yt-dlp. */
export const MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024
const MAX_SUMS_BYTES = 64 * 1024
const DOWNLOAD_TIMEOUT_MS = 5 * 60_000
const SUMS_TIMEOUT_MS = 30_000
const VERSION_TIMEOUT_MS = 30_000
/** Temporary files older than this in data_dir/bin are leftovers of a crash. */
const STALE_TEMP_MS = 60 * 60_000

const VERSION_RE = /^(\d{4})\.(\d{1,2})\.(\d{1,2})(?:\.(\d+))?$/

/** yt-dlp versions are dates, `YYYY.MM.DD[.N]` (N: a build of that day); compared as numbers, not text. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = VERSION_RE.exec(v)
    return m ? [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4] ?? 0)] : [0, 0, 0, 0]
  }
  const x = parse(a)
  const y = parse(b)
  for (let i = 0; i < 4; i++) if (x[i] !== y[i]) return x[i]! - y[i]!
  return 0
}

export const isYtdlpVersion = (v: string) => VERSION_RE.test(v)

/**
 * The oldest yt-dlp linkbox runs (SPEC §6). Older releases let a page tell them to skip the guard proxy
 * (CVE-2023-46121: a smuggled `Ytdl-request-proxy: __noproxy__` header, fixed in 2023.11.14) and carry
 * CVE-2024-38519 (fixed in 2024.07.01); the proxy cannot stop a request that never reaches it.
 */
export const MIN_YTDLP_VERSION = '2024.07.01'

/** True for a version linkbox will run; an unknown one (null) is not. */
export const isSafeYtdlpVersion = (v: string | null): v is string => !!v && isYtdlpVersion(v) && compareVersions(v, MIN_YTDLP_VERSION) >= 0

/** Why a yt-dlp is not run, for doctor, download.json and `ytdlp update`; null when it may run. */
export function unsafeYtdlpReason(version: string | null): string | null {
  if (isSafeYtdlpVersion(version)) return null
  if (!version) return 'its version could not be read'
  return `version ${version} is older than ${MIN_YTDLP_VERSION}, and older releases can be told by a page to bypass the SSRF guard (CVE-2023-46121)`
}

/** A zipapp (a zip, or a `#!` line followed by a zip) is run as `python3 <file>`: data_dir may be noexec. */
function isZipapp(path: string): boolean {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch {
    return false
  }
  try {
    const head = Buffer.alloc(1024)
    const n = readSync(fd, head, 0, head.length, 0)
    const zip = (at: number) => n >= at + 4 && head.readUInt32LE(at) === 0x04034b50
    if (zip(0)) return true
    if (head[0] !== 0x23 || head[1] !== 0x21) return false
    const eol = head.indexOf(0x0a)
    return eol > 0 && eol < n && zip(eol + 1)
  } finally {
    closeSync(fd)
  }
}

/** Reads at most `limit` bytes of a stream and drops the rest (a program that prints forever costs nothing). */
async function readBounded(stream: ReadableStream<Uint8Array>, limit: number): Promise<string> {
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = stream.getReader()
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      if (size < limit) {
        chunks.push(r.value.subarray(0, limit - size))
        size += Math.min(r.value.length, limit - size)
      }
    }
  } catch {}
  return Buffer.concat(chunks).toString('utf8')
}

/** For messages: control characters (a program's output, a file name) cannot forge lines. */
const printable = (s: string) => s.replace(/[\x00-\x1f\x7f]+/g, ' ').trim().slice(0, 200)

/** Runs `<argv> --version`: the version it prints, or why it did not. */
async function runVersion(argv: string[], env: Record<string, string | undefined>): Promise<{ version: string } | { problem: string }> {
  let proc
  try {
    proc = Bun.spawn([...argv, '--version'], {
      env,
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      timeout: VERSION_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    })
  } catch (err) {
    return { problem: `it cannot be started (${printable((err as Error).message)})` }
  }
  const [out, err, code] = await Promise.all([readBounded(proc.stdout, 4096), readBounded(proc.stderr, 4096), proc.exited])
  if (proc.signalCode) return { problem: `\`--version\` did not finish within ${VERSION_TIMEOUT_MS / 1000} s` }
  const first = out.split('\n')[0]!.trim()
  if (code !== 0) {
    const why = printable(err.split('\n').filter(Boolean).pop() ?? '')
    return { problem: `\`--version\` exited with ${code}${why ? `: ${why}` : ''}` }
  }
  if (!isYtdlpVersion(first)) return { problem: `\`--version\` printed ${JSON.stringify(printable(first))}, not a yt-dlp version` }
  return { version: first }
}

const sameFile = (st: Stats, s: { size: number; mtimeMs: number; ino: number }) =>
  st.size === s.size && st.mtimeMs === s.mtimeMs && st.ino === s.ino

function readSidecar(path: string): Sidecar | null {
  try {
    const s = JSON.parse(readFileSync(path, 'utf8')) as Sidecar
    return typeof s.version === 'string' && typeof s.sha256 === 'string' && typeof s.size === 'number' ? s : null
  } catch {
    return null
  }
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

const tempName = (dir: string, name: string) => join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)

/** Writes a small file under a temporary name, fsyncs it and renames it into place. */
function writeAtomic(path: string, data: string | Uint8Array, mode: number): void {
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
function writeSidecar(file: string, meta: YtdlpMeta): void {
  const st = statSync(file)
  const sidecar: Sidecar = { version: meta.version, sha256: meta.sha256, source: meta.source, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino }
  writeAtomic(`${file}.json`, JSON.stringify(sidecar) + '\n', 0o644)
}

const binDir = (dataDir: string) => join(dataDir, 'bin')

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
async function embeddedMeta(): Promise<YtdlpMeta | null> {
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
  if (sha256 !== meta.sha256) throw new Error(`the bundled yt-dlp is damaged: its SHA-256 is ${sha256}, the build recorded ${meta.sha256}`)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  writeAtomic(target, bytes, 0o755)
  writeSidecar(target, meta)
  fsyncDir(dir)
  return true
}

/** Removes what a crash in the middle of an install or an update left behind. */
function sweepTemps(dir: string, now: number): void {
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

interface Probe {
  key: string
  version: string | null
  zipapp: boolean
}

export function createYtdlp(opts: { ytdlpPath: string; dataDir: string; env?: Record<string, string | undefined> }): Ytdlp {
  const env = opts.env ?? process.env
  const dir = binDir(opts.dataDir)
  // Per file: what was learnt about it, keyed by its identity. A handful of paths at most; the bound only
  // guards against a PATH that keeps changing.
  const probes = new Map<string, Promise<Probe>>()
  const MAX_PROBES = 32

  /** The version and kind of the file at `path` (null: no such file), from its sidecar when that still matches. */
  async function probe(path: string, sidecar?: string): Promise<Probe | null> {
    let st: Stats
    try {
      st = statSync(path)
    } catch {
      return null
    }
    if (!st.isFile()) return null
    const key = `${st.ino}:${st.size}:${st.mtimeMs}`
    const cached = probes.get(path)
    if (cached) {
      const p = await cached
      if (p.key === key) return p
    }
    const work = (async (): Promise<Probe> => {
      const zipapp = isZipapp(path)
      const side = sidecar ? readSidecar(sidecar) : null
      if (side && sameFile(st, side)) return { key, version: side.version, zipapp }
      const python = zipapp ? Bun.which('python3', { PATH: env.PATH ?? '' }) : null
      if (zipapp && !python) return { key, version: null, zipapp }
      const r = await runVersion(zipapp ? [python!, path] : [path], env)
      return { key, version: 'version' in r ? r.version : null, zipapp }
    })()
    if (probes.size >= MAX_PROBES && !probes.has(path)) probes.clear()
    probes.set(path, work)
    return work
  }

  const choice = (path: string, source: YtdlpChoice['source'], p: Probe | null, python: string | null): YtdlpChoice => ({
    argv: p?.zipapp && python ? [python, path] : [path],
    path,
    source,
    version: p?.version ?? null,
  })

  let preparing: Promise<void> | null = null

  return {
    async current() {
      const python = Bun.which('python3', { PATH: env.PATH ?? '' })
      if (opts.ytdlpPath) {
        // The admin's choice stands even when it does not run: falling back silently would hide the mistake.
        const path = opts.ytdlpPath.includes('/') ? resolve(opts.ytdlpPath) : (Bun.which(opts.ytdlpPath, { PATH: env.PATH ?? '' }) ?? opts.ytdlpPath)
        return choice(path, 'config', await probe(path), python)
      }
      // Only one that may run counts: an old update must not hide a safe bundled one.
      const runs = (p: Probe | null): p is Probe & { version: string } => isSafeYtdlpVersion(p?.version ?? null) && (!p!.zipapp || !!python)
      const updatedPath = join(dir, UPDATED_NAME)
      const bundledPath = join(dir, BUNDLED_NAME)
      const [updated, bundled] = await Promise.all([probe(updatedPath, `${updatedPath}.json`), probe(bundledPath, `${bundledPath}.json`)])
      // An update older than the bundled one is left over from before the binary itself was upgraded.
      if (runs(updated) && (!runs(bundled) || compareVersions(updated.version, bundled.version) >= 0))
        return choice(updatedPath, 'updated', updated, python)
      if (runs(bundled)) return choice(bundledPath, 'bundled', bundled, python)
      const onPath = Bun.which('yt-dlp', { PATH: env.PATH ?? '' })
      return onPath ? choice(onPath, 'path', await probe(onPath), python) : null
    },
    prepare() {
      preparing ??= (async () => {
        sweepTemps(dir, Date.now())
        // The usual start: this build's yt-dlp is there already, known from the meta alone.
        const meta = await embeddedMeta()
        if (meta && bundledInstalled(opts.dataDir, meta)) return
        const embedded = await embeddedYtdlp()
        if (embedded) await installBundled(opts.dataDir, embedded.file, embedded.meta)
      })().finally(() => (preparing = null))
      return preparing
    },
  }
}

/** Why `ytdlp update` kept the old one: the message is for the admin, `reason` for tests and scripts. */
export class YtdlpUpdateError extends Error {
  constructor(
    readonly reason: 'source' | 'download' | 'checksum' | 'does-not-run' | 'too-old',
    message: string,
  ) {
    super(message)
    this.name = 'YtdlpUpdateError'
  }
}

interface UpdateSource {
  /** The file itself: a URL or a local path. */
  file: string
  /** Its SHA2-256SUMS: a URL (required), a local path (checked when present), or null. */
  sums: string | null
  /** The name looked up in SHA2-256SUMS. */
  name: string
  remote: boolean
}

/**
 * `--from`: a URL ending in `/` is a release folder (`yt-dlp` and `SHA2-256SUMS` in it); any other URL names the
 * file itself (`…/yt-dlp_linux`), with `SHA2-256SUMS` beside it. A download must be in those sums. A local
 * FILE is checked against a `SHA2-256SUMS` beside it when there is one; otherwise the admin's own file is taken
 * as it is (it must still run `--version`).
 */
function updateSource(from: string | undefined): UpdateSource {
  const spec = from ?? OFFICIAL_RELEASE
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    let url: URL
    try {
      url = new URL(spec)
    } catch {
      throw new YtdlpUpdateError('source', `${printable(spec)} is not a valid URL`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new YtdlpUpdateError('source', `only http and https URLs can be used, not ${url.protocol}`)
    const folder = url.pathname.endsWith('/')
    const name = folder ? 'yt-dlp' : decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf('/') + 1))
    return { file: folder ? new URL('yt-dlp', url).href : url.href, sums: new URL('SHA2-256SUMS', url).href, name, remote: true }
  }
  const file = resolve(spec)
  if (!existsSync(file)) throw new YtdlpUpdateError('source', `${file} does not exist`)
  const sums = join(dirname(file), 'SHA2-256SUMS')
  return { file, sums: existsSync(sums) ? sums : null, name: basename(file), remote: false }
}

/**
 * The download is the admin's own command with a URL the admin chose (or the official release), not an
 * outsider's: the SSRF guard, which keeps callers of the API off the machine's network, does not apply, and a
 * local release folder (the tests', a mirror on the LAN) must work. Size and time are still bounded.
 */
async function fetchBounded(url: string, limit: number, timeoutMs: number, sink: (chunk: Uint8Array) => void): Promise<void> {
  let res: Response
  const signal = AbortSignal.timeout(timeoutMs)
  try {
    res = await fetch(url, { signal, redirect: 'follow' })
  } catch (err) {
    throw new YtdlpUpdateError('download', `download of ${url} failed: ${signal.aborted ? `no answer within ${timeoutMs / 1000} s` : printable((err as Error).message)}`)
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel()
    throw new YtdlpUpdateError('download', `download of ${url} failed: HTTP ${res.status}`)
  }
  const declared = Number(res.headers.get('content-length') ?? NaN)
  if (declared > limit) {
    await res.body.cancel()
    throw new YtdlpUpdateError('download', `download of ${url} refused: ${declared} bytes is more than the limit of ${limit}`)
  }
  let size = 0
  const reader = res.body.getReader()
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      size += r.value.length
      if (size > limit) throw new YtdlpUpdateError('download', `download of ${url} refused: more than the limit of ${limit} bytes`)
      sink(r.value)
    }
  } catch (err) {
    await reader.cancel().catch(() => {})
    if (err instanceof YtdlpUpdateError) throw err
    throw new YtdlpUpdateError('download', `download of ${url} failed: ${signal.aborted ? `not complete within ${timeoutMs / 1000} s` : printable((err as Error).message)}`)
  }
}

/** The hash for `name` in a `sha256sum`-style list (`<hex>  <name>` or `<hex> *<name>`). */
function sumFor(sums: string, name: string): string | null {
  for (const line of sums.split('\n')) {
    const m = /^([0-9a-fA-F]{64}) [ *](.+?)\r?$/.exec(line)
    if (m && m[2] === name) return m[1]!.toLowerCase()
  }
  return null
}

/**
 * Installs a yt-dlp into data_dir/bin/yt-dlp-updated: downloaded (or copied) to a temporary file there, its
 * SHA-256 checked, kept only when `--version` runs and prints a yt-dlp version, then renamed into place. On any
 * refusal a YtdlpUpdateError is thrown and the installed one is untouched. Services pick it up by stat.
 */
export async function updateYtdlp(opts: { dataDir: string; from?: string; log?: (line: string) => void }): Promise<{ version: string; path: string }> {
  const log = opts.log ?? (() => {})
  const source = updateSource(opts.from)
  const dir = binDir(opts.dataDir)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const target = join(dir, UPDATED_NAME)

  let expected: string | null = null
  if (source.sums) {
    let text = ''
    if (source.remote) {
      log(`fetching ${source.sums}`)
      const parts: Uint8Array[] = []
      await fetchBounded(source.sums, MAX_SUMS_BYTES, SUMS_TIMEOUT_MS, (c) => parts.push(c))
      text = Buffer.concat(parts).toString('utf8')
    } else {
      if (statSync(source.sums).size > MAX_SUMS_BYTES) throw new YtdlpUpdateError('checksum', `${source.sums} is too large to be a list of sums`)
      text = readFileSync(source.sums, 'utf8')
    }
    expected = sumFor(text, source.name)
    if (!expected) throw new YtdlpUpdateError('checksum', `checksum missing: ${source.sums} has no line for ${printable(source.name)}`)
  } else log(`no SHA2-256SUMS beside ${source.file}: taking the file as it is`)

  const tmp = tempName(dir, UPDATED_NAME)
  try {
    const fd = openSync(tmp, 'wx', 0o755)
    const hash = createHash('sha256')
    try {
      const sink = (chunk: Uint8Array) => {
        hash.update(chunk)
        for (let off = 0; off < chunk.length; ) off += writeSync(fd, chunk, off, chunk.length - off)
      }
      if (source.remote) {
        log(`downloading ${source.file}`)
        await fetchBounded(source.file, MAX_DOWNLOAD_BYTES, DOWNLOAD_TIMEOUT_MS, sink)
      } else {
        if (statSync(source.file).size > MAX_DOWNLOAD_BYTES) throw new YtdlpUpdateError('source', `${source.file} is larger than ${MAX_DOWNLOAD_BYTES} bytes`)
        for await (const chunk of createReadStream(source.file)) sink(chunk as Buffer)
      }
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    chmodSync(tmp, 0o755)
    const sha256 = hash.digest('hex')
    if (expected && sha256 !== expected)
      throw new YtdlpUpdateError('checksum', `checksum mismatch: ${printable(source.name)} has SHA-256 ${sha256}, SHA2-256SUMS says ${expected}`)

    const zipapp = isZipapp(tmp)
    const python = zipapp ? Bun.which('python3', { PATH: process.env.PATH ?? '' }) : null
    if (zipapp && !python) throw new YtdlpUpdateError('does-not-run', 'does not run: it is a zipapp and python3 is not on PATH')
    const ran = await runVersion(zipapp ? [python!, tmp] : [tmp], process.env)
    if ('problem' in ran) throw new YtdlpUpdateError('does-not-run', `does not run: ${ran.problem}`)
    const unsafe = unsafeYtdlpReason(ran.version)
    if (unsafe) throw new YtdlpUpdateError('too-old', `refused: ${unsafe}; linkbox runs ${MIN_YTDLP_VERSION} or later`)

    renameSync(tmp, target)
    writeSidecar(target, { version: ran.version, sha256, source: source.file })
    fsyncDir(dir)
    return { version: ran.version, path: target }
  } finally {
    rmSync(tmp, { force: true })
  }
}
