// Titles fetched from the destination (issue 40 item 3, SPEC §2a: links.fetch_metadata), over real sockets: the
// app listens on a free port, links are made through its API, and the destinations are page servers on loopback
// (support/pages.ts) that record what they were asked. A keyed link gets its page's title and og defaults (with a
// link.updated webhook); a link with a title, an anonymous link, fetch_metadata = false and a private address
// when private networks are not allowed cause no request at all; redirects pass the guard; a slow page is cut at
// 5 s and a huge one at 256 KiB (the server sees the connection closed early); at most two fetches run at once;
// failures are tried again with growing waits, then given up; a node stopped mid-fetch leaves the link due for the next.
import { afterEach, expect, setDefaultTimeout, test } from 'bun:test'
import type { AppOptions } from '../../src/app/app'
import { rmSync } from 'node:fs'
import { makeBox, sqliteLinkbox, tempDir, testConfig, type TestBox } from '../support/app'
import { eventually, html, pageServer, type PageServer, type Route } from '../support/pages'
import { startReceiver } from '../support/webhooks'

setDefaultTimeout(30_000)

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

interface Running {
  box: TestBox
  origin: string
  key: string
  /** Makes a link through the API over the socket (with the key unless `anonymous`); its record. */
  make(fields: Record<string, string>, anonymous?: boolean): Promise<any>
  row(code: string): { title: string; og_title: string; og_description: string; meta_due: number | null }
}

async function running(overrides: Record<string, unknown> = {}, opts: AppOptions = {}): Promise<Running> {
  const box = await makeBox(
    { server: { port: 0 }, media: { allow_private_networks: true }, ...overrides },
    { metadata: { pollMs: 100 }, ...opts },
  )
  cleanups.push(() => box.cleanup())
  const server = box.listen()
  const origin = `http://127.0.0.1:${server.port}`
  const key = await box.account('alice')
  return {
    box,
    origin,
    key,
    async make(fields, anonymous = false) {
      const res = await fetch(`${origin}/api/getLink.json`, {
        method: 'POST',
        body: new URLSearchParams(fields),
        headers: anonymous ? {} : { 'x-api-key': key },
      })
      const body = (await res.json()) as any
      expect(res.status, JSON.stringify(body)).toBe(200)
      return body.return
    },
    row: (code) =>
      box.db.query('SELECT title, og_title, og_description, meta_due FROM links WHERE code = ?').get(code) as any,
  }
}

async function pages(route: Route, host?: string): Promise<PageServer> {
  const s = await pageServer(route, host)
  cleanups.push(() => s.close())
  return s
}

const page =
  (body: string, type = 'text/html; charset=utf-8'): Route =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': type })
    res.end(body)
  }

test('a keyed link gets its page title and og defaults once, announced as link.updated; the record shows it', async () => {
  const app = await running()
  const receiver = startReceiver()
  cleanups.push(() => receiver.stop())
  const hook = await fetch(`${app.origin}/api/webhooks.json`, {
    method: 'POST',
    body: new URLSearchParams({ action: 'create', url: receiver.url, events: 'link.created,link.updated' }),
    headers: { 'x-api-key': app.key },
  })
  receiver.secret = ((await hook.json()) as any).return.secret
  const site = await pages(
    page(
      html(
        `<meta charset="utf-8"><title>  Spring &amp; Summer\n  Sale </title>
         <meta property="og:title" content="The sale"><meta property="og:description" content="Up to 50&#37; off">`,
      ),
    ),
  )
  const made = await app.make({ url: `${site.origin}/sale`, tags: 'promo' })
  expect(made.title).toBe('')
  await eventually(() => app.row(made.hex).title !== '', 'the title fetched')
  expect(app.row(made.hex)).toEqual({
    title: 'Spring & Summer Sale',
    og_title: 'The sale',
    og_description: 'Up to 50% off',
    meta_due: null,
  })
  const listed = await fetch(`${app.origin}/api/links.json`, { headers: { 'x-api-key': app.key } })
  expect(((await listed.json()) as any).return.links[0]).toMatchObject({ hex: made.hex, title: 'Spring & Summer Sale' })
  await eventually(() => receiver.got.length >= 2, 'link.created and link.updated delivered')
  await Bun.sleep(300)
  const events = receiver.got.map((g) => JSON.parse(g.body))
  expect(events.map((e) => [e.type, e.data.hex, e.data.title, e.data.tags])).toEqual([
    ['link.created', made.hex, '', ['promo']],
    ['link.updated', made.hex, 'Spring & Summer Sale', ['promo']],
  ])
  expect(receiver.got.every((g) => g.verifyError === null)).toBe(true)
  // Once: the page was asked for once, with a GET that says it wants HTML.
  expect(site.seen.map((s) => s.path)).toEqual(['/sale'])
  const metrics = await (await app.box.readMetrics()).text()
  expect(metrics).toContain('linkbox_link_title_fetches_total{outcome="filled"} 1')
})

