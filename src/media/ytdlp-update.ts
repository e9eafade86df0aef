// `linkbox ytdlp update`: a newer yt-dlp fetched, checked against its published sums and installed into data_dir/bin.
import { createHash } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  createReadStream,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import {
  DOWNLOAD_TIMEOUT_MS,
  MAX_DOWNLOAD_BYTES,
  MAX_SUMS_BYTES,
  MIN_YTDLP_VERSION,
  OFFICIAL_RELEASE,
  SUMS_TIMEOUT_MS,
  UPDATED_NAME,
  isZipapp,
  printable,
  runVersion,
  unsafeYtdlpReason,
} from './ytdlp-version'
import { binDir, fsyncDir, tempName, writeSidecar } from './ytdlp-install'

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
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new YtdlpUpdateError('source', `only http and https URLs can be used, not ${url.protocol}`)
    const folder = url.pathname.endsWith('/')
    const name = folder ? 'yt-dlp' : decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf('/') + 1))
    return {
      file: folder ? new URL('yt-dlp', url).href : url.href,
      sums: new URL('SHA2-256SUMS', url).href,
      name,
      remote: true,
    }
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
async function fetchBounded(
  url: string,
  limit: number,
  timeoutMs: number,
  sink: (chunk: Uint8Array) => void,
): Promise<void> {
  let res: Response
  const signal = AbortSignal.timeout(timeoutMs)
  try {
    res = await fetch(url, { signal, redirect: 'follow' })
  } catch (err) {
    throw new YtdlpUpdateError(
      'download',
      `download of ${url} failed: ${signal.aborted ? `no answer within ${timeoutMs / 1000} s` : printable((err as Error).message)}`,
    )
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel()
    throw new YtdlpUpdateError('download', `download of ${url} failed: HTTP ${res.status}`)
  }
  const declared = Number(res.headers.get('content-length') ?? NaN)
  if (declared > limit) {
    await res.body.cancel()
    throw new YtdlpUpdateError(
      'download',
      `download of ${url} refused: ${declared} bytes is more than the limit of ${limit}`,
    )
  }
  let size = 0
  const reader = res.body.getReader()
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      size += r.value.length
      if (size > limit)
        throw new YtdlpUpdateError('download', `download of ${url} refused: more than the limit of ${limit} bytes`)
      sink(r.value)
    }
  } catch (err) {
    await reader.cancel().catch(() => {})
    if (err instanceof YtdlpUpdateError) throw err
    throw new YtdlpUpdateError(
      'download',
      `download of ${url} failed: ${signal.aborted ? `not complete within ${timeoutMs / 1000} s` : printable((err as Error).message)}`,
    )
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
export async function updateYtdlp(opts: {
  dataDir: string
  from?: string
  log?: (line: string) => void
}): Promise<{ version: string; path: string }> {
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
      if (statSync(source.sums).size > MAX_SUMS_BYTES)
        throw new YtdlpUpdateError('checksum', `${source.sums} is too large to be a list of sums`)
      text = readFileSync(source.sums, 'utf8')
    }
    expected = sumFor(text, source.name)
    if (!expected)
      throw new YtdlpUpdateError(
        'checksum',
        `checksum missing: ${source.sums} has no line for ${printable(source.name)}`,
      )
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
        if (statSync(source.file).size > MAX_DOWNLOAD_BYTES)
          throw new YtdlpUpdateError('source', `${source.file} is larger than ${MAX_DOWNLOAD_BYTES} bytes`)
        for await (const chunk of createReadStream(source.file)) sink(chunk as Buffer)
      }
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    chmodSync(tmp, 0o755)
    const sha256 = hash.digest('hex')
    if (expected && sha256 !== expected)
      throw new YtdlpUpdateError(
        'checksum',
        `checksum mismatch: ${printable(source.name)} has SHA-256 ${sha256}, SHA2-256SUMS says ${expected}`,
      )

    const zipapp = isZipapp(tmp)
    const python = zipapp ? Bun.which('python3', { PATH: process.env.PATH ?? '' }) : null
    if (zipapp && !python)
      throw new YtdlpUpdateError('does-not-run', 'does not run: it is a zipapp and python3 is not on PATH')
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
