// The request pipeline Bun.serve calls for every request: its id, the hot routes first (the redirect), the
// router for the rest, one request line into the log's buffer.
import { requestIdOf, type Logger } from '../kernel/log'
import type { ClientIpOf } from './client-ip'
import { pathOf } from './path'

/**
 * A route tried before the router: its answer, with `id` as its X-Request-Id, or undefined when the request
 * is not one it takes. The plain redirect answers this way; so does what the router gets wrong (HEAD of a
 * path with a GET route of its own: it answers with the GET route and the length of its body). A route that
 * must read before it knows (a code not in the link cache, on PostgreSQL) gives a promise, and undefined
 * from it passes the request on as well.
 */
export type HotRoute = (
  request: Request,
  id: string,
  /** The request's path (pathOf: no query string), read once for the routes and the request line. */
  path: string,
) => Response | Promise<Response | undefined> | undefined

/** What Bun.serve's `fetch` is given as its second argument (the part of it the pipeline uses). */
export interface PeerSource {
  requestIP(request: Request): { address: string } | null
}

export interface PipelineDeps {
  logger: Logger
  /** Tried in order before the router. */
  hot: HotRoute[]
  /** Everything else (Elysia's compiled handler: routes, onRequest, onError). */
  route: (request: Request) => Response | Promise<Response>
  /** The answer when a hot route throws (the router has its own). */
  fault: (error: unknown, request: Request) => Response
  /** The client address from the socket peer and X-Forwarded-For (see client-ip.ts). */
  clientIpOf: ClientIpOf
  /** A collection of the young generation (tests count them); default Bun.gc(false). */
  collect?: () => void
}

/**
 * Under traffic, the young generation is collected every COLLECT_MS. A request leaves native memory (its
 * Request, Response and headers) behind JS objects only a collection frees; on JSC's own schedule the bench's
 * RSS peak of redirects over 1,000 codes was 218 MiB, with this 145 (issue 39). Idle, no timer runs.
 */
export const COLLECT_MS = 100

export function createPipeline(deps: PipelineDeps) {
  const { logger, hot, route, fault, clientIpOf } = deps
  const collect = deps.collect ?? (() => Bun.gc(false))
  let peers: PeerSource | null = null
  let collecting: ReturnType<typeof setTimeout> | null = null
  const collectNow = () => {
    collecting = null
    collect()
  }
  // The client address is asked once a request, when first needed. The request being handled keeps it in
  // two variables (no WeakMap entry per redirect); one that goes on past an await keeps it in `known`.
  let current: Request | null = null
  let currentIp: string | undefined
  const known = new WeakMap<Request, string>()
  const forwarded = clientIpOf.readsForwarded !== false
  const addressOf = (request: Request) =>
    clientIpOf(peers?.requestIP(request)?.address ?? null, forwarded ? request.headers.get('x-forwarded-for') : null)

  /** The client's address, for handlers (rate limits, password attempts); "unknown" without a server. */
  function clientIp(request: Request): string {
    if (request === current) return (currentIp ??= addressOf(request))
    let ip = known.get(request)
    if (ip === undefined) known.set(request, (ip = addressOf(request)))
    return ip
  }

  function finish(request: Request, id: string, path: string, started: number, res: Response, own: boolean): Response {
    // A hot route's answer carries its id already; the router's answers have headers of their own to add to.
    if (!own) {
      try {
        res.headers.set('x-request-id', id)
      } catch {
        // Immutable headers (Response.redirect(), a fetch() answer): no route here answers with those.
      }
    }
    if (logger.requests) {
      const end = performance.now()
      logger.requestLine(
        id,
        request.method,
        path,
        res.status,
        end - started,
        request === current ? (currentIp ??= addressOf(request)) : (known.get(request) ?? addressOf(request)),
        request.headers.get('user-agent') ?? '',
        end,
      )
    }
    return res
  }

  /** The hot routes from the i-th on, then the router. */
  function from(i: number, request: Request, id: string, path: string, started: number): Response | Promise<Response> {
    try {
      for (; i < hot.length; i++) {
        const own = hot[i]!(request, id, path)
        if (own === undefined) continue
        if (own instanceof Promise) {
          const next = i + 1
          return own.then(
            (res) =>
              res === undefined
                ? from(next, request, id, path, started)
                : finish(request, id, path, started, res, true),
            (err) => finish(request, id, path, started, fault(err, request), false),
          )
        }
        return finish(request, id, path, started, own, true)
      }
    } catch (err) {
      return finish(request, id, path, started, fault(err, request), false)
    }
    let answer: Response | Promise<Response>
    try {
      answer = route(request)
    } catch (err) {
      answer = fault(err, request)
    }
    if (answer instanceof Promise)
      return answer.then(
        (res) => finish(request, id, path, started, res, false),
        (err) => finish(request, id, path, started, fault(err, request), false),
      )
    return finish(request, id, path, started, answer, false)
  }

  function handle(request: Request): Response | Promise<Response> {
    const started = logger.requests ? performance.now() : 0
    // A request handled inside another's handling (none today) leaves the outer one's address as it was.
    const outer = current
    const outerIp = currentIp
    current = request
    currentIp = undefined
    try {
      const answer = from(0, request, requestIdOf(request.headers.get('x-request-id')), pathOf(request.url), started)
      if (answer instanceof Promise && currentIp !== undefined) known.set(request, currentIp)
      return answer
    } finally {
      current = outer
      currentIp = outerIp
    }
  }

  return {
    clientIp,
    /** Bun.serve's `fetch`: the server is where the peer addresses come from. */
    fetch(request: Request, server: PeerSource): Response | Promise<Response> {
      peers = server
      if (collecting === null) {
        collecting = setTimeout(collectNow, COLLECT_MS)
        collecting.unref?.()
      }
      return handle(request)
    },
    /** The same without a server (tests): no peer address, so clients are "unknown". */
    handle,
  }
}
export type Pipeline = ReturnType<typeof createPipeline>
