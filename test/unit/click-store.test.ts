// The click storage of issue 7 on a real SQLite file: a link-day's names in one JSON column, months that add
// up their days, and window answers read from months and edge days. The property: whatever the batches and
// the window, the names read for a window are exactly the sum of the day rows inside it, and every month
// row is exactly the sum of its days — so an answer does not depend on how the window was read.
import { afterAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { MAX_NAMES, OTHER } from '../../src/clicks/classify'
import { DAY_MS, newDayCounts, type ClickBatch } from '../../src/clicks/batch'
import {
  bump,
  DIMENSIONS,
  parseDims,
  placeByVolume,
  placeNames,
  stringifyDims,
  wholeMonths,
} from '../../src/clicks/names'
import { LINKS_PER_COMMIT, PartialWrite } from '../../src/clicks/storage/contract'
import { sqliteClickCounts, sqliteClickWriter } from '../../src/clicks/storage/sqlite'
import { openDatabase } from '../../src/db/sqlite'
import { makeBox, tempDir } from '../support/app'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function freshDb() {
  const dir = tempDir('linkbox-clickstore-')
  dirs.push(dir)
  const db = openDatabase(join(dir, 'linkbox.db'))
  for (const id of [1, 2])
    db.query('INSERT INTO links (id, code, long_url, created, updated) VALUES (?1, ?2, ?3, 0, 0)').run(
      id,
      `code${id}`,
      'https://example.com/',
    )
  return db
}

test('wholeMonths: the whole months inside a window, none when it has none', () => {
  expect(wholeMonths('2026-01-01', '2026-12-31')).toEqual(['2026-01', '2026-12'])
  expect(wholeMonths('2026-01-15', '2026-03-31')).toEqual(['2026-02', '2026-03'])
  expect(wholeMonths('2025-12-02', '2026-02-27')).toEqual(['2026-01', '2026-01'])
  expect(wholeMonths('2024-02-01', '2024-02-29')).toEqual(['2024-02', '2024-02']) // leap year
  expect(wholeMonths('2023-02-01', '2023-02-28')).toEqual(['2023-02', '2023-02'])
  const [a, b] = wholeMonths('2026-01-02', '2026-01-30')
  expect(a > b).toBe(true)
  const [c, d] = wholeMonths('2025-12-31', '2026-01-30')
  expect(c > d).toBe(true)
})

test('placeNames: places are kept, new names take free places busiest first, the rest is OTHER', () => {
  const day = new Map<string, number>()
  const full = new Map(Array.from({ length: MAX_NAMES - 1 }, (_, i) => [`n${i}`, 1] as [string, number]))
  expect(placeNames(day, full).size).toBe(MAX_NAMES - 1)
  const stored = placeNames(
    day,
    new Map([
      ['small', 1],
      ['big', 9],
      ['n0', 2],
    ]),
  )
  expect(stored).toEqual(
    new Map([
      ['big', 9],
      ['n0', 2],
      [OTHER, 1],
    ]),
  )
  expect(day.get('n0')).toBe(3)
  expect(day.get(OTHER)).toBe(1)
  expect(day.size).toBe(MAX_NAMES + 1)
})

test('placeByVolume: a full month lets its smallest name give way to a busier newcomer; sums stay exact', () => {
  const month = new Map<string, number>()
  placeByVolume(
    month,
    new Map([
      ['a', 5],
      ['b', 1],
      ['c', 3],
    ]),
    3,
  )
  expect(month).toEqual(
    new Map([
      ['a', 5],
      ['c', 3],
      ['b', 1],
    ]),
  )
  placeByVolume(
    month,
    new Map([
      ['d', 2],
      ['e', 1],
    ]),
    3,
  ) // d displaces b (1); e (1) is not busier than c, d
  expect(month).toEqual(
    new Map([
      ['a', 5],
      ['c', 3],
      [OTHER, 2],
      ['d', 2],
    ]),
  )
  placeByVolume(
    month,
    new Map([
      ['a', 1],
      [OTHER, 4],
    ]),
    3,
  )
  expect(month.get('a')).toBe(6)
  expect(month.get(OTHER)).toBe(6)
  expect([...month.values()].reduce((x, y) => x + y)).toBe(5 + 1 + 3 + 2 + 1 + 1 + 4)
})

test('names are data: "__proto__" and "constructor" are stored and read like any host', () => {
  const dims = parseDims('{}')
  bump(dims.source, '__proto__', 2)
  bump(dims.source, 'constructor', 1)
  const text = stringifyDims(dims)
  const back = parseDims(text)
  expect([...back.source]).toEqual([
    ['__proto__', 2],
    ['constructor', 1],
  ])
  expect(Object.getPrototypeOf({})).toBe(Object.prototype)
  // A damaged column reads as empty rather than failing the answer.
  expect(parseDims('not json').source.size).toBe(0)
  expect(parseDims('{"source": {"a": "x", "b": 2}}').source).toEqual(new Map([['b', 2]]))
})

// A batch: clicks of links 1 and 2 on days within ~100 days, names from a small pool and a large one (so
// that some days fill up and send clicks to OTHER).
const START_DAY = Math.floor(Date.parse('2026-01-20T00:00:00Z') / DAY_MS)
const clickArb = fc.record({
  link: fc.constantFrom(1, 2),
  day: fc.integer({ min: 0, max: 100 }),
  bot: fc.boolean(),
  source: fc.oneof(
    fc.constantFrom('a.example', 'b.example', 'direct'),
    fc.integer({ min: 0, max: 80 }).map((i) => `h${i}.example`),
  ),
  browser: fc.constantFrom('Chrome', 'Firefox', 'Safari'),
})
interface Click {
  link: number
  day: number
  bot: boolean
  source: string
  browser: string
}
function toBatch(clicks: Click[]): ClickBatch {
  const batch: ClickBatch = new Map()
  for (const c of clicks) {
    let days = batch.get(c.link)
    if (!days) batch.set(c.link, (days = new Map()))
    let d = days.get(START_DAY + c.day)
    if (!d) days.set(START_DAY + c.day, (d = newDayCounts()))
    if (c.bot) {
      d.bots++
      continue
    }
    d.clicks++
    bump(d.dims.source, c.source)
    bump(d.dims.browser, c.browser)
  }
  return batch
}

test('property: a window reads exactly the sum of its days, and each month is the sum of its days', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(clickArb, { maxLength: 300 }), { minLength: 1, maxLength: 4 }),
      fc.integer({ min: -5, max: 105 }),
      fc.integer({ min: 0, max: 120 }),
      async (batches, startOffset, length) => {
        const db = freshDb()
        try {
          const store = sqliteClickWriter(db)
          const counts = sqliteClickCounts(db)
          for (const clicks of batches) store.write(toBatch(clicks))
          const day = (n: number) => new Date((START_DAY + n) * DAY_MS).toISOString().slice(0, 10)
          const from = day(startOffset)
          const to = day(startOffset + length)
          // The oracle: sum the JSON of every day row in the window with SQL.
          for (const link of [1, 2]) {
            const got = await counts.names(link, from, to)
            for (const dim of DIMENSIONS) {
              const rows = db
                .query(
                  `SELECT j.key AS name, sum(j.value) AS clicks FROM click_days, json_each(dims, '$.' || ?4) j
                 WHERE link_id = ?1 AND day BETWEEN ?2 AND ?3 GROUP BY j.key`,
                )
                .all(link, from, to, dim) as { name: string; clicks: number }[]
              expect(new Map(rows.map((r) => [r.name, r.clicks]))).toEqual(got[dim])
            }
          }
          // Months: counts and names are the sums of their days.
          const months = db.query('SELECT link_id, month, clicks, bots, dims FROM click_months').all() as {
            link_id: number
            month: string
            clicks: number
            bots: number
            dims: string
          }[]
          for (const m of months) {
            const days = db
              .query(
                'SELECT sum(clicks) AS clicks, sum(bots) AS bots FROM click_days WHERE link_id = ?1 AND substr(day, 1, 7) = ?2',
              )
              .get(m.link_id, m.month) as { clicks: number; bots: number }
            expect({ clicks: m.clicks, bots: m.bots }).toEqual(days)
            const last = new Date(Date.UTC(Number(m.month.slice(0, 4)), Number(m.month.slice(5)), 0))
              .toISOString()
              .slice(0, 10)
            const fromDays = await counts.names(m.link_id, `${m.month}-02`, last) // not whole: read from days…
            const first = parseDims(
              (
                db
                  .query('SELECT dims FROM click_days WHERE link_id = ?1 AND day = ?2')
                  .get(m.link_id, `${m.month}-01`) as { dims: string } | null
              )?.dims ?? '{}',
              fromDays,
            )
            expect(parseDims(m.dims)).toEqual(first) // …and equal to the month row
          }
          // Totals on the link: every click of every batch, once.
          const all = batches.flat()
          for (const link of [1, 2]) {
            const mine = all.filter((c) => c.link === link)
            expect(db.query('SELECT clicks, bots FROM links WHERE id = ?').get(link)).toEqual({
              clicks: mine.filter((c) => !c.bot).length,
              bots: mine.filter((c) => c.bot).length,
            })
          }
          // No day holds more than MAX_NAMES names and OTHER in a dimension.
          const widest = db
            .query("SELECT max((SELECT count(*) FROM json_each(dims, '$.source'))) AS n FROM click_days")
            .get() as { n: number | null }
          expect(widest.n ?? 0).toBeLessThanOrEqual(MAX_NAMES + 1)
        } finally {
          db.close()
        }
      },
    ),
    { numRuns: 60 },
  )
})

