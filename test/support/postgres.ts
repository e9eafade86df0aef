// A real PostgreSQL server for tests (issue 22): the distribution's `postgresql` package, started here in a
// fresh temporary directory (initdb, then pg_ctl on a free loopback port) and stopped and removed afterwards.
// Two kinds of handle: sharedPostgres() (the usual one) hands out the test PROCESS's one cluster, started at its
// first use and stopped when the process ends (by the watchdog below), so the files a worker runs share it;
// its stop() only drops the databases made through it, and it cannot be halted. startPostgres() starts a
// cluster of the caller's own (about 2.3 s up, 0.9 s down), for the tests that halt, restart or stop a server.
// One database per test (createDatabase): empty (from template1) unless `migrated: true`, which copies a
// database every migration already ran on (linkbox_template, made once per cluster): a few milliseconds, where
// running the migrations takes 0.3 to 0.75 s. The app's own migration step then finds nothing to do.
//
// Run as root (as the tests are on CI), PostgreSQL refuses to start: every server command then runs as the
// `postgres` user (runuser), in a directory that user owns. Authentication is `trust`, which initdb writes for
// the local socket and 127.0.0.1/::1 only; the server listens on 127.0.0.1 alone, and its superuser is a
// random name without a password. Durability is switched off (fsync, full-page writes): a test cluster that
// dies is thrown away, never recovered. A watchdog stops and removes a cluster whose test process ended
// without stop() (a crash, SIGKILL, a failed file: bun test runs no exit handlers).
import { afterAll, beforeAll } from 'bun:test'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface Postgres {
  /** postgres://<superuser>@127.0.0.1:<port>/postgres: the maintenance database. */
  url: string
  port: number
  /** The temporary directory holding the cluster (removed by stop()). */
  dir: string
  /**
   * Makes a database (a random name unless given) and returns its URL: empty, or with `migrated: true` a copy
   * of the migrated template (linkbox_schema at the current version, every table), for tests that open it
   * with the app or a store anyway.
   */
  createDatabase(nameOrOptions?: string | DatabaseOptions): Promise<string>
  /**
   * Stops the server and keeps its directory, for a test of a database that goes away: `fast` (the default)
   * ends every session with 57P01 admin_shutdown, `immediate` drops them as a crash would. resume() starts it
   * again on the same port, with the same data.
   */
  halt(mode?: 'fast' | 'immediate'): Promise<void>
  /** Starts a halted server again (same port, same data); nothing when it runs. */
  resume(): Promise<void>
  /** halt() then resume(): every connection is dropped and the server answers again. */
  restart(mode?: 'fast' | 'immediate'): Promise<void>
  /** Stops the server (pg_ctl stop -m fast) and removes its directory. Safe to call twice, and after halt(). */
  stop(): Promise<void>
}

export interface DatabaseOptions {
  name?: string
  /** A copy of linkbox_template (every migration run) instead of an empty database. */
  migrated?: boolean
}

/** Where the server programs are: PG_BIN, else the newest /usr/lib/postgresql/<major>/bin (Debian), else PATH. */
export function postgresBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'pg_ctl')))
      .sort((a, b) => Number(b) - Number(a))
    if (majors[0]) return join(root, majors[0], 'bin')
  }
  const onPath = Bun.which('pg_ctl')
  if (onPath) return join(onPath, '..')
  throw new Error(
    'PostgreSQL is not installed: no pg_ctl in /usr/lib/postgresql/*/bin or on PATH (scripts/test-setup.sh installs the postgresql package)',
  )
}

const asRoot = process.getuid?.() === 0

/** The uid and gid of the postgres user, who runs the server when the tests run as root. */
function postgresUser(): { uid: number; gid: number } {
  const r = Bun.spawnSync(['id', '-u', 'postgres'])
  const g = Bun.spawnSync(['id', '-g', 'postgres'])
  if (r.exitCode !== 0 || g.exitCode !== 0)
    throw new Error(
      'running as root, but there is no "postgres" user to run the server as (the postgresql package makes it)',
    )
  return { uid: Number(r.stdout.toString().trim()), gid: Number(g.stdout.toString().trim()) }
}

/** A server command, as the postgres user when we are root; its output is returned, a failure thrown with it. */
async function run(dir: string, command: string[], allowFailure = false): Promise<{ code: number; output: string }> {
  const argv = asRoot ? ['runuser', '-u', 'postgres', '--', ...command] : command
  const proc = Bun.spawn(argv, {
    cwd: dir,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, LC_ALL: 'C.UTF-8', LANG: 'C.UTF-8' },
  })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  const code = await proc.exited
  const output = `${out}${err}`.trim()
  if (code !== 0 && !allowFailure) throw new Error(`${command.join(' ')} failed (exit ${code}):\n${output}`)
  return { code, output }
}

