// Clicks and statistics (SPEC §3–4): classification, bots, buffered batched writes, daily aggregates.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { classifyUserAgent, sourceOf } from '../../src/clicks/classify'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { capturedLog, makeBox, type TestBox } from '../support/app'

/** Polls `ready` (the deadline only ends a hung test with a message; nothing here is timed). */
async function until(what: string, ready: () => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`)
    await Bun.sleep(10)
  }
}

const UA = {
  chromeWin:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
  safariIphone:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  ipad: 'Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  firefoxLinux: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
  googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  curl: 'curl/8.5.0',
}

describe('classification (pure)', () => {
  test('devices, browsers and systems', () => {
    expect(classifyUserAgent(UA.chromeWin)).toEqual({ bot: false, device: 'desktop', browser: 'Chrome', os: 'Windows' })
    expect(classifyUserAgent(UA.safariIphone)).toMatchObject({
      bot: false,
      device: 'mobile',
      browser: 'Mobile Safari',
      os: 'iOS',
    })
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
    await box.recorder.flush()
    expect(box.recorder.pending).toBe(0)
    expect(box.db.query('SELECT day, clicks, bots FROM click_days').all()).toEqual([
      { day: '2026-03-10', clicks: 1, bots: 0 },
    ])
  })

  test('no address is stored anywhere', async () => {
    const tables = box.db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]
    // E-mail addresses are what a mailbox is stored by; these columns hold them and nothing else. The audit
    // log keeps the client address of each change an account makes and of each sign-in (SPEC §7): never a
    // visitor's — a visit writes no audit row (checked below).
    const allowed = new Set(['mailboxes.address', 'mail_messages.from_address', 'audit_log.address'])
    for (const { name } of tables) {
      const cols = box.db.query(`PRAGMA table_info(${name})`).all() as { name: string }[]
      expect(
        cols.map((c) => c.name).filter((c) => /(^|_)ip($|_)|addr/i.test(c) && !allowed.has(`${name}.${c}`)),
      ).toEqual([])
    }
    const code = (await box.post('/api/getLink.json', { url: 'https://example.com/no-address' })).body.return.hex
    const rowsBefore = (box.db.query('SELECT count(*) AS n FROM audit_log').get() as { n: number }).n
    await box.request(`/${code}`, {
      redirect: 'manual',
      headers: { 'user-agent': UA.chromeWin, 'x-forwarded-for': '203.0.113.9' },
    })
    await box.recorder.flush()
    expect((box.db.query('SELECT count(*) AS n FROM audit_log').get() as { n: number }).n).toBe(rowsBefore)
    expect(JSON.stringify(box.db.query('SELECT * FROM audit_log').all())).not.toContain('203.0.113.9')
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
    expect(s).toMatchObject({
      hex: code,
      url: `http://localhost:8080/${code}`,
      long_url: 'https://example.com/stats',
      clicks: 5,
      bots: 1,
      from: '2026-03-09',
      to: '2026-03-13',
    })
    // Visitors: one address (the test's), known with each user agent: two on the 10th (Chrome, Safari
    // twice), two on the 12th; the bot is no visitor.
    expect(s.days).toEqual([
      { date: '2026-03-09', clicks: 0, visitors: 0 },
      { date: '2026-03-10', clicks: 3, visitors: 2 },
      { date: '2026-03-11', clicks: 0, visitors: 0 },
      { date: '2026-03-12', clicks: 2, visitors: 2 },
      { date: '2026-03-13', clicks: 0, visitors: 0 },
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
    expect(one.days).toEqual([{ date: '2026-03-12', clicks: 2, visitors: 2 }])
    expect(one.sources).toEqual([
      { name: 'direct', clicks: 1 },
      { name: 'social.example', clicks: 1 },
    ])
    expect(one.clicks).toBe(5)
  })

  test('the default window is the last 30 UTC days, ending today', async () => {
    const s = (await box.post('/api/stats.json', { code })).body.return
    expect(s.to).toBe('2026-03-12')
    expect(s.from).toBe('2026-02-11')
    expect(s.days).toHaveLength(30)
  })

  test('visits are counted at once, per link, day and name: 1000 clicks on one link are one small batch', async () => {
    await box.recorder.flush()
    const before = box.recorder.flushed
    await Promise.all(Array.from({ length: 1000 }, () => visit(UA.chromeWin)))
    expect(box.recorder.pending).toBe(1000)
    expect(await box.recorder.flush()).toBe(1000)
    expect(box.recorder.flushed - before).toBe(1000)
    expect(box.recorder.pending).toBe(0)
  })

  test('statistics read aggregates: the rows do not grow with clicks', async () => {
    const rows = () =>
      (
        box.db.query('SELECT (SELECT count(*) FROM click_days) + (SELECT count(*) FROM click_months) AS n').get() as {
          n: number
        }
      ).n
    await box.recorder.flush()
    const before = rows()
    await Promise.all(Array.from({ length: 500 }, () => visit(UA.chromeWin)))
    await box.recorder.flush()
    expect(rows()).toBe(before)
    // Prepared apart and finalized: an EXPLAIN statement left open would hold a read snapshot (and the WAL).
    const explain = box.db.prepare(
      "EXPLAIN QUERY PLAN SELECT day, clicks FROM click_days WHERE link_id = 1 AND day BETWEEN '2026-01-01' AND '2026-02-01'",
    )
    const plan = explain.all() as { detail: string }[]
    explain.finalize()
    expect(plan.map((p) => p.detail).join(' ')).toContain('PRIMARY KEY')
  })

  test('clicks pending for a deleted link are dropped at the flush, not an error', async () => {
    const k = await box.account('deleter')
    const c = (await box.post('/api/getLink.json', { url: 'https://example.com/del' }, { 'x-api-key': k })).body.return
      .hex
    await box.request(`/${c}`, { redirect: 'manual', headers: { 'user-agent': UA.chromeWin } })
    expect(box.recorder.pending).toBeGreaterThan(0)
    expect((await box.post('/api/delete.json', { code: c }, { 'x-api-key': k })).status).toBe(200)
    expect(await box.recorder.flush()).toBe(1) // counted as written: the transaction committed, without the row
    expect(box.recorder.pending).toBe(0)
  })
})

