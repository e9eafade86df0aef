// Runs the real service as a child process: `bun src/main.ts serve` (or a compiled executable) on a free
// port, with a TOML config written here and a temporary data directory. For tests that need what an
// in-process app cannot give: real sockets, signals, crashes, restarts on the same SQLite file, the binary.
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { createServer, type AddressInfo } from 'node:net'
import { readAnswer, type ApiAnswer } from './app'

export const REPO_ROOT = resolve(import.meta.dir, '../..')
/** `bun src/main.ts`, run by the same bun that runs the tests. */
export const SOURCE_COMMAND: readonly string[] = [process.execPath, join(REPO_ROOT, 'src/main.ts')]

/** A desktop Chrome user agent: counted as a human click (the fetch default may count as a bot). */
export const CHROME_UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

type TomlValue = string | number | boolean | (string | number | boolean)[]
/** Top-level keys, or tables (`{ server: { port: 0 } }` → `[server] port = 0`). */
export type TomlDoc = Record<string, TomlValue | Record<string, TomlValue>>

const tomlValue = (v: TomlValue): string =>
  Array.isArray(v) ? `[${v.map(tomlValue).join(', ')}]` : typeof v === 'string' ? JSON.stringify(v) : String(v)

/** Serialises a flat TOML document (one level of tables; strings quoted as JSON, which TOML accepts). */
export function toToml(doc: TomlDoc): string {
  const top: string[] = []
  const tables: string[] = []
  for (const [key, value] of Object.entries(doc)) {
    if (typeof value === 'object' && !Array.isArray(value)) {
      tables.push(`\n[${key}]`)
      for (const [k, v] of Object.entries(value)) tables.push(`${k} = ${tomlValue(v)}`)
    } else top.push(`${key} = ${tomlValue(value)}`)
  }
  return [...top, ...tables].join('\n') + '\n'
}

export function tempDir(prefix = 'linkbox-proc-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export interface TestConfig {
  dir: string
  dataDir: string
  configPath: string
}

/**
 * Writes `<dir>/linkbox.toml` for a test server: loopback, port 0, no rate limits, data in `<dir>/data`
 * (an absolute path, so it does not matter where the process runs). `overrides` are merged per table.
 */
export function writeConfig(dir = tempDir(), overrides: TomlDoc = {}): TestConfig {
  const dataDir = join(dir, 'data')
  const doc: TomlDoc = {
    data_dir: dataDir,
    server: { host: '127.0.0.1', port: 0 },
    rate: { anon_per_minute: 0, key_per_minute: 0 },
    mail: { smtp_port: 0 },
  }
  for (const [k, v] of Object.entries(overrides)) {
    const current = doc[k]
    doc[k] =
      typeof v === 'object' && !Array.isArray(v) && typeof current === 'object' && !Array.isArray(current)
        ? { ...current, ...v }
        : v
  }
  const configPath = join(dir, 'linkbox.toml')
  writeFileSync(configPath, toToml(doc))
  return { dir, dataDir, configPath }
}

/** The environment for children: ours without LINKBOX_CONFIG, so only --config decides. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'LINKBOX_CONFIG') env[k] = v
  return { ...env, ...extra }
}

// What collect() keeps of a stream: its first HEAD_CHARS, and of the rest the last TAIL_CHARS to 2 × TAIL_CHARS
// (trimmed back to TAIL_CHARS when it passes twice that, so the trim is rare). A server under a bench's load
// writes a request line per request (tens of MB a minute); the tests read start-up and shutdown lines.
const HEAD_CHARS = 1 << 20
const TAIL_CHARS = 4 << 20

/**
 * Collects a child's output stream into a string as it arrives (so the pipe never fills up). `watch` sees
 * the text so far after each chunk until it returns true (found what it waited for): it is not run over a
 * growing text for the life of the process — under a bench's load that cost more CPU than the server.
 */
