// Media download as a feature of the composition root: yt-dlp and the guard proxy (started with the first
// extraction), the service and API, the signed /dl files, their metrics and the sweep of the file cache.
import type { Feature, Shared } from '../web/feature'
import { queryParams } from '../web/params'
import { pathOf } from '../web/path'
import type { HotRoute } from '../web/pipeline'
import { startGuardProxy, type GuardProxy } from '../kernel/net/proxy'
import { createMediaRoutes, mediaApi } from './api'
import { cookieKey, createCookieJar } from './cookies'
import { PROGRESS_HEADERS } from './progress'
import { killRunning } from './runner'
import { createMediaService, type MediaService } from './service'
import type { AuditRows } from '../audit'
import type { TicketStorage } from './storage/contract'
import type { CookieStorage } from './storage/cookies-contract'
import { createYtdlp } from './ytdlp'

/**
 * HEAD /dl/<id>: Elysia's router answers a HEAD with the path's GET route and the length of what that
 * answers (none, for a HEAD: "0"), whatever HEAD route the path has; so it is answered before the router.
 */
function headOfDownload(media: MediaService): HotRoute {
  return (request, id) => {
    if (request.method !== 'HEAD') return undefined
    let path = pathOf(request.url)
    // HEAD of a progress stream: checked like its GET, answered with its headers, and nothing is started.
    const progress = path.endsWith('/progress')
    if (progress) path = path.slice(0, -'/progress'.length)
    if (!path.startsWith('/dl/') || path.indexOf('/', 4) >= 0) return undefined
    let ticketId: string
    try {
      ticketId = decodeURIComponent(path.slice(4))
    } catch {
      return undefined // not percent-encoding: the router's 404
    }
    return (async () => {
      const query = queryParams(request.url)
      const text = (v: unknown) => (typeof v === 'string' ? v : null)
      const ticket = await media.ticket(ticketId, text(query.exp), text(query.sig))
      const res = progress ? new Response(null, { headers: PROGRESS_HEADERS }) : await media.serve(ticket, request)
      res.headers.set('x-request-id', id)
      return res
    })()
  }
}

/** What the root hands the media feature: its storage. */
export interface MediaFeatureDeps {
  tickets: TicketStorage
  cookies: CookieStorage
  /** The signing secret, from which the cookies' key is derived. */
  signingSecret: Buffer
  /** Where changes to the cookies are recorded. */
  audit: Pick<AuditRows<unknown>, 'insert'>
}

export function createMediaFeature(shared: Shared, deps: MediaFeatureDeps) {
  const { config, signer, clock } = shared
  const { resolve, isAllowed } = shared.guard
  const cookies = createCookieJar({
    storage: deps.cookies,
    key: cookieKey(deps.signingSecret),
    clock,
    dataDir: config.data_dir,
    audit: deps.audit,
  })
  cookies.sweepFiles() // a crash mid-run leaves a cookies file behind
  const ytdlp = createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir })
  // The proxy every request of yt-dlp goes through (the SSRF guard for a program we do not control);
  // started when the first extraction needs it.
  let guardProxy: Promise<GuardProxy> | null = null
  const extractions = shared.metrics.counter(
    'linkbox_media_extractions_total',
    'download.json answers by outcome (cached: from the 10-minute cache).',
    'outcome',
  )
  const media = createMediaService({
    tickets: deps.tickets,
    config,
    signer,
    clock,
    ytdlp,
    proxy: async () =>
      (
        await (guardProxy ??= startGuardProxy({
          allowPrivate: config.media.allow_private_networks,
          resolve,
          isAllowed,
        }))
      ).url,
    canMerge: Bun.which('ffmpeg') !== null,
    resolve,
    isAllowed,
    onOutcome: (outcome) => extractions.inc(outcome),
    faults: shared.faults,
    cookies,
    holdOpen: (request, seconds) => {
      try {
        shared.server()?.timeout(request, seconds)
      } catch {} // a request the server did not receive (handled in-process)
    },
  })
  const feature: Feature = {
    hot: [headOfDownload(media)],
    routes: createMediaRoutes(media),
    api: mediaApi(media),
    metrics(m) {
      m.sampled('linkbox_media_queue', 'yt-dlp runs (extractions and fetches) waiting for a slot.', () => media.queued)
      m.sampled('linkbox_media_running', 'yt-dlp runs under way.', () => media.running)
      m.sampled(
        'linkbox_media_bytes_served_total',
        'Bytes of the files sent through signed /dl links (a download is counted by its length when it starts).',
        () => media.stats.bytesServed,
        'counter',
      )
    },
    jobs: [{ name: 'media sweep', everyMs: 60_000, run: () => media.sweep() }],
    async close() {
      // yt-dlp runs live in process groups of their own, which would outlive us.
      killRunning()
      if (guardProxy) await (await guardProxy.catch(() => null))?.stop()
    },
  }
  return { feature, media, ytdlp, cookies }
}
