// The HTTP server of the composition root: Bun.serve with linkbox's pipeline as its one handler, and the
// graceful stop of close().
import type { Config } from '../kernel/config'
import type { Logger } from '../kernel/log'
import type { Pipeline } from './pipeline'

// A connection that sends nothing for this long is closed, whatever it is doing: a request body that
// stalls (the body reader has no timer of its own for bodies with a Content-Length, see web/params.ts),
// a client that never sends its headers. Bun's own default, made explicit: no handler here waits longer.
const IDLE_TIMEOUT_SECONDS = 10

export function serve(config: Config, pipeline: Pipeline, idleTimeoutSeconds = IDLE_TIMEOUT_SECONDS) {
  return Bun.serve({
    hostname: config.server.host,
    port: config.server.port,
    // Every request goes through linkbox's pipeline: its id, the hot routes, the router, its line.
    fetch: pipeline.fetch,
    // Bodies are limited per route (64 KiB on /api, 8 KiB for the password form), where the answer can
    // carry the envelope; Bun's own limit would answer a bare 413, so it sits far above those.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Never Bun's development error page (a stack trace and source), whatever NODE_ENV says.
    development: false,
    // A second linkbox on the same port must fail to start, not silently share the traffic.
    reusePort: false,
    idleTimeout: idleTimeoutSeconds,
  })
}

/**
 * Stops accepting and lets in-flight requests finish. A client that never finishes its request (a stalled
 * upload) would hold this forever, so after `graceMs` the remaining connections are closed by force.
 */
export async function stopGracefully(server: ReturnType<typeof Bun.serve>, graceMs: number, log: Logger) {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<void>((done) => {
    timer = setTimeout(() => {
      log.warn(`shutdown: requests still open after ${graceMs} ms; closing them`)
      void server.stop(true)
      done()
    }, graceMs)
  })
  await Promise.race([server.stop(false), deadline])
  clearTimeout(timer)
}
