// Clicks and statistics (SPEC §3–4): classification, bots, buffered batched writes, daily aggregates.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { classifyUserAgent, sourceOf } from '../src/clicks/classify'
import { makeBox, type TestBox } from './support/app'

const UA = {
  chromeWin: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
  safariIphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  ipad: 'Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  firefoxLinux: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
  googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  curl: 'curl/8.5.0',
}

describe('classification (pure)', () => {
  test('devices, browsers and systems', () => {
    expect(classifyUserAgent(UA.chromeWin)).toEqual({ bot: false, device: 'desktop', browser: 'Chrome', os: 'Windows' })
    expect(classifyUserAgent(UA.safariIphone)).toMatchObject({ bot: false, device: 'mobile', browser: 'Mobile Safari', os: 'iOS' })
    expect(classifyUserAgent(UA.ipad)).toMatchObject({ device: 'tablet' })
    expect(classifyUserAgent(UA.firefoxLinux)).toMatchObject({ device: 'desktop', browser: 'Firefox', os: 'Linux' })
    expect(classifyUserAgent('')).toMatchObject({ bot: false, device: 'other' })
  })
  test('bots by user agent (isbot)', () => {
    expect(classifyUserAgent(UA.googlebot).bot).toBe(true)
    expect(classifyUserAgent(UA.curl).bot).toBe(true)
    expect(classifyUserAgent(UA.chromeWin).bot).toBe(false)
  })
  test('sources are referrer hosts, "direct" when none', () => {
    expect(sourceOf('')).toBe('direct')
    expect(sourceOf('https://www.Example.com/path?q')).toBe('example.com')
    expect(sourceOf('android-app://com.slack')).toBe('direct')
    expect(sourceOf('not a url')).toBe('direct')
  })
})

