// Whether a frame link's destination lets itself be framed, asked through the SSRF guard first, so a refusing
// page gets a message and "Open directly" instead of the browser's grey error; verdicts kept a few minutes.
import { GuardError, guardedFetch, type GuardOptions } from '../kernel/net/guard'

export type FrameVerdict =
  | { framing: 'allowed' }
  | { framing: 'refused' }
  /** The check could not be made (timeout, unreachable, a private address we may not ask). */
  | { framing: 'unknown'; why: string }

const CACHE_MAX = 1_000
const ALLOWED_TTL_MS = 5 * 60_000
const FAILED_TTL_MS = 60_000
const MAX_RUNNING = 16

const defaultPort = (scheme: string) => (scheme === 'https:' ? '443' : scheme === 'http:' ? '80' : '')

/** Does one frame-ancestors source expression match the framing page's origin? */
function sourceMatches(source: string, ours: URL, theirs: URL): boolean {
  const s = source.toLowerCase()
  if (s === '*') return true
  if (s === "'self'") return ours.origin === theirs.origin
  if (s.startsWith("'")) return false // 'none' and keywords that mean nothing here
  if (/^[a-z][a-z0-9+.-]*:$/.test(s)) return s === ours.protocol || (s === 'http:' && ours.protocol === 'https:')
  const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\*|(?:\*\.)?[a-z0-9.-]+)(?::(\*|\d+))?(?:\/.*)?$/.exec(s)
  if (!m) return false
  const [, scheme, host, port] = m
  if (scheme && `${scheme}:` !== ours.protocol && !(scheme === 'http' && ours.protocol === 'https:')) return false
  const ourHost = ours.hostname.toLowerCase()
  if (host === '*') {
    // a bare "*" with a scheme or port: any host
  } else if (host!.startsWith('*.')) {
    if (!ourHost.endsWith(host!.slice(1))) return false
  } else if (host !== ourHost) return false
  const ourPort = ours.port || defaultPort(ours.protocol)
  if (port === '*') return true
  const wanted = port ?? defaultPort(scheme ? `${scheme}:` : ours.protocol)
  return wanted === ourPort || (!port && scheme === 'http' && ours.protocol === 'https:' && ourPort === '443')
}

/**
 * The browser's rule, from the answer's headers: a CSP frame-ancestors directive (in any enforced
 * policy) decides, and then X-Frame-Options is ignored; otherwise DENY or SAMEORIGIN refuse (our page is
 * never the destination's origin), and other values are ignored.
 */
export function framingAllowed(headers: Headers, ours: URL, theirs: URL): boolean {
  let ancestors = false
  for (const policy of (headers.get('content-security-policy') ?? '').split(',')) {
    for (const directive of policy.split(';')) {
      const [name, ...sources] = directive.trim().split(/\s+/)
      if (name?.toLowerCase() !== 'frame-ancestors') continue
      ancestors = true
      if (!sources.some((src) => sourceMatches(src, ours, theirs))) return false
      break // only the first frame-ancestors of a policy counts
    }
  }
  if (ancestors) return true
  const xfo = (headers.get('x-frame-options') ?? '')
    .toLowerCase()
    .split(',')
    .map((v) => v.trim())
  return !xfo.some((v) => v === 'deny' || (v === 'sameorigin' && ours.origin !== theirs.origin))
}

const WHY: Record<string, string> = {
  private: 'its address is on a private network, which linkbox does not contact',
  timeout: 'it did not answer in time',
  redirects: 'it redirects too many times',
}

export function createFrameCheck(opts: { baseUrl: string; guard: Omit<GuardOptions, 'method'>; clock?: () => number }) {
  const ours = new URL(opts.baseUrl)
  const clock = opts.clock ?? Date.now
  const cache = new Map<string, { verdict: FrameVerdict; until: number }>()
  const running = new Map<string, Promise<FrameVerdict>>()

  async function ask(url: string): Promise<FrameVerdict> {
    let answer: { response: Response; url: string }
    try {
      answer = await guardedFetch(url, { ...opts.guard, method: 'HEAD' })
      // Some servers refuse HEAD: ask again with GET (and leave the body unread).
      if (answer.response.status === 405 || answer.response.status === 501)
        answer = await guardedFetch(url, { ...opts.guard, method: 'GET' })
    } catch (err) {
      const reason = err instanceof GuardError ? err.reason : 'network'
      return { framing: 'unknown', why: WHY[reason] ?? 'it could not be reached from here' }
    }
    void answer.response.body?.cancel().catch(() => {})
    return framingAllowed(answer.response.headers, ours, new URL(answer.url))
      ? { framing: 'allowed' }
      : { framing: 'refused' }
  }

  return {
    /** The verdict for the destination `url` (cached per origin and path). Never throws. */
    async check(url: string): Promise<FrameVerdict> {
      const u = new URL(url)
      const key = u.origin + u.pathname
      const now = clock()
      const hit = cache.get(key)
      if (hit && hit.until > now) return hit.verdict
      const pending = running.get(key)
      if (pending) return pending
      // Too many destinations at once: do not queue outbound requests for strangers; say we cannot tell.
      if (running.size >= MAX_RUNNING) return { framing: 'unknown', why: 'linkbox is busy checking other pages' }
      const work = ask(url).then((verdict) => {
        running.delete(key)
        if (cache.size >= CACHE_MAX) {
          for (const [k, v] of cache) if (v.until <= now) cache.delete(k)
          if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
        }
        cache.set(key, { verdict, until: clock() + (verdict.framing === 'unknown' ? FAILED_TTL_MS : ALLOWED_TTL_MS) })
        return verdict
      })
      running.set(key, work)
      return work
    },
  }
}
export type FrameCheck = ReturnType<typeof createFrameCheck>
