// Visit limits, redirect rules and A/B splits (issue 23, SPEC §2a) on a real server: real sockets, a real
// SQLite file, visitors told apart by user agent, Accept-Language and X-Forwarded-For from a trusted proxy.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { parseCsv } from '../../src/links/csv'
import { makeBox, readAnswer, tempDir, testConfig, sqliteLinkbox, type SqliteLinkbox } from '../support/app'

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'
const SLACKBOT = 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)'
const DISCORDBOT = 'Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)'

interface Server {
  box: SqliteLinkbox
  base: string
}
function start(dir: string): Server {
  const box = sqliteLinkbox(
    testConfig(dir, { server: { host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1/32'] } }),
  )
  return { box, base: `http://127.0.0.1:${box.listen().port}` }
}

let dir: string
let s: Server
let key: string

beforeAll(async () => {
  dir = tempDir()
  s = start(dir)
  key = (await s.box.accounts.createAccount({ name: 'owner' })).key.key
})
afterAll(async () => {
  await s.box.close()
  rmSync(dir, { recursive: true, force: true })
})

async function api(method: string, fields: Record<string, string>, server = s) {
  return readAnswer(
    await fetch(`${server.base}/api/${method}`, {
      method: 'POST',
      body: new URLSearchParams(fields),
      headers: { 'x-api-key': key },
    }),
  )
}
async function link(fields: Record<string, string>): Promise<string> {
  const r = await api('getLink.json', fields)
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.return.hex
}
const visit = (code: string, headers: Record<string, string> = {}, init: RequestInit = {}, server = s) =>
  fetch(`${server.base}/${code}`, { redirect: 'manual', ...init, headers: { 'user-agent': CHROME, ...headers } })
const used = (code: string, box = s.box) =>
  (box.db.query('SELECT visits_used FROM links WHERE code = ?').get(code) as { visits_used: number }).visits_used

describe('max_visits', () => {
  test('three redirects, then 410 with a page saying so; bot fetches in between use nothing, HEAD neither', async () => {
    const code = await link({ url: 'https://example.com/limited', max_visits: '3' })
    const first = await visit(code)
    expect([first.status, first.headers.get('location')]).toEqual([302, 'https://example.com/limited'])
    // Link previews are sent on and use no visit; nor does a HEAD.
    for (const ua of [SLACKBOT, DISCORDBOT]) {
      const r = await visit(code, { 'user-agent': ua })
      expect([r.status, r.headers.get('location')]).toEqual([302, 'https://example.com/limited'])
    }
    expect((await visit(code, {}, { method: 'HEAD' })).status).toBe(302)
    expect(used(code)).toBe(1)
    expect((await visit(code)).status).toBe(302)
    expect((await visit(code)).status).toBe(302)
    expect(used(code)).toBe(3)
    const gone = await visit(code, { accept: 'text/html' })
    expect(gone.status).toBe(410)
    expect(gone.headers.get('location')).toBeNull()
    expect(gone.headers.get('content-type')).toContain('text/html')
    const text = await gone.text()
    expect(text).toContain('This link reached its limit')
    expect(text).toContain('reached its limit of 3 visits')
    expect(text).not.toContain('example.com/limited')
    // Used up: bots and HEAD get the 410 too, and nothing more is taken.
    expect((await visit(code, { 'user-agent': SLACKBOT })).status).toBe(410)
    expect((await visit(code, {}, { method: 'HEAD' })).status).toBe(410)
    expect(used(code)).toBe(3)
    // People's clicks: the three that got through; the bots are counted as bots.
    await s.box.recorder.flush()
    expect(s.box.db.query('SELECT clicks, bots FROM links WHERE code = ?').get(code)).toEqual({ clicks: 3, bots: 2 })
    const rec = (await api('links.json', { q: code })).body.return.links[0]
    expect([rec.max_visits, rec.visits_left]).toEqual([3, 0])
  })

  test('20 concurrent visits of a link with max_visits=5 give exactly 5 redirects', async () => {
    const code = await link({ url: 'https://example.com/race', max_visits: '5' })
    // Through the cache: the row is cached with visits_used 0 before the race.
    expect((await visit(code, { 'user-agent': SLACKBOT })).status).toBe(302)
    const statuses = await Promise.all(Array.from({ length: 20 }, () => visit(code).then((r) => r.status)))
    expect(statuses.filter((x) => x === 302).length).toBe(5)
    expect(statuses.filter((x) => x === 410).length).toBe(15)
    expect(used(code)).toBe(5)
  })

  test('a restart keeps the count', async () => {
    const d = tempDir()
    let one = start(d)
    try {
      const k = (await one.box.accounts.createAccount({ name: 'restart' })).key.key
      const made = await readAnswer(
        await fetch(`${one.base}/api/getLink.json`, {
          method: 'POST',
          body: new URLSearchParams({ url: 'https://example.com/kept', max_visits: '2' }),
          headers: { 'x-api-key': k },
        }),
      )
      const code = made.body.return.hex
      expect((await visit(code, {}, {}, one)).status).toBe(302)
      await one.box.close()
      one = start(d)
      expect((await visit(code, {}, {}, one)).status).toBe(302)
      expect((await visit(code, {}, {}, one)).status).toBe(410)
      await one.box.close()
      one = start(d)
      expect((await visit(code, {}, {}, one)).status).toBe(410)
      expect(used(code, one.box)).toBe(2)
    } finally {
      await one.box.close()
      rmSync(d, { recursive: true, force: true })
    }
  })

  test('update: a higher limit opens the link again, a lower one keeps the count, 0 removes the limit and its count', async () => {
    const code = await link({ url: 'https://example.com/raise', max_visits: '1' })
    expect((await visit(code)).status).toBe(302)
    expect((await visit(code)).status).toBe(410)
    let r = await api('update.json', { code, max_visits: '3' })
    expect([r.status, r.body.return.max_visits, r.body.return.visits_left]).toEqual([200, 3, 2])
    expect((await visit(code)).status).toBe(302)
    expect((await visit(code)).status).toBe(302)
    expect((await visit(code)).status).toBe(410)
    r = await api('update.json', { code, max_visits: '0' })
    expect([r.body.return.max_visits, r.body.return.visits_left]).toEqual([null, null])
    expect(used(code)).toBe(0)
    expect((await visit(code)).status).toBe(302)
    expect(used(code)).toBe(0) // a link without a limit takes nothing
    // "" removes it too (a form's blank field); a new limit counts from then.
    r = await api('update.json', { code, max_visits: '1' })
    expect(r.body.return.visits_left).toBe(1)
    r = await api('update.json', { code, max_visits: '' })
    expect(r.body.return.max_visits).toBeNull()
  })

  test('a password form takes no visit, a wrong password neither; the right one does', async () => {
    const code = await link({ url: 'https://example.com/secret', max_visits: '1', password: 'open sesame' })
    expect((await visit(code, { accept: 'text/html' })).status).toBe(200) // the form
    expect((await visit(code, { 'x-link-password': 'wrong' })).status).toBe(401)
    expect(used(code)).toBe(0)
    const right = await visit(code, { 'x-link-password': 'open sesame' })
    expect([right.status, right.headers.get('location')]).toEqual([302, 'https://example.com/secret'])
    expect(used(code)).toBe(1)
    expect((await visit(code, { 'x-link-password': 'open sesame' })).status).toBe(410)
  })

  test('a visit that cannot be counted (the database refuses writes) is not given: 503, no Location', async () => {
    const box = await makeBox()
    try {
      const k = await box.account('ro')
      const code = (
        await box.post('/api/getLink.json', { url: 'https://example.com/ro', max_visits: '2' }, { 'x-api-key': k })
      ).body.return.hex
      const go = () => box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME } })
      box.db.exec('PRAGMA query_only = 1')
      const refused = await go()
      expect(refused.status).toBe(503)
      expect(refused.headers.get('location')).toBeNull()
      box.db.exec('PRAGMA query_only = 0')
      expect((await go()).status).toBe(302)
      expect(box.db.query('SELECT visits_used FROM links WHERE code = ?').get(code)).toEqual({ visits_used: 1 })
    } finally {
      await box.cleanup()
    }
  })

  test('a preview page takes a visit', async () => {
    const code = await link({ url: 'https://example.com/look', max_visits: '1', mode: 'preview' })
    expect((await visit(code)).status).toBe(200)
    expect((await visit(code)).status).toBe(410)
  })
})

