#!/usr/bin/env bun
// Puts the yt-dlp that `bun run build` embeds into the git-ignored vendor/ folder: vendor/yt-dlp and
// vendor/yt-dlp.json ({version, sha256, source}). The official release when this machine can reach it (its
// SHA2-256SUMS checked, as `linkbox ytdlp update` does); otherwise a zipapp built from the yt_dlp Python
// package installed here (Debian's `yt-dlp`), run at the other end with the system's python3. With neither,
// the build goes on without one and says so loudly: the binary then uses media.ytdlp_path or a yt-dlp on PATH,
// and `linkbox doctor` reports that none is bundled.
//
//   bun scripts/bundle-ytdlp.ts [--source auto|release|local]
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { OFFICIAL_RELEASE, isYtdlpVersion, unsafeYtdlpReason, updateYtdlp, type YtdlpMeta } from '../src/media/ytdlp'

const root = resolve(import.meta.dir, '..')
export const VENDOR_FILE = join(root, 'vendor/yt-dlp')
export const VENDOR_META = join(root, 'vendor/yt-dlp.json')
/** Reaching the release is tried briefly: a build machine without internet should not wait long for it. */
const PROBE_TIMEOUT_MS = 10_000

const sha256Of = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

/** What vendor/ holds now, when its file still matches its json and is recent enough to be run (SPEC §6). */
function vendored(): YtdlpMeta | null {
  try {
    const meta = JSON.parse(readFileSync(VENDOR_META, 'utf8')) as YtdlpMeta
    return existsSync(VENDOR_FILE) && !unsafeYtdlpReason(meta.version) && sha256Of(VENDOR_FILE) === meta.sha256
      ? meta
      : null
  } catch {
    return null
  }
}

function keep(file: string, meta: YtdlpMeta): YtdlpMeta {
  mkdirSync(join(root, 'vendor'), { recursive: true })
  renameSync(file, VENDOR_FILE)
  writeFileSync(VENDOR_META, JSON.stringify(meta, null, 2) + '\n')
  return meta
}

