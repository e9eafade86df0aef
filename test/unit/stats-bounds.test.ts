// What a visitor can make a link's statistics cost (issue 6, finding 4 and the user-agent cost in 9): the
// names stored per link, day and dimension, the names an answer carries, and the user agents parsed.
// Everything goes through real visits of the app and the real SQLite file.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const sum = (xs: { clicks: number }[]) => xs.reduce((a, x) => a + x.clicks, 0)

describe("distinct referrers cannot grow a link's statistics", () => {
  let now = Date.parse('2026-05-01T10:00:00Z')
  let box: TestBox
  beforeAll(async () => {
    box = await makeBox(
      {},
      { clock: () => now, clicks: { intervalMs: 3_600_000, maxBatch: 1_000_000, maxPending: 1_000_000 } },
    )
  })
  afterAll(() => box.cleanup())
  const newLink = async () =>
    (await box.post('/api/getLink.json', { url: 'https://example.com/poisoned' })).body.return.hex as string
  const visit = (code: string, referer: string, ua = CHROME) =>
    box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': ua, referer } })
  // The names a link-day holds for a dimension, from the `dims` JSON of its click_days row.
  const storedNames = (code: string, dim: string) =>
    box.db
      .query(
        `SELECT day, (SELECT count(*) FROM json_each(dims, '$.' || ?2)) AS names,
              (SELECT coalesce(sum(value), 0) FROM json_each(dims, '$.' || ?2)) AS clicks
       FROM click_days WHERE link_id = (SELECT id FROM links WHERE code = ?1) ORDER BY day`,
      )
      .all(code, dim) as { day: string; names: number; clicks: number }[]

  test('3000 distinct referrer hosts in a day: at most 50 names and "other" stored, and in the answer; totals add up', async () => {
    const code = await newLink()
    // A few real sources first, so they hold their places; then the flood, in two flushes.
    for (let i = 0; i < 5; i++) await visit(code, 'https://news.example/a')
    for (let i = 0; i < 1500; i++) await visit(code, `https://spam${i}.example/`)
    await box.recorder.flush()
    for (let i = 1500; i < 3000; i++) await visit(code, `https://spam${i}.example/`)
    for (let i = 0; i < 5; i++) await visit(code, 'https://news.example/b')
    await box.recorder.flush()

    expect(storedNames(code, 'source')).toEqual([{ day: '2026-05-01', names: 51, clicks: 3010 }])
    const other = box.db
      .query(
        `SELECT dims ->> '$.source.other' AS clicks FROM click_days WHERE link_id = (SELECT id FROM links WHERE code = ?)`,
      )
      .get(code)
    expect(other).toEqual({ clicks: 3010 - 10 - 49 }) // news.example (10 clicks) and 49 spam hosts kept their places

    const r = await box.post('/api/stats.json', { code })
    expect(r.status).toBe(200)
    const s = r.body.return
    expect(s.clicks).toBe(3010)
    expect(s.sources).toHaveLength(51)
    expect(s.sources[0]).toEqual({ name: 'other', clicks: 2951 })
    expect(s.sources[1]).toEqual({ name: 'news.example', clicks: 10 })
    for (const list of [s.sources, s.devices, s.browsers, s.os]) expect(sum(list)).toBe(3010)
    expect(JSON.stringify(r.body).length).toBeLessThan(8_000)
    // The public page carries the same bounded lists.
    const page = await (await box.request(`/${code}+`)).text()
    expect(page.length).toBeLessThan(60_000)
    expect(page).not.toContain('spam2999.example')
  })

  test('over a window of days the answer carries at most 50 names; the rest are summed as "other"', async () => {
    const code = await newLink()
    const start = Date.parse('2026-06-01T12:00:00Z')
    // 10 days with 40 new names each: every day stores all of its names (under the cap), 400 in all.
    for (let day = 0; day < 10; day++) {
      now = start + day * 86_400_000
      for (let i = 0; i < 40; i++) for (let k = 0; k <= i % 3; k++) await visit(code, `https://d${day}-n${i}.example/`)
    }
    await box.recorder.flush()
    const perDay = storedNames(code, 'source')
    expect(perDay).toHaveLength(10)
    for (const d of perDay) expect(d.names).toBe(40)

    const s = (await box.post('/api/stats.json', { code, from: '2026-06-01', to: '2026-06-10' })).body.return
    // Names with i % 3 = 0, 1, 2 get 1, 2, 3 clicks: 14 + 2 × 13 + 3 × 13 = 79 a day.
    const clicks = 790
    expect(perDay.reduce((a, d) => a + d.clicks, 0)).toBe(clicks)
    expect(s.clicks).toBe(clicks)
    expect(s.sources).toHaveLength(51)
    expect(s.sources.filter((x: { name: string }) => x.name === 'other')).toHaveLength(1)
    expect(sum(s.sources)).toBe(clicks)
    // The 50 named are the busiest (3 clicks each), and the list is sorted by clicks.
    const named = s.sources.filter((x: { name: string }) => x.name !== 'other')
    expect(named.every((x: { clicks: number }) => x.clicks === 3)).toBe(true)
    const order = s.sources.map((x: { clicks: number }) => x.clicks)
    expect(order).toEqual([...order].sort((a: number, b: number) => b - a))
    expect(s.sources[0]).toEqual({ name: 'other', clicks: 790 - 150 })
  })

  test('a name that holds a place keeps counting after the day is full', async () => {
    now = Date.parse('2026-07-01T09:00:00Z')
    const code = await newLink()
    await visit(code, 'https://early.example/')
    for (let i = 0; i < 100; i++) await visit(code, `https://flood${i}.example/`)
    await box.recorder.flush()
    for (let i = 0; i < 7; i++) await visit(code, 'https://early.example/')
    await box.recorder.flush()
    const s = (await box.post('/api/stats.json', { code, from: '2026-07-01', to: '2026-07-01' })).body.return
    expect(s.sources).toContainEqual({ name: 'early.example', clicks: 8 })
    expect(sum(s.sources)).toBe(108)
  })

  test('a referrer host spelled "other" is not confused with the rest: it is kept as "other."', async () => {
    now = Date.parse('2026-08-01T09:00:00Z')
    const code = await newLink()
    for (let i = 0; i < 3; i++) await visit(code, 'http://other/')
    await visit(code, 'https://www.other/x')
    for (let i = 0; i < 60; i++) await visit(code, `https://filler${i}.example/`)
    await box.recorder.flush()
    const s = (await box.post('/api/stats.json', { code, from: '2026-08-01', to: '2026-08-01' })).body.return
    // 61 names: "other." and 49 fillers are named, 11 fillers are the rest.
    expect(s.sources).toContainEqual({ name: 'other.', clicks: 4 })
    expect(s.sources).toContainEqual({ name: 'other', clicks: 11 })
    expect(s.sources).toHaveLength(51)
    expect(sum(s.sources)).toBe(64)
  })
})

