// Visiting a short link (SPEC §3) through the real app: modes, password, expiry, HEAD, and which visits count.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
let now = Date.parse('2026-06-01T12:00:00Z')
let box: TestBox

beforeAll(async () => {
  box = await makeBox({}, { clock: () => now })
})
afterAll(() => box.cleanup())

async function link(fields: Record<string, string>): Promise<string> {
  const r = await box.post('/api/getLink.json', fields)
  expect(r.status).toBe(200)
  return r.body.return.hex
}
const visit = (path: string, init: RequestInit = {}) =>
  box.request(path, { redirect: 'manual', ...init, headers: { 'user-agent': CHROME, ...(init.headers ?? {}) } })
async function clicks(code: string): Promise<number> {
  await box.recorder.flush()
  return (box.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks
}

describe('redirect mode', () => {
  test('302 to the long URL with Cache-Control: private, no-cache, and one click', async () => {
    const code = await link({ url: 'https://example.com/dest?x=1' })
    const r = await visit(`/${code}`)
    expect(r.status).toBe(302)
    expect(r.headers.get('location')).toBe('https://example.com/dest?x=1')
    expect(r.headers.get('cache-control')).toBe('private, no-cache')
    expect(await clicks(code)).toBe(1)
  })

  test('the first visit (read from the database) and the next (the cached row) give the same answer', async () => {
    const code = await link({ url: 'https://example.com/first?x=1' })
    const shape = (r: Response) => ({
      status: r.status,
      headers: [...(r.headers as unknown as Iterable<[string, string]>)].filter(([name]) => name !== 'x-request-id'),
    })
    const [first, second] = [await visit(`/${code}`), await visit(`/${code}`)]
    expect(shape(first)).toEqual(shape(second))
    expect(shape(first)).toEqual({
      status: 302,
      headers: [
        ['cache-control', 'private, no-cache'],
        ['location', 'https://example.com/first?x=1'],
      ],
    })
    expect([await first.text(), await second.text()]).toEqual(['', ''])
    for (const r of [first, second]) expect(r.headers.get('x-request-id')).toMatch(/\S/)
    expect(await clicks(code)).toBe(2)
    const head = await link({ url: 'https://example.com/first-head' })
    const [h1, h2] = [await visit(`/${head}`, { method: 'HEAD' }), await visit(`/${head}`, { method: 'HEAD' })]
    // The router's HEAD names its empty body's length, which the server sends for the other as well
    // (Content-Length: 0 on the wire for both).
    const bare = (r: Response) => ({
      ...shape(r),
      headers: shape(r).headers.filter(([name]) => name !== 'content-length'),
    })
    expect(bare(h1)).toEqual(bare(h2))
    expect(h1.headers.get('content-length') ?? '0').toBe('0')
    expect(await clicks(head)).toBe(0)
  })

  test('HEAD answers like GET without counting a click', async () => {
    const code = await link({ url: 'https://example.com/head' })
    const r = await visit(`/${code}`, { method: 'HEAD' })
    expect(r.status).toBe(302)
    expect(r.headers.get('location')).toBe('https://example.com/head')
    expect(await clicks(code)).toBe(0)
  })

  test.each([301, 307, 308])('the redirect status is configurable (%d)', async (status) => {
    const b = await makeBox({ links: { redirect_status: status } })
    try {
      const code = (await b.post('/api/getLink.json', { url: 'https://example.com/' })).body.return.hex
      expect((await b.request(`/${code}`, { redirect: 'manual' })).status).toBe(status)
    } finally {
      await b.cleanup()
    }
  })
})

describe('preview and frame modes', () => {
  test('preview: the destination in full with its host emphasised, a Continue link, a warning; one click', async () => {
    const code = await link({ url: 'https://deep.example.org/a/b?c=<d>', mode: 'preview' })
    const r = await visit(`/${code}`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toContain('text/html')
    expect(r.headers.get('content-security-policy')).toContain("default-src 'none'")
    const html = await r.text()
    expect(html).toContain('<strong>deep.example.org</strong>')
    expect(html).toContain('https://deep.example.org/a/b?c=%3Cd%3E')
    expect(html).not.toContain('<d>')
    expect(html).toMatch(/<a class="button" href="https:\/\/deep\.example\.org\/a\/b\?c=%3Cd%3E"[^>]*>Continue/)
    expect(html.toLowerCase()).toContain('check the address')
    expect(await clicks(code)).toBe(1)
  })

  test('frame: a destination that cannot be checked gets "Open directly" instead of an iframe; one click', async () => {
    // (Frames that render, and the check itself, are in pages.test.ts with local destination servers.)
    const code = await link({ url: 'https://framed.example/page', mode: 'frame' })
    const r = await visit(`/${code}`)
    expect(r.status).toBe(200)
    const html = await r.text()
    expect(html).toContain(`http://localhost:8080/${code}`)
    expect(html).not.toContain('<iframe')
    expect(html).toMatch(/<a class="button big" href="https:\/\/framed\.example\/page"[^>]*>Open directly/)
    expect(r.headers.get('content-security-policy')).not.toContain('framed.example')
    expect(await clicks(code)).toBe(1)
  })

  test('markup in a destination is escaped everywhere', async () => {
    const code = await link({ url: "https://x.example/\"><script>alert(1)</script>?a=1&b='2'", mode: 'frame' })
    const html = await (await visit(`/${code}`)).text()
    expect(html).not.toContain('<script>')
    expect(html).toContain('a=1&amp;b=%272%27')
    expect(html).not.toContain('a=1&b')
  })
})

describe('password', () => {
  test('the form first (no click), then a correct POST redirects with 303 and counts one click', async () => {
    const code = await link({ url: 'https://example.com/secret', password: 'open sesame' })
    const form = await visit(`/${code}`, { headers: { referer: 'https://news.example.net/post' } })
    expect(form.status).toBe(200)
    const html = await form.text()
    expect(html).toContain('<form method="post"')
    expect(html).toContain('name="password"')
    expect(html).not.toContain('example.com/secret')
    expect(await clicks(code)).toBe(0)
    const wrong = await visit(`/${code}`, { method: 'POST', body: new URLSearchParams({ password: 'nope' }) })
    expect(wrong.status).toBe(401)
    expect(await wrong.text()).toContain('not right')
    expect(await clicks(code)).toBe(0)
    const right = await visit(`/${code}`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'open sesame', ref: 'https://news.example.net/post' }),
    })
    expect(right.status).toBe(303)
    expect(right.headers.get('location')).toBe('https://example.com/secret')
    expect(await clicks(code)).toBe(1)
    // The original referrer travels through the form, so the source is not lost.
    const stats = await box.post('/api/stats.json', { code })
    expect(stats.body.return.sources).toEqual([{ name: 'news.example.net', clicks: 1 }])
  })

  test('scripts may send X-Link-Password on GET', async () => {
    const code = await link({ url: 'https://example.com/scripted', password: 'pw' })
    const ok = await visit(`/${code}`, { headers: { 'x-link-password': 'pw' } })
    expect(ok.status).toBe(302)
    expect(ok.headers.get('location')).toBe('https://example.com/scripted')
    expect((await visit(`/${code}`, { headers: { 'x-link-password': 'bad' } })).status).toBe(401)
    expect(await clicks(code)).toBe(1)
  })

  test('a protected preview link shows the preview after the password', async () => {
    const code = await link({ url: 'https://example.com/pp', password: 'pw', mode: 'preview' })
    const r = await visit(`/${code}`, { method: 'POST', body: new URLSearchParams({ password: 'pw' }) })
    expect(r.status).toBe(200)
    expect(await r.text()).toContain('<strong>example.com</strong>')
    expect(await clicks(code)).toBe(1)
  })

  test('attempts are limited to 10 a minute per client and code (429, then allowed again)', async () => {
    const code = await link({ url: 'https://example.com/brute', password: 'right' })
    for (let i = 0; i < 10; i++)
      expect(
        (await visit(`/${code}`, { method: 'POST', body: new URLSearchParams({ password: `w${i}` }) })).status,
      ).toBe(401)
    const blocked = await visit(`/${code}`, { method: 'POST', body: new URLSearchParams({ password: 'right' }) })
    expect(blocked.status).toBe(429)
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await clicks(code)).toBe(0)
  })
})

