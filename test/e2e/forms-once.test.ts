// Issue 20, item 2, over real sockets: a form that creates something carries a one-time token, claimed in
// the transaction that stores the new row, so the same form sent twice — one after the other, or both at
// once — makes one API key, one webhook endpoint, one link (dashboard and home page), and the second answer
// leads to the first one's page. A secret shown once travels through the redirect on the server: in the
// database, sealed (issue 36), bound to the session (or to the visitor's cookie), shown on one GET and then
// gone; never in clear in the database, a URL or a cookie. And the bounds of what those stores hold.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createFlash, FLASH_MAX, FLASH_MAX_CHARS, FLASH_PER_OWNER, FLASH_TTL_MS } from '../../src/dashboard/flash'
import { FORM_TOKEN_KEPT_MS } from '../../src/dashboard/form-tokens'
import { startApp, type RunningApp } from '../support/browser'
import { cookiesSet, follow, overSocket, signIn, type SignedIn } from '../support/dashboard'

const PW = 'correct horse battery'
let app: RunningApp
let http: ReturnType<typeof overSocket>
let alice: SignedIn
let bob: SignedIn
let now = Date.now()

beforeAll(async () => {
  app = startApp({}, { clock: () => now })
  http = overSocket(app.url)
  await app.accounts.createAccount({ name: 'alice', password: PW })
  await app.accounts.createAccount({ name: 'bob', password: PW })
  alice = await signIn(http, 'alice', PW)
  bob = await signIn(http, 'bob', PW)
})
afterAll(async () => app?.stop())

const count = (sql: string, ...args: (string | number)[]) => (app.db.query(sql).get(...args) as { n: number }).n
const get = (path: string, cookie = alice.cookie) => http.request(path, { headers: { cookie } })
/** The one-time token of the create form on a page. */
async function tokenOf(path: string, cookie = alice.cookie): Promise<string> {
  const html = await (await get(path, cookie)).text()
  return html.match(/name="_once" value="([A-Za-z0-9_-]{22})"/)![1]!
}
function post(path: string, fields: [string, string][], cookie = alice.cookie) {
  return http.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams(fields).toString(),
  })
}
const notice = (res: Response) => {
  const raw = res.headers.getSetCookie().find((c) => c.startsWith('lb_notice='))
  return raw
    ? JSON.parse(Buffer.from(raw.slice('lb_notice='.length).split(';')[0]!, 'base64url').toString()).text
    : null
}
const keyIn = (html: string) => html.match(/id="new-key" readonly value="(lbk_[A-Za-z0-9]+)"/)?.[1] ?? null

