// QR rendering on the worker thread: big renderings leave the event loop free for redirects, errors the
// encoder finds still reach the client as 400s, a full queue answers 503, and a dead worker is replaced.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { createLinkbox, type Linkbox } from '../../src/app/app'
import { AppError } from '../../src/kernel/errors'
import { errorResponse } from '../../src/web/api'
import {
  callerLane,
  createQrRenderer,
  PUBLIC_LANE,
  type QrRenderer,
  type QrRendererOptions,
} from '../../src/qr/renderer'
import { parseQrSettings, type QrImage } from '../../src/qr/service'
import { makeBox, tempDir, testConfig } from '../support/app'

const WORKER_URL = new URL('../../src/qr/render-worker.ts', import.meta.url).href
const PNG_MAGIC = Buffer.from('\x89PNG', 'latin1')
// Near the capacity at ecc H, at the largest size: about 200 ms of CPU each.
const BIG = { data: 'x'.repeat(1200), ecc: 'H', size: '2048' }
const bigSettings = (i = 0) => parseQrSettings({ ...BIG, data: `${i}${BIG.data}` })

/** The lane of the renderings these tests ask for directly: one API caller's. */
const LANE = callerLane(1)

const isPng = (image: QrImage) => expect(Buffer.from(image.body.subarray(0, 4))).toEqual(PNG_MAGIC)

const renderers: QrRenderer[] = []
afterAll(() => renderers.forEach((r) => r.close()))

/** A renderer whose workers the test can reach (to kill them), closed after the tests. */
function testRenderer(opts: QrRendererOptions = {}) {
  const spawned: Worker[] = []
  const renderer = createQrRenderer({
    spawn: () => {
      const worker = new Worker(WORKER_URL)
      spawned.push(worker)
      return worker
    },
    ...opts,
  })
  renderers.push(renderer)
  return { renderer, spawned }
}

/** Settles to the rejection's AppError (or fails the test if it resolves). */
async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(AppError)
  return err as AppError
}

describe('over a real socket', () => {
  let box: Linkbox
  let base: string
  let dir: string
  beforeAll(() => {
    dir = tempDir()
    box = createLinkbox(testConfig(dir, { server: { host: '127.0.0.1', port: 0 } }))
    base = `http://127.0.0.1:${box.listen().port}`
  })
  afterAll(async () => {
    await box.close()
    rmSync(dir, { recursive: true, force: true })
  })

  // Drawn on the main thread, the four renderings would hold up everything else for most of their time
  // (measured: 576 ms blocked out of 640): the slowest redirect would take nearly as long as all four.
  test('redirects are answered while four big renderings are in progress', async () => {
    const key = (await box.accounts.createAccount({ name: 'qr' })).key.key
    const link = await box.links.create({ url: 'https://example.com/fast' }, null)
    const started = performance.now()
    let rendersDone = 0
    const renders = [0, 1, 2, 3].map(async (i) => {
      const query = new URLSearchParams({ ...BIG, data: `${i}${BIG.data}`, raw: '1' })
      const r = await fetch(`${base}/api/qr.json?${query}`, { headers: { 'x-api-key': key } })
      const magic = Buffer.from(await r.arrayBuffer()).subarray(0, 4)
      rendersDone++
      return { status: r.status, magic }
    })
    // One redirect after another for as long as the renderings last.
    const waits: number[] = []
    const statuses = new Set<number>()
    let redirectsBeforeFirstRender = 0
    while (rendersDone < 4) {
      const sent = performance.now()
      statuses.add((await fetch(`${base}/${link.hex}`, { redirect: 'manual' })).status)
      waits.push(performance.now() - sent)
      if (rendersDone === 0) redirectsBeforeFirstRender++
    }
    const renderingTime = performance.now() - started
    for (const r of await Promise.all(renders)) expect(r).toEqual({ status: 200, magic: PNG_MAGIC })
    expect([...statuses]).toEqual([302])
    expect(redirectsBeforeFirstRender).toBeGreaterThan(1)
    // Relative to the renderings' own time, so that a slow machine slows both sides.
    expect(Math.max(...waits)).toBeLessThan(renderingTime / 4)
  }, 30_000)
})

