// The request-line buffer (src/kernel/log-buffer.ts): lines go out together, off the request's path; while a write
// is under way the next ones wait, up to the bound, and past it they are dropped and counted, never waited
// for. And through the app: the count is in /metrics.
import { afterAll, describe, expect, test } from 'bun:test'
import { createLineBuffer, WAIT_MS, WRITE_AT } from '../../src/kernel/log-buffer'
import { createLogger } from '../../src/kernel/log'
import { makeBox, type TestBox } from '../support/app'

/** A buffer whose writes finish only when the test says so. */
function held(capacity: number) {
  const writes: string[] = []
  const pending: (() => void)[] = []
  const buffer = createLineBuffer({ capacity, write: (text, done) => (writes.push(text), pending.push(done)) })
  return { buffer, writes, finish: () => pending.shift()!() }
}

describe('createLineBuffer', () => {
  test('lines wait for one write of all of them, WAIT_MS after the first', async () => {
    const { buffer, writes } = held(10_000)
    expect(buffer.append('a\n')).toBe(true)
    expect(buffer.append('b\n')).toBe(true)
    expect(writes).toEqual([])
    await Bun.sleep(WAIT_MS / 2)
    expect(writes).toEqual([])
    await Bun.sleep(WAIT_MS)
    expect(writes).toEqual(['a\nb\n'])
  })

  test('past WRITE_AT characters the write starts at the next turn of the event loop', async () => {
    const { buffer, writes } = held(4 * WRITE_AT)
    const line = `${'x'.repeat(1023)}\n`
    for (let i = 0; i < WRITE_AT / 1024; i++) buffer.append(line)
    expect(writes).toEqual([]) // never on the request's path
    await new Promise((r) => setImmediate(r))
    expect(writes).toHaveLength(1)
    expect(writes[0]!.length).toBe(WRITE_AT)
  })

  test('the bound: while a write is under way lines wait up to `capacity`, then are dropped and counted', async () => {
    const { buffer, writes, finish } = held(100)
    const line = `${'y'.repeat(29)}\n` // 30 characters
    buffer.append(line)
    void buffer.idle() // starts the write at once (not awaited: it is held)
    expect(writes).toHaveLength(1)
    expect(buffer.writing).toBe(true)
    // The write has not finished: three lines fit beside it (90 ≤ 100), the next ones do not.
    const accepted = Array.from({ length: 6 }, () => buffer.append(line))
    expect(accepted).toEqual([true, true, true, false, false, false])
    expect(buffer.dropped).toBe(3)
    expect(buffer.pending).toBe(90)
    // Once it finishes, the waiting lines go out and new ones fit again; the count stays.
    finish()
    await Bun.sleep(WAIT_MS + 20)
    expect(writes).toEqual([line, line.repeat(3)])
    finish()
    expect(buffer.append(line)).toBe(true)
    expect(buffer.dropped).toBe(3)
  })

  test('a line longer than the whole bound is dropped, not cut', () => {
    const { buffer } = held(10)
    expect(buffer.append('z'.repeat(11))).toBe(false)
    expect(buffer.dropped).toBe(1)
    expect(buffer.pending).toBe(0)
  })

  test('idle() resolves once the lines are written, without waiting WAIT_MS', async () => {
    const writes: string[] = []
    const buffer = createLineBuffer({ capacity: 1000, write: (text, done) => (writes.push(text), setTimeout(done, 5)) })
    buffer.append('a\n')
    const started = performance.now()
    await buffer.idle()
    expect(writes).toEqual(['a\n'])
    expect(performance.now() - started).toBeLessThan(WAIT_MS)
  })
})

describe('through the app', () => {
  let box: TestBox
  afterAll(() => box?.cleanup())

  test('request lines past the bound are dropped and counted in /metrics; the rest are written whole', async () => {
    const out: string[] = []
    // Room for two request lines of ~250 characters.
    const logger = createLogger({
      format: 'json',
      requests: true,
      maxPendingChars: 600,
      write: (text) => void out.push(text),
    })
    box = await makeBox({}, { logger })
    const code = (await box.post('/api/getLink.json', { url: 'https://example.com/dropped' })).body.return.hex
    logger.flush()
    out.length = 0
    for (let i = 0; i < 10; i++) expect((await box.request(`/${code}`, { redirect: 'manual' })).status).toBe(302)
    const metrics = await (await box.readMetrics()).text()
    // Lines of the 10 redirects: the first ones that fit, the rest dropped (the /metrics line comes after).
    expect(metrics).toMatch(/^linkbox_log_lines_dropped_total ([1-9]\d*)$/m)
    const dropped = Number(/^linkbox_log_lines_dropped_total (\d+)$/m.exec(metrics)![1])
    logger.flush()
    const lines = out
      .join('')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.filter((l) => l.path === `/${code}`)).toHaveLength(10 - dropped)
    expect(dropped).toBeGreaterThanOrEqual(7)
    for (const l of lines) expect(l).toMatchObject({ msg: 'request', status: 302 })
  })
})