test('clicks of a link deleted before the flush are dropped, and the others in the batch are written', () => {
  const db = freshDb()
  try {
    db.exec('DELETE FROM links WHERE id = 2')
    sqliteClickWriter(db).write(
      toBatch([
        { link: 1, day: 3, bot: false, source: 'a.example', browser: 'Chrome' },
        { link: 2, day: 3, bot: false, source: 'a.example', browser: 'Chrome' },
      ]),
    )
    expect(db.query('SELECT link_id, clicks FROM click_days').all()).toEqual([{ link_id: 1, clicks: 1 }])
    expect(db.query('SELECT link_id, clicks FROM click_months').all()).toEqual([{ link_id: 1, clicks: 1 }])
  } finally {
    db.close()
  }
})

test("a link-day's first write: its names as they came, or placed when there are too many or one is OTHER", () => {
  const db = freshDb()
  try {
    const store = sqliteClickWriter(db)
    const firstWrite = (link: number, day: number, sources: [string, number][]) => {
      const d = newDayCounts()
      for (const [name, n] of sources) {
        bump(d.dims.source, name, n)
        d.clicks += n
      }
      store.write(new Map([[link, new Map([[START_DAY + day, d]])]]))
      const row = db.query('SELECT dims FROM click_days WHERE link_id = ?1 ORDER BY day DESC LIMIT 1').get(link) as {
        dims: string
      }
      return [...parseDims(row.dims).source]
    }
    // A few names: stored as they came, in their order.
    const few: [string, number][] = [
      ['b.example', 2],
      ['a.example', 5],
      ['c.example', 1],
    ]
    expect(firstWrite(1, 0, few)).toEqual(few)
    // More than MAX_NAMES: the busiest MAX_NAMES keep their name, the rest go to OTHER.
    const many = Array.from({ length: MAX_NAMES + 3 }, (_, i) => [`n${i}.example`, i + 1] as [string, number])
    const placed = new Map(firstWrite(1, 1, many))
    expect(placed.size).toBe(MAX_NAMES + 1)
    expect(placed.get(OTHER)).toBe(1 + 2 + 3)
    expect(placed.has('n0.example')).toBe(false)
    expect(placed.get(`n${MAX_NAMES + 2}.example`)).toBe(MAX_NAMES + 3)
    // A name that is OTHER itself is counted under OTHER, after the named ones.
    expect(
      firstWrite(2, 0, [
        [OTHER, 4],
        ['a.example', 1],
      ]),
    ).toEqual([
      ['a.example', 1],
      [OTHER, 4],
    ])
    // The month holds what its day stored.
    const month = db.query('SELECT dims FROM click_months WHERE link_id = 2').get() as { dims: string }
    expect(Object.fromEntries(parseDims(month.dims).source)).toEqual({ 'a.example': 1, [OTHER]: 4 })
  } finally {
    db.close()
  }
})

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'

