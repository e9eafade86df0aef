// UTM parameters and the destination after expiry (issue 40 items 4-5, SPEC §2a) on a real server: real sockets,
// a real SQLite file; the redirect status configured as 307 to see that it is the one used.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { LinkRecordSchema } from '../../src/links'
import { parseCsv } from '../../src/links/csv'
import { readAnswer, tempDir, testConfig, sqliteLinkbox, type SqliteLinkbox } from '../support/app'

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const SLACKBOT = 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)'

let dir: string
let box: SqliteLinkbox
let base: string
let key: string

beforeAll(async () => {
  dir = tempDir()
  box = sqliteLinkbox(
    testConfig(dir, {
      server: { host: '127.0.0.1', port: 0 },
      links: { redirect_status: 307, blocked_domains: ['evil.example'] },
      // A webhook endpoint on 127.0.0.1 (its events are only written here, never sent).
      media: { allow_private_networks: true },
    }),
  )
  base = `http://127.0.0.1:${box.listen().port}`
  key = (await box.accounts.createAccount({ name: 'owner' })).key.key
})
afterAll(async () => {
  await box.close()
  rmSync(dir, { recursive: true, force: true })
})

async function api(method: string, fields: Record<string, string>) {
  return readAnswer(
    await fetch(`${base}/api/${method}`, {
      method: 'POST',
      body: new URLSearchParams(fields),
      headers: { 'x-api-key': key },
    }),
  )
}
async function created(fields: Record<string, string>) {
  const r = await api('getLink.json', fields)
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.return
}
const visit = (code: string, ua = CHROME, method = 'GET') =>
  fetch(`${base}/${code}`, { method, redirect: 'manual', headers: { 'user-agent': ua, accept: 'text/html' } })
const used = (code: string) =>
  (box.db.query('SELECT visits_used FROM links WHERE code = ?').get(code) as { visits_used: number }).visits_used

describe('UTM parameters', () => {
  test('getLink.json sets them in the destination: after its query, before its fragment', async () => {
    const r = await created({
      url: 'https://example.com/shop?id=7&utm_source=old#offer',
      alias: 'utm1',
      utm_source: 'news letter',
      utm_medium: 'email',
      utm_campaign: 'spring & summer',
      utm_term: '',
    })
    expect(r.long_url).toBe(
      'https://example.com/shop?id=7&utm_source=news%20letter&utm_medium=email&utm_campaign=spring%20%26%20summer#offer',
    )
    expect(r.expired_url).toBeNull()
    expect('utm_source' in r).toBe(false)
    const go = await visit('utm1')
    expect([go.status, go.headers.get('location')]).toEqual([307, r.long_url])
  })

  test('a destination without a query gets one', async () => {
    const r = await created({ url: 'https://example.com', utm_content: 'header' })
    expect(r.long_url).toBe('https://example.com/?utm_content=header')
  })

  test('update.json: a value replaces its parameter where it stands, "" removes one, the rest stays', async () => {
    const r = await api('update.json', { code: 'utm1', utm_medium: 'social', utm_source: '', utm_term: 'shoes' })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body.return.long_url).toBe(
      'https://example.com/shop?id=7&utm_medium=social&utm_campaign=spring%20%26%20summer&utm_term=shoes#offer',
    )
    // With a new url, the values are set in that one.
    const moved = await api('update.json', { code: 'utm1', url: 'https://example.org/p?x=1', utm_source: 'ads' })
    expect(moved.body.return.long_url).toBe('https://example.org/p?x=1&utm_source=ads')
    const go = await visit('utm1')
    expect(go.headers.get('location')).toBe('https://example.org/p?x=1&utm_source=ads')
  })

  test('a refused value is named: too long, a control character, a destination made too long', async () => {
    const long = await api('getLink.json', { url: 'https://example.com/', utm_campaign: 'x'.repeat(201) })
    expect([long.status, long.body.code]).toEqual([400, 'invalid_parameter'])
    expect(long.body.message).toContain('"utm_campaign"')
    const ctl = await api('update.json', { code: 'utm1', utm_term: 'a\u0007b' })
    expect([ctl.status, ctl.body.message]).toEqual([400, expect.stringContaining('"utm_term"')])
    const huge = await api('getLink.json', {
      url: `https://example.com/?p=${'x'.repeat(4000)}`,
      utm_source: 's'.repeat(200),
    })
    expect([huge.status, huge.body.message]).toEqual([400, expect.stringContaining('"utm_source"')])
  })
})

