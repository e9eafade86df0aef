// Social previews (issue 40) without a server: which user agents are link-preview crawlers, what the card page
// holds (every value escaped), and that a link with a preview leaves the redirect's compact cache.
import { describe, expect, test } from 'bun:test'
import { createHotCache, NOT_PLAIN } from '../../src/links/hot-cache'
import { cardPage, isPreviewCrawler, wantsCard } from '../../src/links/preview-card'
import { declaredSize, kindOf } from '../../src/links/og-image'
import type { LinkRow } from '../../src/links/storage/contract'
import { linkRow } from '../support/links'

const CRAWLERS = {
  slack: 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
  discord: 'Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)',
  facebook: 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
  facebot: 'Facebot',
  x: 'Twitterbot/1.0',
  linkedin: 'LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)',
  whatsapp: 'WhatsApp/2.23.20.0 A',
  telegram: 'TelegramBot (like TwitterBot)',
  mastodon: 'http.rb/5.1.1 (Mastodon/4.2.1; +https://mastodon.social/) Bot',
  imessage:
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0',
}
const OTHERS = {
  chrome: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
  firefox: 'Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0',
  safari:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  curl: 'curl/8.5.0',
  wget: 'Wget/1.21.4',
  requests: 'python-requests/2.31.0',
  none: '',
}

const rowOf = (more: Partial<LinkRow> = {}): LinkRow =>
  linkRow({ long_url: 'https://example.com/a?b=1&c="2"', ...more })

describe('crawler detection', () => {
  for (const [name, ua] of Object.entries(CRAWLERS))
    test(`${name} is a link-preview crawler`, () => expect(isPreviewCrawler(ua)).toBe(true))
  for (const [name, ua] of Object.entries(OTHERS))
    test(`${name || 'no user agent'} is not`, () => expect(isPreviewCrawler(ua)).toBe(false))
})

test('the card is for crawlers on links with a preview and no password', () => {
  const previewed = rowOf({ og_title: 'T' })
  expect(wantsCard(previewed, CRAWLERS.slack)).toBe(true)
  expect(wantsCard(previewed, OTHERS.chrome)).toBe(false)
  expect(wantsCard(rowOf(), CRAWLERS.slack)).toBe(false)
  expect(wantsCard(rowOf({ og_image: 'aaaaaaaaaaaa.jpg' }), CRAWLERS.x)).toBe(true)
  expect(wantsCard(rowOf({ og_description: 'd', password_hash: '$argon2id$x' }), CRAWLERS.x)).toBe(false)
})

test('the card escapes every value and names the image absolutely', async () => {
  const res = cardPage(
    rowOf({ og_title: '"><script>alert(1)</script>', og_description: "it's <b>&</b>", og_image: 'abcdef012345.jpg' }),
    'https://sho.rt',
  )
  expect(res.status).toBe(200)
  expect(res.headers.get('content-security-policy')).toContain("default-src 'none'")
  const html = await res.text()
  expect(html).not.toContain('<script>')
  expect(html).not.toContain('<b>')
  expect(html).toContain('<meta property="og:title" content="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">')
  expect(html).toContain('<meta property="og:description" content="it&#39;s &lt;b&gt;&amp;&lt;/b&gt;">')
  expect(html).toContain('<meta property="og:image" content="https://sho.rt/_og/abc/abcdef012345.jpg">')
  expect(html).toContain('<meta property="og:url" content="https://sho.rt/abc">')
  expect(html).toContain('<meta name="twitter:card" content="summary_large_image">')
  expect(html).toContain('href="https://example.com/a?b=1&amp;c=&quot;2&quot;"')
})

test('a link with a preview stays in the compact cache with its whole row (the redirect sends its crawlers to the card); one without is a plain view', () => {
  const card = rowOf({ id: 2, code: 'card', og_description: 'd' })
  const rows = new Map([
    ['abc', rowOf()],
    ['card', card],
  ])
  const store = { byCode: async () => null, byCodeNow: (code: string) => rows.get(code) ?? null }
  const hot = createHotCache({ store, clock: Date.now, ttlMs: 30_000 })
  expect(hot.find('card')).toBe(card)
  expect(hot.find('card')).toBe(card) // a hit: the row kept, og fields and all
  const plain = hot.find('abc') as LinkRow
  expect(plain.long_url).toBe('https://example.com/a?b=1&c="2"')
  expect([plain.og_title, plain.og_description, plain.og_image]).toEqual(['', '', null])
  expect(hot.find('nosuch')).not.toBe(NOT_PLAIN)
})

test('image headers: the kind by signature, the size before decoding, bounds refused', () => {
  const png = new Uint8Array(33)
  png.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72, 68, 82])
  new DataView(png.buffer).setUint32(16, 640)
  new DataView(png.buffer).setUint32(20, 480)
  expect(kindOf(png)).toBe('png')
  expect(declaredSize('png', png)).toEqual({ width: 640, height: 480 })
  new DataView(png.buffer).setUint32(16, 5000)
  expect(() => declaredSize('png', png)).toThrow('"og_image"')
  // A JPEG: SOI, an APP0 segment, then SOF0 declaring 300×200.
  const jpeg = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xc0, 0, 11, 8, 0, 200, 1, 44, 3, 0, 0])
  expect(kindOf(jpeg)).toBe('jpeg')
  expect(declaredSize('jpeg', jpeg)).toEqual({ width: 300, height: 200 })
  expect(kindOf(new TextEncoder().encode('GIF89a......'))).toBeNull()
})
