// QR rendering off the main thread: a small pool of workers (render-worker.ts) behind a bounded queue with lanes
// (public images, then each API caller in turn) and a deadline per rendering (ARCHITECTURE, qr).
import { AppError, internalError } from '../kernel/errors'
import type { QrImage, QrSettings } from './service'

/** The machine has 2 cores: one draws, the other keeps serving. */
const WORKERS = 1
/** Besides, a worker for the public lane only (its images are small and have no logo). */
const PUBLIC_WORKERS = 1
/**
 * A worker that has answered nothing for this long is abandoned. It is a backstop, not a budget: what a
 * logo may ask for is bounded when it is read (logo.ts, svg-clean.ts), and public images have their own
 * worker. Generous, because time is not CPU: the slowest honest rendering (2048 px with a 4096² PNG logo)
 * took 3-4.5 s here with the machine at a load average of 10, and a worker holds two at a time.
 */
export const RENDER_DEADLINE_MS = 15_000
/** Abandoned workers still running (stuck in native code) beyond which the shared worker is not replaced. */
const MAX_ABANDONED = 2
/** Renderings of API callers allowed to wait for a worker: a few seconds of work at worst, more is refused. */
const MAX_WAITING = 48
/** Of those, one caller's at most. */
const PER_CALLER = 12
/** Public images of short links allowed to wait, besides. */
const PUBLIC_WAITING = 16

/** The lane of public /qr/<code> images; callers' lanes are callerLane(account). */
export const PUBLIC_LANE = 'public'
export const callerLane = (accountId: number) => `account:${accountId}`
/**
 * Renderings a worker is handed at once. A PNG is compressed off the worker's thread (by zlib's): with a
 * second one in hand the worker draws while the first is compressed. Measured on 16 renderings of
 * 2048 px: one in hand 2.9 s and 150 MiB peak RSS, two 2.1 s and 280 MiB, four no faster and 510 MiB.
 */
const IN_FLIGHT = 2

export interface RenderRequest {
  id: number
  settings: QrSettings
}
export interface RenderFailure {
  status: number
  code: string
  message: string
}
export type RenderReply = { id: number; image: QrImage } | { id: number; error: RenderFailure }

interface Job extends RenderRequest {
  lane: string
  resolve: (image: QrImage) => void
  reject: (err: AppError) => void
  /** Queued again once after its worker was abandoned for another rendering's sake. */
  requeued?: boolean
}

interface Slot {
  worker: Worker | null
  /** The renderings sent to its worker, by id (in the order sent). */
  jobs: Map<number, Job>
  /** Takes public images only. */
  publicOnly: boolean
  /** Fires when the worker has answered nothing for the deadline. */
  timer: ReturnType<typeof setTimeout> | null
}

// In the compiled binary every bundled module's import.meta.url is the executable's own,
// file:///$bunfs/root/linkbox, and scripts/build.ts names the worker entrypoint without its directory,
// /$bunfs/root/render-worker.js: so this one URL finds the worker there as well as from source.
const spawnWorker = () => new Worker(new URL('./render-worker.ts', import.meta.url).href)

const busy = () =>
  new AppError(503, 'busy', 'Too many QR codes are being rendered: try again in 1 s.', { 'Retry-After': '1' })
/** A rendering past the deadline: only a logo can take that long, so the logo is named. */
const tooSlow = (job: Job, ms: number) =>
  job.settings.logo
    ? new AppError(
        400,
        'invalid_parameter',
        `The parameter "logo" is invalid: it took longer than ${ms / 1000} s to draw; send a simpler image.`,
      )
    : new AppError(503, 'busy', 'The QR code took too long to render: try again in 1 s.', { 'Retry-After': '1' })
const callerBusy = () =>
  new AppError(503, 'busy', 'Too many of your QR codes are waiting to be rendered: try again in 1 s.', {
    'Retry-After': '1',
  })

export interface QrRendererOptions {
  workers?: number
  /** Renderings of API callers waiting, all callers together. */
  maxWaiting?: number
  /** Renderings of one API caller waiting (default: a quarter of maxWaiting, at least 1). */
  perCaller?: number
  /** Public images waiting, in their own room. */
  publicWaiting?: number
  inFlight?: number
  /** Workers for public images only, besides `workers` (default 1). */
  publicWorkers?: number
  /** A worker silent for this long is abandoned and replaced (default RENDER_DEADLINE_MS). */
  deadlineMs?: number
  /** Starts a worker; tests substitute one they can kill. */
  spawn?: () => Worker
}

