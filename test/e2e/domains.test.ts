// Several short domains (issue 40, SPEC §13) on a real server: real sockets, the Host header of each request
// naming the domain, a real SQLite file. The default domain is base_url's host (s.test); go.test and x.test are
// the others, go.test with its own root and not-found redirects.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { parseCsv } from '../../src/links/csv'
import { readAnswer, sqliteLinkbox, type SqliteLinkbox, tempDir, testConfig } from '../support/app'

let dir: string
let box: SqliteLinkbox
let port: number
let key: string

beforeAll(async () => {
  dir = tempDir()
  box = sqliteLinkbox(
    testConfig(dir, {
      server: { host: '127.0.0.1', port: 0, base_url: 'http://s.test', domains: ['go.test', 'X.test'] },
      domains: {
        'go.test': { root_redirect: 'https://www.example.com/', not_found_redirect: 'https://www.example.com/404' },
      },
    }),
  )
  port = box.listen().port!
  key = (await box.accounts.createAccount({ name: 'owner' })).key.key
})
afterAll(async () => {
  await box.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A request to the server as if sent to `host` (the Host header is what names the domain). */
const on = (host: string, path: string, init: RequestInit = {}) =>
  fetch(`http://127.0.0.1:${port}${path}`, {
    redirect: 'manual',
    ...init,
    headers: { host, 'user-agent': 'Mozilla/5.0 Firefox/128.0', ...(init.headers as Record<string, string>) },
  })
const api = async (method: string, fields: Record<string, string>, host = 's.test') =>
  readAnswer(
    await on(host, `/api/${method}`, {
      method: 'POST',
      body: new URLSearchParams(fields),
      headers: { 'x-api-key': key },
    }),
  )

describe('one code on two domains', () => {
  test('the same alias on two domains makes two links, each redirecting to its own destination', async () => {
    const home = await api('getLink.json', { url: 'https://a.example/home', alias: 'same' })
    const away = await api('getLink.json', { url: 'https://a.example/away', alias: 'same', domain: 'go.test' })
    expect(home.status).toBe(200)
    expect(away.status, JSON.stringify(away.body)).toBe(200)
    expect(home.body.return).toMatchObject({
      hex: 'same',
      url: 'http://s.test/same',
      qr: 'http://s.test/qr/same.png',
      stats: 'http://s.test/same+',
      domain: 's.test',
    })
    expect(away.body.return).toMatchObject({
      hex: 'same',
      url: 'http://go.test/same',
      qr: 'http://go.test/qr/same.png',
      stats: 'http://go.test/same+',
      domain: 'go.test',
    })
    // The same alias on the same domain again is taken; x.test is still free.
    expect((await api('getLink.json', { url: 'https://a.example/2', alias: 'same', domain: 'go.test' })).status).toBe(
      409,
    )
    expect((await api('getLink.json', { url: 'https://a.example/x', alias: 'same', domain: 'x.test' })).status).toBe(
      200,
    )

    expect((await on('s.test', '/same')).headers.get('location')).toBe('https://a.example/home')
    expect((await on('go.test', '/same')).headers.get('location')).toBe('https://a.example/away')
    expect((await on('GO.TEST:8080', '/same')).headers.get('location')).toBe('https://a.example/away')
    expect((await on('x.test', '/same')).headers.get('location')).toBe('https://a.example/x')
    // A host that is not configured (an address, an old name) is the default domain.
    expect((await on(`127.0.0.1:${port}`, '/same')).headers.get('location')).toBe('https://a.example/home')
    expect((await on('old-name.example', '/same')).headers.get('location')).toBe('https://a.example/home')
    // Visited again: the caches keep the two apart too.
    expect((await on('go.test', '/same')).headers.get('location')).toBe('https://a.example/away')
    expect((await on('s.test', '/same')).headers.get('location')).toBe('https://a.example/home')
  })

  test('update, stats and delete name the domain; the default stays untouched', async () => {
    await api('getLink.json', { url: 'https://b.example/home', alias: 'twice' })
    await api('getLink.json', { url: 'https://b.example/away', alias: 'twice', domain: 'go.test' })
    const changed = await api('update.json', { code: 'twice', domain: 'go.test', url: 'https://b.example/new' })
    expect(changed.status).toBe(200)
    expect(changed.body.return).toMatchObject({ long_url: 'https://b.example/new', domain: 'go.test' })
    expect((await on('go.test', '/twice')).headers.get('location')).toBe('https://b.example/new')
    expect((await on('s.test', '/twice')).headers.get('location')).toBe('https://b.example/home')
    await on('go.test', '/twice')
    const stats = await api('stats.json', { code: 'twice', domain: 'go.test' })
    expect(stats.body.return).toMatchObject({ url: 'http://go.test/twice', long_url: 'https://b.example/new' })
    const listed = await api('links.json', { domain: 'go.test' })
    expect(listed.body.return.links.map((l: { hex: string; domain: string }) => `${l.domain}/${l.hex}`)).toContain(
      'go.test/twice',
    )
    expect(listed.body.return.links.every((l: { domain: string }) => l.domain === 'go.test')).toBe(true)
    expect((await api('delete.json', { code: 'twice', domain: 'go.test' })).status).toBe(200)
    expect((await on('go.test', '/twice')).headers.get('location')).toBe('https://www.example.com/404')
    expect((await on('s.test', '/twice')).headers.get('location')).toBe('https://b.example/home')
    // A domain the service does not have is refused, naming the parameter.
    const bad = await api('getLink.json', { url: 'https://b.example/', domain: 'other.example' })
    expect(bad.status).toBe(400)
    expect(bad.body.message).toContain('"domain"')
  })
})

describe('per-domain pages and checks', () => {
  test('root and unknown codes: go.test redirects where it says; the default and x.test keep the home and 404 pages', async () => {
    const root = await on('go.test', '/')
    expect(root.status).toBe(302)
    expect(root.headers.get('location')).toBe('https://www.example.com/')
    const missing = await on('go.test', '/nosuchcode')
    expect(missing.status).toBe(302)
    expect(missing.headers.get('location')).toBe('https://www.example.com/404')
    expect((await on('s.test', '/')).status).toBe(200)
    expect((await on('s.test', '/nosuchcode')).status).toBe(404)
    expect((await on('x.test', '/nosuchcode')).status).toBe(404)
    // Reserved names are the service's on every domain.
    expect((await on('go.test', '/healthz')).status).toBe(200)
  })

  test("a destination on any of the service's domains is refused, whatever the port or scheme", async () => {
    for (const url of ['http://go.test/x', 'https://x.test:8443/y', 'http://s.test/z']) {
      const r = await api('getLink.json', { url })
      expect(r.status, url).toBe(400)
      expect(r.body.message, url).toContain('"url"')
    }
  })

  test('the QR image and the statistics page of a link on another domain are served on that domain', async () => {
    await api('getLink.json', { url: 'https://c.example/', alias: 'qrd', domain: 'x.test' })
    expect((await on('x.test', '/qr/qrd.png')).headers.get('content-type')).toBe('image/png')
    expect((await on('s.test', '/qr/qrd.png')).status).toBe(404)
    const page = await on('x.test', '/qrd+')
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('http://x.test/qrd')
    expect((await on('s.test', '/qrd+')).status).toBe(404)
  })

  test("a link's report form on its own domain: shown there, sent from there (its same-site check is that domain's)", async () => {
    await api('getLink.json', { url: 'https://e.example/', alias: 'rep', domain: 'go.test' })
    const form = await on('go.test', '/rep/report')
    expect(form.status).toBe(200)
    expect(await form.text()).toContain('http://go.test/rep')
    expect((await on('s.test', '/rep/report')).status).toBe(404)
    const send = (origin: string) =>
      on('go.test', '/rep/report', {
        method: 'POST',
        body: new URLSearchParams({ reason: 'spam', text: 'x' }),
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
      })
    const sent = await send('http://go.test')
    expect(sent.status).toBe(303)
    expect(sent.headers.get('location')).toBe('/rep/report?sent=1')
    expect((await send('http://s.test')).status).toBe(403)
  })

  test('the CSV export carries each link’s domain; an import puts rows back on their domains (an unknown one on the default)', async () => {
    const csv = await (await on('s.test', '/api/links.json?format=csv', { headers: { 'x-api-key': key } })).text()
    const rows = parseCsv(csv).map((r) => r.fields)
    const col = rows[0]!.indexOf('domain')
    expect(col).toBeGreaterThan(0)
    const domainsOf = (code: string) => rows.filter((r) => r[0] === code).map((r) => r[col])
    expect(domainsOf('same').sort()).toEqual(['go.test', 's.test', 'x.test'])
    const file =
      'code,long_url,domain\r\nimp1,https://d.example/1,go.test\r\nimp1,https://d.example/2,\r\nimp2,https://d.example/3,gone.example\r\n'
    const r = await readAnswer(
      await on('s.test', '/api/import.json?format=csv', {
        method: 'POST',
        body: file,
        headers: { 'x-api-key': key, 'content-type': 'text/csv' },
      }),
    )
    expect(r.body.return).toMatchObject({ created: 3 })
    expect((await on('go.test', '/imp1')).headers.get('location')).toBe('https://d.example/1')
    expect((await on('s.test', '/imp1')).headers.get('location')).toBe('https://d.example/2')
    expect((await on('s.test', '/imp2')).headers.get('location')).toBe('https://d.example/3')
  })
})
