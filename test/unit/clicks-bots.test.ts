// Bots and link previews use nothing up (issue 23, SPEC §2a, §3): the real user agents of the previews of
// chat apps and social networks, and of crawlers, are bots — not a click, not a visitor — whether isbot
// knows them or classify.ts's own list does. A person's browser stays a person.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { classifyUserAgent } from '../../src/clicks/classify'
import { makeBox, type TestBox } from '../support/app'

// As they are sent (each from its maker's documentation or from logs of real fetches).
const PREVIEWS: Record<string, string> = {
  'Slackbot-LinkExpanding': 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
  Discordbot: 'Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)',
  'Mastodon 4.2': 'http.rb/5.1.1 (Mastodon/4.2.1; +https://mastodon.social/)',
  'Mastodon 4.3': 'Mastodon/4.3.0 (http.rb/5.2.0; +https://mastodon.social/) Bot',
  'WhatsApp (Android)': 'WhatsApp/2.23.20.0 A',
  'WhatsApp (iOS)': 'WhatsApp/2.2343.5 i',
  facebookexternalhit: 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
  Twitterbot: 'Twitterbot/1.0',
  TelegramBot: 'TelegramBot (like TwitterBot)',
  "iMessage's link preview":
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0',
  LinkedInBot: 'LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)',
  Skype: 'Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5 skype-url-preview@microsoft.com',
  Googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Googlebot (smartphone)':
    'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.6478.126 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  // classify.ts's own list: what isbot 5 takes for a person.
  'Discourse onebox': 'Mozilla/5.0 (compatible; Discourse Forum Onebox v2.8.0)',
  'Microsoft Office': 'Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 10.0; ms-office; MSOffice 16)',
}

const PEOPLE: Record<string, string> = {
  'Chrome (Windows)':
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
  'Safari (iPhone)':
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  'Firefox (Linux)': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
}

describe('classifyUserAgent', () => {
  for (const [name, ua] of Object.entries(PREVIEWS))
    test(`${name} is a bot`, () => expect(classifyUserAgent(ua).bot).toBe(true))
  for (const [name, ua] of Object.entries(PEOPLE))
    test(`${name} is a person`, () => expect(classifyUserAgent(ua).bot).toBe(false))
})

describe('a visit by each: no click, no visitor, a bot', () => {
  let box: TestBox
  let code: string
  beforeAll(async () => {
    box = await makeBox({}, { clicks: { intervalMs: 3_600_000 } })
    code = (await box.post('/api/getLink.json', { url: 'https://example.com/previewed' })).body.return.hex
  })
  afterAll(() => box.cleanup())

  test('every preview and crawler counts as a bot only; the people after them count', async () => {
    for (const ua of Object.values(PREVIEWS)) {
      const res = await box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': ua } })
      expect(res.status).toBe(302)
    }
    let s = (await box.post('/api/stats.json', { code })).body.return
    expect(s.clicks).toBe(0)
    expect(s.bots).toBe(Object.keys(PREVIEWS).length)
    expect(s.days.reduce((n: number, d: any) => n + d.visitors, 0)).toBe(0)
    expect(s.countries).toEqual([])
    for (const ua of Object.values(PEOPLE))
      await box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': ua } })
    s = (await box.post('/api/stats.json', { code })).body.return
    expect(s.clicks).toBe(3)
    expect(s.days.reduce((n: number, d: any) => n + d.visitors, 0)).toBe(3)
  })
})
