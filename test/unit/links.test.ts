// The five link methods through the real app and the real SQLite file (SPEC §1–2).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createLinkService } from '../../src/links/service'
import { makeBox, type TestBox } from '../support/app'
import { sqliteLinkDeps } from '../support/links'

let now = Date.parse('2026-06-01T12:00:00Z')
let box: TestBox
let alice: string
let bob: string
let admin: string

beforeAll(async () => {
  box = await makeBox({}, { clock: () => now })
  alice = await box.account('alice')
  bob = await box.account('bob')
  admin = await box.account('root', { admin: true })
})
afterAll(() => box.cleanup())

const create = (fields: Record<string, string>, key?: string) =>
  box.post('/api/getLink.json', fields, key ? { 'x-api-key': key } : {})
const row = (code: string) => box.db.query('SELECT * FROM links WHERE code = ?').get(code) as any

describe('getLink.json', () => {
  test('anonymous creation returns hex, url, qr, stats, mode and stores an unowned row', async () => {
    const r = await create({ url: 'https://example.com/some/path?q=1#frag' })
    expect(r.status).toBe(200)
    expect(r.body.status).toBe('success')
    expect(r.body.message).toBeUndefined()
    const ret = r.body.return
    expect(ret.hex).toMatch(/^[A-Za-z0-9]{6}$/)
    expect(ret.url).toBe(`http://localhost:8080/${ret.hex}`)
    expect(ret.qr).toBe(`http://localhost:8080/qr/${ret.hex}.png`)
    expect(ret.stats).toBe(`http://localhost:8080/${ret.hex}+`)
    expect(ret.mode).toBe('redirect')
    expect(ret.long_url).toBe('https://example.com/some/path?q=1#frag')
    expect(ret.created).toBe('2026-06-01T12:00:00.000Z')
    expect(ret.expires).toBeNull()
    expect(ret.password).toBe(false)
    const db = row(ret.hex)
    expect(db.account_id).toBeNull()
    expect(db.long_url).toBe('https://example.com/some/path?q=1#frag')
  })

  test('generated codes grow by one character after repeated collisions, and skip reserved words', async () => {
    const tried: string[] = []
    // Every 6-character draw collides with one existing code or is reserved; 7-character ones are free.
    const taken = (await create({ url: 'https://example.com/taken', alias: 'Taken6' })).body.return.hex
    const links = createLinkService({
      ...sqliteLinkDeps(box.db),
      config: box.config,
      recorder: box.recorder,
      events: box.events,
      randomCode: (length) => {
        const code = length === 6 ? (tried.length % 2 ? taken : 'assets') : 'Grown07'.slice(0, length)
        tried.push(code)
        return code
      },
    })
    const rec = await links.create({ url: 'https://example.com/grown' }, null)
    expect(rec.hex).toBe('Grown07')
    expect(tried.filter((c) => c.length === 6).length).toBe(4)
    expect(row('Grown07').long_url).toBe('https://example.com/grown')
  })

  test("with a key the link belongs to the key's account", async () => {
    const r = await create({ url: 'https://example.com/owned' }, alice)
    expect(r.status).toBe(200)
    const db = row(r.body.return.hex)
    const acct = box.db.query('SELECT name FROM accounts WHERE id = ?').get(db.account_id) as any
    expect(acct.name).toBe('alice')
  })

  test('Authorization: Bearer is accepted like X-Api-Key', async () => {
    const r = await box.post(
      '/api/getLink.json',
      { url: 'https://example.com/bearer' },
      { authorization: `Bearer ${alice}` },
    )
    expect(r.status).toBe(200)
    expect(row(r.body.return.hex).account_id).not.toBeNull()
  })

  test('alias becomes the code; mode, expire and password are kept', async () => {
    const r = await create(
      { url: 'https://example.com/a', alias: 'My_alias-1', mode: 'preview', expire: '3600', password: 'secret' },
      alice,
    )
    expect(r.status).toBe(200)
    expect(r.body.return.hex).toBe('My_alias-1')
    expect(r.body.return.mode).toBe('preview')
    expect(r.body.return.expires).toBe('2026-06-01T13:00:00.000Z')
    expect(r.body.return.password).toBe(true)
    const db = row('My_alias-1')
    expect(db.password_hash).toStartWith('$argon2id$')
    expect(db.password_hash).not.toContain('secret')
  })

  test('codes are case-sensitive: my_alias-1 is a different code', async () => {
    const r = await create({ url: 'https://example.com/b', alias: 'my_alias-1' })
    expect(r.status).toBe(200)
    expect(row('my_alias-1').long_url).toBe('https://example.com/b')
  })

  test('an alias in use is refused with 409 alias_taken', async () => {
    const r = await create({ url: 'https://example.com/c', alias: 'My_alias-1' })
    expect(r.status).toBe(409)
    expect(r.body).toMatchObject({ status: 'error', code: 'alias_taken' })
    expect(r.body.message).toContain('My_alias-1')
  })

  test.each([
    'api',
    'qr',
    'dl',
    'mail',
    'assets',
    'dashboard',
    'login',
    'logout',
    'docs',
    'healthz',
    'readyz',
    'ReadyZ',
    'metrics',
    'API',
    'Docs',
  ])('the reserved alias %s is refused with 409 alias_reserved', async (alias) => {
    const r = await create({ url: 'https://example.com/', alias })
    expect(r.status).toBe(409)
    expect(r.body.code).toBe('alias_reserved')
  })

  test.each([
    ['url', { url: 'ftp://example.com/' }, 'invalid_url'],
    ['url', { url: 'example.com' }, 'invalid_url'],
    ['url', { url: 'http://localhost:8080/loop' }, 'invalid_url'],
    ['url', { url: 'https://LOCALHOST:8080/loop' }, 'invalid_url'],
    ['url', { url: 'https://a;sandbox/' }, 'invalid_url'],
    ['url', { url: 'https://x.com/' + 'a'.repeat(4100) }, 'invalid_url'],
    ['url', { url: 'https://bank.example@evil.example/' }, 'invalid_url'],
    ['url', { url: 'https://user:pass@example.com/' }, 'invalid_url'],
    ['url', {}, 'missing_parameter'],
    ['alias', { url: 'https://e.com', alias: 'a' }, 'invalid_alias'],
    ['alias', { url: 'https://e.com', alias: 'a'.repeat(33) }, 'invalid_alias'],
    ['alias', { url: 'https://e.com', alias: 'bad alias' }, 'invalid_alias'],
    ['alias', { url: 'https://e.com', alias: 'dot.s' }, 'invalid_alias'],
    ['mode', { url: 'https://e.com', mode: 'Redirect' }, 'invalid_mode'],
    ['mode', { url: 'https://e.com', mode: 'iframe' }, 'invalid_mode'],
    ['expire', { url: 'https://e.com', expire: '-1' }, 'invalid_expire'],
    ['expire', { url: 'https://e.com', expire: '1.5' }, 'invalid_expire'],
    ['expire', { url: 'https://e.com', expire: String(10 * 365 * 86400 + 1) }, 'invalid_expire'],
    ['password', { url: 'https://e.com', password: 'x'.repeat(129) }, 'invalid_parameter'],
  ])('bad %s → 400 naming it (case %#)', async (name, fields, code) => {
    const r = await create(fields as Record<string, string>)
    expect(r.status).toBe(400)
    expect(r.body.status).toBe('error')
    expect(r.body.code).toBe(code)
    expect(r.body.message).toContain(`"${name}"`)
  })

  test('the longest allowed expire (10 years) and 0 (no expiry) are accepted', async () => {
    const ten = await create({ url: 'https://e.com/10y', expire: String(10 * 365 * 86400) })
    expect(ten.status).toBe(200)
    const zero = await create({ url: 'https://e.com/0', expire: '0' })
    expect(zero.body.return.expires).toBeNull()
  })

  test('a password is counted in characters, not UTF-16 units: 128 emoji are allowed, 129 are not', async () => {
    expect((await create({ url: 'https://e.com/emoji', password: '🔑'.repeat(128) })).status).toBe(200)
    const r = await create({ url: 'https://e.com/emoji', password: '🔑'.repeat(129) })
    expect(r.status).toBe(400)
    expect(r.body.message).toContain('"password"')
  })

  test('blocked domains are refused, subdomains included', async () => {
    const b = await makeBox({ links: { blocked_domains: ['evil.example'] } })
    try {
      for (const url of ['https://evil.example/x', 'https://a.b.evil.example/']) {
        const r = await b.post('/api/getLink.json', { url })
        expect(r.status).toBe(400)
        expect(r.body.code).toBe('invalid_url')
      }
      expect((await b.post('/api/getLink.json', { url: 'https://notevil.example/' })).status).toBe(200)
    } finally {
      await b.cleanup()
    }
  })

  test('blocked addresses are refused in every spelling (IPv4 forms, IPv4-mapped IPv6, IPv6 compressed or not)', async () => {
    const b = await makeBox({ links: { blocked_domains: ['1.2.3.4', '2001:db8::1'] } })
    try {
      const spellings = [
        'http://1.2.3.4/',
        'http://0x01020304/',
        'http://16909060/',
        'http://[::ffff:1.2.3.4]/',
        'http://[::ffff:102:304]/',
        'http://[2001:db8::1]/',
        'http://[2001:0db8:0:0:0:0:0:1]/',
      ]
      for (const url of spellings)
        expect({ url, code: (await b.post('/api/getLink.json', { url })).body.code }).toEqual({
          url,
          code: 'invalid_url',
        })
      // An address matches only itself: not a name ending in it, not its neighbour.
      for (const url of ['http://1.2.3.5/', 'http://[2001:db8::2]/'])
        expect({ url, status: (await b.post('/api/getLink.json', { url })).status }).toEqual({ url, status: 200 })
    } finally {
      await b.cleanup()
    }
  })

  test('JSON and multipart bodies are accepted too', async () => {
    const j = await box.request('/api/getLink.json', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://example.com/json', expire: 60 }),
    })
    expect(j.status).toBe(200)
    expect((await j.json()).return.long_url).toBe('https://example.com/json')
    const form = new FormData()
    form.set('url', 'https://example.com/multipart')
    form.set('alias', 'multi')
    const m = await box.request('/api/getLink.json', { method: 'POST', body: form })
    expect(m.status).toBe(200)
    expect(row('multi').long_url).toBe('https://example.com/multipart')
  })
})

