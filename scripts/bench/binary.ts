// Which linkbox the bench measures: the compiled binary, as it is deployed, not `bun src/main.ts`.
// dist/linkbox is built (scripts/build.ts) when it is missing or older than any source; LINKBOX_BENCH_BINARY
// points at another binary instead (a build of an earlier commit: the "before" figures).
import { Database } from 'bun:sqlite'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { join, resolve } from 'node:path'
import {
  runCli,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
  type ServerOptions,
  type TomlDoc,
} from '../../test/support/server'

export const ROOT = resolve(import.meta.dir, '../..')
const DIST = join(ROOT, 'dist/linkbox')
/** What goes into the binary: a change to any of these makes dist/linkbox stale. */
const SOURCES = ['src', 'assets', 'scripts/build.ts', 'package.json', 'package-lock.json']

function newestMtime(path: string): number {
  const s = statSync(path)
  if (!s.isDirectory()) return s.mtimeMs
  return Math.max(s.mtimeMs, ...readdirSync(path).map((e) => newestMtime(join(path, e))))
}

export interface Binary {
  path: string
  /** How RESULTS.md names it: "this checkout (dist/linkbox)" or LINKBOX_BENCH_LABEL / the path given. */
  label: string
  version: string
  /** The schema version (PRAGMA user_version) it gives a new database: data must be made for it. */
  schema: number
}

export async function benchBinary(): Promise<Binary> {
  const given = process.env.LINKBOX_BENCH_BINARY
  let path: string
  if (given) {
    path = resolve(given)
    if (!existsSync(path)) throw new Error(`bench: LINKBOX_BENCH_BINARY=${given} does not exist`)
  } else {
    path = DIST
    const sources = Math.max(...SOURCES.filter((p) => existsSync(join(ROOT, p))).map((p) => newestMtime(join(ROOT, p))))
    if (!existsSync(path) || statSync(path).mtimeMs < sources) {
      console.log('bench: building dist/linkbox (missing or older than the sources)')
      const build = Bun.spawnSync([process.execPath, join(ROOT, 'scripts/build.ts')], {
        cwd: ROOT,
        stdout: 'inherit',
        stderr: 'inherit',
      })
      if (build.exitCode !== 0) throw new Error('bench: the build failed')
    }
  }
  const version = await runCli(['version'], { command: [path] })
  if (version.code !== 0) throw new Error(`bench: ${path} version exited with ${version.code}: ${version.stderr}`)
  // A new database made by the binary itself tells which schema it runs.
  const probe = writeConfig()
  const made = await runCli(['account', 'create', 'probe', '--config', probe.configPath], { command: [path] })
  if (made.code !== 0) throw new Error(`bench: ${path} could not create a database: ${made.stderr}`)
  const db = new Database(join(probe.dataDir, 'linkbox.db'), { readonly: true })
  const schema = (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
  db.close()
  return {
    path,
    label: given ? (process.env.LINKBOX_BENCH_LABEL ?? given) : 'this checkout (dist/linkbox)',
    version: version.stdout.trim(),
    schema,
  }
}

/**
 * startServer for the bench: the server's output (a line per request) goes to a file in its config directory,
 * as the figures of issue 21 are defined ("request lines on and going to a file"). A pipe read by the bench
 * would put the bench's own reading of every line on the same two cores as the server and wrk.
 */
export function startBenchServer(opts: ServerOptions): Promise<RunningServer> {
  const config = opts.config ?? writeConfig()
  withBenchDomains(config.configPath)
  return startServer({ ...opts, config, stdoutFile: join(config.dir, 'stdout.log') })
}

/**
 * LINKBOX_BENCH_DOMAINS="go.bench.test,…": every server of the run has these short domains beside its default one
 * (issue 40: the redirect rows with two domains, so that the host is read on every visit). Binaries from before
 * server.domains (schema < 26) refuse the key: run it only on those that have it.
 */
function withBenchDomains(configPath: string) {
  const hosts = (process.env.LINKBOX_BENCH_DOMAINS ?? '').split(',').filter(Boolean)
  if (hosts.length === 0) return
  const toml = readFileSync(configPath, 'utf8')
  if (!toml.includes('\n[server]\n') || toml.includes('\ndomains = ')) return
  writeFileSync(configPath, toml.replace('\n[server]\n', `\n[server]\ndomains = ${JSON.stringify(hosts)}\n`))
}

/** A server of the binary on a copy of a cached data directory (the cache itself stays as it was made). */
export async function serveCopy(
  binary: Binary,
  dataDir: string | null,
  overrides: TomlDoc = {},
): Promise<RunningServer> {
  const config = writeConfig(tempDir('linkbox-bench-'), overrides)
  mkdirSync(config.dataDir, { recursive: true })
  if (dataDir) copyFileSync(join(dataDir, 'linkbox.db'), join(config.dataDir, 'linkbox.db'))
  const server = await startBenchServer({ config, command: [binary.path], startTimeoutMs: 60_000 })
  // The copy goes with the server: a run would otherwise leave ~200 MB in the temp directory.
  return removingOnStop(server, config.dir)
}

/** The server, whose stop() also removes `dir` (its config and data directory), however the stop ends. */
export function removingOnStop(server: RunningServer, dir: string): RunningServer {
  const stop = server.stop
  return {
    ...server,
    stop: async (signal, timeoutMs) => {
      try {
        return await stop(signal, timeoutMs)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}