function collect(
  stream: ReadableStream<Uint8Array>,
  watch: (all: string) => boolean,
): { text(): string; done: Promise<void> } {
  let head = ''
  let tail = ''
  let dropped = 0
  let watching = true
  const decoder = new TextDecoder()
  const text = () => (dropped ? `${head}\n[… ${dropped} characters of output not kept …]\n${tail}` : head + tail)
  const add = (chunk: string) => {
    if (head.length < HEAD_CHARS) {
      const room = HEAD_CHARS - head.length
      head += chunk.slice(0, room)
      chunk = chunk.slice(room)
    }
    tail += chunk
    if (tail.length > 2 * TAIL_CHARS) {
      dropped += tail.length - TAIL_CHARS
      tail = tail.slice(-TAIL_CHARS)
    }
    if (watching && watch(text())) watching = false
  }
  const done = (async () => {
    const reader = stream.getReader()
    for (let r = await reader.read(); !r.done; r = await reader.read()) add(decoder.decode(r.value, { stream: true }))
    add(decoder.decode())
  })().catch(() => {})
  return { text, done }
}

const live = new Set<Subprocess>()

/** SIGKILLs every server child still running (for afterAll, so a failed test leaves nothing behind). */
export async function killAllServers(): Promise<void> {
  await Promise.all(
    [...live].map((p) => {
      p.kill('SIGKILL')
      return p.exited
    }),
  )
  live.clear()
}

/**
 * The same for output that goes to a file (`ServerOptions.stdoutFile`): the file is looked at every 20 ms
 * until `watch` is satisfied, and text() reads its head and tail when asked.
 */
function collectFile(
  path: string,
  watch: (all: string) => boolean,
): { text(): string; done: Promise<void>; stop(): void } {
  const read = (at: number, length: number) => {
    const buf = Buffer.alloc(length)
    const fd = openSync(path, 'r')
    try {
      return buf.subarray(0, readSync(fd, buf, 0, length, at)).toString('utf8')
    } finally {
      closeSync(fd)
    }
  }
  const size = () => statSync(path, { throwIfNoEntry: false })?.size ?? 0
  const text = () => {
    const n = size()
    if (n <= HEAD_CHARS + TAIL_CHARS) return read(0, n)
    return `${read(0, HEAD_CHARS)}\n[… ${n - HEAD_CHARS - TAIL_CHARS} bytes of output not read …]\n${read(n - TAIL_CHARS, TAIL_CHARS)}`
  }
  const timer = setInterval(() => {
    if (watch(read(0, Math.min(size(), 64 * 1024)))) clearInterval(timer)
  }, 20)
  return { text, done: Promise.resolve(), stop: () => clearInterval(timer) }
}

export interface ServerOptions {
  /** Config to use; by default a fresh one from writeConfig(). Pass the same one again to restart. */
  config?: TestConfig
  /** The command that precedes `serve --config FILE`; default `bun src/main.ts`. */
  command?: readonly string[]
  /** Working directory of the process; default the config's directory. */
  cwd?: string
  env?: Record<string, string>
  /** How long to wait for the "listening on" line. */
  startTimeoutMs?: number
  /**
   * Standard output to this file rather than a pipe this process reads (the bench: request lines go to a
   * file, as the figures of issue 21 are defined, and reading them costs the bench nothing).
   */
  stdoutFile?: string
}

export interface RunningServer extends TestConfig {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  url: string
  port: number
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  stdout(): string
  stderr(): string
  /** Sends the signal (default SIGTERM) and waits for the exit; resolves to the exit code (null if killed by a signal). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>
  /** SIGKILL, at once: no flush, no cleanup. Resolves when the process is gone. */
  kill(): Promise<void>
}

const LISTENING = /listening on http:\/\/([^\s:/]+|\[[^\]]+\]):(\d+)/