describe('links.json', () => {
  test('needs a key', async () => {
    const r = await box.post('/api/links.json', {})
    expect(r.status).toBe(401)
    expect(r.body.code).toBe('missing_key')
  })

  test("lists only the caller's links, newest first, with the full record", async () => {
    const b = await makeBox()
    try {
      const k = await b.account('lister')
      const other = await b.account('other')
      for (let i = 0; i < 5; i++)
        await b.post('/api/getLink.json', { url: `https://example.com/${i}` }, { 'x-api-key': k })
      await b.post('/api/getLink.json', { url: 'https://example.com/theirs' }, { 'x-api-key': other })
      const r = await b.post('/api/links.json', {}, { 'x-api-key': k })
      expect(r.status).toBe(200)
      expect(r.body.return.count).toBe(5)
      expect(r.body.return.next).toBeNull()
      expect(r.body.return.links.map((l: any) => l.long_url)).toEqual(
        [4, 3, 2, 1, 0].map((i) => `https://example.com/${i}`),
      )
      const first = r.body.return.links[0]
      for (const f of [
        'hex',
        'url',
        'long_url',
        'qr',
        'stats',
        'mode',
        'created',
        'expires',
        'expired',
        'password',
        'clicks',
      ])
        expect(first).toHaveProperty(f)
      // Pagination with limit and cursor walks all links exactly once.
      const seen: string[] = []
      let cursor: string | null = ''
      while (cursor !== null) {
        const p: any = await b.post('/api/links.json', cursor ? { limit: '2', cursor } : { limit: '2' }, {
          'x-api-key': k,
        })
        expect(p.body.return.links.length).toBeLessThanOrEqual(2)
        seen.push(...p.body.return.links.map((l: any) => l.hex))
        cursor = p.body.return.next
      }
      expect(seen).toEqual(r.body.return.links.map((l: any) => l.hex))
      for (const [name, value] of [
        ['limit', '0'],
        ['limit', '501'],
        ['limit', 'x'],
        ['cursor', 'abc'],
      ]) {
        const bad = await b.post('/api/links.json', { [name!]: value! }, { 'x-api-key': k })
        expect(bad.status).toBe(400)
        expect(bad.body.message).toContain(`"${name}"`)
      }
    } finally {
      await b.cleanup()
    }
  })
})

