// One delivery attempt over HTTP: the signed POST through the SSRF guard, its answer read into what the deliverer
// records. A 3xx is a failure (never followed); Retry-After can only move the next attempt later, capped at 24 h.
import { GuardError, guardedFetch } from '../kernel/net/guard'
import { signatureHeaders } from './sign'
import type { LeasedDelivery } from './storage/contract'

/** The answer's headers must come within this, and the (discarded) body too. */
export const TIMEOUT_MS = 15_000
/** Bytes of an answer's body read (and thrown away) before the connection is let go. */
const BODY_CAP = 4096
const RETRY_AFTER_CAP_MS = 24 * 60 * 60 * 1000

/** `Retry-After` as ms from now (delta seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (value === null) return null
  const text = value.trim()
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, RETRY_AFTER_CAP_MS)
  const date = Date.parse(text)
  if (Number.isNaN(date)) return null
  return Math.min(Math.max(date - now, 0), RETRY_AFTER_CAP_MS)
}

const short = (text: string) => (text.length > 200 ? `${text.slice(0, 197)}...` : text)

/** Reads at most BODY_CAP bytes of an answer (until `signal`), then lets it go; the bytes are not kept. */
async function drain(response: Response, signal: AbortSignal): Promise<void> {
  const body = response.body
  if (!body) return
  const reader = body.getReader()
  const onAbort = () => void reader.cancel().catch(() => {})
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    let read = 0
    while (read < BODY_CAP) {
      const r = await reader.read()
      if (r.done) return
      read += r.value.byteLength
    }
    await reader.cancel()
  } catch {
    // A body cut short changes nothing: the status decided.
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** What one attempt came to; `thrown`: no answer (a network error, the guard, a timeout, an abort). */
export interface Answer {
  status: number | null
  error: string | null
  retryAfter: number | null
  /** Retrying cannot help (a private address, a refused scheme): the delivery fails at once. */
  permanent: boolean
  ms: number
  thrown: boolean
}

export interface PostOptions {
  allowPrivate: boolean
  clock: () => number
  /** Aborts the request (a lost lease, a shutdown); the timeout aborts it too. */
  controller: AbortController
  resolve?: (host: string) => Promise<string[]>
  isAllowed?: (address: string) => boolean
}

/** Sends the delivery's payload, signed per Standard Webhooks, and reads the answer (its body at most BODY_CAP). */
export async function post(row: LeasedDelivery, o: PostOptions): Promise<Answer> {
  const { controller, clock } = o
  const headers = {
    'content-type': 'application/json',
    ...signatureHeaders(row.secret, row.webhook_id, row.payload, clock()),
  }
  const started = performance.now()
  const deadline = setTimeout(() => controller.abort(new GuardError('timeout', 'no answer in time')), TIMEOUT_MS)
  const answer: Answer = { status: null, error: null, retryAfter: null, permanent: false, ms: 0, thrown: false }
  try {
    const { response } = await guardedFetch(row.url, {
      allowPrivate: o.allowPrivate,
      method: 'POST',
      body: row.payload,
      headers,
      timeoutMs: TIMEOUT_MS,
      signal: controller.signal,
      resolve: o.resolve,
      isAllowed: o.isAllowed,
    })
    answer.ms = Math.round(performance.now() - started)
    const status = (answer.status = response.status)
    if (status < 200 || status > 299) {
      answer.error = status >= 300 && status <= 399 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`
      answer.retryAfter = retryAfterMs(response.headers.get('retry-after'), clock())
    }
    await drain(response, controller.signal)
  } catch (err) {
    answer.ms = Math.round(performance.now() - started)
    answer.thrown = true
    const reason = err instanceof GuardError ? err.reason : 'network'
    if (reason === 'private') {
      answer.permanent = true
      answer.error = 'private address: the host is on a private or local network'
    } else if (reason === 'scheme') {
      answer.permanent = true
      answer.error = short(`refused: ${(err as Error).message}`)
    } else if (reason === 'timeout' || reason === 'aborted')
      answer.error = `timeout: no answer within ${TIMEOUT_MS / 1000} s`
    else answer.error = short(`${reason}: ${err instanceof Error ? err.message : String(err)}`)
  } finally {
    clearTimeout(deadline)
  }
  return answer
}