/** Starts `serve` and resolves once it prints its "listening on http://HOST:PORT" line. */
export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const config = opts.config ?? writeConfig()
  const command = opts.command ?? SOURCE_COMMAND
  const proc = Bun.spawn([...command, 'serve', '--config', config.configPath], {
    cwd: opts.cwd ?? config.dir,
    env: childEnv(opts.env),
    stdin: 'ignore',
    stdout: opts.stdoutFile ? Bun.file(opts.stdoutFile) : 'pipe',
    stderr: 'pipe',
  }) as Subprocess<'ignore', 'pipe', 'pipe'>
  live.add(proc)
  void proc.exited.then(() => live.delete(proc))

  let onListening!: (m: RegExpMatchArray) => void
  const listening = new Promise<RegExpMatchArray>((r) => (onListening = r))
  const watchListening = (all: string) => {
    const m = all.match(LISTENING)
    if (m) onListening(m)
    return m !== null
  }
  const file = opts.stdoutFile ? collectFile(opts.stdoutFile, watchListening) : null
  const out = file ?? collect(proc.stdout, watchListening)
  const err = collect(proc.stderr, () => true)

  const timeoutMs = opts.startTimeoutMs ?? 15_000
  let timer: ReturnType<typeof setTimeout> | undefined
  const outcome = await Promise.race([
    listening,
    proc.exited.then((code) => ({ exited: code })),
    new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs))),
  ])
  clearTimeout(timer)
  file?.stop()
  if (outcome === 'timeout' || 'exited' in outcome) {
    proc.kill('SIGKILL')
    await proc.exited
    await Promise.all([out.done, err.done])
    const why =
      outcome === 'timeout' ? `did not say "listening on" within ${timeoutMs} ms` : `exited with ${outcome.exited}`
    throw new Error(`server ${why}\n--- stdout\n${out.text()}\n--- stderr\n${err.text()}`)
  }
  const port = Number(outcome[2])
  const host = outcome[1]!

  const waitExit = async (timeoutMs: number) => {
    let t: ReturnType<typeof setTimeout> | undefined
    const gone = await Promise.race([
      proc.exited.then(() => true),
      new Promise<false>((r) => (t = setTimeout(() => r(false), timeoutMs))),
    ])
    clearTimeout(t)
    if (!gone) {
      proc.kill('SIGKILL')
      await proc.exited
      throw new Error(
        `server did not exit within ${timeoutMs} ms\n--- stdout\n${out.text()}\n--- stderr\n${err.text()}`,
      )
    }
    await Promise.all([out.done, err.done])
    return proc.exitCode
  }

  return {
    ...config,
    url: `http://${host}:${port}`,
    port,
    proc,
    stdout: out.text,
    stderr: err.text,
    async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
      return waitExit(timeoutMs)
    },
    async kill() {
      proc.kill('SIGKILL')
      await waitExit(5_000)
    },
  }
}

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs one CLI command to completion: `linkbox ARGS…` (by default `bun src/main.ts ARGS…`). */
export async function runCli(
  args: string[],
  opts: {
    command?: readonly string[]
    cwd?: string
    env?: Record<string, string>
    stdin?: string
    timeoutMs?: number
  } = {},
): Promise<CliResult> {
  const proc = Bun.spawn([...(opts.command ?? SOURCE_COMMAND), ...args], {
    cwd: opts.cwd ?? tmpdir(),
    env: childEnv(opts.env),
    stdin: opts.stdin === undefined ? 'ignore' : new Blob([opts.stdin]),
    stdout: 'pipe',
    stderr: 'pipe',
    timeout: opts.timeoutMs ?? 15_000,
    killSignal: 'SIGKILL',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  return { code, stdout, stderr }
}

/** `linkbox account create NAME --config FILE`: returns the key, which is alone on the last line of stdout. */
export async function createAccount(
  configPath: string,
  name: string,
  opts: { command?: readonly string[]; cwd?: string; admin?: boolean } = {},
): Promise<string> {
  const args = ['account', 'create', name, '--config', configPath, ...(opts.admin ? ['--admin'] : [])]
  const r = await runCli(args, opts)
  if (r.code !== 0) throw new Error(`account create ${name} exited with ${r.code}: ${r.stderr}${r.stdout}`)
  const lines = r.stdout.trimEnd().split('\n')
  return lines[lines.length - 1]!.trim()
}

/** POSTs form fields to an /api method of a running server; returns status, headers and parsed JSON. */
export async function apiPost(
  base: string,
  method: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<ApiAnswer> {
  const res = await fetch(`${base}/api/${method}`, {
    method: 'POST',
    body: new URLSearchParams(fields),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  })
  return readAnswer(res)
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true })
}

/** A TCP port nothing listens on right now on 127.0.0.1 (for a port a test must choose itself: mail.smtp_port 0 means "no SMTP"). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}