test('a link made with a title keeps it; an anonymous link and one made while fetch_metadata = false are never fetched', async () => {
  const site = await pages(page(html('<title>From the page</title>')))
  const app = await running()
  const titled = await app.make({ url: `${site.origin}/titled`, title: 'Mine' })
  const anonymous = await app.make({ url: `${site.origin}/anonymous` }, true)
  expect(app.row(anonymous.hex).meta_due).toBeNull()
  // A keyed link made now is fetched: the two above were not (they were made first, and one node fetches in turn).
  const keyed = await app.make({ url: `${site.origin}/keyed` })
  await eventually(() => app.row(keyed.hex).title === 'From the page', 'the keyed link fetched')
  const off = await running({ links: { fetch_metadata: false } })
  const quiet = await off.make({ url: `${site.origin}/off` })
  expect(off.row(quiet.hex).meta_due).toBeNull()
  await Bun.sleep(500)
  expect(site.seen.map((s) => s.path)).toEqual(['/keyed'])
  expect(app.row(titled.hex).title).toBe('Mine')
  expect(app.row(anonymous.hex).title).toBe('')
  expect(off.row(quiet.hex).title).toBe('')
})

test('a destination on a private address is not fetched unless private networks are allowed; redirects pass the guard', async () => {
  const site = await pages(page(html('<title>Private</title>')))
  const closed = await running({ media: { allow_private_networks: false } })
  const made = await closed.make({ url: `${site.origin}/private` })
  await eventually(() => closed.row(made.hex).meta_due === null, 'the fetch given up')
  expect(closed.row(made.hex).title).toBe('')
  expect(site.seen).toEqual([])
  // One loopback address stands for the internet, another stays private: a redirect to the second is refused.
  const inner = await pages(page(html('<title>Inner</title>')), '127.0.0.2')
  const outer = await pages((req, res) => {
    const to = req.url === '/out' ? `${inner.origin}/secret` : '/landing'
    if (req.url === '/landing') return page(html('<title>Landed</title>'))(req, res, null as never)
    res.writeHead(302, { location: to })
    res.end()
  })
  const guarded = await running({ media: { allow_private_networks: false } }, { isAllowed: (a) => a === '127.0.0.1' })
  const out = await guarded.make({ url: `${outer.origin}/out` })
  const hop = await guarded.make({ url: `${outer.origin}/hop` })
  await eventually(() => guarded.row(hop.hex).title === 'Landed', 'the redirect followed')
  await eventually(() => guarded.row(out.hex).meta_due === null, 'the private redirect given up')
  expect(guarded.row(out.hex).title).toBe('')
  expect(inner.seen).toEqual([])
  expect(outer.seen.map((s) => s.path).sort()).toEqual(['/hop', '/landing', '/out'])
})

test('only text/html is parsed; an error status gives no title', async () => {
  const site = await pages((req, res) => {
    if (req.url === '/text') return page('<title>Plain</title>', 'text/plain')(req, res, null as never)
    res.writeHead(404, { 'content-type': 'text/html' })
    res.end(html('<title>Not found</title>'))
  })
  const app = await running()
  const text = await app.make({ url: `${site.origin}/text` })
  const missing = await app.make({ url: `${site.origin}/missing` })
  await eventually(() => app.row(text.hex).meta_due === null && app.row(missing.hex).meta_due === null, 'both done')
  expect([app.row(text.hex).title, app.row(missing.hex).title]).toEqual(['', ''])
})

test('a page that never finishes is cut at 5 s (its title, sent first, not used); the link keeps no title, to be tried later', async () => {
  const site = await pages((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.write('<!doctype html><html><head><title>Slow</title>')
    // Then a byte now and then, never the end.
    const drip = setInterval(() => res.write(' '), 500)
    res.on('close', () => clearInterval(drip))
  })
  const app = await running()
  const started = Date.now()
  const made = await app.make({ url: `${site.origin}/slow` })
  await eventually(() => site.seen[0]?.closedAfterMs != null, 'the connection closed', 10_000)
  const seen = site.seen[0]!
  expect(seen.finished).toBe(false)
  expect(seen.closedAfterMs!).toBeGreaterThan(4_500)
  expect(seen.closedAfterMs!).toBeLessThan(6_500)
  await eventually(() => (app.row(made.hex).meta_due ?? 0) > started + 20_000, 'the retry planned')
  expect(app.row(made.hex).title).toBe('')
  expect(site.seen.length).toBe(1)
})

