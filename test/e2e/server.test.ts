// The real server on a free port, over real sockets: the same app as `linkbox serve`.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { createLinkbox, type Linkbox } from '../../src/app/app'
import { tempDir, testConfig } from '../support/app'

let box: Linkbox
let base: string
let dir: string
beforeAll(() => {
  dir = tempDir()
  box = createLinkbox(
    testConfig(dir, {
      server: { host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1'] },
      rate: { anon_per_minute: 2 },
    }),
  )
  const server = box.listen()
  expect(server.port).toBeGreaterThan(0)
  base = `http://127.0.0.1:${server.port}`
})
afterAll(async () => {
  await box.close()
  rmSync(dir, { recursive: true, force: true })
})

test('create over HTTP, follow the redirect, read the statistics', async () => {
  const created = await fetch(`${base}/api/getLink.json`, {
    method: 'POST',
    body: new URLSearchParams({ url: 'https://example.com/over-http' }),
    headers: { 'x-forwarded-for': '198.51.100.1' },
  })
  expect(created.status).toBe(200)
  const { return: link } = await created.json()
  const visit = await fetch(`${base}/${link.hex}`, {
    redirect: 'manual',
    headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0' },
  })
  expect(visit.status).toBe(302)
  expect(visit.headers.get('location')).toBe('https://example.com/over-http')
  const stats = await fetch(`${base}/api/stats.json`, {
    method: 'POST',
    body: new URLSearchParams({ code: link.hex }),
    headers: { 'x-forwarded-for': '198.51.100.2' },
  })
  expect((await stats.json()).return.clicks).toBe(1)
  expect((await fetch(`${base}/healthz`)).status).toBe(200)
})

test('anonymous limits are per client address as told by a trusted proxy', async () => {
  const hit = (ip: string) =>
    fetch(`${base}/api/stats.json`, {
      method: 'POST',
      body: 'code=zzzzzz',
      headers: { 'x-forwarded-for': ip, 'content-type': 'application/x-www-form-urlencoded' },
    })
  expect((await hit('203.0.113.1')).status).toBe(404)
  expect((await hit('203.0.113.1')).status).toBe(404)
  expect((await hit('203.0.113.1')).status).toBe(429)
  expect((await hit('203.0.113.2')).status).toBe(404)
})
