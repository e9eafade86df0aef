// A destination's page read for its title (links.fetch_metadata): through the SSRF guard (http/https, public
// addresses, each redirect checked), at most PAGE_BYTES read, FETCH_MS in all, only text/html parsed.
import { GuardError, guardedFetch, type GuardOptions } from '../kernel/net/guard'
import { pageDecoder, pageMeta } from './metadata-parse'
import type { PageMeta } from './storage/contract'

/** SPEC §2a: at most 256 KiB of a page is read, and a fetch takes at most 5 s, redirects and body included. */
export const PAGE_BYTES = 256 * 1024
export const FETCH_MS = 5_000
const MAX_REDIRECTS = 5

/**
 * What a fetch came to: the page's meta (its title may be ''); `final` when trying again cannot help (refused by
 * the guard, not a page, gone); `retry` when it may (timeout, network, a server error).
 */
export type FetchOutcome = { page: PageMeta } | { final: string } | { retry: string }

/** The guard's settings: media.allow_private_networks and the tests' name resolution. */
export type MetaGuard = Pick<GuardOptions, 'allowPrivate' | 'resolve' | 'isAllowed'>

const RETRIED = new Set(['dns', 'timeout', 'network'])

/** Reads at most `limit` bytes of `body`, then lets go of it (the connection closes): the bytes read. */
async function readBounded(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    while (size < limit) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      size += value.byteLength
    }
  } finally {
    void reader.cancel().catch(() => {})
  }
  const out = new Uint8Array(Math.min(size, limit))
  let at = 0
  for (const c of chunks) {
    if (at >= out.length) break
    const part = c.subarray(0, out.length - at)
    out.set(part, at)
    at += part.byteLength
  }
  return out
}

/** `url`'s page and what it says of itself; never throws. `signal` cuts it short (the node stops). */
export async function fetchPageMeta(
  url: string,
  guard: MetaGuard,
  opts: { signal?: AbortSignal; timeoutMs?: number; maxBytes?: number } = {},
): Promise<FetchOutcome> {
  const deadline = AbortSignal.timeout(opts.timeoutMs ?? FETCH_MS)
  const signal = opts.signal ? AbortSignal.any([deadline, opts.signal]) : deadline
  let response: Response
  try {
    ;({ response } = await guardedFetch(url, {
      ...guard,
      method: 'GET',
      timeoutMs: opts.timeoutMs ?? FETCH_MS,
      maxRedirects: MAX_REDIRECTS,
      signal,
      headers: { accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1' },
    }))
  } catch (err) {
    if (err instanceof GuardError)
      return RETRIED.has(err.reason) || err.reason === 'aborted' ? { retry: err.reason } : { final: err.reason }
    return { retry: 'network' }
  }
  const type = (response.headers.get('content-type') ?? '').toLowerCase()
  if (!response.ok || !/^\s*(text\/html|application\/xhtml\+xml)\b/.test(type) || !response.body) {
    void response.body?.cancel().catch(() => {})
    const retried = response.status >= 500 || response.status === 408 || response.status === 429
    return retried
      ? { retry: `status ${response.status}` }
      : { final: response.ok ? 'not html' : `status ${response.status}` }
  }
  let bytes: Uint8Array
  try {
    bytes = await readBounded(response.body, opts.maxBytes ?? PAGE_BYTES)
  } catch {
    // The deadline (or the node's stop) came while the body was read: nothing of it is used.
    return { retry: signal.aborted ? 'timeout' : 'network' }
  }
  if (signal.aborted) return { retry: 'timeout' }
  return { page: pageMeta(pageDecoder(bytes, type).decode(bytes)) }
}