// Through qr.json every rendering goes to the worker, so test/qr.test.ts already checks that the 400s for
// data over the capacity and a size below one pixel per module come back from it intact.
describe('errors found while drawing', () => {
  test('the renderer rejects with the AppError itself', async () => {
    const { renderer } = testRenderer()
    const err = await refusal(renderer.render(parseQrSettings({ data: 'a'.repeat(1274), ecc: 'H' }), LANE))
    expect([err.status, err.code]).toEqual([400, 'invalid_parameter'])
  })
})

describe('the queue bound', () => {
  test('past it, 503 busy with Retry-After; what was accepted still renders', async () => {
    const { renderer } = testRenderer({ maxWaiting: 1, inFlight: 1 })
    const drawing = renderer.render(bigSettings(1), LANE)
    const waiting = renderer.render(bigSettings(2), LANE)
    const err = await refusal(renderer.render(bigSettings(3), LANE))
    expect([err.status, err.code, err.headers]).toEqual([503, 'busy', { 'Retry-After': '1' }])
    const res = errorResponse(err)
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('1')
    expect(await res.json()).toMatchObject({ status: 'error', code: 'busy' })
    isPng(await drawing)
    isPng(await waiting)
    // The queue has drained: renderings are accepted again.
    isPng(await renderer.render(parseQrSettings({ data: 'again' }), LANE))
  }, 30_000)

  test('a public image refused for it is a 503 page with Retry-After, not a 500', async () => {
    // One worker for all (no public one of its own), so that the public room fills.
    const { renderer } = testRenderer({ publicWaiting: 1, inFlight: 1, publicWorkers: 0 })
    const box = await makeBox({}, { qrRenderer: renderer })
    try {
      const codes = await Promise.all(
        [1, 2, 3].map(async (i) => (await box.links.create({ url: `https://example.com/${i}` }, null)).hex),
      )
      const answers = await Promise.all(codes.map((c) => box.request(`/qr/${c}.png`)))
      // Which of the three is refused depends on the order their cache-file reads fail in.
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 503])
      const refused = answers.find((a) => a.status === 503)!
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(refused.headers.get('content-type')).toContain('text/html')
    } finally {
      await box.cleanup()
    }
  }, 30_000)
})

describe('a worker that dies', () => {
  test('terminated: what it had fails with a 500, what was waiting is drawn by a new worker', async () => {
    const { renderer, spawned } = testRenderer({ inFlight: 2 })
    const lost = [renderer.render(bigSettings(1), LANE), renderer.render(bigSettings(2), LANE)]
    const queued = renderer.render(parseQrSettings({ data: 'queued' }), LANE)
    spawned[0]!.terminate()
    for (const p of lost) expect(await refusal(p)).toMatchObject({ status: 500, code: 'internal' })
    isPng(await queued)
    isPng(await renderer.render(parseQrSettings({ data: 'after' }), LANE))
    expect(spawned).toHaveLength(2)
  }, 30_000)

  test('an uncaught error in the worker (its error event) is handled the same way', async () => {
    let first = true
    const renderer = createQrRenderer({
      spawn: () => {
        const script = first ? URL.createObjectURL(new Blob(['throw new Error("broken worker")'])) : WORKER_URL
        first = false
        return new Worker(script)
      },
    })
    renderers.push(renderer)
    expect((await refusal(renderer.render(parseQrSettings({ data: 'lost' }), LANE))).status).toBe(500)
    isPng(await renderer.render(parseQrSettings({ data: 'after' }), LANE))
  }, 30_000)

  test('close fails what is waiting and in progress', async () => {
    const { renderer } = testRenderer()
    const renderings = [1, 2, 3].map((i) => renderer.render(bigSettings(i), LANE))
    renderer.close()
    for (const p of renderings) expect((await refusal(p)).code).toBe('internal')
  })
})

