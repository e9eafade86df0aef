// Which yt-dlp the media service runs, chosen again before every extraction from a few stat calls: the admin's,
// the updated one, the bundled one, or one on PATH (ARCHITECTURE, media).
import { statSync, type Stats } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  BUNDLED_NAME,
  UPDATED_NAME,
  type Ytdlp,
  type YtdlpChoice,
  compareVersions,
  isSafeYtdlpVersion,
  isZipapp,
  runVersion,
} from './ytdlp-version'
import {
  binDir,
  bundledInstalled,
  embeddedMeta,
  embeddedYtdlp,
  installBundled,
  readSidecar,
  sameFile,
  sweepTemps,
} from './ytdlp-install'

export {
  BUNDLED_NAME,
  MAX_DOWNLOAD_BYTES,
  MIN_YTDLP_VERSION,
  OFFICIAL_RELEASE,
  UPDATED_NAME,
  type Ytdlp,
  type YtdlpChoice,
  type YtdlpMeta,
  compareVersions,
  isSafeYtdlpVersion,
  isYtdlpVersion,
  unsafeYtdlpReason,
} from './ytdlp-version'
export { bundledInstalled, embeddedYtdlp, installBundled } from './ytdlp-install'
export { YtdlpUpdateError, updateYtdlp } from './ytdlp-update'

interface Probe {
  key: string
  version: string | null
  zipapp: boolean
}

export function createYtdlp(opts: {
  ytdlpPath: string
  dataDir: string
  env?: Record<string, string | undefined>
}): Ytdlp {
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

  const choice = (
    path: string,
    source: YtdlpChoice['source'],
    p: Probe | null,
    python: string | null,
  ): YtdlpChoice => ({
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
        const path = opts.ytdlpPath.includes('/')
          ? resolve(opts.ytdlpPath)
          : (Bun.which(opts.ytdlpPath, { PATH: env.PATH ?? '' }) ?? opts.ytdlpPath)
        return choice(path, 'config', await probe(path), python)
      }
      // Only one that may run counts: an old update must not hide a safe bundled one.
      const runs = (p: Probe | null): p is Probe & { version: string } =>
        isSafeYtdlpVersion(p?.version ?? null) && (!p!.zipapp || !!python)
      const updatedPath = join(dir, UPDATED_NAME)
      const bundledPath = join(dir, BUNDLED_NAME)
      const [updated, bundled] = await Promise.all([
        probe(updatedPath, `${updatedPath}.json`),
        probe(bundledPath, `${bundledPath}.json`),
      ])
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
