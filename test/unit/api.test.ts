// The /api surface (SPEC §1, §7): envelope, status codes, keys and scopes, marketplace route, rate limits.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AppError } from '../../src/kernel/errors'
import { createFaultLog } from '../../src/web/fault-log'
import { log } from '../../src/kernel/log'
import { createApi, type ApiMethod } from '../../src/web/api'
import { readBodyLimited } from '../../src/web/params'
import { createRateLimiter } from '../../src/web/rate-limit'
import { capturedLog, makeBox, type TestBox } from '../support/app'

let box: TestBox
let key: string
beforeAll(async () => {
  box = await makeBox({ marketplace: { proxy_secret: 'mp-secret' } })
  key = await box.account('carol')
})
afterAll(() => box.cleanup())

describe('envelope and status codes', () => {
  test('unknown /api path → 404 JSON envelope', async () => {
    for (const path of ['/api/nope.json', '/api/', '/api', '/api/getLink.json/extra']) {
      const r = await box.get(path)
      expect(r.status).toBe(404)
      expect(r.headers.get('content-type')).toContain('application/json')
      expect(r.body).toMatchObject({ status: 'error', code: 'not_found' })
      expect(typeof r.body.message).toBe('string')
    }
  })

  test('wrong method → 405 with Allow', async () => {
    const r = await box.get('/api/getLink.json', { url: 'https://example.com' })
    expect(r.status).toBe(405)
    expect(r.body.code).toBe('method_not_allowed')
    expect(r.headers.get('allow')).toBe('POST')
    const d = await box.request('/api/delete.json', { method: 'PUT' })
    expect(d.status).toBe(405)
  })

  test('body over 64 KiB → 413 too_large, by Content-Length and by streaming', async () => {
    const big = 'url=' + 'a'.repeat(70 * 1024)
    const r = await box.request('/api/getLink.json', {
      method: 'POST',
      body: big,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(r.status).toBe(413)
    expect((await r.json()).code).toBe('too_large')
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < 80; i++) c.enqueue(new TextEncoder().encode('a'.repeat(1024)))
        c.close()
      },
    })
    const s = await box.request('/api/getLink.json', {
      method: 'POST',
      body: stream,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(s.status).toBe(413)
  })

  test('a body that stalls is cut off with 408 timeout instead of holding the connection', async () => {
    const stalled = new Request('http://localhost/api/getLink.json', {
      method: 'POST',
      body: new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('url=')) }), // never closes
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    const started = Date.now()
    const err = await readBodyLimited(stalled, 1024, 200).catch((e) => e)
    expect(err).toBeInstanceOf(AppError)
    expect(err).toMatchObject({ status: 408, code: 'timeout' })
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  test('malformed bodies → 400 invalid_body', async () => {
    for (const [type, body] of [
      ['application/json', '{"url":'],
      ['application/json', '["https://example.com"]'],
      ['multipart/form-data; boundary=xyz', '--xyz\r\nbroken'],
    ] as const) {
      const r = await box.request('/api/getLink.json', { method: 'POST', body, headers: { 'content-type': type } })
      expect(r.status).toBe(400)
      const j = await r.json()
      expect(j).toMatchObject({ status: 'error', code: 'invalid_body' })
    }
  })

  test('the last of a repeated parameter wins; unknown parameters are ignored', async () => {
    const r = await box.request('/api/getLink.json', {
      method: 'POST',
      body: 'url=https://first.example/&url=https://last.example/&colour=blue',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(r.status).toBe(200)
    expect((await r.json()).return.long_url).toBe('https://last.example/')
  })

  test('an internal failure is a 500 envelope without a stack trace', async () => {
    const { logger, errors } = capturedLog()
    const b = await makeBox({}, { logger })
    try {
      b.db.exec('DROP TABLE click_days')
      const code = (await b.post('/api/getLink.json', { url: 'https://example.com' })).body.return.hex
      await b.request(`/${code}`, {
        headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0' },
        redirect: 'manual',
      })
      const r = await b.post('/api/stats.json', { code })
      expect(r.status).toBe(500)
      expect(r.body).toEqual({ status: 'error', message: expect.any(String), code: 'internal' })
      expect(r.body.message).not.toContain('click_days')
      expect(r.body.message).not.toContain('at ')
      // The operator's log has it (with its stack: the line's own fields).
      expect(errors).toContain('internal error')
    } finally {
      b.recorder.stop = async () => {} // the broken table would fail the final flush
      await b.cleanup()
    }
  })
})

describe('keys and scopes', () => {
  test('a required key that is absent → 401 missing_key', async () => {
    for (const path of ['/api/links.json', '/api/update.json', '/api/delete.json']) {
      const r = await box.post(path, { code: 'abc' })
      expect(r.status).toBe(401)
      expect(r.body.code).toBe('missing_key')
    }
  })

  test('an unknown key → 401 invalid_key, even where a key is optional', async () => {
    const r = await box.post('/api/getLink.json', { url: 'https://example.com' }, { 'x-api-key': 'lbk_not-a-real-key' })
    expect(r.status).toBe(401)
    expect(r.body.code).toBe('invalid_key')
  })

  test('a revoked key stops working at once', async () => {
    const k = await box.accounts.createKey({ account: 'carol', label: 'temp' })
    expect((await box.post('/api/links.json', {}, { 'x-api-key': k.key })).status).toBe(200)
    await box.accounts.revokeKey(String(k.id))
    const r = await box.post('/api/links.json', {}, { 'x-api-key': k.key })
    expect(r.status).toBe(401)
    expect(r.body.code).toBe('invalid_key')
  })

  test('keys are stored as SHA-256 only, with a visible prefix', async () => {
    const rows = box.db.query('SELECT prefix, hash FROM api_keys').all() as { prefix: string; hash: string }[]
    const all = JSON.stringify(box.db.query('SELECT * FROM api_keys').all())
    expect(all).not.toContain(key)
    const mine = rows.find((r) => key.startsWith(r.prefix))!
    expect(mine.hash).toBe(new Bun.CryptoHasher('sha256').update(key).digest('hex'))
  })

  test('a key without the links scope → 403 scope_denied', async () => {
    const k = await box.accounts.createKey({ account: 'carol', scopes: ['qr'] })
    for (const path of ['/api/getLink.json', '/api/links.json']) {
      const r = await box.post(path, { url: 'https://example.com' }, { 'x-api-key': k.key })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('scope_denied')
      expect(r.body.message).toContain('links')
    }
  })
})

describe('answer headers', () => {
  test("every JSON answer has its own headers: one answer's request id, rate or Retry-After headers never reach the next", async () => {
    const b = await makeBox()
    try {
      const expectJson = (r: { headers: Headers }) => {
        expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8')
        expect(r.headers.get('cache-control')).toBe('no-store')
        expect(r.headers.get('access-control-allow-origin')).toBe('*')
        expect(r.headers.get('access-control-expose-headers')).toBe(
          'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After',
        )
      }
      const key = await b.account('headers')
      const one = await b.post(
        '/api/getLink.json',
        { url: 'https://example.com/h1' },
        { 'x-api-key': key, 'x-request-id': 'first.1' },
      )
      const bad = await b.post('/api/getLink.json', { url: 'nope' }, { 'x-api-key': key, 'x-request-id': 'second.2' })
      const two = await b.post('/api/getLink.json', { url: 'https://example.com/h2' }, { 'x-api-key': key })
      expect([one.status, bad.status, two.status]).toEqual([200, 400, 200])
      for (const r of [one, bad, two]) expectJson(r)
      expect([one.headers.get('x-request-id'), bad.headers.get('x-request-id')]).toEqual(['first.1', 'second.2'])
      expect(['first.1', 'second.2']).not.toContain(two.headers.get('x-request-id'))
      for (const r of [one, bad, two])
        expect([r.headers.get('ratelimit-limit'), r.headers.get('retry-after')]).toEqual([null, null])
    } finally {
      await b.cleanup()
    }
    const limited = await makeBox({ rate: { anon_per_minute: 1, key_per_minute: 1 } })
    try {
      const first = await limited.post('/api/getLink.json', { url: 'https://example.com/l1' })
      const over = await limited.post('/api/getLink.json', { url: 'https://example.com/l2' })
      const keyed = await limited.post(
        '/api/getLink.json',
        { url: 'https://example.com/l3' },
        { 'x-api-key': await limited.account('k') },
      )
      expect([first.status, over.status, keyed.status]).toEqual([200, 429, 200])
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0)
      expect([first.headers.get('retry-after'), keyed.headers.get('retry-after')]).toEqual([null, null])
      expect([first.headers.get('ratelimit-remaining'), keyed.headers.get('ratelimit-remaining')]).toEqual(['0', '0'])
      expect(keyed.headers.get('content-type')).toBe('application/json; charset=utf-8')
    } finally {
      await limited.cleanup()
    }
  })
})

describe('rate limits', () => {
  test('anonymous callers: RateLimit-* headers on every answer, 429 + Retry-After past the limit', async () => {
    const b = await makeBox({ rate: { anon_per_minute: 3, key_per_minute: 5 } })
    try {
      const seen: number[] = []
      for (let i = 0; i < 3; i++) {
        const r = await b.post('/api/getLink.json', { url: `https://example.com/${i}` })
        expect(r.status).toBe(200)
        expect(r.headers.get('ratelimit-limit')).toBe('3')
        seen.push(Number(r.headers.get('ratelimit-remaining')))
        expect(Number(r.headers.get('ratelimit-reset'))).toBeGreaterThan(0)
      }
      expect(seen).toEqual([2, 1, 0])
      const over = await b.post('/api/getLink.json', { url: 'https://example.com/over' })
      expect(over.status).toBe(429)
      expect(over.body.code).toBe('rate_limited')
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(over.headers.get('ratelimit-remaining')).toBe('0')
      // Errors carry the headers too, and a key has its own, larger allowance.
      const k = await b.account('limited')
      for (let i = 0; i < 5; i++) {
        const r = await b.post('/api/links.json', {}, { 'x-api-key': k })
        expect(r.status).toBe(200)
        expect(r.headers.get('ratelimit-limit')).toBe('5')
      }
      expect((await b.post('/api/links.json', {}, { 'x-api-key': k })).status).toBe(429)
      const nf = await b.post('/api/stats.json', { code: 'zzzzzz' }, { 'x-api-key': await b.account('fresh') })
      expect(nf.status).toBe(404)
      expect(nf.headers.get('ratelimit-remaining')).toBe('4')
    } finally {
      await b.cleanup()
    }
  })

  test('404 and 405 answers carry the RateLimit-* headers and count against the allowance', async () => {
    const b = await makeBox({ rate: { anon_per_minute: 3, key_per_minute: 5 } })
    try {
      const nf = await b.get('/api/nope.json')
      const na = await b.get('/api/getLink.json')
      for (const r of [nf, na]) {
        expect(r.headers.get('ratelimit-limit')).toBe('3')
        expect(r.headers.get('ratelimit-reset')).toMatch(/^\d+$/)
      }
      expect([nf.headers.get('ratelimit-remaining'), na.headers.get('ratelimit-remaining')]).toEqual(['2', '1'])
      expect((await b.get('/api/nope.json')).status).toBe(404)
      const over = await b.get('/api/nope.json')
      expect([over.status, over.body.code]).toEqual([429, 'rate_limited'])
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0)
      const keyed = await b.get('/api/nope.json', {}, { 'X-Api-Key': await b.account('k404') })
      expect([keyed.status, keyed.headers.get('ratelimit-limit')]).toEqual([404, '5'])
    } finally {
      await b.cleanup()
    }
  })

  test('the window slides: the allowance comes back a minute after it was used', async () => {
    let now = Date.parse('2026-01-01T00:00:10Z')
    const b = await makeBox({ rate: { anon_per_minute: 1 } }, { clock: () => now })
    try {
      expect((await b.post('/api/stats.json', { code: 'aaaaaa' })).status).toBe(404)
      const over = await b.post('/api/stats.json', { code: 'aaaaaa' })
      expect(over.status).toBe(429)
      // Counted in the second 00:00:10, the request leaves the window at 00:01:11.
      expect(over.headers.get('retry-after')).toBe('61')
      now += 50_000
      expect((await b.post('/api/stats.json', { code: 'aaaaaa' })).status).toBe(429)
      now += 11_000
      expect((await b.post('/api/stats.json', { code: 'aaaaaa' })).status).toBe(404)
    } finally {
      await b.cleanup()
    }
  })
})

describe('marketplace route', () => {
  // No method of this issue is on the marketplace route; a probe method shows the pipeline's behaviour.
  test('only methods marked for it accept the proxy secret instead of a key', async () => {
    const r = await box.post('/api/links.json', {}, { 'X-RapidAPI-Proxy-Secret': 'mp-secret', 'X-RapidAPI-User': 'u1' })
    expect(r.status).toBe(401)
    expect(r.body.code).toBe('missing_key')
  })

  test('the proxy secret is checked, and the caller is the account marketplace:<user>', async () => {
    const probe: ApiMethod = {
      verb: 'GET',
      path: '/api/probe.json',
      key: 'required',
      scope: 'qr',
      marketplace: true,
      summary: 'probe',
      params: [],
      handler: ({ caller }) => ({ account: caller!.accountName, via: caller!.via }),
    }
    const { plugin } = createApi([probe], {
      config: box.config,
      accounts: box.accounts,
      limiter: createRateLimiter(),
      clientIp: () => '192.0.2.1',
      faults: createFaultLog(log),
    })
    const call = async (headers: Record<string, string>) => {
      const res = await plugin.handle(new Request('http://localhost/api/probe.json', { headers }))
      return { status: res.status, body: await res.json() }
    }
    const ok = await call({ 'X-RapidAPI-Proxy-Secret': 'mp-secret', 'X-RapidAPI-User': 'buyer-7' })
    expect(ok).toEqual({
      status: 200,
      body: { status: 'success', return: { account: 'marketplace:buyer-7', via: 'marketplace' } },
    })
    expect(box.db.query("SELECT name FROM accounts WHERE name = 'marketplace:buyer-7'").get()).toEqual({
      name: 'marketplace:buyer-7',
    })
    expect((await call({ 'X-RapidAPI-Proxy-Secret': 'wrong', 'X-RapidAPI-User': 'buyer-7' })).body.code).toBe(
      'invalid_key',
    )
    expect((await call({ 'X-RapidAPI-Proxy-Secret': 'mp-secret' })).status).toBe(401)
    expect((await call({})).body.code).toBe('missing_key')
    // With the route off (no secret configured) the header means nothing.
    const off = createApi([probe], {
      config: { ...box.config, marketplace: { ...box.config.marketplace, proxy_secret: '' } },
      accounts: box.accounts,
      limiter: createRateLimiter(),
      clientIp: () => '192.0.2.1',
      faults: createFaultLog(log),
    })
    const res = await off.plugin.handle(
      new Request('http://localhost/api/probe.json', {
        headers: { 'X-RapidAPI-Proxy-Secret': '', 'X-RapidAPI-User': 'x' },
      }),
    )
    expect(res.status).toBe(401)
  })
})

describe('CORS and the API documents', () => {
  test('answers allow any origin and expose the rate-limit headers; preflight is 204', async () => {
    const r = await box.post('/api/getLink.json', { url: 'https://example.com/cors' })
    expect(r.headers.get('access-control-allow-origin')).toBe('*')
    expect(r.headers.get('access-control-expose-headers')).toContain('RateLimit-Remaining')
    const e = await box.post('/api/links.json', {})
    expect(e.headers.get('access-control-allow-origin')).toBe('*')
    const pre = await box.request('/api/getLink.json', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-headers': 'x-api-key' },
    })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-headers')).toContain('X-Api-Key')
    expect((await box.request('/api/nope.json', { method: 'OPTIONS' })).status).toBe(404)
  })

  test('/api/docs/openapi.json describes every method with its parameters; /api/docs is a page', async () => {
    const doc = (await box.get('/api/docs/openapi.json')).body
    expect(doc.openapi).toBe('3.1.0')
    for (const m of box.methods) {
      const op = doc.paths[m.path][m.verb.toLowerCase()]
      expect(op.summary).toBe(m.summary)
      const names =
        m.verb === 'GET'
          ? op.parameters.map((p: any) => p.name)
          : Object.keys(op.requestBody.content['application/x-www-form-urlencoded'].schema.properties)
      expect(names).toEqual(m.params.map((p) => p.name))
    }
    expect(Object.keys(doc.paths)).toContain('/api/getLink.json')
    expect(
      doc.paths['/api/getLink.json'].post.requestBody.content['application/x-www-form-urlencoded'].schema.required,
    ).toEqual(['url'])
    const page = await box.request('/api/docs')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'")
    const html = await page.text()
    expect(html).toContain('/api/getLink.json')
    expect(html).toContain('/api/qr.json')
  })
})