export function createQrRenderer(opts: QrRendererOptions = {}) {
  const { workers = WORKERS, maxWaiting = MAX_WAITING, inFlight = IN_FLIGHT, spawn = spawnWorker } = opts
  const { publicWorkers = PUBLIC_WORKERS, deadlineMs = RENDER_DEADLINE_MS } = opts
  const publicWaiting = opts.publicWaiting ?? PUBLIC_WAITING
  const perCaller =
    opts.perCaller ?? (opts.maxWaiting === undefined ? PER_CALLER : Math.max(1, Math.floor(maxWaiting / 4)))
  // The public slots first: a public image goes to its own worker when that has room.
  const slot = (publicOnly: boolean): Slot => ({ worker: null, jobs: new Map(), publicOnly, timer: null })
  const slots: Slot[] = [
    ...Array.from({ length: publicWorkers }, () => slot(true)),
    ...Array.from({ length: workers }, () => slot(false)),
  ]
  /** Abandoned workers whose thread has not ended yet. */
  let abandoned = 0
  // The waiting renderings of each lane that has any, in the order the lanes take turns. At most
  // maxWaiting + publicWaiting renderings wait, so there are never more lanes than that.
  const lanes = new Map<string, Job[]>()
  let callersWaiting = 0
  let lastId = 0

  /** The next rendering to hand out: the first of the lane whose turn it is (public slots: of the public lane). */
  function nextJob(publicOnly: boolean): Job | undefined {
    if (publicOnly) {
      const queue = lanes.get(PUBLIC_LANE)
      const job = queue?.shift()
      if (queue?.length === 0) lanes.delete(PUBLIC_LANE)
      return job
    }
    const first = lanes.entries().next()
    if (first.done) return undefined
    const [lane, queue] = first.value
    const job = queue.shift()!
    lanes.delete(lane)
    if (queue.length > 0) lanes.set(lane, queue) // to the back of the turn
    if (lane !== PUBLIC_LANE) callersWaiting--
    return job
  }

  /** Puts a rendering back at the head of its lane (its worker was abandoned for another's sake). */
  function requeue(job: Job) {
    job.requeued = true
    const queue = lanes.get(job.lane)
    if (queue) queue.unshift(job)
    else lanes.set(job.lane, [job])
    if (job.lane !== PUBLIC_LANE) callersWaiting++
  }

  /** (Re)arms the slot's deadline while its worker has renderings, from now. */
  function arm(slot: Slot) {
    if (slot.timer) clearTimeout(slot.timer)
    slot.timer = slot.jobs.size > 0 ? setTimeout(() => abandon(slot), deadlineMs) : null
    slot.timer?.unref?.()
  }

  /**
   * The worker answered nothing for the deadline: it is stuck on its oldest rendering (they are drawn in
   * the order sent), which is refused; the others are queued again, once. The thread is terminated; one
   * stuck in native code ends when that call returns, counted in `abandoned` until then.
   */
  function abandon(slot: Slot) {
    slot.timer = null
    const worker = slot.worker
    const jobs = [...slot.jobs.values()]
    slot.jobs.clear()
    slot.worker = null
    if (worker) {
      abandoned++
      worker.addEventListener('close', () => {
        abandoned--
        dispatch()
      })
      worker.terminate()
    }
    jobs.forEach((job, i) => (i === 0 || job.requeued ? job.reject(tooSlow(job, deadlineMs)) : requeue(job)))
    dispatch()
  }

  function start(slot: Slot): Worker {
    const worker = spawn()
    worker.addEventListener('message', ({ data }: MessageEvent<RenderReply>) => finish(slot, data))
    // An uncaught error or an exit loses what the worker was drawing; the next rendering starts a new
    // one. The events of a worker already replaced (or terminated by close) are ignored.
    const died = () => {
      if (slot.worker === worker) lose(slot, internalError())
    }
    worker.addEventListener('error', died)
    worker.addEventListener('close', died)
    return worker
  }

  /** Stops the slot's worker and fails its renderings. */
  function lose(slot: Slot, err: AppError) {
    if (slot.timer) clearTimeout(slot.timer)
    slot.timer = null
    slot.worker?.terminate()
    slot.worker = null
    const jobs = [...slot.jobs.values()]
    slot.jobs.clear()
    for (const job of jobs) job.reject(err)
    dispatch()
  }

  function finish(slot: Slot, reply: RenderReply) {
    const job = slot.jobs.get(reply.id)
    // A reply from a worker already given up on belongs to a job already failed.
    if (!job) return
    slot.jobs.delete(reply.id)
    arm(slot) // an answer is progress: the next rendering has the deadline from now
    if ('error' in reply) job.reject(new AppError(reply.error.status, reply.error.code, reply.error.message))
    else job.resolve(reply.image)
    dispatch()
  }

  /** Hands waiting renderings to workers with room, starting workers that are not running. */
  function dispatch() {
    for (const slot of slots) {
      // Too many abandoned threads still running: the shared worker waits for one to end (public ones,
      // which never get a logo, are always replaced).
      if (!slot.worker && !slot.publicOnly && abandoned >= MAX_ABANDONED) continue
      while (slot.jobs.size < inFlight && lanes.size > 0) {
        const job = nextJob(slot.publicOnly)
        if (!job) break
        slot.jobs.set(job.id, job)
        if (slot.jobs.size === 1) arm(slot)
        slot.worker ??= start(slot)
        slot.worker.postMessage({ id: job.id, settings: job.settings } satisfies RenderRequest)
      }
    }
  }

  return {
    /** Renders in `lane`: PUBLIC_LANE for the public images, callerLane(account) for API callers. */
    render(settings: QrSettings, lane: string): Promise<QrImage> {
      // dispatch() runs after every change, so renderings wait only while every worker has its fill.
      const queue = lanes.get(lane) ?? []
      if (lane === PUBLIC_LANE) {
        if (queue.length >= publicWaiting) return Promise.reject(busy())
      } else {
        if (queue.length >= perCaller) return Promise.reject(callerBusy())
        if (callersWaiting >= maxWaiting) return Promise.reject(busy())
        callersWaiting++
      }
      return new Promise((resolve, reject) => {
        queue.push({ id: ++lastId, settings, lane, resolve, reject })
        if (queue.length === 1) lanes.set(lane, queue)
        dispatch()
      })
    },
    /** Renderings waiting for a worker (for metrics). */
    get waiting() {
      let n = 0
      for (const queue of lanes.values()) n += queue.length
      return n
    },
    /** Stops the workers, failing what they had; a later rendering would start them again. */
    close() {
      const waiting = [...lanes.values()].flat()
      lanes.clear()
      callersWaiting = 0
      for (const job of waiting) job.reject(internalError())
      for (const slot of slots) lose(slot, internalError())
    },
  }
}
export type QrRenderer = ReturnType<typeof createQrRenderer>