// Issue 36: a rendering stuck where the worker cannot be interrupted (resvg in native code; here a
// synchronous sleep, which terminate() cannot cut short either) must not stall what comes after it.
describe('the deadline', () => {
  const stuckUrl = (ms: number) => URL.createObjectURL(new Blob([`self.onmessage = () => Bun.sleepSync(${ms})`]))

  /** A renderer whose first `stuck` workers never answer (for `ms`), then real ones. */
  function stuckRenderer(stuck: number, ms: number, opts: QrRendererOptions) {
    const spawned: { worker: Worker; at: number; closed?: number }[] = []
    const renderer = createQrRenderer({
      ...opts,
      spawn: () => {
        const worker = new Worker(spawned.length < stuck ? stuckUrl(ms) : WORKER_URL)
        const entry: (typeof spawned)[number] = { worker, at: performance.now() }
        worker.addEventListener('close', () => (entry.closed = performance.now()))
        spawned.push(entry)
        return worker
      },
    })
    renderers.push(renderer)
    return { renderer, spawned }
  }

  test('a worker silent past it is abandoned: its oldest rendering refused, the other queued again and drawn by a new worker', async () => {
    // A deadline with room for a new worker to start on a loaded machine; the stuck one outlasts it well.
    const { renderer, spawned } = stuckRenderer(1, 4000, { deadlineMs: 1000, publicWorkers: 0, inFlight: 2 })
    const started = performance.now()
    const stuck = renderer.render(parseQrSettings({ data: 'stuck' }), LANE)
    const withLogo = renderer.render(
      { ...parseQrSettings({ data: 'again' }), ecc: 'H', logo: { kind: 'png', bytes: new Uint8Array(8) } },
      LANE,
    )
    const plain = await refusal(stuck)
    expect([plain.status, plain.code, plain.headers]).toEqual([503, 'busy', { 'Retry-After': '1' }])
    expect(performance.now() - started).toBeLessThan(3000)
    // Queued again, it went to the new worker, which refused the 8 bytes as a PNG: a 400 naming logo.
    const err = await refusal(withLogo)
    expect([err.status, err.message]).toEqual([400, expect.stringContaining('"logo"')])
    isPng(await renderer.render(parseQrSettings({ data: 'after' }), LANE))
    expect(spawned).toHaveLength(2)
  }, 30_000)

  test('a rendering with a logo past it is a 400 naming logo', async () => {
    const { renderer } = stuckRenderer(1, 1500, { deadlineMs: 300, publicWorkers: 0 })
    const err = await refusal(
      renderer.render(
        { ...parseQrSettings({ data: 'slow logo' }), ecc: 'H', logo: { kind: 'svg', bytes: new Uint8Array() } },
        LANE,
      ),
    )
    expect([err.status, err.code]).toEqual([400, 'invalid_parameter'])
    expect(err.message).toContain('"logo"')
    expect(err.message).toContain('took longer than 0.3 s')
  }, 30_000)

  test('public images have a worker of their own: answered at once while the shared one is stuck', async () => {
    const { renderer, spawned } = stuckRenderer(1, 3000, { deadlineMs: 10_000 })
    const stuck = renderer.render(parseQrSettings({ data: 'stuck' }), LANE).catch(() => null)
    await Bun.sleep(50)
    const started = performance.now()
    isPng(await renderer.render(parseQrSettings({ data: 'https://example.com/abc' }), PUBLIC_LANE))
    expect(performance.now() - started).toBeLessThan(1000)
    expect(spawned).toHaveLength(2)
    renderer.close()
    await stuck
  }, 30_000)

  test('at most two abandoned workers may still be running: the next waits for one to end', async () => {
    const { renderer, spawned } = stuckRenderer(2, 2500, { deadlineMs: 1000, publicWorkers: 0, inFlight: 1 })
    const first = refusal(renderer.render(parseQrSettings({ data: 'one' }), LANE))
    const second = refusal(renderer.render(parseQrSettings({ data: 'two' }), LANE))
    const third = renderer.render(parseQrSettings({ data: 'three' }), LANE)
    expect((await first).status).toBe(503)
    expect((await second).status).toBe(503)
    isPng(await third)
    expect(spawned).toHaveLength(3)
    // The third worker was started only after one of the stuck threads had ended.
    const ended = Math.min(spawned[0]!.closed ?? Infinity, spawned[1]!.closed ?? Infinity)
    expect(ended).toBeLessThanOrEqual(spawned[2]!.at)
  }, 30_000)
})
