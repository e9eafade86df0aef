// The QR queue's lanes (issue 6: one key's 150 large qr.json requests made a new public /qr/<code>.png answer
// 503). Public images have room of their own, each API caller a bounded share of the rest, and the lanes
// take turns. Renderers with tiny queues, as in qr-worker.test.ts.
import { afterAll, describe, expect, test } from 'bun:test'
import { AppError } from '../../src/kernel/errors'
import {
  callerLane,
  createQrRenderer,
  PUBLIC_LANE,
  type QrRenderer,
  type QrRendererOptions,
} from '../../src/qr/renderer'
import { parseQrSettings } from '../../src/qr/service'
import { makeBox } from '../support/app'

const BIG = { data: 'x'.repeat(1200), ecc: 'H', size: '2048' }
const renderers: QrRenderer[] = []
afterAll(() => renderers.forEach((r) => r.close()))

function renderer(opts: QrRendererOptions) {
  const r = createQrRenderer(opts)
  renderers.push(r)
  return r
}

/** The rendering's outcome: 'ok', or the status of its AppError. */
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok' as const,
    (e: unknown) => (e instanceof AppError ? e.status : String(e)),
  )

describe('the renderer', () => {
  test('one caller gets its share, the callers together the shared room, public images their own', async () => {
    // One worker for every lane (no public one of its own: that is the next describe's), so that rooms fill.
    const r = renderer({ maxWaiting: 4, perCaller: 2, publicWaiting: 1, inFlight: 1, publicWorkers: 0 })
    const a = callerLane(1)
    const b = callerLane(2)
    const s = (data: string) => parseQrSettings({ data })
    const results = {
      drawing: outcome(r.render(s('a0'), a)), // handed to the worker at once
      a1: outcome(r.render(s('a1'), a)),
      a2: outcome(r.render(s('a2'), a)),
      a3: outcome(r.render(s('a3'), a)), // over the caller's share
      b1: outcome(r.render(s('b1'), b)),
      b2: outcome(r.render(s('b2'), b)),
      c1: outcome(r.render(s('c1'), callerLane(3))), // the callers' room is full
      p1: outcome(r.render(s('p1'), PUBLIC_LANE)), // public images have their own
      p2: outcome(r.render(s('p2'), PUBLIC_LANE)), // which is full now
    }
    expect(r.waiting).toBe(5)
    const settled = Object.fromEntries(await Promise.all(Object.entries(results).map(async ([k, v]) => [k, await v])))
    expect(settled).toEqual({
      drawing: 'ok',
      a1: 'ok',
      a2: 'ok',
      a3: 503,
      b1: 'ok',
      b2: 'ok',
      c1: 503,
      p1: 'ok',
      p2: 503,
    })
    expect(r.waiting).toBe(0)
  }, 30_000)

  test('the lanes take turns: a public image waits behind one rendering of each caller, not all of them', async () => {
    const r = renderer({ maxWaiting: 16, perCaller: 8, inFlight: 1, publicWorkers: 0 })
    const done: string[] = []
    const render = (name: string, lane: string) =>
      r.render(parseQrSettings({ data: name }), lane).then(() => {
        done.push(name)
      })
    const all = [
      render('a0', callerLane(1)),
      ...['a1', 'a2', 'a3', 'a4'].map((n) => render(n, callerLane(1))),
      ...['b1', 'b2'].map((n) => render(n, callerLane(2))),
      render('p1', PUBLIC_LANE),
    ]
    await Promise.all(all)
    expect(done).toEqual(['a0', 'a1', 'b1', 'p1', 'a2', 'b2', 'a3', 'a4'])
  }, 30_000)

  test('a refusal frees nothing it did not take: shares come back as renderings finish', async () => {
    const r = renderer({ maxWaiting: 2, perCaller: 1, inFlight: 1, publicWorkers: 0 })
    const a = callerLane(1)
    const first = [r.render(parseQrSettings({ data: 'a0' }), a), r.render(parseQrSettings({ data: 'a1' }), a)]
    expect(await outcome(r.render(parseQrSettings({ data: 'a2' }), a))).toBe(503)
    await Promise.all(first)
    expect(await outcome(r.render(parseQrSettings({ data: 'a3' }), a))).toBe('ok')
    expect(await outcome(r.render(parseQrSettings({ data: 'a4' }), a))).toBe('ok')
  }, 30_000)
})

describe('through the app', () => {
  test("one key's flood of big qr.json requests leaves room for a public image and for another key", async () => {
    const qrRenderer = renderer({ maxWaiting: 8, inFlight: 1 })
    const box = await makeBox({}, { qrRenderer })
    try {
      const flooder = await box.account('flooder')
      const other = await box.account('other')
      const link = await box.links.create({ url: 'https://example.com/new' }, null)
      let refusedOnce!: () => void
      const refused = new Promise<void>((resolve) => (refusedOnce = resolve))
      const flood = Array.from({ length: 30 }, async (_, i) => {
        const r = await box.get('/api/qr.json', { ...BIG, data: `${i}${BIG.data}`, raw: '1' }, { 'x-api-key': flooder })
        if (r.status === 503) refusedOnce()
        return r.status
      })
      // The flooder has filled all it may: now a visitor's image and the other key's request come in.
      await refused
      const [image, otherKey] = await Promise.all([
        box.request(`/qr/${link.hex}.png`),
        box.get('/api/qr.json', { data: 'hello' }, { 'x-api-key': other }),
      ])
      expect(image.status).toBe(200)
      expect(image.headers.get('content-type')).toBe('image/png')
      expect(otherKey.status).toBe(200)
      const statuses = await Promise.all(flood)
      // The flooder's share of 8/4 = 2 waiting (plus the one drawing at a time) was rendered; the rest refused.
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(3)
      expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0)
      expect(statuses.every((s) => s === 200 || s === 503)).toBe(true)
    } finally {
      await box.cleanup()
    }
  }, 60_000)
})