test('stats.json: a year is answered from months; the answer is kept until a click is written', async () => {
  let now = Date.parse('2026-03-01T10:00:00Z')
  const box = await makeBox({}, { clock: () => now, clicks: { intervalMs: 3_600_000 } })
  try {
    const code = (await box.post('/api/getLink.json', { url: 'https://example.com/year' })).body.return.hex
    const visit = (referer: string) =>
      box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': FIREFOX, referer } })
    for (const at of ['2026-03-01', '2026-04-10', '2026-05-31', '2026-06-01']) {
      now = Date.parse(`${at}T12:00:00Z`)
      await visit(`https://${at}.example/`)
    }
    const year = async () =>
      (await box.post('/api/stats.json', { code, from: '2025-06-02', to: '2026-06-01' })).body.return
    const first = await year()
    expect(first.days).toHaveLength(365)
    expect(first.sources).toEqual(
      ['2026-03-01', '2026-04-10', '2026-05-31', '2026-06-01'].map((d) => ({ name: `${d}.example`, clicks: 1 })),
    )
    expect(first.browsers).toEqual([{ name: 'Firefox', clicks: 4 }])
    // With the month table gone the same answer still comes back: it was kept, nothing was written since.
    box.db.exec('ALTER TABLE click_months RENAME TO click_months_away')
    expect(await year()).toEqual(first)
    box.db.exec('ALTER TABLE click_months_away RENAME TO click_months')
    // A new click is written before the next answer, which is built again and counts it.
    await visit('https://late.example/')
    const second = await year()
    expect(second.clicks).toBe(5)
    expect(second.sources).toContainEqual({ name: 'late.example', clicks: 1 })
  } finally {
    await box.cleanup()
  }
})

