// Preview images are re-encoded on a thread of their own (og-image-worker.ts), one at a time: an upload is rare,
// and its decoding (up to 16 megapixels) must not hold up redirects. The queue is bounded, each job has a deadline.
import { AppError } from '../kernel/errors'
import type { OgImage, OgUpload } from './og-image'

export interface OgJob {
  id: number
  upload: OgUpload
}
export type OgReply =
  | { id: number; image: OgImage }
  | { id: number; error: { status: number; code: string; message: string } }

/** Uploads allowed to wait for the thread: more are refused (503) rather than queued without end. */
const MAX_WAITING = 8
/** A job not answered by then has its thread ended (a new one takes the next job). */
export const OG_DEADLINE_MS = 10_000

interface Pending {
  job: OgJob
  resolve: (image: OgImage) => void
  reject: (err: AppError) => void
}

// From source the .ts; in the binary the entry og-image-worker.js beside the chunk (scripts/build.ts).
const spawn = () => new Worker(new URL('./og-image-worker.ts', import.meta.url).href)

export function createOgImagePool(deadlineMs = OG_DEADLINE_MS) {
  let worker: Worker | null = null
  let running: Pending | null = null
  let timer: ReturnType<typeof setTimeout> | null = null
  const waiting: Pending[] = []
  let ids = 0

  function settle(reply: OgReply) {
    const job = running
    if (!job || reply.id !== job.job.id) return
    running = null
    if (timer) clearTimeout(timer)
    if ('image' in reply) job.resolve(reply.image)
    else job.reject(new AppError(reply.error.status, reply.error.code, reply.error.message))
    next()
  }

  function abandon(why: AppError) {
    worker?.terminate()
    worker = null
    const job = running
    running = null
    job?.reject(why)
    next()
  }

  function next() {
    if (running || waiting.length === 0) return
    running = waiting.shift()!
    if (!worker) {
      const w = spawn()
      w.onmessage = ({ data }: MessageEvent<OgReply>) => worker === w && settle(data)
      w.onerror = (e) => {
        if (worker !== w) return
        console.error('links: the preview-image thread failed:', e.message)
        abandon(new AppError(500, 'internal', 'The image could not be processed.'))
      }
      ;(w as Worker & { unref?: () => void }).unref?.() // an idle thread keeps no process alive
      worker = w
    }
    timer = setTimeout(
      () =>
        abandon(
          new AppError(
            400,
            'invalid_parameter',
            `The parameter "og_image" is invalid: it took longer than ${deadlineMs / 1000} s to read; send a simpler image.`,
          ),
        ),
      deadlineMs,
    )
    worker.postMessage(running.job)
  }

  return {
    /** The upload re-encoded (og-image-decode.ts), or its 400; 503 when too many wait. */
    reencode(upload: OgUpload): Promise<OgImage> {
      if (waiting.length >= MAX_WAITING)
        return Promise.reject(
          new AppError(503, 'busy', 'Too many images are being processed: try again in 1 s.', { 'Retry-After': '1' }),
        )
      return new Promise((resolve, reject) => {
        waiting.push({ job: { id: ++ids, upload }, resolve, reject })
        next()
      })
    },
    /** Ends the thread (the app's close). */
    close() {
      if (timer) clearTimeout(timer)
      worker?.terminate()
      worker = null
    },
  }
}
export type OgImagePool = ReturnType<typeof createOgImagePool>