describe('expired, unknown, statistics page', () => {
  test('an expired link answers 410 with a page, and no click', async () => {
    const code = await link({ url: 'https://example.com/short-lived', expire: '60' })
    expect((await visit(`/${code}`)).status).toBe(302)
    now += 61_000
    const r = await visit(`/${code}`)
    expect(r.status).toBe(410)
    expect(await r.text()).toContain('expired')
    expect(await clicks(code)).toBe(1)
  })

  test('an unknown code answers 404 with a page, with its request id; so does a path that is not valid percent-encoding', async () => {
    const r = await visit('/NoSuchCode', { headers: { 'x-request-id': 'unknown-code-1' } })
    expect(r.status).toBe(404)
    expect(r.headers.get('content-type')).toContain('text/html')
    expect(r.headers.get('x-request-id')).toBe('unknown-code-1')
    expect(await r.text()).toContain('Link not found')
    // The router's answer for a code the hot path does not take (percent-encoded) is the same page.
    const routed = await visit('/NoSuch%43ode')
    expect([routed.status, await routed.text()]).toEqual([404, await (await visit('/NoSuchCode')).text()])
    for (const method of ['GET', 'POST']) {
      const bad = await visit('/%ff', {
        method,
        ...(method === 'POST'
          ? { body: 'password=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }
          : {}),
      })
      expect([method, bad.status]).toEqual([method, 404])
      expect(await bad.text()).toContain('Link not found')
    }
  })

  test('/<code>+ is the public statistics page; it hides the destination of a protected link', async () => {
    const code = await link({ url: 'https://example.com/public-stats' })
    await visit(`/${code}`)
    await box.recorder.flush() // the page shows what is written (the timer does this within a second)
    const r = await visit(`/${code}+`)
    expect(r.status).toBe(200)
    const html = await r.text()
    expect(html).toContain(`Statistics of http://localhost:8080/${code}`)
    // Shown whole, with a <wbr> after each separator so that it breaks only there.
    expect(html).toContain('https:/<wbr>/<wbr>example.<wbr>com/<wbr>public-<wbr>stats')
    expect(html).toContain('<span class="label">Clicks, all time</span><span class="value">1</span>')
    // The clicks-by-day chart: one bar per day of the window, each with its exact count and visitors.
    const bars = html.match(
      /<g><title>[^<]*<\/title><rect class="bar"[^>]*\/>(<rect class="bar-visitors"[^>]*\/>)?<\/g>/g,
    )!
    expect(bars).toHaveLength(30)
    expect(bars.at(-1)).toContain('<title>2026-06-01: 1 click, 1 visitor</title>')
    expect(bars.at(-1)).toContain('<rect class="bar-visitors"')
    expect(bars[0]).toContain(': 0 clicks, 0 visitors</title>')
    // The stylesheet's URL carries its version, so it can be cached for good.
    const css = html.match(/href="(\/assets\/style\.css\?v=[0-9a-f]{12})"/)![1]!
    const sheet = await box.request(css)
    expect(sheet.headers.get('cache-control')).toContain('immutable')
    expect(await sheet.text()).toContain('svg.chart')
    const hidden = await link({ url: 'https://example.com/hidden-dest', password: 'x' })
    const h = await (await visit(`/${hidden}+`)).text()
    expect(h).not.toContain('hidden-dest')
    expect((await visit('/unknown0+')).status).toBe(404)
  })
})

test('a password form body over 8 KiB → 413 page', async () => {
  const code = await link({ url: 'https://example.com/big-form', password: 'pw' })
  const r = await visit(`/${code}`, { method: 'POST', body: new URLSearchParams({ password: 'x'.repeat(9000) }) })
  expect(r.status).toBe(413)
  expect(r.headers.get('content-type')).toContain('text/html')
  expect(await r.text()).toContain('Request too large')
})