describe('a batch is committed in parts of LINKS_PER_COMMIT links', () => {
  // A trigger makes the writes of links above 1000 fail: a real SQLite error in the third part.
  const failAbove1000 = `CREATE TRIGGER fail_above_1000 BEFORE INSERT ON click_days WHEN NEW.link_id > 1000
    BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`

  test('the store: parts before the failure stay written, the rest comes back as PartialWrite', () => {
    const db = freshDb()
    try {
      db.transaction(() => {
        for (let id = 3; id <= 1200; id++)
          db.query("INSERT INTO links (id, code, long_url, created, updated) VALUES (?1, ?2, 'https://e/', 0, 0)").run(
            id,
            `c${id}`,
          )
      })()
      db.exec(failAbove1000)
      const batch = toBatch(
        Array.from({ length: 1200 }, (_, i) => ({
          link: i + 1,
          day: 0,
          bot: false,
          source: 'a.example',
          browser: 'Chrome',
        })),
      )
      let thrown: unknown
      try {
        sqliteClickWriter(db).write(batch)
      } catch (err) {
        thrown = err
      }
      expect(thrown).toBeInstanceOf(PartialWrite)
      const unwritten = (thrown as PartialWrite).unwritten
      expect(unwritten.size).toBe(1200 - 2 * LINKS_PER_COMMIT)
      expect(Math.min(...unwritten.keys())).toBe(2 * LINKS_PER_COMMIT + 1)
      expect(db.query('SELECT count(*) AS n, sum(clicks) AS clicks FROM click_days').get()).toEqual({
        n: 1000,
        clicks: 1000,
      })
    } finally {
      db.close()
    }
  })

  test('the recorder: what was committed is counted once, the rest is written by the next flush', async () => {
    const box = await makeBox({}, { clicks: { intervalMs: 3_600_000, maxBatch: 100_000 } })
    try {
      box.db.transaction(() => {
        for (let id = 1; id <= 1200; id++)
          box.db
            .query(
              "INSERT INTO links (id, code, long_url, created, updated) VALUES (?1, ?2, 'https://example.com/', 0, 0)",
            )
            .run(id, `p${id}`)
      })()
      box.db.exec(failAbove1000)
      for (let id = 1; id <= 1200; id++)
        await box.request(`/p${id}`, { redirect: 'manual', headers: { 'user-agent': FIREFOX } })
      expect(box.recorder.pending).toBe(1200)
      await expect(box.recorder.flush()).rejects.toThrow('refused by the test')
      expect(box.recorder.flushed).toBe(1000)
      expect(box.recorder.pending).toBe(200)
      box.db.exec('DROP TRIGGER fail_above_1000')
      expect(await box.recorder.flush()).toBe(200)
      expect(box.db.query('SELECT count(*) AS n, sum(clicks) AS clicks FROM links WHERE clicks > 0').get()).toEqual({
        n: 1200,
        clicks: 1200,
      })
      expect(box.db.query('SELECT sum(clicks) AS clicks FROM click_days').get()).toEqual({ clicks: 1200 })
    } finally {
      await box.cleanup()
    }
  })
})

