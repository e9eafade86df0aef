// The service's log: JSON or pretty lines, filtered by level. Request lines go through a bounded buffer written
// off the request's path (log-buffer.ts); other lines go out at once, after the request lines already waiting.
import { fstatSync, statSync, write as writeAsync, writeSync } from 'node:fs'
import { wallOf } from './clock'
import { createLineBuffer } from './log-buffer'

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
/**
 * Characters of request lines held while a write is under way (~4,000 lines, a tenth of a second of a
 * busy server's): a reader that falls further behind loses lines rather than slow the answers down.
 */
export const MAX_PENDING_CHARS = 1 << 20

// Control characters would let a client forge lines in the pretty format (JSON escapes them itself).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g
const printable = (text: string) => text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

// A string that needs no escaping in JSON: printable ASCII without `"` and `\`.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
/** The JSON text of a string, as JSON.stringify gives it; the common plain string without its call. */
export const jsonString = (text: string) => (PLAIN.test(text) ? `"${text}"` : JSON.stringify(text))

export interface LoggerOptions extends Partial<LogSettings> {
  /**
   * Where lines go (tests capture them), at once; default fd 1 for debug/info, fd 2 for warn/error. With
   * `write` given, request lines go to it too (from the per-tick flush); by default they are written to
   * fd 1 off the main thread.
   */
  write?: (text: string, level: LogLevel) => void
  /** The buffer bound in characters (tests make it small); default MAX_PENDING_CHARS. */
  maxPendingChars?: number
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

/**
 * Writes `text` to fd 1, `done` once written (or failed: it is dropped). Meant for the runtime's thread pool,
 * but Bun 1.4.4 writes before fs.write returns (measured: as long as writeSync), so it costs the main thread.
 */
function writeOffThread(text: string, done: () => void) {
  const bytes = Buffer.from(text)
  const next = (offset: number) =>
    writeAsync(1, bytes, offset, bytes.length - offset, null, (err, n) => {
      if (err || offset + n >= bytes.length) done()
      else next(offset + n)
    })
  next(0)
}

/**
 * Whether stdout is a terminal, as process.stdout.isTTY says; but making process.stdout loads node's streams
 * (~3 ms, before serve's first answer). A terminal is a character device and never /dev/null, so a pipe, a
 * file, a socket or /dev/null is known from one fstat; only another character device asks process.stdout.
 */
function stdoutIsTty(): boolean {
  try {
    const st = fstatSync(1)
    if (!st.isCharacterDevice() || st.rdev === statSync('/dev/null').rdev) return false
  } catch {}
  return process.stdout.isTTY === true
}

export function createLogger(opts: LoggerOptions = {}) {
  const write = opts.write ?? ((text: string, level: LogLevel) => writeFd(RANK[level] >= RANK.warn ? 2 : 1, text))
  const tty = opts.tty ?? stdoutIsTty()
  const now = opts.now ?? Date.now
  let minRank = RANK[opts.level ?? 'info']
  let pretty = (opts.format ?? 'auto') === 'pretty' || ((opts.format ?? 'auto') === 'auto' && tty)
  let requests = opts.requests ?? true
  let plain = opts.console ?? false
  // Other lines that came while request lines were being written: they follow those, in order.
  const held: { text: string; level: LogLevel }[] = []
  const writeHeld = () => {
    for (const h of held.splice(0)) write(h.text, h.level)
  }
  const lines = createLineBuffer({
    capacity: opts.maxPendingChars ?? MAX_PENDING_CHARS,
    // The test's writer as it is; else fd 1, off the main thread.
    write: (text, done) => {
      const finished = () => {
        writeHeld()
        done()
      }
      if (opts.write) {
        opts.write(text, 'info')
        finished()
      } else writeOffThread(text, finished)
    },
  })

  /** Writes the waiting request lines now (unless a write is under way: then they follow it). */
  const flush = () => {
    if (lines.writing) return
    writeHeld()
    const text = lines.take()
    if (text) write(text, 'info')
  }

  const clock = (t: number) => new Date(t).toISOString().slice(11, 19)

  // The JSON request line in reused parts around its id and its time taken: the head (time to `"id":`) changes
  // once a millisecond; the parts before and after `ms` (method to status, ip and user agent) only when one of
  // their fields does: a busy client repeats them, while `ms` changes from one request to the next.
  let headAt = Number.NaN
  let head = ''
  let tailMethod = ''
  let tailPath = ''
  let tailStatus = -1
  let beforeMs = ''
  let tailIp = ''
  let tailUa = ''
  let afterMs = ''
  const jsonTail = (method: string, path: string, status: number, ms: number, ip: string, ua: string) => {
    if (path !== tailPath || status !== tailStatus || method !== tailMethod) {
      tailMethod = method
      tailPath = path
      tailStatus = status
      beforeMs = `,"method":${jsonString(method)},"path":${jsonString(path)},"status":${status},"ms":`
    }
    if (ua !== tailUa || ip !== tailIp) {
      tailIp = ip
      tailUa = ua
      afterMs = `,"ip":${jsonString(ip)},"ua":${jsonString(ua.length > 120 ? ua.slice(0, 120) : ua)}}\n`
    }
    return `${beforeMs}${ms}${afterMs}`
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
      const extra = fields
        ? Object.entries(fields)
            .map(([k, v]) =>
              k === 'stack' ? `\n${v}` : ` ${k}=${typeof v === 'string' ? printable(v) : JSON.stringify(v)}`,
            )
            .join('')
        : ''
      text = `${clock(t)} ${level === 'info' ? '' : `${level.toUpperCase()} `}${printable(msg)}${extra}\n`
    } else {
      text = `${JSON.stringify({ time: new Date(t).toISOString(), level, msg, ...fields })}\n`
    }
    // The buffered request lines came first: they go out first.
    if (lines.writing) {
      const waiting = lines.take()
      if (waiting) held.push({ text: waiting, level: 'info' })
      held.push({ text, level })
      return
    }
    flush()
    write(text, level)
  }

