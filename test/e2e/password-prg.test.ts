// A wrong password on a password link (SPEC §3, issue 36 item 9), on a real socket: a browser's form post
// gets 303 to a GET page that says so (so Back and reload never send the password again), scripts keep
// their 401, the GET after the 303 shows no secret and costs no attempt, and the attempt limit counts the
// browser's wrong posts as before.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { tempDir, testConfig, sqliteLinkbox, type SqliteLinkbox } from '../support/app'
import { CHROME_UA } from '../support/server'

let dir: string
let box: SqliteLinkbox
let base: string

beforeAll(() => {
  dir = tempDir()
  box = sqliteLinkbox(testConfig(dir, { server: { host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1/32'] } }))
  base = `http://127.0.0.1:${box.listen().port}`
})
afterAll(async () => {
  await box?.close()
  rmSync(dir, { recursive: true, force: true })
})

const link = async (url: string, password: string) => (await box.links.create({ url, password }, null)).hex

/** What Chromium sends with a form post that navigates the tab. */
const BROWSER = {
  'user-agent': CHROME_UA,
  accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'document',
  'content-type': 'application/x-www-form-urlencoded',
}
const post = (
  code: string,
  fields: Record<string, string>,
  headers: Record<string, string>,
  address = '198.51.100.7',
) =>
  fetch(`${base}/${code}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...headers, 'x-forwarded-for': address },
    body: new URLSearchParams(fields),
  })
async function clicks(code: string) {
  await box.recorder.flush()
  return (box.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks
}

describe('a wrong password', () => {
  test("a browser's form post: 303 to a GET of the form that says so; no password, no destination in it", async () => {
    const code = await link('https://example.com/kept-secret', 'open sesame')
    const r = await post(code, { password: 'nope', ref: 'https://news.example.net/post' }, BROWSER)
    expect(r.status).toBe(303)
    const location = r.headers.get('location')!
    const to = new URL(location, base)
    expect(to.pathname).toBe(`/${code}`)
    expect(to.searchParams.get('wrong')).toBe('1')
    expect(location).not.toContain('nope')
    expect(await r.text()).toBe('')

    const page = await fetch(new URL(location, base), { headers: { 'user-agent': CHROME_UA, accept: BROWSER.accept } })
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('That password is not right.')
    expect(html).toContain('aria-invalid="true"')
    expect(html).not.toContain('kept-secret')
    expect(html).not.toContain('nope')
    // The original referrer rides along in the form, so that the click keeps its source.
    expect(html).toContain('value="https://news.example.net/post"')
    // Without the flag the form is plain.
    expect(await (await fetch(`${base}/${code}`)).text()).not.toContain('That password is not right.')

    const right = await post(code, { password: 'open sesame', ref: 'https://news.example.net/post' }, BROWSER)
    expect(right.status).toBe(200)
    expect(await right.text()).toContain('https://example.com/kept-secret')
    expect(await clicks(code)).toBe(1)
  })

  test("scripts keep 401: a form post without a browser's headers, and X-Link-Password (even with them)", async () => {
    const code = await link('https://example.com/scripted', 'pw')
    const curl = await post(
      code,
      { password: 'bad' },
      { 'user-agent': 'curl/8.5.0', accept: '*/*', 'content-type': 'application/x-www-form-urlencoded' },
    )
    expect(curl.status).toBe(401)
    expect(await curl.text()).toContain('That password is not right.')
    const header = await fetch(`${base}/${code}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...BROWSER, 'x-link-password': 'bad' },
    })
    expect(header.status).toBe(401)
    const get = await fetch(`${base}/${code}`, { redirect: 'manual', headers: { 'x-link-password': 'bad' } })
    expect(get.status).toBe(401)
    const ok = await fetch(`${base}/${code}`, { redirect: 'manual', headers: { 'x-link-password': 'pw' } })
    expect(ok.status).toBe(302)
  })

  test('the attempt limit counts browser posts (the 11th is 429); the GET page checks nothing and costs nothing', async () => {
    const code = await link('https://example.com/brute', 'right')
    const address = '203.0.113.9'
    for (let i = 0; i < 10; i++) {
      const r = await post(code, { password: `w${i}` }, BROWSER, address)
      expect(r.status).toBe(303)
      // The error page, any number of times: no attempt, no password checked.
      const shown = await fetch(new URL(r.headers.get('location')!, base), { headers: { 'x-forwarded-for': address } })
      expect(shown.status).toBe(200)
    }
    const blocked = await post(code, { password: 'right' }, BROWSER, address)
    expect(blocked.status).toBe(429)
    expect(await clicks(code)).toBe(0)
    // The flag is only words: it does not open the link.
    const flagged = await fetch(`${base}/${code}?wrong=1&password=right`, { redirect: 'manual' })
    expect(flagged.status).toBe(200)
    expect(await flagged.text()).not.toContain('example.com/brute')
  })
})