test("stats.json writes the pending clicks of its own link first, and leaves other links' to the timer", async () => {
  const box = await makeBox({}, { clicks: { intervalMs: 3_600_000 } })
  try {
    const a = (await box.post('/api/getLink.json', { url: 'https://example.com/a' })).body.return.hex
    const b = (await box.post('/api/getLink.json', { url: 'https://example.com/b' })).body.return.hex
    await box.request(`/${a}`, { redirect: 'manual', headers: { 'user-agent': FIREFOX } })
    expect(box.recorder.pending).toBe(1)
    expect((await box.post('/api/stats.json', { code: b })).body.return.clicks).toBe(0)
    expect(box.recorder.pending).toBe(1) // a's click was not written for b's answer
    expect((await box.post('/api/stats.json', { code: a })).body.return.clicks).toBe(1)
    expect(box.recorder.pending).toBe(0)
  } finally {
    await box.cleanup()
  }
})

test("stats.json of a link with pending clicks writes that link's clicks alone; the others keep waiting", async () => {
  let now = Date.parse('2026-04-30T23:59:59Z')
  const box = await makeBox({}, { clock: () => now, clicks: { intervalMs: 3_600_000 } })
  try {
    const a = (await box.post('/api/getLink.json', { url: 'https://example.com/a' })).body.return.hex
    const b = (await box.post('/api/getLink.json', { url: 'https://example.com/b' })).body.return.hex
    const visit = (code: string, referer: string) =>
      box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': FIREFOX, referer } })
    await visit(a, 'https://one.example/')
    await visit(b, 'https://one.example/')
    now += 2000 // the next day: a has clicks on two days
    await visit(a, 'https://two.example/')
    await visit(a, '')
    expect(box.recorder.pending).toBe(4)
    const s = (await box.post('/api/stats.json', { code: a, from: '2026-04-30', to: '2026-05-01' })).body.return
    expect(s.clicks).toBe(3)
    expect(s.days).toEqual([
      { date: '2026-04-30', clicks: 1, visitors: 1 },
      { date: '2026-05-01', clicks: 2, visitors: 1 },
    ])
    expect(s.sources).toEqual([
      { name: 'direct', clicks: 1 },
      { name: 'one.example', clicks: 1 },
      { name: 'two.example', clicks: 1 },
    ])
    expect(box.recorder.pending).toBe(1) // b's click still waits for the timer
    const idOf = (code: string) => (box.db.query('SELECT id FROM links WHERE code = ?').get(code) as { id: number }).id
    expect(box.recorder.hasPending(idOf(a))).toBe(false)
    expect(box.recorder.hasPending(idOf(b))).toBe(true)
    expect((await box.post('/api/stats.json', { code: b })).body.return.sources).toEqual([
      { name: 'one.example', clicks: 1 },
    ])
    expect(box.recorder.pending).toBe(0)
  } finally {
    await box.cleanup()
  }
})
