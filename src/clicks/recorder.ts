// Clicks are buffered in memory and written in one transaction every interval or every `maxBatch`
// clicks, so a visit never waits for the disk. No address is kept: only the user agent and referrer,
// which become counters at flush time.
import type { Db } from '../db'
import { createClassifier, sourceOf } from './classify'

interface PendingClick {
  linkId: number
  at: number
  ua: string
  referer: string
}

export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

export function createClickRecorder(db: Db, opts: { maxBatch?: number; intervalMs?: number } = {}) {
  const maxBatch = opts.maxBatch ?? 1000
  const intervalMs = opts.intervalMs ?? 1000
  const classify = createClassifier()
  let buffer: PendingClick[] = []
  let timer: ReturnType<typeof setInterval> | null = null
  let flushedTotal = 0

  // INSERT … SELECT FROM links: a click on a link deleted before the flush is dropped, not an FK error.
  const upsertDay = db.query<unknown, [string, number, number, number]>(
    `INSERT INTO click_days (link_id, day, clicks, bots) SELECT id, ?1, ?2, ?3 FROM links WHERE id = ?4
     ON CONFLICT (link_id, day) DO UPDATE SET clicks = clicks + excluded.clicks, bots = bots + excluded.bots`,
  )
  const upsertDim = db.query<unknown, [string, string, string, number, number]>(
    `INSERT INTO click_dims (link_id, day, dim, name, clicks) SELECT id, ?1, ?2, ?3, ?4 FROM links WHERE id = ?5
     ON CONFLICT (link_id, day, dim, name) DO UPDATE SET clicks = clicks + excluded.clicks`,
  )
  const addTotals = db.query<unknown, [number, number, number]>(
    'UPDATE links SET clicks = clicks + ?1, bots = bots + ?2 WHERE id = ?3',
  )

  const write = db.transaction((clicks: PendingClick[]) => {
    const days = new Map<string, { linkId: number; day: string; clicks: number; bots: number }>()
    const dims = new Map<string, { linkId: number; day: string; dim: string; name: string; clicks: number }>()
    const totals = new Map<number, { clicks: number; bots: number }>()
    for (const c of clicks) {
      const day = dayOf(c.at)
      const k = `${c.linkId}|${day}`
      const d = days.get(k) ?? { linkId: c.linkId, day, clicks: 0, bots: 0 }
      days.set(k, d)
      const t = totals.get(c.linkId) ?? { clicks: 0, bots: 0 }
      totals.set(c.linkId, t)
      const who = classify(c.ua)
      if (who.bot) {
        d.bots++
        t.bots++
        continue
      }
      d.clicks++
      t.clicks++
      for (const [dim, name] of [
        ['source', sourceOf(c.referer)],
        ['device', who.device],
        ['browser', who.browser],
        ['os', who.os],
      ] as const) {
        const dk = `${k}|${dim}|${name}`
        const e = dims.get(dk) ?? { linkId: c.linkId, day, dim, name, clicks: 0 }
        e.clicks++
        dims.set(dk, e)
      }
    }
    for (const d of days.values()) upsertDay.run(d.day, d.clicks, d.bots, d.linkId)
    for (const e of dims.values()) upsertDim.run(e.day, e.dim, e.name, e.clicks, e.linkId)
    for (const [id, t] of totals) addTotals.run(t.clicks, t.bots, id)
  })

  function flush(): number {
    if (buffer.length === 0) return 0
    const batch = buffer
    buffer = []
    try {
      write(batch)
    } catch (err) {
      // Keep the clicks for the next attempt (e.g. the database was busy) rather than lose them.
      buffer = batch.concat(buffer)
      throw err
    }
    flushedTotal += batch.length
    return batch.length
  }

  return {
    record(linkId: number, at: number, ua: string, referer: string) {
      buffer.push({ linkId, at, ua: ua.slice(0, 1024), referer: referer.slice(0, 2048) })
      if (buffer.length >= maxBatch) queueMicrotask(safeFlush)
    },
    flush,
    get pending() {
      return buffer.length
    },
    get flushed() {
      return flushedTotal
    },
    start() {
      timer ??= setInterval(safeFlush, intervalMs)
    },
    stop() {
      if (timer) clearInterval(timer)
      timer = null
      flush()
    },
  }

  function safeFlush() {
    try {
      flush()
    } catch (err) {
      console.error('click flush failed (will retry):', err)
    }
  }
}
export type ClickRecorder = ReturnType<typeof createClickRecorder>
