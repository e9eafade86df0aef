// The service's log: one line per event, JSON (for journald and log shippers) or pretty (for a terminal),
// filtered by level. Request lines are the hot path, so they are buffered and written at most every
// FLUSH_MS (and on flush()); every other line is rare and goes out at once, so that a start-up line or a
// fault is never held back. Writes are synchronous (writeSync on fd 1/2): a line written before
// process.exit() is never lost, and the order with the buffered request lines is kept.
import { writeSync } from 'node:fs'

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
export type LogFormat = 'auto' | 'json' | 'pretty'
export interface LogSettings {
  level: LogLevel
  format: LogFormat
  requests: boolean
}

/** What a request line holds: never headers, bodies, query strings, keys, passwords or cookies. */
export interface RequestLine {
  id: string
  method: string
  /** The path alone: a query string may carry signatures (/dl/…?sig=, mail links). */
  path: string
  status: number
  ms: number
  ip: string
  ua: string
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }
const FLUSH_MS = 100
// Past this many buffered bytes the buffer is written at once, whatever the timer says.
const FLUSH_BYTES = 64 * 1024

// Control characters would let a client forge lines in the pretty format (JSON escapes them itself).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g
const printable = (text: string) => text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

// A string that needs no escaping in JSON: printable ASCII without `"` and `\`.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
/** The JSON text of a string, as JSON.stringify gives it; the common plain string without its call. */
export const jsonString = (text: string) => (PLAIN.test(text) ? `"${text}"` : JSON.stringify(text))

export interface LoggerOptions extends Partial<LogSettings> {
  /** Where lines go (tests capture them); default fd 1 for debug/info, fd 2 for warn/error. */
  write?: (text: string, level: LogLevel) => void
  /** Is the output a terminal? Decides format "auto"; default: is stdout a TTY. */
  tty?: boolean
  now?: () => number
  /**
   * Plain text through console.log / console.error until configure() sets a format: an app built without
   * `serve` (tests, in process) keeps writing what it always wrote, where it always wrote it.
   */
  console?: boolean
}

function writeFd(fd: number, text: string) {
  let buf = Buffer.from(text)
  // A pipe that is full (EAGAIN) is retried a few times; past that the lines are dropped, never thrown:
  // a slow log reader must not take requests down with it.
  for (let tries = 0; buf.length > 0 && tries < 100; ) {
    try {
      const n = writeSync(fd, buf)
      buf = buf.subarray(n)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return
      tries++
    }
  }
}

export function createLogger(opts: LoggerOptions = {}) {
  const write = opts.write ?? ((text: string, level: LogLevel) => writeFd(RANK[level] >= RANK.warn ? 2 : 1, text))
  const tty = opts.tty ?? process.stdout.isTTY === true
  const now = opts.now ?? Date.now
  let minRank = RANK[opts.level ?? 'info']
  let pretty = (opts.format ?? 'auto') === 'pretty' || ((opts.format ?? 'auto') === 'auto' && tty)
  let requests = opts.requests ?? true
  let plain = opts.console ?? false
  let buffer = ''
  let timer: ReturnType<typeof setTimeout> | null = null

  const flush = () => {
    if (timer) clearTimeout(timer)
    timer = null
    if (!buffer) return
    const text = buffer
    buffer = ''
    write(text, 'info')
  }

  const clock = (t: number) => new Date(t).toISOString().slice(11, 19)
  let isoAt = NaN
  let isoText = ''
  const isoOf = (t: number) => {
    if (t !== isoAt) {
      isoAt = t
      isoText = new Date(t).toISOString()
    }
    return isoText
  }

  const line = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < minRank) return
    if (plain) {
      const stack = fields?.stack
      ;(RANK[level] >= RANK.warn ? console.error : console.log)(stack ? `${msg}: ${stack}` : msg)
      return
    }
    const t = now()
    let text: string
    if (pretty) {
      const extra = fields ? Object.entries(fields).map(([k, v]) => (k === 'stack' ? `\n${v}` : ` ${k}=${typeof v === 'string' ? printable(v) : JSON.stringify(v)}`)).join('') : ''
      text = `${clock(t)} ${level === 'info' ? '' : `${level.toUpperCase()} `}${printable(msg)}${extra}\n`
    } else {
      text = `${JSON.stringify({ time: new Date(t).toISOString(), level, msg, ...fields })}\n`
    }
    // The buffered request lines came first: they go out first.
    flush()
    write(text, level)
  }

  return {
    debug: (msg: string, fields?: Record<string, unknown>) => line('debug', msg, fields),
    info: (msg: string, fields?: Record<string, unknown>) => line('info', msg, fields),
    warn: (msg: string, fields?: Record<string, unknown>) => line('warn', msg, fields),
    error: (msg: string, fields?: Record<string, unknown>) => line('error', msg, fields),
    /** An unexpected error, with its stack (for the operator's log only, never for an answer). */
    fault(msg: string, err: unknown) {
      if (plain) {
        if (minRank <= RANK.error) console.error(`${msg}:`, err)
        return
      }
      const e = err instanceof Error ? err : null
      line('error', msg, e ? { error: e.message, stack: e.stack ?? '' } : { error: String(err) })
    },
    /** Whether request lines are wanted at all: checked before the line is even built. */
    get requests() {
      return requests && minRank <= RANK.info
    },
    request(r: RequestLine) {
      if (!requests || minRank > RANK.info) return
      const t = now()
      const ua = r.ua.length > 120 ? r.ua.slice(0, 120) : r.ua
      // The hot path: the line is put together by hand (the same text JSON.stringify of the object gives,
      // field for field), with the time's text reused within a millisecond and plain strings not escaped.
      buffer += pretty
        ? `${clock(t)} ${printable(r.method)} ${printable(r.path)} ${r.status} ${r.ms.toFixed(1)}ms ${printable(r.ip)}\n`
        : `{"time":"${isoOf(t)}","level":"info","msg":"request","id":${jsonString(r.id)},"method":${jsonString(r.method)},"path":${jsonString(r.path)},"status":${r.status},"ms":${Math.round(r.ms * 10) / 10},"ip":${jsonString(r.ip)},"ua":${jsonString(ua)}}\n`
      if (buffer.length >= FLUSH_BYTES) flush()
      else if (!timer) {
        timer = setTimeout(flush, FLUSH_MS)
        // A pending flush must not keep a process (or the test runner) alive; exits flush() first.
        timer.unref?.()
      }
    },
    /** Applies [log] settings (at start and on SIGHUP). */
    configure(s: Partial<LogSettings>) {
      if (s.level) minRank = RANK[s.level]
      if (s.format) {
        pretty = s.format === 'pretty' || (s.format === 'auto' && tty)
        plain = false
      }
      if (s.requests !== undefined) requests = s.requests
    },
    get level(): LogLevel {
      return LOG_LEVELS.find((l) => RANK[l] === minRank) ?? 'info'
    },
    flush,
  }
}
export type Logger = ReturnType<typeof createLogger>

/**
 * The process's log. Plain console lines and no request lines until `serve` configures it from [log]: an
 * app built in a test (createLinkbox without serve) logs what it always did, and not every request of the suite.
 */
export const log = createLogger({ requests: false, console: true })

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/
const bootPrefix = Math.floor(Math.random() * 2 ** 32).toString(16).padStart(8, '0')
let counter = 0

/** The request's id: a sane incoming X-Request-Id (a proxy's) is kept, else a new one, unique in this process. */
export function requestIdOf(incoming: string | null): string {
  if (incoming !== null && REQUEST_ID.test(incoming)) return incoming
  return `${bootPrefix}-${(++counter).toString(36)}`
}
