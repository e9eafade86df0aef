// Who may read /metrics (issue 20, SPEC §10): loopback and private networks (RFC 1918, ULA), the client address
// as the rate limits find it (here: behind a trusted proxy on 127.0.0.1, its X-Forwarded-For), and anyone with
// `Authorization: Bearer <server.metrics_token>`. Everyone else gets the 404 of a path that is not there.
// Over a real socket; the in-process request of the other tests has no client address and is refused.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { createLinkbox, type Linkbox } from '../../src/app/app'
import { BASE, tempDir, testConfig } from '../support/app'

const TOKEN = 'mt_9fK2-vQ7.xR4_zL8pW3nB6'

const boxes: { box: Linkbox; dir: string }[] = []
afterAll(async () => {
  for (const { box, dir } of boxes) {
    await box.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

/** A listening app whose trusted proxy is 127.0.0.1 (the test itself), with `server` settings added. */
function listening(server: Record<string, unknown> = {}): { box: Linkbox; base: string } {
  const dir = tempDir()
  const box = createLinkbox(
    testConfig(dir, { server: { host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1'], ...server } }),
  )
  boxes.push({ box, dir })
  return { box, base: `http://127.0.0.1:${box.listen().port}` }
}

describe('/metrics with server.metrics_token set', () => {
  let box: Linkbox
  let base: string
  beforeAll(() => ({ box, base } = listening({ metrics_token: TOKEN })))

  const get = (headers: Record<string, string> = {}) => fetch(`${base}/metrics`, { headers })
  const from = (client: string, headers: Record<string, string> = {}) => get({ 'x-forwarded-for': client, ...headers })

  test('a client on a public address gets a 404, the same page as a path that is not there, and no numbers', async () => {
    const res = await from('203.0.113.7')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toContain('text/html')
    const body = await res.text()
    expect(body).not.toContain('linkbox_')
    const missing = await fetch(`${base}/nosuch9`, { headers: { 'x-forwarded-for': '203.0.113.7' } })
    expect(missing.status).toBe(404)
    const strip = (html: string) => html.replace(/nonce-[^'"]+|nonce="[^"]*"/g, '')
    expect(strip(body)).toBe(strip(await missing.text()))
  })

  test('with the bearer token it answers from anywhere', async () => {
    const res = await from('203.0.113.7', { authorization: `Bearer ${TOKEN}` })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(await res.text()).toMatch(/^linkbox_links 0$/m)
    // The scheme is case-insensitive (RFC 9110).
    expect((await from('2001:db8::5', { authorization: `bearer ${TOKEN}` })).status).toBe(200)
  })

  test('a wrong, partial or misplaced token is a 404', async () => {
    for (const headers of <Record<string, string>[]>[
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: 'Bearer ' },
      { authorization: TOKEN },
      { authorization: `Basic ${btoa(`metrics:${TOKEN}`)}` },
      { 'x-api-key': TOKEN },
    ]) {
      const res = await from('203.0.113.7', headers)
      expect({ headers, status: res.status }).toEqual({ headers, status: 404 })
      expect(await res.text()).not.toContain('linkbox_')
    }
  })

  test('loopback answers without a token (the socket peer itself, and forwarded)', async () => {
    const res = await get()
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('# TYPE linkbox_links gauge')
    expect((await from('127.0.0.1')).status).toBe(200)
    expect((await from('::1')).status).toBe(200)
  })

  test('private networks answer: RFC 1918 and IPv6 unique local addresses; their neighbours do not', async () => {
    const status = async (client: string) => (await from(client)).status
    for (const client of [
      '10.1.2.3',
      '172.16.0.9',
      '172.31.255.254',
      '192.168.1.20',
      'fd12:3456:789a::1',
      'fc00::1',
      '::ffff:10.0.0.8',
    ])
      expect({ client, status: await status(client) }).toEqual({ client, status: 200 })
    for (const client of [
      '172.32.0.1',
      '172.15.255.255',
      '192.169.0.1',
      '11.0.0.1',
      '100.64.0.1',
      '169.254.1.1',
      'fe80::1',
      '2001:db8::1',
      '::ffff:203.0.113.7',
    ])
      expect({ client, status: await status(client) }).toEqual({ client, status: 404 })
  })

  test('the proxy vouches only for the hop it adds: a client cannot claim a private address left of its own', async () => {
    // The proxy appends the real client (203.0.113.7) to what the client sent ("10.0.0.1").
    expect((await from('10.0.0.1, 203.0.113.7')).status).toBe(404)
  })

  test('a request that came through no socket has no client address: refused', async () => {
    expect((await box.app.handle(new Request(`${BASE}/metrics`))).status).toBe(404)
    const withToken = await box.app.handle(
      new Request(`${BASE}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } }),
    )
    expect(withToken.status).toBe(200)
  })
})

test('/metrics without a token set: no bearer value opens it to a public client', async () => {
  const { base } = listening()
  for (const authorization of ['Bearer ', 'Bearer undefined', 'Bearer null', `Bearer ${TOKEN}`]) {
    const res = await fetch(`${base}/metrics`, { headers: { 'x-forwarded-for': '198.51.100.9', authorization } })
    expect({ authorization, status: res.status }).toEqual({ authorization, status: 404 })
  }
  expect((await fetch(`${base}/metrics`, { headers: { 'x-forwarded-for': '192.168.0.4' } })).status).toBe(200)
})