describe('update.json', () => {
  test('changes only the fields sent; a new expire counts from the update', async () => {
    const c = await create({ url: 'https://example.com/u1', mode: 'frame', expire: '100', password: 'pw' }, alice)
    const code = c.body.return.hex
    now += 50_000
    const r = await box.post('/api/update.json', { code, url: 'https://example.org/changed' }, { 'x-api-key': alice })
    expect(r.status).toBe(200)
    expect(r.body.return).toMatchObject({
      hex: code,
      long_url: 'https://example.org/changed',
      mode: 'frame',
      password: true,
    })
    expect(r.body.return.expires).toBe(new Date(now - 50_000 + 100_000).toISOString())
    const e = await box.post('/api/update.json', { code, expire: '100' }, { 'x-api-key': alice })
    expect(e.body.return.expires).toBe(new Date(now + 100_000).toISOString())
    const z = await box.post(
      '/api/update.json',
      { code, expire: '0', password: '', mode: 'redirect' },
      { 'x-api-key': alice },
    )
    expect(z.body.return).toMatchObject({ expires: null, password: false, mode: 'redirect' })
    expect(row(code).password_hash).toBeNull()
    expect(row(code).long_url).toBe('https://example.org/changed')
  })

  test('another account gets 403 not_owner; an admin may change it', async () => {
    const c = await create({ url: 'https://example.com/u2' }, alice)
    const code = c.body.return.hex
    const r = await box.post('/api/update.json', { code, url: 'https://bob.example/' }, { 'x-api-key': bob })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('not_owner')
    expect(row(code).long_url).toBe('https://example.com/u2')
    const a = await box.post('/api/update.json', { code, mode: 'preview' }, { 'x-api-key': admin })
    expect(a.status).toBe(200)
    expect(row(code).mode).toBe('preview')
  })

  test('anonymous links cannot be changed by an ordinary account', async () => {
    const c = await create({ url: 'https://example.com/anon' })
    const r = await box.post(
      '/api/update.json',
      { code: c.body.return.hex, url: 'https://x.example/' },
      { 'x-api-key': alice },
    )
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('not_owner')
  })

  test('unknown code → 404; missing code → 400; bad value → 400 naming it', async () => {
    expect((await box.post('/api/update.json', { code: 'nope00' }, { 'x-api-key': alice })).status).toBe(404)
    const m = await box.post('/api/update.json', {}, { 'x-api-key': alice })
    expect(m.status).toBe(400)
    expect(m.body).toMatchObject({ code: 'missing_parameter' })
    expect(m.body.message).toContain('"code"')
    const c = await create({ url: 'https://example.com/u3' }, alice)
    const bad = await box.post('/api/update.json', { code: c.body.return.hex, mode: 'zzz' }, { 'x-api-key': alice })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('invalid_mode')
  })
})