describe('rules', () => {
  const rules = JSON.stringify([
    { url: 'https://example.com/phone', device: ['mobile', 'tablet'] },
    { url: 'https://example.com/us', country: ['US'] },
    { url: 'https://example.com/jp', country: ['jp'] },
    { url: 'https://example.com/de', language: ['de'] },
    { url: 'https://example.com/mac', os: ['mac os'] },
  ])
  let code: string
  beforeAll(async () => {
    code = await link({ url: 'https://example.com/default', rules })
  })
  const where = async (headers: Record<string, string>, init: RequestInit = {}) =>
    (await visit(code, headers, init)).headers.get('location')

  test('by device: an iPhone goes to the mobile rule, a desktop to the default', async () => {
    expect(await where({ 'user-agent': IPHONE })).toBe('https://example.com/phone')
    expect(await where({})).toBe('https://example.com/default')
  })

  test("by country, from a trusted proxy's X-Forwarded-For: 8.8.8.8 is US, 133.11.0.1 JP", async () => {
    expect(await where({ 'x-forwarded-for': '8.8.8.8' })).toBe('https://example.com/us')
    expect(await where({ 'x-forwarded-for': '133.11.0.1' })).toBe('https://example.com/jp')
    expect(await where({ 'x-forwarded-for': '10.1.2.3' })).toBe('https://example.com/default')
  })

  test('by Accept-Language: the primary tag of the first entry', async () => {
    expect(await where({ 'accept-language': 'de-CH,de;q=0.9' })).toBe('https://example.com/de')
    expect(await where({ 'accept-language': 'DE' })).toBe('https://example.com/de')
    expect(await where({ 'accept-language': 'en-US,de;q=0.9' })).toBe('https://example.com/default')
    expect(await where({ 'accept-language': '*' })).toBe('https://example.com/default')
  })

  test('by system, without letter case', async () => {
    const mac =
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15'
    expect(await where({ 'user-agent': mac })).toBe('https://example.com/mac')
  })

  test('the first match wins; a rule matches only when all its conditions do', async () => {
    // An iPhone in the US that prefers German: the device rule comes first.
    expect(await where({ 'user-agent': IPHONE, 'x-forwarded-for': '8.8.8.8', 'accept-language': 'de' })).toBe(
      'https://example.com/phone',
    )
    expect(await where({ 'x-forwarded-for': '8.8.8.8', 'accept-language': 'de' })).toBe('https://example.com/us')
    const both = await link({
      url: 'https://example.com/none',
      rules: JSON.stringify([{ url: 'https://example.com/de-phone', device: ['mobile'], language: ['de'] }]),
    })
    const at = async (h: Record<string, string>) => (await visit(both, h)).headers.get('location')
    expect(await at({ 'user-agent': IPHONE, 'accept-language': 'de' })).toBe('https://example.com/de-phone')
    expect(await at({ 'user-agent': IPHONE, 'accept-language': 'fr' })).toBe('https://example.com/none')
    expect(await at({ 'accept-language': 'de' })).toBe('https://example.com/none')
  })

  test('HEAD answers the same Location without counting; the click is counted for its destination', async () => {
    await s.box.recorder.flush()
    const before = (s.box.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks
    expect(await where({ 'user-agent': IPHONE }, { method: 'HEAD' })).toBe('https://example.com/phone')
    await s.box.recorder.flush()
    expect((s.box.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks).toBe(
      before,
    )
  })

  test('preview and frame pages show the chosen destination', async () => {
    const preview = await link({ url: 'https://example.com/default', mode: 'preview', rules })
    const page = await (await visit(preview, { 'user-agent': IPHONE })).text()
    expect(page).toContain('https://example.com/phone')
    expect(page).not.toContain('https://example.com/default')
  })

  test('an update changes the rules at once (the cached row is dropped); rules=[] removes them', async () => {
    const c = await link({
      url: 'https://example.com/base',
      rules: JSON.stringify([{ url: 'https://example.com/a', language: ['de'] }]),
    })
    expect((await visit(c, { 'accept-language': 'de' })).headers.get('location')).toBe('https://example.com/a')
    let r = await api('update.json', {
      code: c,
      rules: JSON.stringify([{ url: 'https://example.com/b', language: ['de'] }]),
    })
    expect(r.body.return.rules).toEqual([{ url: 'https://example.com/b', language: ['de'] }])
    expect((await visit(c, { 'accept-language': 'de' })).headers.get('location')).toBe('https://example.com/b')
    r = await api('update.json', { code: c, rules: '[]' })
    expect(r.status).toBe(200)
    expect('rules' in r.body.return).toBe(false)
    expect(s.box.db.query('SELECT rules FROM links WHERE code = ?').get(c)).toEqual({ rules: null })
    expect((await visit(c, { 'accept-language': 'de' })).headers.get('location')).toBe('https://example.com/base')
  })
})

describe('split', () => {
  test('50/50 over 400 visitors lands 150-250 each side; one visitor keeps the same side', async () => {
    const split = JSON.stringify([
      { url: 'https://example.com/a', weight: 50 },
      { url: 'https://example.com/b', weight: 50 },
    ])
    const code = await link({ url: 'https://example.com/fallback', split })
    const sides = new Map<string, number>()
    for (let i = 0; i < 400; i++) {
      const r = await visit(code, { 'x-forwarded-for': `203.0.${i >> 8}.${i & 255}` })
      const at = r.headers.get('location')!
      sides.set(at, (sides.get(at) ?? 0) + 1)
    }
    expect([...sides.keys()].sort()).toEqual(['https://example.com/a', 'https://example.com/b'])
    for (const n of sides.values()) {
      expect(n).toBeGreaterThanOrEqual(150)
      expect(n).toBeLessThanOrEqual(250)
    }
    for (const address of ['198.51.100.7', '198.51.100.8', '198.51.100.9']) {
      const first = (await visit(code, { 'x-forwarded-for': address })).headers.get('location')
      for (let i = 0; i < 10; i++)
        expect((await visit(code, { 'x-forwarded-for': address })).headers.get('location')).toBe(first)
    }
  })

  test('stats.json of a split link lists destinations: empty before any visit, then each side with its visits (an A/B test can be read)', async () => {
    const split = JSON.stringify([
      { url: 'https://example.com/left', weight: 50 },
      { url: 'https://example.com/right', weight: 50 },
    ])
    const code = await link({ url: 'https://example.com/fallback', split })
    expect((await api('stats.json', { code })).body.return.destinations).toEqual([])
    const sides = new Map<string, number>()
    for (let i = 0; i < 40; i++) {
      const at = (await visit(code, { 'x-forwarded-for': `203.0.113.${i}` })).headers.get('location')!
      sides.set(at, (sides.get(at) ?? 0) + 1)
    }
    const listed = (await api('stats.json', { code })).body.return.destinations as { name: string; clicks: number }[]
    expect(Object.fromEntries(listed.map((d) => [d.name, d.clicks]))).toEqual(Object.fromEntries(sides))
    const plain = await link({ url: 'https://example.com/plain' })
    expect('destinations' in (await api('stats.json', { code: plain })).body.return).toBe(false)
  })

  test("a password-protected split link: keyless stats.json and the public page show neither its destination nor its split's; its owner sees them", async () => {
    const split = JSON.stringify([
      { url: 'https://hidden-left.example/a', weight: 50 },
      { url: 'https://hidden-right.example/b', weight: 50 },
    ])
    const code = await link({ url: 'https://hidden-fallback.example/', split, password: 'opensesame' })
    for (let i = 0; i < 6; i++)
      await fetch(`${s.base}/${code}`, {
        redirect: 'manual',
        headers: { 'user-agent': CHROME, 'x-link-password': 'opensesame', 'x-forwarded-for': `203.0.113.${i}` },
      })
    await s.box.recorder.flush()
    const keyless = await readAnswer(
      await fetch(`${s.base}/api/stats.json`, { method: 'POST', body: new URLSearchParams({ code }) }),
    )
    expect(keyless.status).toBe(200)
    expect(JSON.stringify(keyless.body)).not.toContain('hidden-')
    expect(await (await fetch(`${s.base}/${code}+`)).text()).not.toContain('hidden-')
    const own = (await api('stats.json', { code })).body.return
    expect(own.long_url).toBe('https://hidden-fallback.example/')
    expect((own.destinations as { name: string }[]).map((d) => d.name).sort()[0]).toStartWith('https://hidden-')
  })

  test('weights are followed (90/10), and a rule that matches comes before the split', async () => {
    const code = await link({
      url: 'https://example.com/fallback',
      split: JSON.stringify([
        { url: 'https://example.com/big', weight: 90 },
        { url: 'https://example.com/small', weight: 10 },
      ]),
      rules: JSON.stringify([{ url: 'https://example.com/de', language: ['de'] }]),
    })
    let small = 0
    for (let i = 0; i < 300; i++) {
      const at = (
        await visit(code, { 'x-forwarded-for': `192.0.2.${i % 250}`, 'user-agent': `${CHROME} v${i}` })
      ).headers.get('location')
      if (at === 'https://example.com/small') small++
      else expect(at).toBe('https://example.com/big')
    }
    expect(small).toBeGreaterThan(10)
    expect(small).toBeLessThan(60)
    expect((await visit(code, { 'accept-language': 'de' })).headers.get('location')).toBe('https://example.com/de')
    const rec = (await api('links.json', { q: code })).body.return.links[0]
    expect(rec.split).toEqual([
      { url: 'https://example.com/big', weight: 90 },
      { url: 'https://example.com/small', weight: 10 },
    ])
    expect(rec.long_url).toBe('https://example.com/fallback')
  })
})

describe('the record, the export and the webhook payload', () => {
  test('getLink.json answers max_visits, visits_left, rules and split; a plain link has nulls and neither list', async () => {
    const plain = await api('getLink.json', { url: 'https://example.com/plain' })
    expect([plain.body.return.max_visits, plain.body.return.visits_left]).toEqual([null, null])
    expect('rules' in plain.body.return || 'split' in plain.body.return).toBe(false)
    const r = await api('getLink.json', {
      url: 'https://example.com/x',
      max_visits: '7',
      rules: JSON.stringify([{ country: ['de', 'AT', 'de'], url: 'https://example.com/de', language: ['DE'] }]),
      split: JSON.stringify([
        { weight: 1, url: 'https://example.com/1' },
        { url: 'https://example.com/2', weight: 100 },
      ]),
    })
    expect(r.status).toBe(200)
    const rec = r.body.return
    expect([rec.max_visits, rec.visits_left]).toEqual([7, 7])
    // Cleaned: countries upper case, languages lower case, each once; keys in one order.
    expect(rec.rules).toEqual([{ url: 'https://example.com/de', country: ['DE', 'AT'], language: ['de'] }])
    expect(rec.split).toEqual([
      { url: 'https://example.com/1', weight: 1 },
      { url: 'https://example.com/2', weight: 100 },
    ])
  })

  test('the CSV export fills max_visits', async () => {
    const code = await link({ url: 'https://example.com/csv', max_visits: '42' })
    const res = await fetch(`${s.base}/api/links.json?format=csv`, { method: 'POST', headers: { 'x-api-key': key } })
    expect(res.headers.get('content-type')).toContain('text/csv')
    const text = await res.text()
    const [header, ...rows] = parseCsv(text).map((r) => r.fields)
    const row = rows.find((r) => r[0] === code)!
    expect(row[header!.indexOf('max_visits')]).toBe('42')
  })

  test('link.updated (the event webhooks are made from) carries the new fields', async () => {
    const seen: any[] = []
    s.box.events.on('link.updated', (e: any) => seen.push(e.link))
    const code = await link({ url: 'https://example.com/evt' })
    await api('update.json', {
      code,
      max_visits: '9',
      split: JSON.stringify([
        { url: 'https://example.com/1', weight: 1 },
        { url: 'https://example.com/2', weight: 1 },
      ]),
    })
    expect(seen.at(-1)).toMatchObject({
      hex: code,
      max_visits: 9,
      visits_left: 9,
      split: [
        { url: 'https://example.com/1', weight: 1 },
        { url: 'https://example.com/2', weight: 1 },
      ],
    })
  })
})

describe('validation: every refused input names its field', () => {
  const long = `https://example.com/${'a'.repeat(4100)}`
  const rule = (r: object) => JSON.stringify([r])
  const cases: [string, Record<string, string>, number, string, string][] = [
    ['max_visits too large', { max_visits: '1000000001' }, 400, 'invalid_parameter', '"max_visits"'],
    ['max_visits negative', { max_visits: '-1' }, 400, 'invalid_parameter', '"max_visits"'],
    ['max_visits not a number', { max_visits: 'ten' }, 400, 'invalid_parameter', '"max_visits"'],
    ['rules not JSON', { rules: '[{' }, 400, 'invalid_parameter', '"rules"'],
    ['rules not an array', { rules: '{"url":"https://example.com/"}' }, 400, 'invalid_parameter', '"rules"'],
    [
      '21 rules',
      {
        rules: JSON.stringify(Array.from({ length: 21 }, () => ({ url: 'https://example.com/', device: ['mobile'] }))),
      },
      400,
      'invalid_parameter',
      'at most 20',
    ],
    ['a rule that is not an object', { rules: '[1]' }, 400, 'invalid_parameter', 'rules[0] must be an object'],
    ['a rule without url', { rules: rule({ device: ['mobile'] }) }, 400, 'invalid_url', '"rules[0].url" is required'],
    [
      'a rule url of another scheme',
      { rules: rule({ url: 'ftp://example.com/', device: ['mobile'] }) },
      400,
      'invalid_url',
      '"rules[0].url"',
    ],
    [
      'a rule url too long',
      { rules: rule({ url: long, device: ['mobile'] }) },
      400,
      'invalid_url',
      '"rules[0].url" must be at most 4096',
    ],
    [
      'a rule url at the service itself',
      { rules: rule({ url: 'http://localhost:8080/x', device: ['mobile'] }) },
      400,
      'invalid_url',
      '"rules[0].url" must not point at this service',
    ],
    [
      'a rule url on a blocked domain',
      { rules: rule({ url: 'https://evil.test/x', device: ['mobile'] }) },
      400,
      'invalid_url',
      '"rules[0].url" must not point at the blocked domain',
    ],
    [
      'a rule without a condition',
      { rules: rule({ url: 'https://example.com/' }) },
      400,
      'invalid_parameter',
      'rules[0] must give at least one condition',
    ],
    [
      'an unknown rule field',
      { rules: rule({ url: 'https://example.com/', device: ['mobile'], browser: ['Firefox'] }) },
      400,
      'invalid_parameter',
      'rules[0].browser is not a field',
    ],
    [
      'an empty condition',
      { rules: rule({ url: 'https://example.com/', device: [] }) },
      400,
      'invalid_parameter',
      'rules[0].device must be a non-empty list',
    ],
    [
      'a condition that is not a list',
      { rules: rule({ url: 'https://example.com/', country: 'DE' }) },
      400,
      'invalid_parameter',
      'rules[0].country must be a non-empty list',
    ],
    [
      'an unknown device',
      { rules: rule({ url: 'https://example.com/', device: ['mobile', 'car'] }) },
      400,
      'invalid_parameter',
      'rules[0].device[1]',
    ],
    [
      'a bad country in the third rule',
      {
        rules: JSON.stringify([
          { url: 'https://example.com/1', device: ['mobile'] },
          { url: 'https://example.com/2', os: ['iOS'] },
          { url: 'https://example.com/3', country: ['DEU'] },
        ]),
      },
      400,
      'invalid_parameter',
      'rules[2].country[0] must be an ISO 3166-1 alpha-2',
    ],
    [
      'a bad language',
      { rules: rule({ url: 'https://example.com/', language: ['de-CH'] }) },
      400,
      'invalid_parameter',
      'rules[0].language[0]',
    ],
    [
      'an os that is not text',
      { rules: rule({ url: 'https://example.com/', os: [7] }) },
      400,
      'invalid_parameter',
      'rules[0].os[0]',
    ],
    [
      'split of one',
      { split: JSON.stringify([{ url: 'https://example.com/a', weight: 1 }]) },
      400,
      'invalid_parameter',
      '"split" is invalid: split has 1 destinations',
    ],
    [
      'split of eleven',
      { split: JSON.stringify(Array.from({ length: 11 }, () => ({ url: 'https://example.com/a', weight: 1 }))) },
      400,
      'invalid_parameter',
      'split has 11',
    ],
    [
      'split weight 0',
      {
        split: JSON.stringify([
          { url: 'https://example.com/a', weight: 1 },
          { url: 'https://example.com/b', weight: 0 },
        ]),
      },
      400,
      'invalid_parameter',
      'split[1].weight',
    ],
    [
      'split weight 101',
      {
        split: JSON.stringify([
          { url: 'https://example.com/a', weight: 101 },
          { url: 'https://example.com/b', weight: 1 },
        ]),
      },
      400,
      'invalid_parameter',
      'split[0].weight',
    ],
    [
      'split weight as text',
      {
        split: JSON.stringify([
          { url: 'https://example.com/a', weight: '50' },
          { url: 'https://example.com/b', weight: 50 },
        ]),
      },
      400,
      'invalid_parameter',
      'split[0].weight',
    ],
    [
      'split url at the service',
      {
        split: JSON.stringify([
          { url: 'https://example.com/a', weight: 1 },
          { url: 'http://127.0.0.1:8080/', weight: 1 },
        ]),
      },
      400,
      'invalid_url',
      '"split[1].url"',
    ],
    [
      'split unknown field',
      {
        split: JSON.stringify([
          { url: 'https://example.com/a', weight: 1, name: 'A' },
          { url: 'https://example.com/b', weight: 1 },
        ]),
      },
      400,
      'invalid_parameter',
      'split[0].name',
    ],
    ['split not JSON', { split: 'a,b' }, 400, 'invalid_parameter', '"split"'],
  ]
  let blocked: Server
  let blockedKey: string
  let target: string
  beforeAll(async () => {
    blocked = {
      box: sqliteLinkbox(
        testConfig(tempDir(), { server: { host: '127.0.0.1', port: 0 }, links: { blocked_domains: ['evil.test'] } }),
      ),
      base: '',
    }
    blocked.base = `http://127.0.0.1:${blocked.box.listen().port}`
    blockedKey = (await blocked.box.accounts.createAccount({ name: 'v' })).key.key
    const made = await readAnswer(
      await fetch(`${blocked.base}/api/getLink.json`, {
        method: 'POST',
        body: new URLSearchParams({ url: 'https://example.com/t' }),
        headers: { 'x-api-key': blockedKey },
      }),
    )
    target = made.body.return.hex
  })
  afterAll(async () => {
    await blocked.box.close()
    rmSync(blocked.box.config.data_dir, { recursive: true, force: true })
  })
  const send = async (method: string, fields: Record<string, string>) =>
    readAnswer(
      await fetch(`${blocked.base}/api/${method}`, {
        method: 'POST',
        body: new URLSearchParams(fields),
        headers: { 'x-api-key': blockedKey },
      }),
    )

  test.each(cases)('%s: getLink.json and update.json refuse it', async (_label, fields, status, code, named) => {
    for (const [method, base] of [
      ['getLink.json', { url: 'https://example.com/v' }],
      ['update.json', { code: target }],
    ] as const) {
      const r = await send(method, { ...base, ...fields })
      expect([r.status, r.body.code], `${method} ${JSON.stringify(r.body)}`).toEqual([status, code])
      expect(r.body.message).toContain(named)
    }
    // Nothing was stored.
    expect(blocked.box.db.query('SELECT max_visits, rules, split FROM links WHERE code = ?').get(target)).toEqual({
      max_visits: null,
      rules: null,
      split: null,
    })
  })

  test('JSON bodies: rules as an array rather than text is refused naming "rules"', async () => {
    const r = await readAnswer(
      await fetch(`${blocked.base}/api/getLink.json`, {
        method: 'POST',
        body: JSON.stringify({
          url: 'https://example.com/',
          rules: [{ url: 'https://example.com/', device: ['mobile'] }],
        }),
        headers: { 'x-api-key': blockedKey, 'content-type': 'application/json' },
      }),
    )
    expect([r.status, r.body.code]).toEqual([400, 'invalid_parameter'])
    expect(r.body.message).toContain('"rules"')
  })
})