test('/metrics: Prometheus text with visits by outcome, API answers by method and status, and gauges', async () => {
  const b = await makeBox()
  try {
    const code = (await b.post('/api/getLink.json', { url: 'https://example.com/m' })).body.return.hex
    await b.request(`/${code}`, { redirect: 'manual' })
    await b.request('/nosuch1')
    await b.post('/api/links.json', {})
    const res = await b.readMetrics()
    expect(res.headers.get('content-type')).toContain('text/plain')
    const text = await res.text()
    expect(text).toContain('# TYPE linkbox_visits_total counter')
    expect(text).toContain('linkbox_visits_total{outcome="redirect"} 1')
    expect(text).toContain('linkbox_visits_total{outcome="not_found"} 1')
    expect(text).toContain('linkbox_api_requests_total{method="getLink.json",status="200"} 1')
    expect(text).toContain('linkbox_api_requests_total{method="links.json",status="401"} 1')
    expect(text).toContain('linkbox_links 1')
    expect(text).toContain('linkbox_click_buffer 1')
    expect(text).toMatch(/^process_resident_memory_bytes \d+$/m)
    // Every sample line is "name{labels} number" or "name number".
    for (const line of text
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('#')))
      expect(line).toMatch(/^[a-z_]+(\{[^}]*\})? \d+(\.\d+)?$/)
  } finally {
    await b.cleanup()
  }
})
