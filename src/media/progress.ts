// GET /dl/<id>/progress (issue 41's progress contract): server-sent events while the ticket's file is prepared on
// this node — `progress` at most ~4 a second, then one `ready` (the signed /dl link) or `failed`, then the end.
// The stream is a waiter of the preparation: closing it leaves, and with no one else waiting the run stops.
import { AppError } from '../kernel/errors'
import type { Preparation, Progress } from './prepare'

const EVERY_MS = 250
const KEEPALIVE_MS = 15_000

export const PROGRESS_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  // Proxies that buffer answers (nginx) pass this one on as it comes.
  'x-accel-buffering': 'no',
}

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`

/** What a failed preparation says: its error's code and message, never a stack. */
function failure(err: unknown): { code: string; message: string } {
  if (err instanceof AppError) return { code: err.code, message: err.message }
  return { code: 'internal', message: 'The file could not be prepared.' }
}

/**
 * The event stream of a preparation joined with `leave`'s signal (null: nothing to prepare, `ready` at once).
 * `leave` is aborted when the stream ends, whoever ends it.
 */
export function progressStream(prep: Preparation | null, readyUrl: string, leave: AbortController): Response {
  const encoder = new TextEncoder()
  let timer: ReturnType<typeof setInterval> | undefined
  let stopWatching = () => {}
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let closed = false
      const send = (text: string) => {
        if (closed) return
        try {
          controller.enqueue(encoder.encode(text))
        } catch {
          finish()
        }
      }
      const finish = () => {
        if (closed) return
        closed = true
        clearInterval(timer)
        stopWatching()
        try {
          controller.close()
        } catch {}
        leave.abort()
      }
      if (!prep) {
        send(event('ready', { url: readyUrl }))
        return finish()
      }
      let latest: Progress = prep.progress
      let sent: Progress | null = null
      let quietSince = Date.now()
      const flush = () => {
        if (latest !== sent) {
          sent = latest
          quietSince = Date.now()
          send(event('progress', latest))
        } else if (Date.now() - quietSince >= KEEPALIVE_MS) {
          quietSince = Date.now()
          send(': still working\n\n')
        }
      }
      flush()
      stopWatching = prep.watch((p) => {
        latest = p
      })
      timer = setInterval(flush, EVERY_MS)
      prep.done.then(
        () => {
          flush()
          send(event('ready', { url: readyUrl }))
          finish()
        },
        (err) => {
          if (!leave.signal.aborted) send(event('failed', failure(err)))
          finish()
        },
      )
    },
    cancel() {
      clearInterval(timer)
      stopWatching()
      leave.abort()
    },
  })
  return new Response(body, { headers: PROGRESS_HEADERS })
}
