// The Download page's answers without a browser (issue 41, item 5; Chromium: test/browser/dashboard-download.test.ts):
// the SSRF guard's refusal and the service's other refusals said under the field; the start link's JSON for the
// script (the /dl link and its progress stream, as paths) and its record (file name, format, page, link expiry);
// the page's links only this service's own.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'
import { signIn, type SignedIn } from '../support/dashboard'
import { startMediaFixtures, type MediaFixtures } from '../support/media-fixtures'

const LONG = 60_000
let fx: MediaFixtures
let open: TestBox
let guarded: TestBox
let openWho: SignedIn
let guardedWho: SignedIn

beforeAll(async () => {
  fx = await startMediaFixtures()
  open = await makeBox({ media: { allow_private_networks: true } })
  guarded = await makeBox() // the fixtures are on 127.0.0.1: private, refused
  for (const b of [open, guarded]) await b.accounts.createAccount({ name: 'dora', password: 'dora password' })
  openWho = await signIn(open, 'dora', 'dora password')
  guardedWho = await signIn(guarded, 'dora', 'dora password')
}, LONG)
afterAll(async () => {
  await open?.cleanup()
  await guarded?.cleanup()
  await fx?.stop()
})

const pageOf = async (box: TestBox, who: SignedIn, url: string, extra = '') => {
  const res = await box.request(`/dashboard/download?url=${encodeURIComponent(url)}${extra}`, {
    headers: { cookie: who.cookie },
  })
  return { status: res.status, html: await res.text(), csp: res.headers.get('content-security-policy') }
}

describe('the Download page', () => {
  test(
    'a private address is refused by the guard, said under the field; so is an address with spaces',
    async () => {
      const { status, html } = await pageOf(guarded, guardedWho, fx.url('video-page'))
      expect(status).toBe(200)
      expect(html).toContain('aria-invalid="true"')
      expect(html).toContain(
        '<span class="error" id="dl-url-error">The address leads to a private or local network address, which this service does not fetch.</span>',
      )
      expect(html).not.toContain('dl-result')
      const spaced = await pageOf(guarded, guardedWho, 'https://example.com/a b')
      expect(spaced.html).toContain('The address must not contain spaces or control characters')
      // Nothing was recorded, no link made.
      expect(guarded.db.query('SELECT count(*) AS n FROM media_tickets').get()).toEqual({ n: 0 })
    },
    LONG,
  )

  test('a lookup counts against the account’s per-minute allowance, as download.json does', async () => {
    const limited = await makeBox({ rate: { key_per_minute: 1 } })
    try {
      await limited.accounts.createAccount({ name: 'dora', password: 'dora password' })
      const who = await signIn(limited, 'dora', 'dora password')
      expect((await pageOf(limited, who, fx.url('video-page'))).html).toContain('private or local network address')
      const again = await pageOf(limited, who, fx.url('video-page'))
      expect(again.html).toMatch(
        /<span class="error" id="dl-url-error">Too many lookups this minute: try again in [0-9]+ s\.<\/span>/,
      )
      // The page itself (no lookup) is not counted.
      expect((await limited.request('/dashboard/download', { headers: { cookie: who.cookie } })).status).toBe(200)
    } finally {
      await limited.cleanup()
    }
  })

  test(
    'the start link: JSON for the script (paths of this origin), the download recorded with its file, format and page',
    async () => {
      const { html, csp } = await pageOf(open, openWho, fx.url('mp4'))
      expect(csp).toContain("img-src 'self' data:")
      // No outsider's link or image on the page (its address only in the field).
      expect(html.replaceAll(`value="${fx.url('mp4')}"`, '')).not.toContain(fx.origin)
      expect(html).not.toContain('<img')
      const start = /href="(\/dashboard\/download\/start\/[0-9]+\?exp=[0-9]+&amp;sig=[\w-]{43})"/
        .exec(html)![1]!
        .replace('&amp;', '&')
      const res = await open.request(start, { headers: { cookie: openWho.cookie, accept: 'application/json' } })
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('no-store')
      const body = (await res.json()) as { file: string; progress: string }
      const [, id, query] = /^\/dashboard\/download\/start\/([0-9]+)\?(.*)$/.exec(start)!
      expect(body).toEqual({ file: `/dl/${id}?${query}`, progress: `/dl/${id}/progress?${query}` })
      const row = open.db.query('SELECT * FROM media_downloads').get() as Record<string, unknown>
      expect(row).toMatchObject({
        ticket_id: Number(id),
        format_id: 'mp4',
        filename: 'clip.mp4',
        page_url: fx.url('mp4'),
        link_expires: Number(/exp=([0-9]+)/.exec(query!)![1]) * 1000,
      })
      // Without JSON: a 303 to the same /dl link, which serves the file.
      const plain = await open.request(start, { headers: { cookie: openWho.cookie } })
      expect(plain.status).toBe(303)
      expect(plain.headers.get('location')).toBe(body.file)
      expect(new Uint8Array(await (await open.request(body.file)).arrayBuffer())).toEqual(fx.bytes('clip.mp4'))
      // Signed out: the sign-in page, coming back to the link.
      const anon = await open.request(start)
      expect(anon.status).toBe(303)
      expect(anon.headers.get('location')).toStartWith('/login?next=%2Fdashboard%2Fdownload%2Fstart%2F')
    },
    LONG,
  )
})
