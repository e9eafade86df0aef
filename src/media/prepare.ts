// The preparations under way on this node (merged and segmented fetches, audio conversions), keyed as the file
// cache is: each has waiters (a /dl request waiting for the file, a progress stream); when the last one leaves
// before the file is ready, the run is aborted (its process group killed, its temporary folder removed).
import { AppError } from '../kernel/errors'
import { busy } from './runner'

export type Step = 'queued' | 'downloading' | 'converting'

/** What GET /dl/<id>/progress sends as `event: progress` (the progress contract of issue 41). */
export interface Progress {
  step: Step
  bytes: number
  total: number | null
  /** Bytes per second. */
  speed: number | null
  percent: number | null
}

/** What a run is given: the signal that ends it, and where it tells how far it is. */
export interface RunControl {
  signal: AbortSignal
  report(progress: Progress): void
}

export interface Preparation {
  readonly key: string
  readonly progress: Progress
  /** The cache file, once ready. */
  readonly done: Promise<string>
  /** Called at every report (and once when done); returns the unsubscription. */
  watch(listener: (p: Progress) => void): () => void
}

interface Entry extends Preparation {
  progress: Progress
  done: Promise<string>
  waiters: number
  settled: boolean
  controller: AbortController
  listeners: Set<(p: Progress) => void>
}

/** Waiters of one preparation at most (each an open connection, each a listener): one more is busy. */
export const MAX_WAITERS = 256

export const QUEUED: Progress = { step: 'queued', bytes: 0, total: null, speed: null, percent: null }

/**
 * At most `max` preparations at once (what the fetch limiter admits: its slots and its queue); one more is
 * a 503 busy at once.
 */
export function createPreparations(max: number) {
  const entries = new Map<string, Entry>()

  function leave(entry: Entry) {
    entry.waiters--
    if (entry.waiters > 0 || entry.settled) return
    // Nobody waits any more: the run stops, and a later ask starts again.
    if (entries.get(entry.key) === entry) entries.delete(entry.key)
    entry.controller.abort()
  }

  /**
   * Joins the preparation of `key` (starting it with `run` when none is under way) as a waiter until `signal`
   * aborts. The file's path once ready; rejected if the run fails or this waiter leaves first.
   */
  function join(key: string, run: (control: RunControl) => Promise<string>, signal: AbortSignal): Preparation {
    let entry = entries.get(key)
    if (!entry) {
      if (entries.size >= max) throw busy(5)
      const controller = new AbortController()
      const created: Entry = {
        key,
        progress: QUEUED,
        waiters: 0,
        settled: false,
        controller,
        listeners: new Set(),
        done: Promise.resolve(''),
        watch(listener) {
          created.listeners.add(listener)
          return () => created.listeners.delete(listener)
        },
      }
      const report = (p: Progress) => {
        if (created.settled || controller.signal.aborted) return
        created.progress = p
        for (const l of created.listeners) l(p)
      }
      created.done = run({ signal: controller.signal, report }).finally(() => {
        created.settled = true
        if (entries.get(key) === created) entries.delete(key)
        for (const l of created.listeners) l(created.progress)
        created.listeners.clear()
      })
      created.done.catch(() => {}) // its waiters see it; with none left, nobody needs to
      entries.set(key, created)
      entry = created
    }
    const joined = entry
    if (joined.waiters >= MAX_WAITERS) throw busy(5)
    joined.waiters++
    let left = false
    const onAbort = () => {
      if (left) return
      left = true
      leave(joined)
    }
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    void joined.done
      .finally(() => {
        signal.removeEventListener('abort', onAbort)
        if (!left) {
          left = true
          joined.waiters--
        }
      })
      .catch(() => {})
    return joined
  }

  return {
    join,
    /** Under way now (for tests and /metrics). */
    get size() {
      return entries.size
    },
    waitersOf: (key: string) => entries.get(key)?.waiters ?? 0,
  }
}
export type Preparations = ReturnType<typeof createPreparations>

/** What a run or a wait ends with when its client left (499, nginx's "client closed request"; no one reads it). */
export const clientLeft = () => new AppError(499, 'client_closed', 'Nobody waits for this file any more.')

/** Rejects as soon as `signal` aborts: a waiter that leaves stops waiting even while the run ends. */
export function untilAborted<T>(done: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(clientLeft())
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(clientLeft())
    signal.addEventListener('abort', onAbort, { once: true })
    done.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

const numberOr = (s: string | undefined): number | null => {
  const n = Number(s)
  return s !== undefined && s !== 'NA' && s !== '' && Number.isFinite(n) && n >= 0 ? n : null
}
const percentOf = (bytes: number, total: number | null) =>
  total && total > 0 ? Math.min(100, Math.round((bytes / total) * 1000) / 10) : null

/** The --progress-template yt-dlp is given: one marked line per update, parsed by ytdlpProgress. */
export const YTDLP_PROGRESS = [
  '--newline',
  '--progress',
  '--progress-delta',
  '0.25',
  '--progress-template',
  'download:[linkbox-progress] %(progress.downloaded_bytes)s %(progress.total_bytes)s %(progress.total_bytes_estimate)s %(progress.speed)s',
]

/** One of yt-dlp's lines as progress, or null when it is not a progress line. */
export function ytdlpProgress(line: string): Progress | null {
  const m = /^\[linkbox-progress\] (\S+) (\S+) (\S+) (\S+)$/.exec(line.trim())
  if (!m) return null
  const bytes = Math.round(numberOr(m[1]) ?? 0)
  const exact = numberOr(m[2])
  const total = exact ?? numberOr(m[3])
  const speed = numberOr(m[4])
  return {
    step: 'downloading',
    bytes,
    total: total === null ? null : Math.round(total),
    speed: speed === null ? null : Math.round(speed),
    percent: percentOf(bytes, total),
  }
}

/**
 * ffmpeg's `-progress pipe:1` lines, folded into progress: `total_size` (bytes written), `out_time_us` against
 * the input's duration (seconds, when known) and `speed` (times real time) turned into bytes per second.
 */
export function ffmpegProgress(durationS: () => number | null) {
  const fields: Record<string, string> = {}
  return (line: string): Progress | null => {
    const eq = line.indexOf('=')
    if (eq <= 0) return null
    const name = line.slice(0, eq).trim()
    fields[name] = line.slice(eq + 1).trim()
    if (name !== 'progress') return null
    const bytes = Math.round(numberOr(fields.total_size) ?? 0)
    const outS = (numberOr(fields.out_time_us) ?? 0) / 1e6
    const duration = durationS()
    const times = numberOr(fields.speed?.replace(/x$/, ''))
    const speed = times !== null && outS > 0 && bytes > 0 ? Math.round((bytes / outS) * times) : null
    const percent =
      fields.progress === 'end' ? 100 : duration ? Math.min(100, Math.round((outS / duration) * 1000) / 10) : null
    return { step: 'converting', bytes, total: null, speed, percent }
  }
}

/** The input's duration in ffmpeg's stderr (`Duration: 00:01:02.50,`), in seconds. */
export function ffmpegDuration(line: string): number | null {
  const m = /Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)/.exec(line)
  return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) : null
}
