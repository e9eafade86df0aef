// The lock `serve` holds on data_dir (linkbox.lock), whether a service runs on a data_dir, and data_dir's mode.
import { readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../kernel/config'

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
  const host = wildcard
    ? '127.0.0.1'
    : config.server.host.includes(':')
      ? `[${config.server.host}]`
      : config.server.host
  try {
    const res = await fetch(`http://${host}:${config.server.port}/healthz`, { signal: AbortSignal.timeout(2000) })
    await res.body?.cancel()
    if (res.status === 200 || res.status === 503) return `a service answers /healthz on ${host}:${config.server.port}`
  } catch {}
  return null
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
