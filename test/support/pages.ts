// A web page server for the title fetch's tests (issue 40): node:http on a loopback address and a free port, each
// request handed to the test's route with what the server saw of it — its path, how many were answered at
// once, and when the client let go of the connection (a bounded read, a deadline).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Seen {
  path: string
  at: number
  /** When the connection closed (ms since the request came), null while open. */
  closedAfterMs: number | null
  /** Bytes of the body the route wrote before the connection closed. */
  written: number
  /** Whether the answer was sent whole before the connection closed. */
  finished: boolean
}

export interface PageServer {
  /** http://<host>:<port> */
  origin: string
  seen: Seen[]
  /** The most requests answered at once so far. */
  maxActive: number
  close(): Promise<void>
}

export type Route = (req: IncomingMessage, res: ServerResponse, seen: Seen) => void | Promise<void>

/** A page of HTML with `head` in its <head>. */
export const html = (head: string, body = '<p>Hello</p>') =>
  `<!doctype html><html><head>${head}</head><body>${body}</body></html>`

export async function pageServer(route: Route, host = '127.0.0.1'): Promise<PageServer> {
  let active = 0
  const s: PageServer = { origin: '', seen: [], maxActive: 0, close: async () => {} }
  const server = createServer((req, res) => {
    const seen: Seen = { path: req.url ?? '', at: Date.now(), closedAfterMs: null, written: 0, finished: false }
    s.seen.push(seen)
    active++
    s.maxActive = Math.max(s.maxActive, active)
    const write = res.write.bind(res) as (chunk: string | Uint8Array) => boolean
    res.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      seen.written += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest)
    }) as typeof res.write
    res.on('finish', () => void (seen.finished = true))
    res.on('close', () => {
      active--
      seen.closedAfterMs = Date.now() - seen.at
    })
    Promise.resolve(route(req, res, seen)).catch(() => res.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  s.origin = `http://${host}:${(server.address() as AddressInfo).port}`
  s.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return s
}

/** Waits until `check` holds (every 20 ms, at most `limitMs`), or throws naming `what`. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, limitMs = 15_000) {
  const end = Date.now() + limitMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting: ${what}`)
    await Bun.sleep(20)
  }
}