describe('delete.json', () => {
  test('removes the link and its statistics; the code is free again', async () => {
    const c = await create({ url: 'https://example.com/d1', alias: 'gone-soon' }, alice)
    const id = row('gone-soon').id
    box.db.query("INSERT INTO click_days (link_id, day, clicks) VALUES (?, '2026-06-01', 3)").run(id)
    expect((await box.post('/api/delete.json', { code: 'gone-soon' }, { 'x-api-key': bob })).status).toBe(403)
    const r = await box.post('/api/delete.json', { code: 'gone-soon' }, { 'x-api-key': alice })
    expect(r.status).toBe(200)
    expect(r.body.return).toEqual({ hex: c.body.return.hex, deleted: true })
    expect(row('gone-soon')).toBeNull()
    expect(box.db.query('SELECT count(*) AS n FROM click_days WHERE link_id = ?').get(id)).toEqual({ n: 0 })
    expect((await box.request('/gone-soon')).status).toBe(404)
    const again = await create({ url: 'https://example.com/d2', alias: 'gone-soon' }, bob)
    expect(again.status).toBe(200)
    expect((await box.post('/api/delete.json', { code: 'gone-soon' }, { 'x-api-key': alice })).status).toBe(403)
  })

  test('unknown code → 404 not_found', async () => {
    const r = await box.post('/api/delete.json', { code: 'never1' }, { 'x-api-key': alice })
    expect(r.status).toBe(404)
    expect(r.body.code).toBe('not_found')
  })
})

describe('stats.json', () => {
  test('unknown code → 404; missing code → 400; bad dates → 400 naming them', async () => {
    expect((await box.post('/api/stats.json', { code: 'nope00' })).status).toBe(404)
    expect((await box.post('/api/stats.json', {})).body.code).toBe('missing_parameter')
    const c = await create({ url: 'https://example.com/s' })
    const code = c.body.return.hex
    for (const [fields, name] of [
      [{ from: '2026-13-01' }, 'from'],
      [{ to: '2026-02-30' }, 'to'],
      [{ from: 'yesterday' }, 'from'],
      [{ from: '2026-06-02', to: '2026-06-01' }, 'from'],
      [{ from: '2024-01-01', to: '2026-01-01' }, 'from'],
    ] as const) {
      const r = await box.post('/api/stats.json', { code, ...fields })
      expect(r.status).toBe(400)
      expect(r.body.message).toContain(`"${name}"`)
    }
  })

  test('the long URL of a password-protected link is shown only to its owner', async () => {
    const c = await create({ url: 'https://secret.example/', password: 'pw' }, alice)
    const code = c.body.return.hex
    expect((await box.post('/api/stats.json', { code })).body.return.long_url).toBeNull()
    expect((await box.post('/api/stats.json', { code }, { 'x-api-key': bob })).body.return.long_url).toBeNull()
    expect((await box.post('/api/stats.json', { code }, { 'x-api-key': alice })).body.return.long_url).toBe(
      'https://secret.example/',
    )
  })
})