test('while writes fail, the counters are kept for the next flush, up to a cap; past it a click that needs a new one is dropped and counted', async () => {
  const { logger, errors } = capturedLog()
  const box = await makeBox({}, { logger, clicks: { intervalMs: 3_600_000, maxPending: 8 } })
  try {
    const code = (await box.post('/api/getLink.json', { url: 'https://example.com/cap' })).body.return.hex
    const visit = (from: number) =>
      box.request(`/${code}`, {
        redirect: 'manual',
        headers: { 'user-agent': UA.chromeWin, referer: `https://r${from}.example/` },
      })
    box.db.exec('ALTER TABLE click_days RENAME TO click_days_away') // every write now fails (on any connection)
    // The first click takes 3 counters (its link-day, its profile — referrer, device, browser, system —
    // and that profile's count under the link-day); each new referrer 2 more: the fourth does not fit.
    for (let i = 0; i < 12; i++) await visit(i)
    expect(box.recorder.pending).toBe(3)
    expect(box.recorder.dropped).toBe(9)
    await box.recorder.flushIfWritable()
    expect(box.recorder.failing).toBe(true)
    expect(box.recorder.pending).toBe(3) // the failed batch is back, nothing lost
    // Clicks that fit the counters held are never dropped, however many.
    for (let i = 0; i < 20; i++) await visit(i % 3)
    expect(box.recorder.pending).toBe(23)
    expect(box.recorder.dropped).toBe(9)
    const metrics = await (await box.readMetrics()).text()
    expect(metrics).toContain('linkbox_clicks_dropped_total 9')
    expect(metrics).toContain('linkbox_click_buffer 23')
    expect(errors).toEqual([expect.stringMatching(/^click writes failing: no such table: click_days/)])
    box.db.exec('ALTER TABLE click_days_away RENAME TO click_days')
    expect(await box.recorder.flush()).toBe(23)
    expect(box.recorder.pending).toBe(0)
    expect((box.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks).toBe(23)
    const sources = (await box.post('/api/stats.json', { code })).body.return.sources
    expect(sources).toEqual([
      { name: 'r0.example', clicks: 8 },
      { name: 'r1.example', clicks: 8 },
      { name: 'r2.example', clicks: 7 },
    ])
  } finally {
    await box.cleanup()
  }
})

describe('the writer thread', () => {
  const chrome = { redirect: 'manual' as const, headers: { 'user-agent': UA.chromeWin } }

  test('clicks are written on a connection of their own: the main one may be read-only, and never checkpoints', async () => {
    const box = await makeBox({}, { clicks: { intervalMs: 3_600_000 } })
    try {
      const code = (await box.post('/api/getLink.json', { url: 'https://example.com/own' })).body.return.hex
      for (let i = 0; i < 3; i++) await box.request(`/${code}`, chrome)
      box.db.exec('PRAGMA query_only = ON') // only the main connection
      expect(await box.recorder.flush()).toBe(3)
      box.db.exec('PRAGMA query_only = OFF')
      expect(box.db.query('SELECT clicks FROM links WHERE code = ?').get(code)).toEqual({ clicks: 3 })
      expect(box.db.query('PRAGMA wal_autocheckpoint').get()).toEqual({ wal_autocheckpoint: 0 })
    } finally {
      await box.cleanup()
    }
  })

  test('the WAL written by the main connection (new links) is checkpointed by the thread, not in the request', async () => {
    const box = await makeBox({}, { clicks: { intervalMs: 3_600_000, checkpointMs: 20 } })
    try {
      const file = join(box.dir, 'linkbox.db')
      box.recorder.start()
      await box.recorder.flush() // the thread is up
      // The schema the migrations wrote is in the WAL until the thread's first checkpoint, which may run
      // at any moment (every 20 ms here): wait for it, so that it cannot land inside the write below.
      for (let i = 0; i < 200 && statSync(file).size <= 4096; i++) await Bun.sleep(10)
      const before = statSync(file).size
      // ~1500 pages in one commit: past SQLite's automatic checkpoint (1000 pages) had it been on.
      box.db.exec(
        'CREATE TABLE filler AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500) SELECT randomblob(3000) AS b FROM n',
      )
      expect(statSync(file).size).toBe(before) // the pages are only in the WAL: no checkpoint ran here
      await until('the thread to checkpoint', () => statSync(file).size > before + 1000 * 3000)
    } finally {
      await box.cleanup()
    }
  })

  test('a thread that dies holding a batch it did not commit: one log line, the batch written on the main thread, once', async () => {
    const log: string[] = []
    const box = await makeBox(
      {},
      {
        clicks: {
          intervalMs: 3_600_000,
          log: (l) => log.push(l),
          spawnWriter: () => new Worker(join(import.meta.dir, '../support/dying-writer.ts')),
        },
      },
    )
    try {
      const code = (await box.post('/api/getLink.json', { url: 'https://example.com/dies' })).body.return.hex
      for (let i = 0; i < 5; i++) await box.request(`/${code}`, chrome)
      expect(await box.recorder.flush()).toBe(5)
      expect(log).toEqual([
        expect.stringMatching(
          /^click writer thread stopped \(.*the writer died before its commit\); clicks are written on the main thread from now on$/,
        ),
      ])
      for (let i = 0; i < 2; i++) await box.request(`/${code}`, chrome)
      expect(await box.recorder.flush()).toBe(2)
      expect(box.db.query('SELECT clicks FROM links WHERE code = ?').get(code)).toEqual({ clicks: 7 })
      expect(box.recorder.dropped).toBe(0)
      expect(log).toHaveLength(1)
      expect(box.db.query('PRAGMA wal_autocheckpoint').get()).toEqual({ wal_autocheckpoint: 1000 })
    } finally {
      await box.cleanup()
    }
  })

  test('a thread that dies right after its commit: the batch is not written again, and is reported', async () => {
    const log: string[] = []
    const box = await makeBox(
      {},
      {
        clicks: {
          intervalMs: 3_600_000,
          log: (l) => log.push(l),
          spawnWriter: () =>
            new Worker(join(import.meta.dir, '../support/dying-writer.ts'), {
              env: { DIE_AFTER_COMMIT: '1' },
            } as WorkerOptions),
        },
      },
    )
    try {
      const code = (await box.post('/api/getLink.json', { url: 'https://example.com/dies-late' })).body.return.hex
      for (let i = 0; i < 4; i++) await box.request(`/${code}`, chrome)
      expect(await box.recorder.flush()).toBe(0)
      expect(box.db.query('SELECT clicks FROM links WHERE code = ?').get(code)).toEqual({ clicks: 4 })
      expect(box.recorder.dropped).toBe(4)
      expect(box.recorder.pending).toBe(0)
      expect(log).toHaveLength(2)
      expect(log[1]).toBe(
        '4 clicks may or may not have been written when the writer thread stopped; they are not written again (counted as dropped)',
      )
    } finally {
      await box.cleanup()
    }
  })
})