describe('the same form sent twice', () => {
  test('an API key: one key; the second answer leads to the first page, where the key is shown once', async () => {
    const before = count('SELECT count(*) AS n FROM api_keys')
    const token = await tokenOf('/dashboard/keys')
    const fields: [string, string][] = [
      ['_csrf', alice.csrf],
      ['_once', token],
      ['scope', 'qr'],
      ['label', 'twice'],
    ]
    const first = await post('/dashboard/keys', fields)
    const second = await post('/dashboard/keys', fields)
    expect([first.status, second.status]).toEqual([303, 303])
    expect(second.headers.get('location')).toBe(first.headers.get('location'))
    expect(notice(second)).toBe('That form was sent twice: it was done once, the first time.')
    expect(count('SELECT count(*) AS n FROM api_keys')).toBe(before + 1)

    // The browser followed only the second answer: the key is there, once.
    const page = await (await follow(http, second, alice.cookie)).text()
    const key = keyIn(page)!
    expect(key).toMatch(/^lbk_/)
    const again = await (await follow(http, first, alice.cookie)).text()
    expect(keyIn(again)).toBeNull()
    expect(again).toContain('shown once')
    // Never in the database (only its hash), nor in the form token's row.
    const dump = ['api_keys', 'web_sessions', 'form_tokens', 'flashes']
      .map((t) => JSON.stringify(app.db.query(`SELECT * FROM ${t}`).all()))
      .join()
    expect(dump).not.toContain(key.slice(11))
  })

  test('a webhook endpoint, both sent at once: one endpoint, both answers lead to its page', async () => {
    const token = await tokenOf('/dashboard/webhooks')
    const fields: [string, string][] = [
      ['_csrf', alice.csrf],
      ['_once', token],
      ['url', 'http://127.0.0.1:9/at-once'],
      ['events', 'link.created'],
    ]
    const answers = await Promise.all([
      post('/dashboard/webhooks', fields),
      post('/dashboard/webhooks', fields),
      post('/dashboard/webhooks', fields),
    ])
    expect(answers.map((a) => a.status)).toEqual([303, 303, 303])
    expect(count("SELECT count(*) AS n FROM webhook_endpoints WHERE url = 'http://127.0.0.1:9/at-once'")).toBe(1)
    const id = (
      app.db.query("SELECT id FROM webhook_endpoints WHERE url = 'http://127.0.0.1:9/at-once'").get() as { id: number }
    ).id
    expect(new Set(answers.map((a) => a.headers.get('location')))).toEqual(
      new Set([answers[0]!.headers.get('location')]),
    )
    expect(answers[0]!.headers.get('location')).toStartWith(`/dashboard/webhooks/${id}?created=`)
    expect(count('SELECT count(*) AS n FROM form_tokens WHERE token = ?', token)).toBe(1)
  })

  test('a dashboard link: one link; the same token with other fields (a page from the cache, filled in anew) makes its own', async () => {
    const before = count('SELECT count(*) AS n FROM links')
    const token = await tokenOf('/dashboard')
    const fields: [string, string][] = [
      ['_csrf', alice.csrf],
      ['_once', token],
      ['url', 'https://example.com/one'],
    ]
    const first = await post('/dashboard/links', fields)
    const second = await post('/dashboard/links', fields)
    expect(second.headers.get('location')).toBe(first.headers.get('location'))
    expect(first.headers.get('location')).toMatch(/^\/dashboard\?new=[A-Za-z0-9]{6}$/)
    expect(count('SELECT count(*) AS n FROM links')).toBe(before + 1)
    const other = await post('/dashboard/links', [
      ['_csrf', alice.csrf],
      ['_once', token],
      ['url', 'https://example.com/two'],
    ])
    expect(other.headers.get('location')).not.toBe(first.headers.get('location'))
    expect(count('SELECT count(*) AS n FROM links')).toBe(before + 2)
    // A refused form does not use its token up: fixed and sent again, it makes its link.
    const refusedToken = await tokenOf('/dashboard')
    const refused = await post('/dashboard/links', [
      ['_csrf', alice.csrf],
      ['_once', refusedToken],
      ['url', 'ftp://example.com/'],
    ])
    expect(refused.headers.get('location')).toStartWith('/dashboard?form=')
    const fixed = await post('/dashboard/links', [
      ['_csrf', alice.csrf],
      ['_once', refusedToken],
      ['url', 'https://example.com/fixed'],
    ])
    expect(fixed.headers.get('location')).toStartWith('/dashboard?new=')
    expect(count('SELECT count(*) AS n FROM links')).toBe(before + 3)
  })

  test('the home form of a visitor: one link; both answers bind the same cookie, which shows the result once', async () => {
    const before = count('SELECT count(*) AS n FROM links')
    const token = (await (await http.request('/')).text()).match(/name="_once" value="([A-Za-z0-9_-]{22})"/)![1]!
    const send = () =>
      http.request('/', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `_once=${token}&url=https%3A%2F%2Fexample.com%2Fvisitor`,
      })
    const first = await send()
    const second = await send()
    expect(count('SELECT count(*) AS n FROM links')).toBe(before + 1)
    expect(second.headers.get('location')).toBe(first.headers.get('location'))
    expect(cookiesSet(first)).toEqual([`lb_home=${token}`])
    const page = await (await follow(http, second, cookiesSet(first)[0])).text()
    expect(page).toContain('Your short link is ready')
    expect(page).toContain('https://example.com/visitor')
    // Another browser (no cookie, or another one) with that address sees nothing; this one, once.
    expect(await (await http.request(first.headers.get('location')!)).text()).not.toContain('example.com/visitor')
    const again = await (await follow(http, first)).text()
    expect(again).not.toContain('Your short link is ready')
    expect(again).toContain('Your short link was shown here once')
  })

  test("another session's page of a new key shows nothing, and leaves it for its owner", async () => {
    const res = await post('/dashboard/keys', [
      ['_csrf', alice.csrf],
      ['scope', 'qr'],
    ])
    const location = res.headers.get('location')!
    expect(keyIn(await (await get(location, bob.cookie)).text())).toBeNull()
    expect(keyIn(await (await get(location, alice.cookie)).text())).toMatch(/^lbk_/)
  })
})

