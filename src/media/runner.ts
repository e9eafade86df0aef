// yt-dlp as a managed subprocess (argument array, clean environment, own process group, bounded output), and the
// limiter that keeps at most N running with a short queue.
import { AppError } from '../kernel/errors'

export interface RunOptions {
  /** The command prefix chosen by ytdlp.ts: [python3, zipapp] or [binary]. */
  command: string[]
  args: string[]
  /** The proxy URL (with its credentials) that every HTTP(S) request of the process must go through. */
  proxy: string | null
  timeoutMs: number
  /** stdout beyond this is an error (a page cannot make us hold gigabytes of JSON). */
  maxStdoutBytes: number
  cwd?: string
  /** Aborted: the run is killed like a timed-out one (its client left; prepare.ts). */
  signal?: AbortSignal
  /** Given: each line of stdout goes here as it comes, and none is kept (a progress feed can be long). */
  onLine?: (line: string) => void
  /** Each line of stderr as it comes (ffmpeg names the input's duration there). */
  onErrLine?: (line: string) => void
}

export interface RunResult {
  code: number | null
  stdout: string
  /** The last 16 KiB of stderr: yt-dlp's ERROR line is at the end. */
  stderr: string
  timedOut: boolean
  tooLarge: boolean
  ms: number
}

const STDERR_KEEP = 16 * 1024

/** The environment of a run: only what yt-dlp needs, so neither our secrets nor the user's proxy settings leak in. */
export function runEnv(proxy: string | null): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PYTHONIOENCODING: 'utf-8',
    PYTHONDONTWRITEBYTECODE: '1',
    // Python's urllib would skip the proxy for hosts listed here; nothing may skip it.
    no_proxy: '',
    NO_PROXY: '',
  }
  if (proxy) {
    // In the environment (readable only by our own user), not on the command line that `ps` shows everyone.
    env.http_proxy = env.https_proxy = env.HTTP_PROXY = env.HTTPS_PROXY = proxy
  }
  return env
}

// The groups of the runs under way, so that shutdown can end them: being detached, they would outlive us.
const live = new Set<number>()

/** Kills every run under way (shutdown); their callers see them end as killed. */
export function killRunning(): number {
  for (const pid of live) killGroup(pid)
  return live.size
}

function killGroup(pid: number) {
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {}
}

export async function runYtdlp(opts: RunOptions): Promise<RunResult> {
  const started = performance.now()
  let proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  try {
    proc = Bun.spawn([...opts.command, ...opts.args], {
      env: runEnv(opts.proxy),
      cwd: opts.cwd,
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      // A process group of its own: the time limit kills yt-dlp and the ffmpeg it may have started.
      detached: true,
    })
  } catch (err) {
    // media.ytdlp_path names a file that is not there or cannot be run: the admin's to fix (doctor says so).
    throw new AppError(
      503,
      'unavailable',
      `Media download is not available: yt-dlp could not be started (${(err as NodeJS.ErrnoException).code ?? 'error'}); see \`linkbox doctor\`.`,
    )
  }
  live.add(proc.pid)
  let timedOut = false
  let tooLarge = false
  const timer = setTimeout(() => {
    timedOut = true
    killGroup(proc.pid)
  }, opts.timeoutMs)
  const abort = () => killGroup(proc.pid)
  if (opts.signal?.aborted) abort()
  opts.signal?.addEventListener('abort', abort)
  const outLines = opts.onLine && lineSplitter(opts.onLine)
  const errLines = opts.onErrLine && lineSplitter(opts.onErrLine)

  const readOut = (async () => {
    const chunks: Uint8Array[] = []
    let size = 0
    for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      if (outLines) {
        outLines(chunk)
        continue
      }
      size += chunk.byteLength
      if (size > opts.maxStdoutBytes) {
        tooLarge = true
        killGroup(proc.pid)
        break
      }
      chunks.push(chunk)
    }
    return Buffer.concat(chunks).toString('utf8')
  })()
  const readErr = (async () => {
    let tail = Buffer.alloc(0)
    for await (const chunk of proc.stderr as unknown as AsyncIterable<Uint8Array>) {
      errLines?.(chunk)
      tail = Buffer.concat([tail, chunk])
      if (tail.length > STDERR_KEEP * 2) tail = tail.subarray(tail.length - STDERR_KEEP)
    }
    return tail.subarray(Math.max(0, tail.length - STDERR_KEEP)).toString('utf8')
  })()
  try {
    const [stdout, stderr, code] = await Promise.all([readOut, readErr, proc.exited])
    return { code, stdout, stderr, timedOut, tooLarge, ms: performance.now() - started }
  } finally {
    clearTimeout(timer)
    opts.signal?.removeEventListener('abort', abort)
    live.delete(proc.pid)
    // Whatever yt-dlp left behind in its group (a stray ffmpeg) goes with it.
    killGroup(proc.pid)
  }
}

/** Calls `each` with every whole line of the chunks it is fed (a line over 4 KiB is cut there). */
function lineSplitter(each: (line: string) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder()
  let pending = ''
  return (chunk) => {
    pending += decoder.decode(chunk, { stream: true })
    let nl = pending.search(/[\r\n]/)
    while (nl >= 0) {
      if (nl > 0) each(pending.slice(0, nl))
      pending = pending.slice(nl + 1)
      nl = pending.search(/[\r\n]/)
    }
    if (pending.length > 4096) pending = ''
  }
}

/** 503 busy, with a Retry-After from how long runs take lately. */
export const busy = (retryAfter: number) =>
  new AppError(503, 'busy', `Too many media requests at once: try again in ${retryAfter} s.`, {
    'Retry-After': String(retryAfter),
  })

export interface Limiter {
  /** Runs `work` when a slot is free; throws busy (503) at once when the queue is full too. */
  run<T>(work: () => Promise<T>): Promise<T>
  readonly running: number
  readonly waiting: number
}

/**
 * At most `concurrency` at once and `queue` waiting. The Retry-After of a refusal is the time the queue
 * ahead would take at the recent pace (an average of the last runs), between 1 and 120 s.
 */
export function createLimiter(concurrency: number, queue: number, typicalMs = 2_000): Limiter {
  let running = 0
  const waiting: (() => void)[] = []
  let averageMs = typicalMs
  return {
    async run<T>(work: () => Promise<T>): Promise<T> {
      if (running >= concurrency) {
        if (waiting.length >= queue) {
          const ahead = (waiting.length + running) / concurrency
          throw busy(Math.min(120, Math.max(1, Math.ceil((ahead * averageMs) / 1000))))
        }
        // The slot is handed over by the run that ends (running stays as it is), so a newcomer arriving in
        // between cannot take it too.
        await new Promise<void>((resolve) => waiting.push(resolve))
      } else running++
      const started = performance.now()
      try {
        return await work()
      } finally {
        averageMs = averageMs * 0.8 + (performance.now() - started) * 0.2
        const wake = waiting.shift()
        if (wake) wake()
        else running--
      }
    },
    get running() {
      return running
    },
    get waiting() {
      return waiting.length
    },
  }
}