/** A port that was free a moment ago (bound and released): PostgreSQL then binds it, and a lost race is retried. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}

const randomName = (prefix: string) =>
  `${prefix}${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString('hex')}`

/**
 * A watchdog for one cluster: a shell that waits for this process to end, however it ends (bun test runs no
 * 'exit' handlers, and a crash or SIGKILL runs nothing), then stops the server at once and removes its
 * directory (and `extra`), so that no test run leaves a postgres behind. It runs in a session of its own
 * (setsid -f), out of reach of bun test --isolate, which ends what a file spawned when the file is done: the
 * shared cluster outlives the file that started it. stop() removes the directory, which ends the watchdog.
 */
function watchdog(bin: string, dir: string, data: string, extra?: string) {
  const q = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`
  const stop = [
    ...(asRoot ? ['runuser', '-u', 'postgres', '--'] : []),
    join(bin, 'pg_ctl'),
    'stop',
    '-D',
    data,
    '-m',
    'immediate',
    '-w',
  ]
    .map(q)
    .join(' ')
  const script = `while kill -0 ${process.pid} 2>/dev/null && [ -d ${q(dir)} ]; do sleep 1; done; cd / && ${stop} >/dev/null 2>&1; rm -rf ${q(dir)}${extra ? ` ${q(extra)}` : ''}`
  Bun.spawnSync(['setsid', '-f', 'sh', '-c', script], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' })
}

/** Where a process's shared cluster is recorded: files of one process share it though each has its own globals (--isolate). */
const sharedRecord = () => join(tmpdir(), `linkbox-pg-shared-${process.pid}.json`)

export async function startPostgres(opts: { maxConnections?: number; record?: string } = {}): Promise<Postgres> {
  const bin = postgresBin()
  const dir = mkdtempSync(join(tmpdir(), 'linkbox-pg-'))
  const data = join(dir, 'data')
  let guarded = false
  try {
    if (asRoot) {
      const { uid, gid } = postgresUser()
      chownSync(dir, uid, gid)
    }
    const superuser = randomName('lb_')
    await run(dir, [
      join(bin, 'initdb'),
      '-D',
      data,
      '-U',
      superuser,
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
      '--no-instructions',
    ])
    watchdog(bin, dir, data, opts.record)
    guarded = true
    const options = (port: number) =>
      [
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `port=${port}`,
        '-c',
        `unix_socket_directories=${dir}`,
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        `max_connections=${opts.maxConnections ?? 100}`,
      ].join(' ')
    let starts = 0
    /** pg_ctl start on `port`: its result, and the server's log when it failed. */
    const startOn = async (port: number) => {
      const log = join(dir, `server-${++starts}.log`)
      const started = await run(
        dir,
        [join(bin, 'pg_ctl'), 'start', '-D', data, '-l', log, '-w', '-t', '60', '-o', options(port)],
        true,
      )
      const why = started.code === 0 ? '' : existsSync(log) ? readFileSync(log, 'utf8') : started.output
      return { ok: started.code === 0, output: started.output, why }
    }
    let port = 0
    for (let attempt = 1; ; attempt++) {
      port = await freePort()
      const started = await startOn(port)
      if (started.ok) break
      // Another process took the port between freePort() and the bind: try another one.
      if (attempt < 5 && /could not bind|address already in use/i.test(started.why)) continue
      throw new Error(`pg_ctl start failed:\n${started.output}\n${started.why}`)
    }
    const url = `postgres://${superuser}@127.0.0.1:${port}/postgres`
    let stopped = false
    let halted = false
    const halt = async (mode: 'fast' | 'immediate' = 'fast') => {
      if (stopped) throw new Error('halt(): the server was stopped and removed')
      if (halted) return
      await run(dir, [join(bin, 'pg_ctl'), 'stop', '-D', data, '-m', mode, '-w', '-t', '60'])
      halted = true
    }
    const resume = async () => {
      if (stopped) throw new Error('resume(): the server was stopped and removed')
      if (!halted) return
      // The same port (the clients' URLs name it). PostgreSQL binds with SO_REUSEADDR, so the connections
      // it just closed do not hold the port; another process may have taken it meanwhile, which a test on
      // loopback with ports from the kernel's ephemeral range makes unlikely: then this throws, with the log.
      const started = await startOn(port)
      if (!started.ok) throw new Error(`pg_ctl start (resume) failed:\n${started.output}\n${started.why}`)
      halted = false
    }
    if (opts.record) writeFileSync(opts.record, JSON.stringify({ url, port, dir }))
    return {
      url,
      port,
      dir,
      createDatabase: (nameOrOptions) => createDatabaseOn(url, nameOrOptions),
      halt,
      resume,
      async restart(mode) {
        await halt(mode)
        await resume()
      },
      async stop() {
        if (stopped) return
        stopped = true
        try {
          if (!halted) await run(dir, [join(bin, 'pg_ctl'), 'stop', '-D', data, '-m', 'fast', '-w', '-t', '60'])
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      },
    }
  } catch (err) {
    if (guarded) {
      await run(dir, [join(bin, 'pg_ctl'), 'stop', '-D', data, '-m', 'immediate', '-w'], true)
    }
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
}

/** postgres://user@host:port/ without the database name. */
const serverOf = (url: string) => url.replace(/\/[^/]*$/, '/')

const TEMPLATE = 'linkbox_template'
/** The template of each server this file made or found, once (two tests of a file may ask at the same time). */
const templates = new Map<string, Promise<void>>()

/** Makes linkbox_template on the server of `url` unless it is there: built under another name, then renamed. */
async function ensureTemplate(admin: InstanceType<typeof Bun.SQL>, url: string): Promise<void> {
  const [has] = await admin`SELECT 1 AS one FROM pg_database WHERE datname = ${TEMPLATE}`
  if (has) return
  const building = randomName('template_')
  await admin.unsafe(`CREATE DATABASE ${building}`)
  const { openPostgres } = await import('../../src/db/postgres')
  const db = await openPostgres(`${serverOf(url)}${building}`, { max: 1 })
  await db.close()
  await admin.unsafe(`ALTER DATABASE ${building} RENAME TO ${TEMPLATE}`)
}

async function createDatabaseOn(url: string, nameOrOptions: string | DatabaseOptions = {}): Promise<string> {
  const { name = randomName('t_'), migrated = false } =
    typeof nameOrOptions === 'string' ? { name: nameOrOptions } : nameOrOptions
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name))
    throw new Error(`createDatabase: ${JSON.stringify(name)} is not a plain lower-case name`)
  const admin = new Bun.SQL(url, { max: 1 })
  try {
    if (migrated) {
      const key = serverOf(url)
      if (!templates.has(key))
        templates.set(
          key,
          ensureTemplate(admin, url).catch((err) => (templates.delete(key), Promise.reject(err))),
        )
      await templates.get(key)
    }
    // FILE_COPY (PostgreSQL 15+) copies the template's few files at once, where the default writes every
    // block to the WAL: about half the time for a database this small, and fsync is off anyway.
    const [{ v }] = await admin`SELECT current_setting('server_version_num')::int AS v`
    const strategy = v >= 150000 ? ' STRATEGY FILE_COPY' : ''
    await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${migrated ? TEMPLATE : 'template1'}${strategy}`)
  } finally {
    await admin.close()
  }
  return `${serverOf(url)}${name}`
}

let shared: Promise<{ url: string; port: number; dir: string }> | undefined

/**
 * The test process's shared cluster (started at the first call in this process, whichever file makes it;
 * stopped by its watchdog when the process ends). stop() drops the databases this handle made, with their
 * sessions; halt(), resume() and restart() throw: a test that takes a server away uses startPostgres().
 */
export async function sharedPostgres(): Promise<Postgres> {
  shared ??= (async () => {
    const record = sharedRecord()
    if (existsSync(record)) {
      const found = JSON.parse(readFileSync(record, 'utf8')) as { url: string; port: number; dir: string }
      if (existsSync(found.dir)) return found
    }
    // More connections than a private cluster's: the pools every file of the process leaves open until its end.
    const pg = await startPostgres({ maxConnections: 300, record })
    return { url: pg.url, port: pg.port, dir: pg.dir }
  })()
  let server: Awaited<typeof shared>
  try {
    server = await shared
  } catch (err) {
    shared = undefined
    throw err
  }
  const made: string[] = []
  /**
   * The next migrated database, made ahead while the test that asked for the last one runs: a test then finds
   * its database ready (CREATE DATABASE takes 0.1 to 0.3 s on a busy machine, its checkpoints included).
   * One left unused when the file ends goes with the server.
   */
  let spare: Promise<string> | undefined
  const makeSpare = () => {
    const next = createDatabaseOn(server.url, { migrated: true })
    next.catch(() => {}) // a failure is met by the caller that takes it
    spare = next
  }
  const refuse = async () => {
    throw new Error(
      'the shared PostgreSQL server cannot be halted or restarted: use startPostgres() for a server of your own',
    )
  }
  return {
    ...server,
    async createDatabase(nameOrOptions) {
      const plainMigrated = typeof nameOrOptions === 'object' && nameOrOptions.migrated && !nameOrOptions.name
      const ahead = plainMigrated ? spare : undefined
      if (plainMigrated) makeSpare()
      const url = (await ahead?.catch(() => undefined)) ?? (await createDatabaseOn(server.url, nameOrOptions))
      made.push(url.slice(url.lastIndexOf('/') + 1))
      return url
    },
    halt: refuse,
    resume: refuse,
    restart: refuse,
    async stop() {
      const names = made.splice(0)
      if (!names.length) return
      const admin = new Bun.SQL(server.url, { max: 1 })
      try {
        for (const name of names) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
      } finally {
        await admin.close()
      }
    },
  }
}

/**
 * One server for the whole test file, started in beforeAll (handed to `started`) and stopped in afterAll;
 * answers the list of unhandled rejections seen in between, for tests that assert there were none (code that
 * loses its connection on purpose must not leave a promise rejected behind it).
 */
export function postgresForFile(started: (pg: Postgres) => void): unknown[] {
  let pg: Postgres | undefined
  const unhandled: unknown[] = []
  const onUnhandled = (err: unknown) => void unhandled.push(err)
  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled)
    pg = await startPostgres()
    started(pg)
  }, 120_000)
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled)
    await pg?.stop()
  })
  return unhandled
}