describe('bounds', () => {
  test('used form tokens go after a day, and with their session', async () => {
    const token = await tokenOf('/dashboard/keys', bob.cookie)
    await post(
      '/dashboard/keys',
      [
        ['_csrf', bob.csrf],
        ['_once', token],
        ['scope', 'qr'],
      ],
      bob.cookie,
    )
    expect(count('SELECT count(*) AS n FROM form_tokens WHERE token = ?', token)).toBe(1)
    now += FORM_TOKEN_KEPT_MS + 60_000
    const alices = count('SELECT count(*) AS n FROM form_tokens')
    await post(
      '/dashboard/links',
      [
        ['_csrf', bob.csrf],
        ['_once', await tokenOf('/dashboard', bob.cookie)],
        ['url', 'https://example.com/later'],
      ],
      bob.cookie,
    )
    // The new one is in; the day-old ones (all of them here) are out.
    expect(count('SELECT count(*) AS n FROM form_tokens')).toBe(1)
    expect(alices).toBeGreaterThan(1)
    // Signing out ends the session and its tokens.
    await http.request('/logout', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: bob.cookie },
      body: `_csrf=${bob.csrf}`,
    })
    expect(count('SELECT count(*) AS n FROM form_tokens')).toBe(0)
  })

  test('the flash store: once, per owner and kind, a lifetime, and bounded per owner, in entries and in size', async () => {
    // In the database now (issue 36), sealed: the same rules as when it was in memory, on the app's SQLite file.
    let t = 0
    const bounds = { perOwner: FLASH_PER_OWNER, rows: 300, bytes: 64 * 1024 }
    const flash = createFlash({ rows: app.storages.flashes, clock: () => t, bounds: { 0: bounds, 1: bounds } })
    const size = async () => (await app.storages.flashes.usage(1)).rows + (await app.storages.flashes.usage(0)).rows
    await app.storages.flashes.sweep(Number.MAX_SAFE_INTEGER)
    const id = await flash.put('s1', 'key', { key: 'k1' })
    expect(await flash.take('s2', 'key', id)).toBeNull() // another owner: nothing, and it stays
    expect(await flash.take('s1', 'other', id)).toBeNull()
    expect(await flash.take('s1', 'key', id)).toEqual({ key: 'k1' })
    expect(await flash.take('s1', 'key', id)).toBeNull()
    expect(await flash.take('s1', 'key', 'not an id')).toBeNull()

    const late = await flash.put('s1', 'key', 1)
    t += FLASH_TTL_MS
    expect(await flash.take('s1', 'key', late)).toBeNull()

    const ids: string[] = []
    for (let i = 0; i < FLASH_PER_OWNER + 3; i++) ids.push(await flash.put('s1', 'k', i))
    expect(await size()).toBe(FLASH_PER_OWNER)
    expect(await flash.take('s1', 'k', ids[0]!)).toBeNull() // the oldest went first
    expect(await flash.take('s1', 'k', ids.at(-1)!)).toBe(FLASH_PER_OWNER + 2)

    for (let i = 0; i < bounds.rows + 50; i++) await flash.put(`v${i}`, 'k', i)
    expect((await app.storages.flashes.usage(1)).rows).toBe(bounds.rows)
    const big = 'x'.repeat(4 * 1024)
    for (let i = 0; i < 200; i++) await flash.put(`b${i}`, 'k', big)
    expect((await app.storages.flashes.usage(1)).bytes).toBeLessThanOrEqual(bounds.bytes)
    expect((await app.storages.flashes.usage(1)).rows).toBeLessThan(200)
    // Expired ones are swept.
    t += FLASH_TTL_MS
    await flash.sweep()
    expect(await size()).toBe(0)
    expect([FLASH_MAX, FLASH_MAX_CHARS]).toEqual([10_000, 8 * 1024 * 1024]) // the bounds the app uses
  })
})
