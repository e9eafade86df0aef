// Clicks as a feature of the composition root: the recorder that buffers clicks and writes them (on its
// writer thread) every second, its metrics, and the last write at close. link.clicked events are decided at
// flush time through the outbox (webhooks/outbox.ts).
import type { Feature, Shared } from '../feature'
import { createClickRecorder, type ClickRecorderOptions } from './recorder'

export function createClicksFeature(shared: Shared, opts: ClickRecorderOptions = {}) {
  const { db, outbox, clock } = shared
  const recorder = createClickRecorder(db, {
    log: (line) => shared.log.error(line),
    ...opts,
    webhooks: { wanted: (accountId) => outbox.wanted('link.clicked', accountId), written: () => outbox.wake(), now: clock },
  })
  const feature: Feature = {
    metrics(m) {
      m.sampled('linkbox_clicks_written_total', 'Clicks (human and bot) written to the database since start.', () => recorder.flushed, 'counter')
      m.sampled('linkbox_click_buffer', 'Clicks waiting in memory for the next write.', () => recorder.pending)
      m.sampled('linkbox_clicks_dropped_total', 'Clicks dropped because writes kept failing and the buffer was full.', () => recorder.dropped, 'counter')
    },
    listen: () => recorder.start(),
    // Throws ClicksNotWritten when the last write fails (the root closes the database all the same).
    close: () => recorder.stop(),
  }
  return { feature, recorder }
}
