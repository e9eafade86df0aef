// QR rendering off the main thread. A 2048 px PNG costs 80-200 ms of CPU; drawn inline it would hold up
// every other request, redirects included, for that long. Renderings queue here for a small pool of
// workers (render-worker.ts), each handed a couple at a time; past a bound, callers are told to come
// back rather than queued without end. The queue has lanes: the public images of short links have room of
// their own, and each API caller (account) a bounded share of the rest, so that one caller's flood of big
// renderings can neither refuse a visitor's QR image nor fill the queue for the other callers. Waiting
// renderings are handed out one lane at a time, in turn, so a lane with one waits behind one of each other
// lane, not behind a long queue of someone else's.
import { AppError, internalError } from '../errors'
import type { QrImage, QrSettings } from './service'

/** The machine has 2 cores: one draws, the other keeps serving. */
const WORKERS = 1
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
  resolve: (image: QrImage) => void
  reject: (err: AppError) => void
}

interface Slot {
  worker: Worker | null
  /** The renderings sent to its worker, by id. */
  jobs: Map<number, Job>
}

// In the compiled binary every bundled module's import.meta.url is the executable's own,
// file:///$bunfs/root/linkbox, and scripts/build.ts names the worker entrypoint without its directory,
// /$bunfs/root/render-worker.js: so this one URL finds the worker there as well as from source.
const spawnWorker = () => new Worker(new URL('./render-worker.ts', import.meta.url).href)

const busy = () =>
  new AppError(503, 'busy', 'Too many QR codes are being rendered: try again in 1 s.', { 'Retry-After': '1' })
const callerBusy = () =>
  new AppError(503, 'busy', 'Too many of your QR codes are waiting to be rendered: try again in 1 s.', { 'Retry-After': '1' })

export interface QrRendererOptions {
  workers?: number
  /** Renderings of API callers waiting, all callers together. */
  maxWaiting?: number
  /** Renderings of one API caller waiting (default: a quarter of maxWaiting, at least 1). */
  perCaller?: number
  /** Public images waiting, in their own room. */
  publicWaiting?: number
  inFlight?: number
  /** Starts a worker; tests substitute one they can kill. */
  spawn?: () => Worker
}

export function createQrRenderer(opts: QrRendererOptions = {}) {
  const { workers = WORKERS, maxWaiting = MAX_WAITING, inFlight = IN_FLIGHT, spawn = spawnWorker } = opts
  const publicWaiting = opts.publicWaiting ?? PUBLIC_WAITING
  const perCaller = opts.perCaller ?? (opts.maxWaiting === undefined ? PER_CALLER : Math.max(1, Math.floor(maxWaiting / 4)))
  const slots: Slot[] = Array.from({ length: workers }, () => ({ worker: null, jobs: new Map() }))
  // The waiting renderings of each lane that has any, in the order the lanes take turns. At most
  // maxWaiting + publicWaiting renderings wait, so there are never more lanes than that.
  const lanes = new Map<string, Job[]>()
  let callersWaiting = 0
  let lastId = 0

  /** The next rendering to hand out: the first of the lane whose turn it is. */
  function nextJob(): Job | undefined {
    const first = lanes.entries().next()
    if (first.done) return undefined
    const [lane, queue] = first.value
    const job = queue.shift()!
    lanes.delete(lane)
    if (queue.length > 0) lanes.set(lane, queue) // to the back of the turn
    if (lane !== PUBLIC_LANE) callersWaiting--
    return job
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
    if ('error' in reply) job.reject(new AppError(reply.error.status, reply.error.code, reply.error.message))
    else job.resolve(reply.image)
    dispatch()
  }

  /** Hands waiting renderings to workers with room, starting workers that are not running. */
  function dispatch() {
    for (const slot of slots) {
      while (slot.jobs.size < inFlight && lanes.size > 0) {
        const job = nextJob()!
        slot.jobs.set(job.id, job)
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
        queue.push({ id: ++lastId, settings, resolve, reject })
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
