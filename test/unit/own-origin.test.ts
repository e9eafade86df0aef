// Which destinations are "this service itself" (issue 6: the own-host check compared host names only, and
// missed [::1], 2130706433, 0x7f000001 and 127.1), and which hosts a URL may name at all (a;sandbox went
// into a page's CSP). Driven through the API of the real app, configured as the tests need.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'

/** The service on 127.0.0.1:8080 with base_url http://127.0.0.1:8080, as in the issue. */
describe('a service on 127.0.0.1:8080', () => {
  let box: TestBox
  beforeAll(async () => {
    box = await makeBox({ server: { host: '127.0.0.1', port: 8080, base_url: 'http://127.0.0.1:8080' } })
  })
  afterAll(() => box.cleanup())
  const create = (url: string) => box.post('/api/getLink.json', { url })

  test.each([
    'http://127.0.0.1:8080/',
    'http://127.0.0.1:8080/x?y=1',
    'http://localhost:8080/',
    'http://LOCALHOST.:8080/',
    'http://app.localhost:8080/',
    'http://127.9.8.7:8080/',
    'http://[::1]:8080/',
    'http://2130706433:8080/',
    'http://0x7f000001:8080/',
    'http://127.1:8080/',
    'http://0177.0.0.1:8080/',
    'http://[::ffff:127.0.0.1]:8080/',
    'http://[::ffff:7f00:1]:8080/',
    'http://0.0.0.0:8080/',
    'http://[::]:8080/',
    'https://127.0.0.1:8080/',
  ])('%s is the service itself: 400 invalid_url naming the origin', async (url) => {
    const r = await create(url)
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('invalid_url')
    expect(r.body.message).toContain('"url"')
    expect(r.body.message).toMatch(/https?:\/\/\S+:8080/)
    expect(r.body.message).not.toContain('this service itself.')
  })

  test.each([
    'http://127.0.0.1:9999/',
    'http://127.0.0.1/',
    'http://localhost:3000/grafana',
    'http://[::1]:8081/',
    'http://2130706433:8443/',
    'https://127.0.0.1/',
  ])('%s is another program on the same machine: accepted', async (url) => {
    const r = await create(url)
    expect(r.status).toBe(200)
    expect(r.body.return.long_url).toBe(new URL(url).href)
  })

  test('two links cannot point at each other: every short link is on the refused origin', async () => {
    const a = await create('http://127.0.0.1:9999/first')
    expect(a.status).toBe(200)
    const key = await box.account('loop')
    const b = await box.post('/api/getLink.json', { url: 'https://example.com/' }, { 'x-api-key': key })
    expect(b.status).toBe(200)
    // B → A is refused at creation and at update, in the short link's own spelling and another.
    for (const url of [a.body.return.url, a.body.return.url.replace('127.0.0.1', '2130706433')]) {
      expect((await create(url)).status).toBe(400)
      const u = await box.post('/api/update.json', { code: b.body.return.hex, url }, { 'x-api-key': key })
      expect([u.status, u.body.code]).toEqual([400, 'invalid_url'])
    }
  })
})

describe('a service with a public base_url behind a proxy, listening on every address', () => {
  let box: TestBox
  beforeAll(async () => {
    box = await makeBox({ server: { host: '0.0.0.0', port: 8080, base_url: 'https://s.example.net' } })
  })
  afterAll(() => box.cleanup())
  const status = async (url: string) => (await box.post('/api/getLink.json', { url })).status

  test('its own origin is refused, in upper case and with the default port written', async () => {
    for (const url of ['https://s.example.net/x', 'HTTPS://S.EXAMPLE.NET:443/x', 'https://s.example.net./x'])
      expect(await status(url)).toBe(400)
  })

  test('plain http on the same name is refused: a proxy sends it on to https, that is to the service', async () => {
    expect(await status('http://s.example.net/x')).toBe(400)
  })

  test('other ports of the same name are other services', async () => {
    expect(await status('https://s.example.net:8443/x')).toBe(200)
    expect(await status('http://s.example.net:8000/x')).toBe(200)
  })

  test('the listening port on a loopback spelling is the service itself (it listens there too)', async () => {
    for (const url of ['http://127.0.0.1:8080/', 'http://localhost:8080/', 'http://[::1]:8080/'])
      expect(await status(url)).toBe(400)
    expect(await status('http://127.0.0.1:9090/')).toBe(200)
  })
})

describe('a service listening on a LAN address', () => {
  test('its listening origin is refused; loopback addresses are not its own', async () => {
    const box = await makeBox({ server: { host: '192.168.1.10', port: 8080, base_url: 'https://s.example.net' } })
    try {
      expect((await box.post('/api/getLink.json', { url: 'http://192.168.1.10:8080/' })).status).toBe(400)
      expect((await box.post('/api/getLink.json', { url: 'http://192.168.1.10:8081/' })).status).toBe(200)
      expect((await box.post('/api/getLink.json', { url: 'http://127.0.0.1:8080/' })).status).toBe(200)
    } finally {
      await box.cleanup()
    }
  })
})

describe('the characters of a host', () => {
  let box: TestBox
  beforeAll(async () => {
    box = await makeBox()
  })
  afterAll(() => box.cleanup())

  test.each([
    'https://a;sandbox/',
    'https://a;sandbox.example/',
    "https://a'b.example/",
    'https://a"b.example/',
    'https://a*b.example/',
    'https://a,b.example/',
    'https://a(b).example/',
    'https://a!b.example/',
    'https://a$b.example/',
    'https://a&b.example/',
    'https://a=b.example/',
    'https://a+b.example/',
    'https://a~b.example/',
    'https://a`b.example/',
    'https://a{b}.example/',
    'https://a..b.example/',
    `https://${'a'.repeat(64)}.example/`,
  ])('%s → 400 invalid_url naming the parameter', async (url) => {
    const r = await box.post('/api/getLink.json', { url })
    expect([r.status, r.body.code]).toEqual([400, 'invalid_url'])
    expect(r.body.message).toContain('"url" must have a host that is a DNS name')
  })

  test.each([
    ['https://example.com/', 'https://example.com/'],
    ['https://a-b.c-d.example/', 'https://a-b.c-d.example/'],
    ['https://my_host.example/', 'https://my_host.example/'],
    ['https://bücher.example/', 'https://xn--bcher-kva.example/'],
    ['https://xn--bcher-kva.example/', 'https://xn--bcher-kva.example/'],
    ['http://192.0.2.7:81/', 'http://192.0.2.7:81/'],
    ['http://[2001:db8::1]/', 'http://[2001:db8::1]/'],
    ['https://example.com./', 'https://example.com./'],
  ])('%s is accepted as %s', async (url, href) => {
    const r = await box.post('/api/getLink.json', { url })
    expect(r.status).toBe(200)
    expect(r.body.return.long_url).toBe(href)
  })
})