describe('recording and statistics', () => {
  let now = Date.parse('2026-03-10T08:00:00Z')
  let box: TestBox
  let code: string
  beforeAll(async () => {
    box = await makeBox({}, { clock: () => now, clicks: { intervalMs: 3_600_000 } })
    code = (await box.post('/api/getLink.json', { url: 'https://example.com/stats' })).body.return.hex
  })
  afterAll(() => box.cleanup())
  const visit = (ua: string, referer?: string) =>
    box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': ua, ...(referer ? { referer } : {}) } })

  test('a visit is buffered, not written, until the flush', async () => {
    await visit(UA.chromeWin, 'https://news.example.com/')
    expect(box.recorder.pending).toBe(1)
    expect(box.db.query('SELECT count(*) AS n FROM click_days').get()).toEqual({ n: 0 })
    box.recorder.flush()
    expect(box.recorder.pending).toBe(0)
    expect(box.db.query('SELECT day, clicks, bots FROM click_days').all()).toEqual([{ day: '2026-03-10', clicks: 1, bots: 0 }])
  })

  test('no address is stored anywhere', async () => {
    const tables = box.db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]
    for (const { name } of tables) {
      const cols = box.db.query(`PRAGMA table_info(${name})`).all() as { name: string }[]
      expect(cols.map((c) => c.name).filter((c) => /ip|addr/i.test(c))).toEqual([])
    }
  })

  test('stats.json: days with zeros, sources, devices, browsers, os; bots apart', async () => {
    await visit(UA.safariIphone, 'https://news.example.com/x')
    await visit(UA.safariIphone)
    await visit(UA.googlebot)
    now = Date.parse('2026-03-12T23:59:00Z')
    await visit(UA.firefoxLinux, 'https://www.social.example/feed')
    await visit(UA.ipad)
    const r = await box.post('/api/stats.json', { code, from: '2026-03-09', to: '2026-03-13' })
    expect(r.status).toBe(200)
    const s = r.body.return
    expect(s).toMatchObject({ hex: code, url: `http://localhost:8080/${code}`, long_url: 'https://example.com/stats', clicks: 5, bots: 1, from: '2026-03-09', to: '2026-03-13' })
    expect(s.days).toEqual([
      { date: '2026-03-09', clicks: 0 },
      { date: '2026-03-10', clicks: 3 },
      { date: '2026-03-11', clicks: 0 },
      { date: '2026-03-12', clicks: 2 },
      { date: '2026-03-13', clicks: 0 },
    ])
    expect(s.sources).toEqual([
      { name: 'direct', clicks: 2 },
      { name: 'news.example.com', clicks: 2 },
      { name: 'social.example', clicks: 1 },
    ])
    // Ties are broken by name, so the order is fixed.
    expect(s.devices).toEqual([
      { name: 'desktop', clicks: 2 },
      { name: 'mobile', clicks: 2 },
      { name: 'tablet', clicks: 1 },
    ])
    expect(s.browsers).toEqual([
      { name: 'Mobile Safari', clicks: 3 },
      { name: 'Chrome', clicks: 1 },
      { name: 'Firefox', clicks: 1 },
    ])
    expect(s.os).toEqual([
      { name: 'iOS', clicks: 3 },
      { name: 'Linux', clicks: 1 },
      { name: 'Windows', clicks: 1 },
    ])
    // The window narrows every breakdown; the all-time totals stay.
    const one = (await box.post('/api/stats.json', { code, from: '2026-03-12', to: '2026-03-12' })).body.return
    expect(one.days).toEqual([{ date: '2026-03-12', clicks: 2 }])
    expect(one.sources).toEqual([{ name: 'direct', clicks: 1 }, { name: 'social.example', clicks: 1 }])
    expect(one.clicks).toBe(5)
  })

  test('the default window is the last 30 UTC days, ending today', async () => {
    const s = (await box.post('/api/stats.json', { code })).body.return
    expect(s.to).toBe('2026-03-12')
    expect(s.from).toBe('2026-02-11')
    expect(s.days).toHaveLength(30)
  })

  test('1000 buffered clicks trigger a flush without waiting for the timer', async () => {
    const before = box.recorder.flushed
    await Promise.all(Array.from({ length: 1000 }, () => visit(UA.chromeWin)))
    await new Promise((r) => setTimeout(r, 10))
    expect(box.recorder.flushed - before).toBeGreaterThanOrEqual(1000)
    expect(box.recorder.pending).toBeLessThan(1000)
  })

  test('statistics read aggregates: the rows do not grow with clicks', async () => {
    const rows = () => (box.db.query('SELECT (SELECT count(*) FROM click_days) + (SELECT count(*) FROM click_months) AS n').get() as { n: number }).n
    box.recorder.flush()
    const before = rows()
    await Promise.all(Array.from({ length: 500 }, () => visit(UA.chromeWin)))
    box.recorder.flush()
    expect(rows()).toBe(before)
    const plan = box.db.query("EXPLAIN QUERY PLAN SELECT day, clicks FROM click_days WHERE link_id = 1 AND day BETWEEN '2026-01-01' AND '2026-02-01'").all() as { detail: string }[]
    expect(plan.map((p) => p.detail).join(' ')).toContain('PRIMARY KEY')
  })

  test('clicks pending for a deleted link are dropped at the flush, not an error', async () => {
    const k = await box.account('deleter')
    const c = (await box.post('/api/getLink.json', { url: 'https://example.com/del' }, { 'x-api-key': k })).body.return.hex
    await box.request(`/${c}`, { redirect: 'manual', headers: { 'user-agent': UA.chromeWin } })
    expect(box.recorder.pending).toBeGreaterThan(0)
    expect((await box.post('/api/delete.json', { code: c }, { 'x-api-key': k })).status).toBe(200)
    expect(() => box.recorder.flush()).not.toThrow()
    expect(box.recorder.pending).toBe(0)
  })
})

test('while writes fail, clicks are kept for the next flush, up to a cap; past it the oldest go and are counted', async () => {
  const box = await makeBox({}, { clicks: { intervalMs: 3_600_000, maxBatch: 5, maxPending: 8 } })
  try {
    const code = (await box.post('/api/getLink.json', { url: 'https://example.com/cap' })).body.return.hex
    box.db.exec('ALTER TABLE click_days RENAME TO click_days_away') // every write now fails
    const quiet = console.error
    console.error = () => {}
    try {
      for (let i = 0; i < 12; i++) await box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': UA.chromeWin } })
      await new Promise((r) => setTimeout(r, 10))
      expect(box.recorder.pending).toBe(8)
      expect(box.recorder.dropped).toBe(4)
      expect(await (await box.request('/metrics')).text()).toContain('linkbox_clicks_dropped_total 4')
    } finally {
      console.error = quiet
    }
    box.db.exec('ALTER TABLE click_days_away RENAME TO click_days')
    box.recorder.flush()
    expect(box.recorder.pending).toBe(0)
    expect((box.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks).toBe(8)
  } finally {
    await box.cleanup()
  }
})
