// wrk (Debian package) as the load generator: a second process on loopback, bounded in time.
import { readFileSync } from 'node:fs'
export interface WrkResult {
  rps: number
  p50ms: number
  p99ms: number
  errors: number
  /** The command as run (an API key shown as $KEY), for RESULTS.md. */
  command: string
}

export interface WrkOptions {
  seconds?: number
  connections?: number
  threads?: number
  headers?: Record<string, string>
  /** A Lua file that builds each request (scripts/bench/*.lua), and the arguments after `--` it reads. */
  script?: string
  scriptArgs?: string[]
}

const toMs = (v: string, unit: string) => Number(v) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[unit]!

/** Throughput, latency percentiles and errors from wrk's --latency output. */
export function parseWrk(out: string): Omit<WrkResult, 'command'> {
  const rps = Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1] ?? NaN)
  const lat = (p: string) => {
    const m = out.match(new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s)`))
    return m ? toMs(m[1]!, m[2]!) : NaN
  }
  const non2xx = Number(out.match(/Non-2xx or 3xx responses:\s+(\d+)/)?.[1] ?? 0)
  const sock = out.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/)
  const errors = non2xx + (sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0)
  return { rps, p50ms: lat('50'), p99ms: lat('99'), errors }
}

const shellWord = (w: string) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)

export async function wrk(url: string, opts: WrkOptions = {}): Promise<WrkResult> {
  const connections = opts.connections ?? 64
  const threads = Math.min(opts.threads ?? 2, connections)
  const args = ['wrk', `-t${threads}`, `-c${connections}`, `-d${opts.seconds ?? 5}s`, '--latency']
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`)
  if (opts.script) args.push('-s', opts.script)
  args.push(url)
  if (opts.scriptArgs?.length) args.push('--', ...opts.scriptArgs)
  const proc = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  if ((await proc.exited) !== 0) throw new Error(`wrk failed: ${err}${out}`)
  const command = args
    .map((a) => a.replace(/^(x-api-key: ).*/i, '$1$KEY').replace(/lbk_\w+/g, '$KEY'))
    .map(shellWord)
    .join(' ')
  return { ...parseWrk(out), command }
}

export function hasWrk(): boolean {
  return Bun.which('wrk') !== null
}

/** Peak resident memory (MiB) of a process, sampled every 50 ms until `until` settles. */
export async function peakRss(pid: number, until: Promise<unknown>): Promise<number> {
  let peak = 0
  let running = true
  void until.finally(() => (running = false))
  while (running) {
    peak = Math.max(peak, rssMiB(pid))
    await Bun.sleep(50)
  }
  return peak
}

export function rssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    return Number(status.match(/VmRSS:\s+(\d+) kB/)?.[1] ?? 0) / 1024
  } catch {
    return 0
  }
}

/**
 * CPU time a process has used so far (user + system, all its threads), in ms; 0 when it is gone. Read before
 * and after a wrk run, it gives the server's CPU per request, which load on the machine's other cores
 * disturbs far less than throughput.
 */
export function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return 0
  }
}
// USER_HZ: 100 on every Linux this runs on (sysconf(_SC_CLK_TCK); /proc/<pid>/stat counts in it).
const CLOCK_TICKS = 100

/** A wrk run of `url` and the CPU µs that process `pid` spent per request meanwhile. */
export async function wrkWithCpu(
  url: string,
  pid: number,
  opts: WrkOptions = {},
): Promise<WrkResult & { cpuUs: number }> {
  const before = cpuMs(pid)
  const r = await wrk(url, opts)
  const used = cpuMs(pid) - before
  return { ...r, cpuUs: (used * 1000) / Math.max(1, r.rps * (opts.seconds ?? 5)) }
}

/** One wrk result as a line: throughput, p50, p99 (and errors, when there were any). */
export const formatResult = (r: WrkResult) =>
  `${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50ms.toFixed(2)} ms  p99 ${r.p99ms.toFixed(2)} ms${r.errors ? `  errors ${r.errors}` : ''}`

/** The median of the rounds' ratios (the upper one of an even count). */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
