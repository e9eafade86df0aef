// QR rendering off the main thread. A 2048 px PNG costs 80-200 ms of CPU; drawn inline it would hold up
// every other request, redirects included, for that long. Renderings queue here for a small pool of
// workers (render-worker.ts), each handed a couple at a time; past a bound, callers are told to come
// back rather than queued without end.
import { AppError, internalError } from '../errors'
import type { QrImage, QrSettings } from './service'

/** The machine has 2 cores: one draws, the other keeps serving. */
const WORKERS = 1
/** Renderings allowed to wait for a worker: a few seconds of work at worst, more is refused. */
const MAX_WAITING = 64
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

export interface QrRendererOptions {
  workers?: number
  maxWaiting?: number
  inFlight?: number
  /** Starts a worker; tests substitute one they can kill. */
  spawn?: () => Worker
}

export function createQrRenderer(opts: QrRendererOptions = {}) {
  const { workers = WORKERS, maxWaiting = MAX_WAITING, inFlight = IN_FLIGHT, spawn = spawnWorker } = opts
  const slots: Slot[] = Array.from({ length: workers }, () => ({ worker: null, jobs: new Map() }))
  const waiting: Job[] = []
  let lastId = 0

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
      while (slot.jobs.size < inFlight && waiting.length > 0) {
        const job = waiting.shift()!
        slot.jobs.set(job.id, job)
        slot.worker ??= start(slot)
        slot.worker.postMessage({ id: job.id, settings: job.settings } satisfies RenderRequest)
      }
    }
  }

  return {
    render(settings: QrSettings): Promise<QrImage> {
      // dispatch() runs after every change, so renderings wait only while every worker has its fill.
      if (waiting.length >= maxWaiting) return Promise.reject(busy())
      return new Promise((resolve, reject) => {
        waiting.push({ id: ++lastId, settings, resolve, reject })
        dispatch()
      })
    },
    /** Renderings waiting for a worker (for metrics). */
    get waiting() {
      return waiting.length
    },
    /** Stops the workers, failing what they had; a later rendering would start them again. */
    close() {
      for (const job of waiting.splice(0)) job.reject(internalError())
      for (const slot of slots) lose(slot, internalError())
    },
  }
}
export type QrRenderer = ReturnType<typeof createQrRenderer>