async function fromRelease(log: (line: string) => void): Promise<YtdlpMeta | null> {
  let sums: string
  try {
    const res = await fetch(`${OFFICIAL_RELEASE}SHA2-256SUMS`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
    if (!res.ok) throw new Error(`HTTP ${res.status}`)
    sums = await res.text()
  } catch (err) {
    log(`the official release cannot be reached (${(err as Error).message})`)
    return null
  }
  const want = /^([0-9a-f]{64}) [ *]yt-dlp\r?$/m.exec(sums)?.[1]
  const have = vendored()
  if (want && have?.sha256 === want) {
    log(`vendor/yt-dlp is already the latest release (${have.version})`)
    return have
  }
  // The same checks as an admin's update: the sums, the size bound, `--version` runs.
  const scratch = mkdtempSync(join(tmpdir(), 'linkbox-bundle-'))
  try {
    const got = await updateYtdlp({ dataDir: scratch, log })
    return keep(got.path, { version: got.version, sha256: sha256Of(got.path), source: `${OFFICIAL_RELEASE}yt-dlp` })
  } catch (err) {
    log(`the official release was not taken: ${(err as Error).message}`)
    return null
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

const FIND_PACKAGE =
  'import os, yt_dlp, yt_dlp.version; print(os.path.dirname(yt_dlp.__file__)); print(yt_dlp.version.__version__)'

// A zipapp as `python3 -m zipapp` makes it (a `#!/usr/bin/env python3` line, then a zip whose __main__.py
// calls yt_dlp.main()), written with zipfile directly so that __pycache__ is left out and the entries are
// sorted and dated 1980: the same package gives the same bytes, and so the same sha256, on every build.
// Each module's bytecode goes beside its source (foo.pyc next to foo.py, where zipimport looks): without it
// every start compiles yt-dlp's ~1000 modules from source, which took a page's extraction from 1.5 s to 5.2 s
// here. The .pyc files are hash-based and unchecked (PEP 552), so they need no timestamps; a python3 of another
// version at the other end ignores them (another magic number) and reads the sources, only slower.
const MAKE_ZIPAPP = `
import os, sys, zipfile, py_compile, tempfile
pkg, out = sys.argv[1], sys.argv[2]
def entry(name):
    info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info
scratch = tempfile.mkdtemp()
cfile = os.path.join(scratch, 'm.pyc')
with open(out, 'wb') as f:
    f.write(b'#!/usr/bin/env python3\\n')
    with zipfile.ZipFile(f, 'w') as z:
        z.writestr(entry('__main__.py'), 'import yt_dlp\\nyt_dlp.main()\\n')
        for d, dirs, files in os.walk(pkg):
            dirs[:] = sorted(x for x in dirs if x != '__pycache__')
            for name in sorted(files):
                if name.endswith(('.pyc', '.pyo')):
                    continue
                path = os.path.join(d, name)
                arc = 'yt_dlp/' + os.path.relpath(path, pkg).replace(os.sep, '/')
                with open(path, 'rb') as src:
                    z.writestr(entry(arc), src.read())
                if name.endswith('.py'):
                    py_compile.compile(path, cfile=cfile, dfile=arc, doraise=True,
                                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                    with open(cfile, 'rb') as c:
                        z.writestr(entry(arc[:-3] + '.pyc'), c.read())
os.remove(cfile)
os.rmdir(scratch)
`

/** Interpreters that may have the yt_dlp package: python3 on PATH, then the one `yt-dlp` on PATH runs with. */
function pythons(): string[] {
  const found = new Set<string>()
  const py = Bun.which('python3')
  if (py) found.add(py)
  const script = Bun.which('yt-dlp')
  if (script) {
    const first = readFileSync(script).subarray(0, 256).toString('latin1').split('\n')[0]!
    const m = /^#!\s*(\S+)(?:\s+(\S+))?/.exec(first)
    const interp = m?.[1]?.endsWith('/env') ? (m[2] ? Bun.which(m[2]) : null) : m?.[1]
    if (interp && /python/.test(interp)) found.add(interp)
  }
  return [...found]
}

async function fromPackage(log: (line: string) => void): Promise<YtdlpMeta | null> {
  let pkg: { dir: string; version: string } | null = null
  for (const python of pythons()) {
    const r = Bun.spawnSync([python, '-c', FIND_PACKAGE], { stdout: 'pipe', stderr: 'pipe', timeout: 30_000 })
    const [dir, version] = r.stdout.toString().trim().split('\n')
    if (r.exitCode === 0 && dir && version && isYtdlpVersion(version)) {
      pkg = { dir, version }
      break
    }
  }
  if (!pkg) {
    log('no Python with the yt_dlp package here (Debian/Ubuntu: bash scripts/apt-ytdlp.sh)')
    return null
  }
  // Never bundle one that linkbox would refuse to run (Debian 12's own is 2023.03.04).
  const unsafe = unsafeYtdlpReason(pkg.version)
  if (unsafe) {
    log(
      `the yt_dlp package here is not bundled: ${unsafe} (Debian/Ubuntu: bash scripts/apt-ytdlp.sh installs a recent one)`,
    )
    return null
  }
  const python = Bun.which('python3')
  if (!python) {
    log('python3 is not on PATH: the zipapp cannot be built')
    return null
  }
  // The bytecode is for this python3's version: a change of it makes a new zipapp.
  const pyVersion = Bun.spawnSync([python, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'])
    .stdout.toString()
    .trim()
  const source = `zipapp from the yt_dlp ${pkg.version} package, bytecode for Python ${pyVersion}`
  const have = vendored()
  if (have && have.source === source) {
    log(`vendor/yt-dlp is already a ${source}`)
    return have
  }
  mkdirSync(join(root, 'vendor'), { recursive: true })
  const tmp = join(root, 'vendor', `.yt-dlp.${process.pid}.tmp`)
  try {
    const made = Bun.spawnSync([python, '-c', MAKE_ZIPAPP, pkg.dir, tmp], {
      stdout: 'pipe',
      stderr: 'pipe',
      timeout: 120_000,
    })
    if (made.exitCode !== 0) {
      log(`the zipapp could not be built: ${made.stderr.toString().trim().split('\n').pop()}`)
      return null
    }
    // It must run on its own (without the package folder): python3 of PATH, a neutral working directory.
    const ran = Bun.spawnSync([python, tmp, '--version'], {
      cwd: tmpdir(),
      stdout: 'pipe',
      stderr: 'pipe',
      timeout: 30_000,
    })
    const printed = ran.stdout.toString().trim()
    if (ran.exitCode !== 0 || printed !== pkg.version) {
      log(
        `the zipapp does not run (exit ${ran.exitCode}, printed ${JSON.stringify(printed)}): ${ran.stderr.toString().trim().split('\n').pop() ?? ''}`,
      )
      return null
    }
    return keep(tmp, { version: pkg.version, sha256: sha256Of(tmp), source })
  } finally {
    rmSync(tmp, { force: true })
  }
}

/** Fills vendor/ (or keeps what is there); null when there is no yt-dlp to bundle. */
export async function bundleYtdlp(
  opts: { source?: 'auto' | 'release' | 'local'; log?: (line: string) => void } = {},
): Promise<YtdlpMeta | null> {
  const log = opts.log ?? ((line: string) => console.log(`bundle-ytdlp: ${line}`))
  const source = opts.source ?? 'auto'
  const meta =
    (source !== 'local' ? await fromRelease(log) : null) ?? (source !== 'release' ? await fromPackage(log) : null)
  if (meta) return meta
  const left = vendored()
  if (left) {
    log(`keeping the yt-dlp ${left.version} already in vendor/ (${left.source})`)
    return left
  }
  rmSync(VENDOR_FILE, { force: true })
  rmSync(VENDOR_META, { force: true })
  console.warn(
    [
      '',
      '*** WARNING: NO yt-dlp IS BUNDLED INTO THIS BUILD.',
      '*** Neither the official release nor a yt_dlp Python package could be used (see the lines above).',
      '*** The binary will use media.ytdlp_path or a yt-dlp on PATH; `linkbox doctor` says which, or that there is none.',
      '',
    ].join('\n'),
  )
  return null
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Bun.argv.slice(2), options: { source: { type: 'string', default: 'auto' } } })
  if (!['auto', 'release', 'local'].includes(values.source!)) {
    console.error('usage: bun scripts/bundle-ytdlp.ts [--source auto|release|local]')
    process.exit(2)
  }
  const meta = await bundleYtdlp({ source: values.source as 'auto' | 'release' | 'local' })
  if (meta) console.log(`bundle-ytdlp: vendor/yt-dlp ${meta.version} (${meta.source}), sha256 ${meta.sha256}`)
}
