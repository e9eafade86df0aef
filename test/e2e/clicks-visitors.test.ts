// Countries, distinct visitors and chosen destinations of visits (issue 23, SPEC §4, §2a), over real sockets
// on a real SQLite file: a trusted proxy's X-Forwarded-For gives the country, an untrusted one's is ignored;
// one address and user agent is one visitor a day however often it comes; bots and link previews are
// neither clicks nor visitors; the address is written nowhere; a restart keeps what was counted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { EMBEDDED_ATTRIBUTION } from '../../src/kernel/geo'
import { METRICS_TOKEN, tempDir, testConfig, sqliteLinkbox, type SqliteLinkbox } from '../support/app'

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'
const SLACK = 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)'
const DISCORD = 'Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)'

// Public addresses whose country every database agrees on (issue 23).
const PLACES: [string, string][] = [
  ['8.8.8.8', 'US'],
  ['200.160.2.3', 'BR'],
  ['193.0.6.139', 'NL'],
  ['133.11.0.1', 'JP'],
]

const now = Date.parse('2026-07-01T10:00:00Z')
let dir: string
let box: SqliteLinkbox
let base: string
let key: string

function start(trusted: string[] = ['127.0.0.1/32']) {
  box = sqliteLinkbox(
    testConfig(dir, { server: { host: '127.0.0.1', port: 0, trusted_proxies: trusted, metrics_token: METRICS_TOKEN } }),
    { clock: () => now, clicks: { intervalMs: 3_600_000 } },
  )
  base = `http://127.0.0.1:${box.listen().port}`
}

const visit = (code: string, ua: string, forwarded?: string) =>
  fetch(`${base}/${code}`, {
    redirect: 'manual',
    headers: { 'user-agent': ua, ...(forwarded ? { 'x-forwarded-for': forwarded } : {}) },
  })

async function create(url: string): Promise<string> {
  const res = await fetch(`${base}/api/getLink.json`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${key}` },
    body: new URLSearchParams({ url }),
  })
  return ((await res.json()) as any).return.hex
}

async function stats(code: string): Promise<any> {
  const res = await fetch(`${base}/api/stats.json`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${key}` },
    body: new URLSearchParams({ code, from: '2026-07-01', to: '2026-07-01' }),
  })
  const body = (await res.json()) as any
  if (!body.return) throw new Error(JSON.stringify(body))
  return body.return
}