  /**
   * A request line, its fields as arguments (no object per request); `end`, the performance.now() of its
   * answer, gives its time without another clock read. The text is the one JSON.stringify of a RequestLine
   * gives, field for field (log.test.ts compares them), put together from the reused parts above.
   */
  function requestLine(
    id: string,
    method: string,
    path: string,
    status: number,
    ms: number,
    ip: string,
    ua: string,
    end = Number.NaN,
  ) {
    if (!requests || minRank > RANK.info) return
    const t = opts.now || Number.isNaN(end) ? now() : wallOf(end)
    if (pretty) {
      lines.append(
        `${clock(t)} ${printable(method)} ${printable(path)} ${status} ${ms.toFixed(1)}ms ${printable(ip)}\n`,
      )
      return
    }
    if (t !== headAt) {
      headAt = t
      head = `{"time":"${new Date(t).toISOString()}","level":"info","msg":"request","id":`
    }
    lines.append(
      `${head}${PLAIN.test(id) ? `"${id}"` : JSON.stringify(id)}${jsonTail(method, path, status, Math.round(ms * 10) / 10, ip, ua)}`,
    )
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
      requestLine(r.id, r.method, r.path, r.status, r.ms, r.ip, r.ua)
    },
    requestLine,
    /** Request lines dropped because the buffer was full (the output could not keep up). */
    get dropped() {
      return lines.dropped
    },
    /** Resolves once every line so far is written (the last write of request lines included). */
    async drain(): Promise<void> {
      flush()
      await lines.idle()
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
const bootPrefix = Math.floor(Math.random() * 2 ** 32)
  .toString(16)
  .padStart(8, '0')
// A new id is `${bootPrefix}-${counter in base 36}`, built from a prefix that changes every 36² ids and the
// counter's last two digits, from a table: toString(36) per request cost more than the rest of the id.
const LOW = 36 * 36
const DIGITS = Array.from({ length: LOW }, (_, i) => i.toString(36).padStart(2, '0'))
let counter = 0
let high = -1
let highPrefix = ''

/** The request's id: a sane incoming X-Request-Id (a proxy's) is kept, else a new one, unique in this process. */
export function requestIdOf(incoming: string | null): string {
  if (incoming !== null && REQUEST_ID.test(incoming)) return incoming
  const n = ++counter
  if (n < LOW) return `${bootPrefix}-${n.toString(36)}`
  const low = n % LOW
  if (low === 0 || high < 0) {
    high = (n - low) / LOW
    highPrefix = `${bootPrefix}-${high.toString(36)}`
  }
  return highPrefix + DIGITS[low]!
}
