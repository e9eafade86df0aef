// The yt-dlp programs linkbox knows: what they are (versions, the oldest that may run) and how one is asked its version.
import { closeSync, openSync, readSync } from 'node:fs'

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
export interface Sidecar extends YtdlpMeta {
  size: number
  mtimeMs: number
  ino: number
}

export const BUNDLED_NAME = 'yt-dlp-bundled'
export const UPDATED_NAME = 'yt-dlp-updated'
/** Names inside the binary: `compile.assets` names a file by its base name (by its path under a folder given). */
export const EMBEDDED_FILE = 'yt-dlp'
export const EMBEDDED_META = 'yt-dlp.json'

/** The official release folder: `yt-dlp` (a zipapp; needs python3) and `SHA2-256SUMS` beside it. */
export const OFFICIAL_RELEASE = 'https://github.com/yt-dlp/yt-dlp/releases/latest/download/'
/** The official standalone builds are ~35 MiB; anything much larger is not a yt-dlp. */
export const MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024
export const MAX_SUMS_BYTES = 64 * 1024
export const DOWNLOAD_TIMEOUT_MS = 5 * 60_000
export const SUMS_TIMEOUT_MS = 30_000
export const VERSION_TIMEOUT_MS = 30_000
/** Temporary files older than this in data_dir/bin are leftovers of a crash. */
export const STALE_TEMP_MS = 60 * 60_000

export const VERSION_RE = /^(\d{4})\.(\d{1,2})\.(\d{1,2})(?:\.(\d+))?$/

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
export const isSafeYtdlpVersion = (v: string | null): v is string =>
  !!v && isYtdlpVersion(v) && compareVersions(v, MIN_YTDLP_VERSION) >= 0

/** Why a yt-dlp is not run, for doctor, download.json and `ytdlp update`; null when it may run. */
export function unsafeYtdlpReason(version: string | null): string | null {
  if (isSafeYtdlpVersion(version)) return null
  if (!version) return 'its version could not be read'
  return `version ${version} is older than ${MIN_YTDLP_VERSION}, and older releases can be told by a page to bypass the SSRF guard (CVE-2023-46121)`
}

/** A zipapp (a zip, or a `#!` line followed by a zip) is run as `python3 <file>`: data_dir may be noexec. */
export function isZipapp(path: string): boolean {
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
export async function readBounded(stream: ReadableStream<Uint8Array>, limit: number): Promise<string> {
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
export const printable = (s: string) =>
  s
    .replace(/[\x00-\x1f\x7f]+/g, ' ')
    .trim()
    .slice(0, 200)

/** Runs `<argv> --version`: the version it prints, or why it did not. */
export async function runVersion(
  argv: string[],
  env: Record<string, string | undefined>,
): Promise<{ version: string } | { problem: string }> {
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
  const [out, err, code] = await Promise.all([
    readBounded(proc.stdout, 4096),
    readBounded(proc.stderr, 4096),
    proc.exited,
  ])
  if (proc.signalCode) return { problem: `\`--version\` did not finish within ${VERSION_TIMEOUT_MS / 1000} s` }
  const first = out.split('\n')[0]!.trim()
  if (code !== 0) {
    const why = printable(err.split('\n').filter(Boolean).pop() ?? '')
    return { problem: `\`--version\` exited with ${code}${why ? `: ${why}` : ''}` }
  }
  if (!isYtdlpVersion(first))
    return { problem: `\`--version\` printed ${JSON.stringify(printable(first))}, not a yt-dlp version` }
  return { version: first }
}