test('a 5 MiB page is read to 256 KiB only: the server sees the connection closed early; the title after 300 KiB is not found', async () => {
  const CHUNK = Buffer.alloc(64 * 1024, ' ')
  const site = await pages(async (_req, res, seen) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.write('<!doctype html><html><head>')
    let sent = 0
    let titled = false
    while (sent < 5 * 1024 * 1024 && !res.destroyed) {
      if (!titled && sent >= 300 * 1024) {
        res.write('<title>Too far</title>')
        titled = true
      }
      res.write(CHUNK)
      sent += CHUNK.byteLength
      // Slowly enough that a client that stops reading is seen before the kernel's buffers take it all.
      await Bun.sleep(10)
    }
    if (!res.destroyed) res.end('</head></html>')
    void seen
  })
  const app = await running()
  const made = await app.make({ url: `${site.origin}/huge` })
  await eventually(() => app.row(made.hex).meta_due === null, 'the page read')
  expect(app.row(made.hex).title).toBe('')
  await eventually(() => site.seen[0]?.closedAfterMs != null, 'the connection closed')
  const seen = site.seen[0]!
  expect(seen.finished).toBe(false)
  expect(seen.written).toBeLessThan(2 * 1024 * 1024)
})

test('at most two fetches at once: five links made together are fetched two at a time, each once', async () => {
  const site = await pages(async (req, res) => {
    await Bun.sleep(300)
    page(html(`<title>Page ${req.url}</title>`))(req, res, null as never)
  })
  const app = await running()
  const made = await Promise.all([1, 2, 3, 4, 5].map((i) => app.make({ url: `${site.origin}/p${i}` })))
  await eventually(() => made.every((m) => app.row(m.hex).title !== ''), 'all five fetched')
  expect(made.map((m) => app.row(m.hex).title)).toEqual([1, 2, 3, 4, 5].map((i) => `Page /p${i}`))
  expect(site.maxActive).toBe(2)
  expect(site.seen.map((s) => s.path).sort()).toEqual(['/p1', '/p2', '/p3', '/p4', '/p5'])
})

test('a failing page is tried again with growing waits, then given up; the link keeps no title', async () => {
  const site = await pages((_req, res) => {
    res.writeHead(503, { 'content-type': 'text/html' })
    res.end(html('<title>Down for now</title>'))
  })
  const app = await running({}, { metadata: { pollMs: 50, retryMs: 100, giveUpMs: 1_000 } })
  const made = await app.make({ url: `${site.origin}/down` })
  await eventually(() => app.row(made.hex).meta_due === null, 'given up', 10_000)
  await Bun.sleep(500)
  const times = site.seen.map((s) => s.at)
  // About 0, 0.1, 0.2, 0.4, 0.8 and 1.6 s: each wait at least retryMs and as long as the link's age.
  expect(times.length).toBeGreaterThanOrEqual(4)
  expect(times.length).toBeLessThanOrEqual(8)
  const gaps = times.slice(1).map((t, i) => t - times[i]!)
  expect(Math.min(...gaps)).toBeGreaterThanOrEqual(90)
  expect(gaps.at(-1)!).toBeGreaterThan(gaps[0]! * 2)
  expect(app.row(made.hex).title).toBe('')
  const metrics = await (await app.box.readMetrics()).text()
  expect(metrics).toContain(`linkbox_link_title_fetches_total{outcome="retry"} ${times.length - 1}`)
  expect(metrics).toContain('linkbox_link_title_fetches_total{outcome="failed"} 1')
})

test('a node stopped during a fetch gives the link back; the node started again on the data fetches it', async () => {
  let first = true
  const site = await pages((_req, res) => {
    // The first request is held (the node stops meanwhile); the next one is answered.
    if (first) {
      first = false
      return
    }
    page(html('<title>After the restart</title>'))(_req, res, null as never)
  })
  const dir = tempDir()
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const config = () => testConfig(dir, { server: { port: 0 }, media: { allow_private_networks: true } })
  const before = sqliteLinkbox(config(), { metadata: { pollMs: 100 } })
  const key = (await before.accounts.createAccount({ name: 'alice' })).key.key
  const server = before.listen()
  const res = await fetch(`http://127.0.0.1:${server.port}/api/getLink.json`, {
    method: 'POST',
    body: new URLSearchParams({ url: `${site.origin}/held`, alias: 'held' }),
    headers: { 'x-api-key': key },
  })
  expect(res.status).toBe(200)
  await eventually(() => site.seen.length === 1, 'the fetch under way')
  await before.close()
  const after = sqliteLinkbox(config(), { metadata: { pollMs: 100 } })
  cleanups.push(() => after.close())
  const row = () => after.db.query('SELECT title, meta_due FROM links WHERE code = ?').get('held') as any
  expect(row().meta_due).toBeLessThanOrEqual(Date.now())
  expect(row().title).toBe('')
  after.listen()
  await eventually(() => row().title === 'After the restart', 'fetched by the node started again')
  expect(site.seen.map((s) => s.path)).toEqual(['/held', '/held'])
})
