// QR codes as a feature of the composition root: the renderer (a worker thread with a bounded queue), the
// QR service and API, the public /qr/<code>.png images of links, and the renderer's gauge.
import type { Feature, Shared } from '../web/feature'
import type { LinkService } from '../links'
import { qrApi } from './api'
import { createQrRoutes } from './public'
import { createQrRenderer, type QrRenderer } from './renderer'
import { createQrService } from './service'

export function createQrFeature(shared: Shared, deps: { links: LinkService }, opts: { renderer?: QrRenderer } = {}) {
  const renderer = opts.renderer ?? createQrRenderer()
  const qr = createQrService(renderer)
  const feature: Feature = {
    routes: createQrRoutes({ config: shared.config, links: deps.links, qr, events: shared.events, log: shared.log }),
    api: qrApi(qr),
    metrics: (m) => m.sampled('linkbox_qr_waiting', 'QR renderings waiting for the worker.', () => renderer.waiting),
    // A running worker thread would keep the process (or the test runner) from exiting.
    close: () => renderer.close(),
  }
  return { feature, qr, renderer }
}