describe('user agents', () => {
  let now = Date.parse('2026-05-01T10:00:00.000Z')
  let box: TestBox
  let code: string
  beforeAll(async () => {
    box = await makeBox(
      {},
      { clock: () => now, clicks: { intervalMs: 3_600_000, maxBatch: 1_000_000, maxPending: 1_000_000 } },
    )
    code = (await box.post('/api/getLink.json', { url: 'https://example.com/ua' })).body.return.hex
  })
  afterAll(() => box.cleanup())
  const visit = (ua: string) => box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': ua } })
  const stats = async (day: string) => (await box.post('/api/stats.json', { code, from: day, to: day })).body.return

  test('only the first 256 characters of a user agent are kept and looked at', async () => {
    now = Date.parse('2026-05-01T10:00:00.000Z')
    // "Googlebot" past character 256 would make the click a bot's, were the whole string parsed.
    await visit(`${CHROME} ${'x'.repeat(256)} Googlebot/2.1`)
    await box.recorder.flush()
    const s = await stats('2026-05-01')
    expect({ clicks: s.clicks, bots: s.bots }).toEqual({ clicks: 1, bots: 0 })
    expect(s.browsers).toEqual([{ name: 'Chrome', clicks: 1 }])
  })

  test('a flood of distinct user agents: at most 200 new ones are parsed per second, the rest count as unknown', async () => {
    now = Date.parse('2026-05-02T10:00:00.000Z')
    await visit(CHROME) // parsed in this second; from the cache in the next, whatever the flood
    now += 1000
    for (let i = 0; i < 500; i++)
      await visit(`Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.${i}`)
    await visit(CHROME)
    await box.recorder.flush()
    let s = await stats('2026-05-02')
    expect(sum(s.days)).toBe(502)
    expect(s.browsers).toEqual([
      { name: 'Unknown', clicks: 300 },
      { name: 'Firefox', clicks: 200 },
      { name: 'Chrome', clicks: 2 },
    ])
    expect(sum(s.os)).toBe(502)
    expect(sum(s.devices)).toBe(502)
    // The next second has a new allowance.
    now += 1000
    for (let i = 500; i < 510; i++)
      await visit(`Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.${i}`)
    await box.recorder.flush()
    s = await stats('2026-05-02')
    expect(s.browsers).toContainEqual({ name: 'Firefox', clicks: 210 })
  })
})
