// One delivery attempt over HTTP: the signed POST through the SSRF guard, its answer read into what the deliverer
// records. A 3xx is a failure (never followed); Retry-After can only move the next attempt later, capped at 24 h.
import { GuardError, guardedFetch } from '../kernel/net/guard'
import { signatureHeaders } from './sign'
import { ANSWER_BOUNDS, type LeasedDelivery } from './storage/contract'

/** The answer's headers must come within this, and the (discarded) body too. */
export const TIMEOUT_MS = 15_000
/** Bytes of an answer's body read (and kept for the delivery's page) before the connection is let go. */
const BODY_CAP = ANSWER_BOUNDS.bodyBytes
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

/** Reads at most BODY_CAP bytes of an answer (until `signal`), then lets it go: the bytes, and whether there were more. */
async function drain(response: Response, signal: AbortSignal): Promise<{ bytes: Uint8Array; more: boolean }> {
  const body = response.body
  const chunks: Uint8Array[] = []
  let read = 0
  let more = false
  if (!body) return { bytes: new Uint8Array(0), more }
  const reader = body.getReader()
  const onAbort = () => void reader.cancel().catch(() => {})
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    for (;;) {
      const r = await reader.read()
      if (r.done) break
      chunks.push(r.value)
      read += r.value.byteLength
      if (read >= BODY_CAP) {
        more = read > BODY_CAP || !(await reader.read()).done
        await reader.cancel()
        break
      }
    }
  } catch {
    // A body cut short changes nothing: the status decided.
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
  const all = new Uint8Array(read)
  let at = 0
  for (const c of chunks) all.set(c, (at += c.byteLength) - c.byteLength)
  return { bytes: all.subarray(0, BODY_CAP), more }
}

/** An answer's headers as kept: at most ANSWER_BOUNDS.headers pairs and headerBytes bytes; whether some were left out. */
export function boundedHeaders(headers: Headers): { pairs: [string, string][]; cut: boolean } {
  const pairs: [string, string][] = []
  let bytes = 0
  let cut = false
  headers.forEach((value, name) => {
    const size = Buffer.byteLength(name) + Buffer.byteLength(value) + 4
    if (cut || pairs.length >= ANSWER_BOUNDS.headers || bytes + size > ANSWER_BOUNDS.headerBytes) cut = true
    else {
      pairs.push([name, value])
      bytes += size
    }
  })
  return { pairs, cut }
}

/** The request's headers as they go out: ours, those the guard adds (net/guard.ts) and fetch's own (checked: test/unit/webhook-answer). */
function sentHeaders(url: string, ours: Record<string, string>, body: string): [string, string][] {
  const host = new URL(url).host
  return [
    ['host', host],
    ['connection', 'keep-alive'],
    ['user-agent', 'linkbox'],
    ['accept', '*/*'],
    ...Object.entries(ours),
    ['content-length', String(Buffer.byteLength(body))],
  ]
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
  /** The request's headers as sent. */
  sent: [string, string][]
  /** The answer's headers (bounded) and its first BODY_CAP bytes as text; empty without an answer. */
  headers: [string, string][]
  body: string
  /** The body or the headers went on beyond what is kept. */
  truncated: boolean
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
  // Named here what fetch would add by itself, so that the record of what was sent is exact.
  const headers = {
    'accept-encoding': 'gzip, deflate, br, zstd',
    'content-type': 'application/json',
    ...signatureHeaders(row.secret, row.webhook_id, row.payload, clock(), row.previous_secret),
  }
  const started = performance.now()
  const deadline = setTimeout(() => controller.abort(new GuardError('timeout', 'no answer in time')), TIMEOUT_MS)
  const answer: Answer = {
    status: null,
    error: null,
    retryAfter: null,
    permanent: false,
    ms: 0,
    thrown: false,
    sent: sentHeaders(row.url, headers, row.payload),
    headers: [],
    body: '',
    truncated: false,
  }
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
    const kept = boundedHeaders(response.headers)
    answer.headers = kept.pairs
    const body = await drain(response, controller.signal)
    answer.body = new TextDecoder().decode(body.bytes)
    answer.truncated = kept.cut || body.more
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