beforeAll(async () => {
  dir = tempDir()
  start()
  key = (await box.accounts.createAccount({ name: 'alice' })).key.key
})
afterAll(async () => {
  await box.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('countries', () => {
  test("a trusted proxy's X-Forwarded-For gives the visitor's country, in stats.json and on the public page", async () => {
    const code = await create('https://example.com/countries')
    for (const [address] of PLACES) expect((await visit(code, CHROME, address)).status).toBe(302)
    await visit(code, CHROME, '8.8.8.8') // the same visitor again: 2 clicks from the US
    await visit(code, CHROME, '10.1.2.3') // a private address is not located
    const s = await stats(code)
    expect(s.countries).toEqual([
      { name: 'US', clicks: 2 },
      { name: 'BR', clicks: 1 },
      { name: 'JP', clicks: 1 },
      { name: 'NL', clicks: 1 },
      { name: 'unknown', clicks: 1 },
    ])
    expect(s.days).toEqual([{ date: '2026-07-01', clicks: 6, visitors: 5 }])
    expect('destinations' in s).toBe(false) // no rule or split chose one
    const page = await (await fetch(`${base}/${code}+?from=2026-07-01&to=2026-07-01`)).text()
    expect(page).toContain('<h2 id="h-countries">Countries</h2>')
    expect(page).toContain(
      '<span class="flag" aria-hidden="true">🇺🇸</span>United States<span class="country-code">US</span>',
    )
    expect(page).toContain('<span class="flag" aria-hidden="true">🇧🇷</span>Brazil<span class="country-code">BR</span>')
    expect(page).toContain(
      '<span class="flag" aria-hidden="true">🇳🇱</span>Netherlands<span class="country-code">NL</span>',
    )
    expect(page).toContain('<span class="flag" aria-hidden="true">🇯🇵</span>Japan<span class="country-code">JP</span>')
    expect(page).toContain('<span class="name">Unknown</span>')
    expect(page).toContain('<title>2026-07-01: 6 clicks, 5 visitors</title>')
    expect(page).toContain('<td>2026-07-01</td><td class="n">6</td><td class="n">5</td>')
  })

  test("an untrusted peer's X-Forwarded-For is ignored: the country is the peer's (unknown for loopback)", async () => {
    await box.close()
    start([]) // the same data, no trusted proxy
    const code = await create('https://example.com/untrusted')
    await visit(code, CHROME, '8.8.8.8')
    await visit(code, CHROME, '200.160.2.3')
    const s = await stats(code)
    expect(s.countries).toEqual([{ name: 'unknown', clicks: 2 }])
    expect(s.days[0]).toEqual({ date: '2026-07-01', clicks: 2, visitors: 1 }) // one peer, one user agent
    await box.close()
    start()
  })
})

describe('distinct visitors', () => {
  test('10 visits of one address and user agent and one each of 5 others: 6 visitors; Slack and Discord previews are neither clicks nor visitors', async () => {
    const code = await create('https://example.com/visitors')
    for (let i = 0; i < 10; i++) await visit(code, CHROME, '8.8.8.8')
    for (let i = 1; i <= 5; i++) await visit(code, CHROME, `203.0.113.${i}`)
    await visit(code, SLACK, '198.51.100.7')
    await visit(code, DISCORD, '198.51.100.8')
    const s = await stats(code)
    expect(s.days).toEqual([{ date: '2026-07-01', clicks: 15, visitors: 6 }])
    expect(s.clicks).toBe(15)
    expect(s.bots).toBe(2)
    // The same address with another browser is another visitor.
    await visit(code, FIREFOX, '8.8.8.8')
    expect((await stats(code)).days[0]).toEqual({ date: '2026-07-01', clicks: 16, visitors: 7 })
    const row = box.db
      .query(
        "SELECT visitors FROM click_days WHERE day = '2026-07-01' AND link_id = (SELECT id FROM links WHERE code = ?)",
      )
      .get(code)
    expect(row).toEqual({ visitors: 7 })
  })

  test('a chosen destination is counted as its own dimension; stats.json lists destinations only then', async () => {
    const code = await create('https://example.com/default')
    const id = (box.db.query('SELECT id FROM links WHERE code = ?').get(code) as { id: number }).id
    // What a visit of a link with rules or a split records (the rule's URL, or long_url when none matched).
    box.recorder.record(id, now, CHROME, '', -1, code, '8.8.8.8', 'https://a.example/')
    box.recorder.record(id, now, CHROME, '', -1, code, '200.160.2.3', 'https://a.example/')
    box.recorder.record(id, now, CHROME, '', -1, code, '193.0.6.139', 'https://example.com/default')
    box.recorder.record(id, now, SLACK, '', -1, code, '193.0.6.140', 'https://a.example/') // a bot: not counted
    const s = await stats(code)
    expect(s.destinations).toEqual([
      { name: 'https://a.example/', clicks: 2 },
      { name: 'https://example.com/default', clicks: 1 },
    ])
    expect(s.countries).toEqual([
      { name: 'BR', clicks: 1 },
      { name: 'NL', clicks: 1 },
      { name: 'US', clicks: 1 },
    ])
    const csv = await (await fetch(`${base}/${code}+.csv?table=breakdowns&from=2026-07-01&to=2026-07-01`)).text()
    expect(csv).toContain('destination,https://a.example/,2\r\n')
    expect(csv).toContain('country,US,1\r\n')
    const page = await (await fetch(`${base}/${code}+?from=2026-07-01&to=2026-07-01`)).text()
    expect(page).toContain('<h2 id="h-destinations">Destinations</h2>')
    expect(page.replaceAll('<wbr>', '')).toContain('<span class="name">https://a.example/</span>')
  })

  test('the address is written nowhere: not in the database file, not in its WAL', async () => {
    const code = await create('https://example.com/nowhere')
    const marker = '198.18.77.231'
    await visit(code, CHROME, marker)
    await box.recorder.flush()
    expect((await stats(code)).days[0].visitors).toBe(1)
    for (const name of readdirSync(dir).filter((f) => f.startsWith('linkbox.db'))) {
      const bytes = readFileSync(join(dir, name))
      expect({ name, found: bytes.includes(marker) }).toEqual({ name, found: false })
      expect(bytes.includes(Buffer.from(marker, 'utf16le'))).toBe(false)
    }
  })

  test("a restart keeps the stored visitors and adds the new ones (the day's key is new: a returning visitor counts again)", async () => {
    const code = await create('https://example.com/restart')
    await visit(code, CHROME, '203.0.113.50')
    await visit(code, CHROME, '203.0.113.51')
    expect((await stats(code)).days[0].visitors).toBe(2)
    await box.close()
    start()
    await visit(code, CHROME, '203.0.113.52') // new
    await visit(code, CHROME, '203.0.113.52') // the same: no more
    await visit(code, CHROME, '203.0.113.50') // seen before the restart: counted again (documented)
    const s = await stats(code)
    expect(s.days[0]).toEqual({ date: '2026-07-01', clicks: 5, visitors: 4 })
  })

  test('/metrics shows the visitor trackers and their drops', async () => {
    const text = await (
      await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text()
    expect(text).toMatch(/^linkbox_visitor_link_days \d+$/m)
    expect(text).toMatch(/^linkbox_visitor_memory_bytes \d+$/m)
    expect(text).toMatch(/^linkbox_visitor_link_days_dropped_total 0$/m)
  })
})

describe('the documents', () => {
  test('/api/docs credits the country data as its licence asks, and openapi.json describes countries, visitors and destinations', async () => {
    const page = await (await fetch(`${base}/api/docs`)).text()
    expect(page.replaceAll('<wbr>', '')).toContain(EMBEDDED_ATTRIBUTION) // no character of it is escaped
    const doc = (await (await fetch(`${base}/api/docs/openapi.json`)).json()) as any
    const stats = doc.components.schemas.LinkStats
    expect(Object.keys(stats.properties)).toEqual(expect.arrayContaining(['countries', 'destinations']))
    expect(stats.required).toContain('countries')
    expect(stats.required).not.toContain('destinations')
    expect(Object.keys(stats.properties.days.items.properties)).toEqual(['date', 'clicks', 'visitors'])
    expect(JSON.stringify(doc)).toContain(EMBEDDED_ATTRIBUTION)
  })
})