describe('webhook payloads', () => {
  test('link.created and link.updated carry expired_url and the destination with its UTM values, as the record', async () => {
    const hook = await api('webhooks.json', { action: 'create', url: 'http://127.0.0.1:9/hook' })
    expect(hook.status, JSON.stringify(hook.body)).toBe(200)
    await created({
      url: 'https://example.com/h',
      alias: 'hooked',
      utm_source: 'a',
      expired_url: 'https://example.com/o',
    })
    await api('update.json', { code: 'hooked', utm_source: 'b', expired_url: '' })
    const payloads = box.db
      .query('SELECT type, payload FROM webhook_events WHERE payload LIKE \'%"hooked"%\' ORDER BY id')
      .all()
      .map((r: any) => {
        const data = JSON.parse(r.payload).data
        expect(Value.Check(LinkRecordSchema, data)).toBe(true)
        return [r.type, data.long_url, data.expired_url]
      })
    expect(payloads).toEqual([
      ['link.created', 'https://example.com/h?utm_source=a', 'https://example.com/o'],
      ['link.updated', 'https://example.com/h?utm_source=b', null],
    ])
  })
})

describe('expired_url', () => {
  test('it obeys the url rules, each refusal naming expired_url', async () => {
    for (const [value, code] of [
      ['ftp://example.com/', 'invalid_url'],
      ['not a url', 'invalid_url'],
      [`${box.config.server.base_url}/x`, 'invalid_url'],
      ['https://phish.evil.example/', 'invalid_url'],
    ] as const) {
      const r = await api('getLink.json', { url: 'https://example.com/', expired_url: value })
      expect([r.status, r.body.code, value]).toEqual([400, code, value])
      expect(r.body.message).toContain('"expired_url"')
    }
  })

  test('an expired link with one redirects there (the configured status, HEAD and bots too); without, 410', async () => {
    const r = await created({
      url: 'https://example.com/sale',
      alias: 'sale',
      expire: '1',
      expired_url: 'https://example.com/sale-over',
    })
    expect(r.expired_url).toBe('https://example.com/sale-over')
    await created({ url: 'https://example.com/plain', alias: 'plain-exp', expire: '1' })
    await created({
      url: 'https://example.com/x',
      alias: 'went-bad',
      expire: '1',
      expired_url: 'https://later-bad.example/',
    })
    expect((await visit('sale')).headers.get('location')).toBe('https://example.com/sale')
    await Bun.sleep(1100)
    for (const [ua, method] of [
      [CHROME, 'GET'],
      [CHROME, 'HEAD'],
      [SLACKBOT, 'GET'],
    ] as const) {
      const go = await visit('sale', ua, method)
      expect([go.status, go.headers.get('location'), go.headers.get('cache-control')]).toEqual([
        307,
        'https://example.com/sale-over',
        'private, no-cache',
      ])
    }
    // A host banned after the link was made stops its expiry destination too: 451, never the redirect.
    expect((await visit('went-bad')).headers.get('location')).toBe('https://later-bad.example/')
    await box.abuse.banHost('later-bad.example', 'went bad', null)
    const stopped = await visit('went-bad')
    expect([stopped.status, stopped.headers.get('location')]).toEqual([451, null])
    await box.abuse.unbanHost('later-bad.example')
    const gone = await visit('plain-exp')
    expect([gone.status, gone.headers.get('location')]).toEqual([410, null])
    expect(await gone.text()).toContain('This link has expired')
    // The record still says it expired.
    const got = await api('links.json', {})
    expect(got.body.return.links.find((l: { hex: string }) => l.hex === 'sale').expired).toBe(true)
  })

  test('a used-up limited link with one redirects there; bots and HEAD use no visit; "" removes it: 410', async () => {
    await created({ url: 'https://example.com/once', alias: 'once', max_visits: '1' })
    const set = await api('update.json', { code: 'once', expired_url: 'https://example.com/too-late' })
    expect(set.body.return.expired_url).toBe('https://example.com/too-late')
    expect((await visit('once', SLACKBOT)).headers.get('location')).toBe('https://example.com/once')
    expect(used('once')).toBe(0)
    expect((await visit('once')).headers.get('location')).toBe('https://example.com/once')
    expect(used('once')).toBe(1)
    for (const [ua, method] of [
      [CHROME, 'GET'],
      [SLACKBOT, 'GET'],
      [CHROME, 'HEAD'],
    ] as const) {
      const go = await visit('once', ua, method)
      expect([go.status, go.headers.get('location')]).toEqual([307, 'https://example.com/too-late'])
    }
    expect(used('once')).toBe(1)
    const cleared = await api('update.json', { code: 'once', expired_url: '' })
    expect(cleared.body.return.expired_url).toBeNull()
    const gone = await visit('once')
    expect(gone.status).toBe(410)
    expect(await gone.text()).toContain('This link reached its limit')
  })

  test('behind a password: after the right one, a used-up link goes on to expired_url as arrive would', async () => {
    await created({
      url: 'https://example.com/secret',
      alias: 'locked',
      password: 'open sesame',
      max_visits: '1',
      expired_url: 'https://example.com/closed',
    })
    const header = await fetch(`${base}/locked`, {
      redirect: 'manual',
      headers: { 'x-link-password': 'open sesame', 'user-agent': CHROME },
    })
    expect([header.status, header.headers.get('location')]).toEqual([307, 'https://example.com/secret'])
    // A browser's form post: the small page that sends it on (the pages' CSP governs a form's redirect).
    const post = (headers: Record<string, string>) =>
      fetch(`${base}/locked`, {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams({ password: 'open sesame' }),
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': CHROME, ...headers },
      })
    const browser = await post({ accept: 'text/html', 'sec-fetch-mode': 'navigate' })
    expect(browser.status).toBe(200)
    expect(await browser.text()).toContain('https://example.com/closed')
    const script = await post({})
    expect([script.status, script.headers.get('location')]).toEqual([303, 'https://example.com/closed'])
    const wrong = await fetch(`${base}/locked`, { redirect: 'manual', headers: { 'x-link-password': 'nope' } })
    expect(wrong.status).toBe(401)
  })

  test('the CSV export carries expired_url last; an import reads it back, and files without the column still import', async () => {
    const res = await fetch(`${base}/api/links.json?format=csv`, { headers: { 'x-api-key': key } })
    const rows = parseCsv(await res.text())
    const header = rows[0]!.fields
    expect(header.at(-1)).toBe('expired_url')
    const at = header.indexOf('expired_url')
    const sale = rows.find((r) => r.fields[0] === 'sale')!
    expect(sale.fields[at]).toBe('https://example.com/sale-over')
    const file = [
      'code,long_url,expired_url',
      'imp-a,https://example.com/a,https://example.com/a-over',
      'imp-b,https://example.com/b,',
    ].join('\r\n')
    const imported = await readAnswer(
      await fetch(`${base}/api/import.json?format=csv`, {
        method: 'POST',
        body: file,
        headers: { 'x-api-key': key, 'content-type': 'text/csv' },
      }),
    )
    expect(imported.body.return.created, JSON.stringify(imported.body)).toBe(2)
    const old = await readAnswer(
      await fetch(`${base}/api/import.json?format=csv`, {
        method: 'POST',
        body: 'code,long_url,title\r\nimp-c,https://example.com/c,Old\r\n',
        headers: { 'x-api-key': key, 'content-type': 'text/csv' },
      }),
    )
    expect(old.body.return.created, JSON.stringify(old.body)).toBe(1)
    const stored = (code: string) =>
      (box.db.query('SELECT expired_url FROM links WHERE code = ?').get(code) as { expired_url: string | null })
        .expired_url
    expect([stored('imp-a'), stored('imp-b'), stored('imp-c')]).toEqual(['https://example.com/a-over', null, null])
    // A refused expired_url skips its row, naming the column's rule.
    const bad = await readAnswer(
      await fetch(`${base}/api/import.json?format=csv`, {
        method: 'POST',
        body: `code,long_url,expired_url\r\nimp-d,https://example.com/d,${box.config.server.base_url}/loop\r\n`,
        headers: { 'x-api-key': key, 'content-type': 'text/csv' },
      }),
    )
    expect(bad.body.return.created).toBe(0)
    expect(bad.body.return.skipped[0].message).toContain('"expired_url"')
  })
})
