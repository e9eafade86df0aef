// stats.json of a link clicked while it is polled (links/statistics.ts): a window ending today rereads today's
// row alone while the days before it are unchanged; a late click on a past day, a month's last day and the days'
// own window all give what reading the whole window gives. Real visits of the app on the real SQLite file.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const at = (iso: string) => Date.parse(iso)

describe('stats.json polled while its link is clicked', () => {
  let now = at('2026-05-10T10:00:00Z')
  let box: TestBox
  let code = ''
  beforeAll(async () => {
    box = await makeBox(
      {},
      { clock: () => now, clicks: { intervalMs: 3_600_000, maxBatch: 1_000_000, maxPending: 1_000_000 } },
    )
    code = (await box.post('/api/getLink.json', { url: 'https://example.com/polled' })).body.return.hex
  })
  afterAll(() => box.cleanup())

  const visit = async (when: string, referer: string, n = 1) => {
    const kept = now
    now = at(when)
    for (let i = 0; i < n; i++)
      await box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME, referer } })
    now = kept
  }
  const stats = async (fields: Record<string, string> = {}) => {
    const r = await box.post('/api/stats.json', { code, ...fields })
    expect(r.status).toBe(200)
    return r.body.return
  }
  /**
   * The same window read whole: asked with the clock a day on (so that it does not end today) and from a day
   * earlier (a window of its own in the answer cache; no clicks before 2026-05-08), that day then left out.
   */
  const whole = async (from: string, to: string) => {
    const kept = now
    now += 86_400_000
    try {
      const s = await stats({ from: new Date(Date.parse(from) - 86_400_000).toISOString().slice(0, 10), to })
      return { ...s, days: s.days.slice(1) }
    } finally {
      now = kept
    }
  }
  const shown = (s: any) => ({ clicks: s.clicks, days: s.days, sources: s.sources, browsers: s.browsers })

  test('today changes and the days before stay; each answer is the whole window’s', async () => {
    await visit('2026-05-08T09:00:00Z', 'https://news.example/', 3)
    await visit('2026-05-09T09:00:00Z', 'https://blog.example/', 2)
    await box.recorder.flush()
    for (let round = 1; round <= 4; round++) {
      await visit('2026-05-10T10:00:00Z', round % 2 ? 'https://news.example/' : 'https://mail.example/', round)
      // Pending clicks are written by stats.json itself (the flush of this link).
      const s = await stats({ from: '2026-04-11', to: '2026-05-10' })
      expect(s.days.at(-1)).toMatchObject({ date: '2026-05-10', clicks: (round * (round + 1)) / 2 })
      expect(s.days.at(-2)).toMatchObject({ date: '2026-05-09', clicks: 2 })
      expect(shown(s)).toEqual(shown(await whole('2026-04-11', '2026-05-10')))
    }
    // The default window (the last 30 days) too.
    expect(shown(await stats())).toEqual(shown(await whole('2026-04-11', '2026-05-10')))
  })

  test('a late click on a day before today is seen at once', async () => {
    const before = await stats({ from: '2026-04-11', to: '2026-05-10' })
    await visit('2026-05-09T23:59:59Z', 'https://late.example/')
    const s = await stats({ from: '2026-04-11', to: '2026-05-10' })
    expect(s.days.at(-2)).toMatchObject({ date: '2026-05-09', clicks: 3 })
    expect(s.clicks).toBe(before.clicks + 1)
    expect(s.sources.find((x: any) => x.name === 'late.example')).toEqual({ name: 'late.example', clicks: 1 })
    expect(shown(s)).toEqual(shown(await whole('2026-04-11', '2026-05-10')))
  })

  test('on a month’s last day (read whole) the answer is the whole window’s too', async () => {
    now = at('2026-05-31T12:00:00Z')
    await visit('2026-05-31T12:00:00Z', 'https://news.example/', 2)
    const s = await stats({ from: '2026-05-01', to: '2026-05-31' })
    expect(s.days.at(-1)).toMatchObject({ date: '2026-05-31', clicks: 2 })
    expect(shown(s)).toEqual(shown(await whole('2026-05-01', '2026-05-31')))
  })
})
