// The public pages' rules over HTTP (the browser tests in test/browser/ show them in Chromium): the frame
// check and its SSRF guard, a CSP with nothing from input, the password flow for browsers and scripts,
// bounded password hashing, X-Link-Password encoding, the statistics page's flush, rate limit and periods,
// favicon, and the home page's form (anonymous creation, errors by field, cross-site refusal, shared limit).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { framingAllowed } from '../../src/links/frame-check'
import { createPasswordGate } from '../../src/links/password-gate'
import { decodePasswordHeader, rangeOf } from '../../src/links/visit'
import { barTable, SCRIPT_CSP, SCRIPT_TAG } from '../../src/web/render'
import { GuardError, guardedFetch, isPublicAddress } from '../../src/kernel/net/guard'
import { makeBox, type TestBox } from '../support/app'
import { htmlPage, startApp, startFixture, type Fixture, type RunningApp } from '../support/browser'
import { CHROME_UA } from '../support/server'
import { follow } from '../support/dashboard'

const NAVIGATE = { 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'user-agent': CHROME_UA }

let box: TestBox
let other: Fixture // a second origin
let dest: Fixture
beforeAll(async () => {
  box = await makeBox({ media: { allow_private_networks: true } })
  other = startFixture(() => htmlPage('Other origin'))
  dest = startFixture((_req, url) => {
    if (url.pathname === '/deny') return htmlPage('Denied', { 'x-frame-options': 'DENY' })
    if (url.pathname === '/sameorigin') return htmlPage('Same origin only', { 'x-frame-options': 'SAMEORIGIN' })
    if (url.pathname === '/ancestors-none')
      return htmlPage('None', { 'content-security-policy': "frame-ancestors 'none'" })
    if (url.pathname === '/to-other') return Response.redirect(`${other.url}/landed`, 302)
    if (url.pathname === '/loop') return Response.redirect(`${dest.url}/loop`, 302)
    return htmlPage('Destination')
  })
})
afterAll(async () => {
  other.stop()
  dest.stop()
  await box.cleanup()
})

async function link(fields: Record<string, string>, b: { post: TestBox['post'] } = box): Promise<string> {
  const r = await b.post('/api/getLink.json', fields)
  expect(r.status).toBe(200)
  return r.body.return.hex
}
const visit = (path: string, init: RequestInit = {}) =>
  box.request(path, { redirect: 'manual', ...init, headers: { 'user-agent': CHROME_UA, ...(init.headers ?? {}) } })

describe('frame mode', () => {
  test('frame-src is the constant "http: https:", so a destination may redirect to another origin', async () => {
    const code = await link({ url: `${dest.url}/to-other`, mode: 'frame' })
    const r = await visit(`/${code}`)
    expect(r.status).toBe(200)
    const csp = r.headers.get('content-security-policy')!
    expect(csp).toEndWith('; frame-src http: https:')
    expect(csp).not.toContain('127.0.0.1')
    const html = await r.text()
    expect(html).toContain(`<iframe src="${dest.url}/to-other"`)
    expect(html).toMatch(/<main[ >][\s\S]*<iframe/)
    expect(html).toMatch(/<h1[ >]/)
  })

  test('attacker finding 7: a host with ";" never reaches the CSP', async () => {
    // Such a URL is refused at creation now (hosts are DNS names or addresses); a link stored by an
    // older version may still carry one, so it is written into the database directly.
    expect((await box.post('/api/getLink.json', { url: 'https://a;sandbox/', mode: 'frame' })).body.code).toBe(
      'invalid_url',
    )
    const code = await link({ url: 'https://example.com/', mode: 'frame' })
    box.db.query('UPDATE links SET long_url = ? WHERE code = ?').run('https://a;sandbox/', code)
    const r = await visit(`/${code}`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-security-policy')).not.toContain('sandbox')
    expect(r.headers.get('content-security-policy')).not.toContain('https://a')
  })

  test.each([
    ['X-Frame-Options: DENY', '/deny'],
    ['X-Frame-Options: SAMEORIGIN', '/sameorigin'],
    ["frame-ancestors 'none'", '/ancestors-none'],
  ])('a destination that refuses framing (%s): a message and "Open directly", no iframe', async (_name, path) => {
    // The verdict is kept per origin: a fresh app per case, so each asks its own destination.
    const b = await makeBox({ media: { allow_private_networks: true } })
    try {
      const c = await link({ url: `${dest.url}${path}`, mode: 'frame' }, b)
      const html = await (await b.request(`/${c}`)).text()
      expect(html).not.toContain('<iframe')
      expect(html).toContain('does not allow other sites to show its pages in a frame')
      expect(html).toContain(
        `<a class="button big" href="${dest.url}${path}" rel="noopener noreferrer">Open directly</a>`,
      )
    } finally {
      await b.cleanup()
    }
  })

  test('with private networks not allowed (the default), a local destination is not asked, and says so', async () => {
    const b = await makeBox()
    try {
      let asked = 0
      const spy = startFixture(() => (asked++, htmlPage('Private')))
      const c = await link({ url: `${spy.url}/x`, mode: 'frame' }, b)
      const html = await (await b.request(`/${c}`)).text()
      spy.stop()
      expect(asked).toBe(0)
      expect(html).toContain('private network')
      expect(html).toContain('Open directly')
    } finally {
      await b.cleanup()
    }
  })

  test('framingAllowed follows the browser: frame-ancestors decides over X-Frame-Options', () => {
    const ours = new URL('https://s.example:8443/')
    const theirs = new URL('https://d.example/')
    const h = (o: Record<string, string>) => new Headers(o)
    expect(framingAllowed(h({}), ours, theirs)).toBe(true)
    expect(framingAllowed(h({ 'x-frame-options': 'deny' }), ours, theirs)).toBe(false)
    expect(framingAllowed(h({ 'x-frame-options': 'ALLOW-FROM https://x' }), ours, theirs)).toBe(true)
    expect(
      framingAllowed(h({ 'x-frame-options': 'DENY', 'content-security-policy': 'frame-ancestors *' }), ours, theirs),
    ).toBe(true)
    expect(framingAllowed(h({ 'content-security-policy': "frame-ancestors 'self'" }), ours, theirs)).toBe(false)
    expect(framingAllowed(h({ 'content-security-policy': 'frame-ancestors https:' }), ours, theirs)).toBe(true)
    expect(
      framingAllowed(h({ 'content-security-policy': 'frame-ancestors https://*.example:8443' }), ours, theirs),
    ).toBe(true)
    expect(framingAllowed(h({ 'content-security-policy': 'frame-ancestors https://s.example' }), ours, theirs)).toBe(
      false,
    )
    expect(
      framingAllowed(
        h({ 'content-security-policy': "default-src 'self', frame-ancestors https://other.example" }),
        ours,
        theirs,
      ),
    ).toBe(false)
  })
})

describe('the SSRF guard', () => {
  test('address classification', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700::1111', '93.184.216.34']) expect(isPublicAddress(ip)).toBe(true)
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      'fd00::1',
      'fe80::1',
      'ff02::1',
      '224.0.0.1',
      '255.255.255.255',
      'nonsense',
    ])
      expect(isPublicAddress(ip)).toBe(false)
  })

  test('refuses loopback, and a public name that resolves to a private address', async () => {
    await expect(guardedFetch(`${dest.url}/`, { allowPrivate: false })).rejects.toMatchObject({ reason: 'private' })
    const resolve = async () => ['10.0.0.7']
    await expect(guardedFetch('http://public.example/', { allowPrivate: false, resolve })).rejects.toBeInstanceOf(
      GuardError,
    )
  })

  test('follows redirects itself, at most 5', async () => {
    const ok = await guardedFetch(`${dest.url}/to-other`, { allowPrivate: true })
    expect(ok.url).toBe(`${other.url}/landed`)
    expect(ok.response.status).toBe(200)
    await expect(guardedFetch(`${dest.url}/loop`, { allowPrivate: true })).rejects.toMatchObject({
      reason: 'redirects',
    })
  })
})

describe('password flow', () => {
  test('a browser that POSTs the right password gets a page that goes on (meta refresh + link), CSP unchanged', async () => {
    const url = `${dest.url}/secret?a=1&b="2"`
    const code = await link({ url, password: 'open sesame' })
    const r = await visit(`/${code}`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'open sesame' }),
      headers: NAVIGATE,
    })
    expect(r.status).toBe(200)
    const csp = r.headers.get('content-security-policy')!
    expect(csp).toContain("form-action 'self'")
    expect(csp).not.toContain('script-src')
    const html = await r.text()
    const href = new URL(url).href.replaceAll('&', '&amp;').replaceAll('"', '&quot;')
    expect(html).toContain(`<meta http-equiv="refresh" content="0;url=${href}">`)
    expect(html).toContain(`href="${href}"`)
    expect(html).not.toContain('<script')
  })

  test('scripts keep 303 (no Sec-Fetch headers, or X-Link-Password even from a browser)', async () => {
    const code = await link({ url: `${dest.url}/scripted`, password: 'pw' })
    const plain = await visit(`/${code}`, { method: 'POST', body: new URLSearchParams({ password: 'pw' }) })
    expect(plain.status).toBe(303)
    expect(plain.headers.get('location')).toBe(`${dest.url}/scripted`)
    const header = await visit(`/${code}`, { method: 'POST', headers: { ...NAVIGATE, 'x-link-password': 'pw' } })
    expect(header.status).toBe(303)
    const fetched = await visit(`/${code}`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'pw' }),
      headers: { 'sec-fetch-mode': 'cors', accept: 'text/html' },
    })
    expect(fetched.status).toBe(303)
  })

  test('on a plain-http origin browsers send no Sec-Fetch-*: a form POST accepting HTML gets the page', async () => {
    const code = await link({ url: `${dest.url}/plain-http`, password: 'pw' })
    const r = await visit(`/${code}`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'pw' }),
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    })
    expect(r.status).toBe(200)
    expect(await r.text()).toContain('http-equiv="refresh"')
  })

  test('a wrong password: the message is tied to the field and announced', async () => {
    const code = await link({ url: `${dest.url}/w`, password: 'pw' })
    // A browser's post is answered 303 to a GET of the form that says so (no resubmission on Back).
    const posted = await visit(`/${code}`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'nope' }),
      headers: NAVIGATE,
    })
    expect(posted.status).toBe(303)
    const r = await visit(posted.headers.get('location')!, { headers: NAVIGATE })
    expect(r.status).toBe(200)
    const html = await r.text()
    expect(html).toMatch(/<input id="pw"[^>]*aria-describedby="pw-error"[^>]*aria-invalid="true"/)
    expect(html).toMatch(/<p id="pw-error"[^>]*aria-live="polite"[^>]*>That password is not right\.<\/p>/)
  })

  test('X-Link-Password: a non-ASCII password, percent-encoded as UTF-8', async () => {
    const password = 'pässwörd ✓ 密码 %'
    const code = await link({ url: `${dest.url}/utf8`, password })
    const ok = await visit(`/${code}`, { headers: { 'x-link-password': encodeURIComponent(password) } })
    expect(ok.status).toBe(302)
    expect(ok.headers.get('location')).toBe(`${dest.url}/utf8`)
    // A value without %XX is taken as it is; a bad encoding is named.
    const raw = await link({ url: `${dest.url}/raw`, password: '100% sure' })
    expect((await visit(`/${raw}`, { headers: { 'x-link-password': '100% sure' } })).status).toBe(302)
    const bad = await visit(`/${raw}`, { headers: { 'x-link-password': '%FF%FE' } })
    expect(bad.status).toBe(400)
    expect(await bad.text()).toContain('X-Link-Password')
    expect(decodePasswordHeader('a%25b')).toBe('a%b')
    expect(decodePasswordHeader('50%off')).toBe('50%off')
  })

  test('attempts are limited per client across links too (30 a minute)', async () => {
    const b = await makeBox({}, { verifyPassword: async () => false })
    try {
      const codes = [] as string[]
      for (let i = 0; i < 4; i++) codes.push(await link({ url: `${dest.url}/p${i}`, password: 'pw' }, b))
      const statuses: number[] = []
      for (let i = 0; i < 31; i++) {
        const r = await b.request(`/${codes[i % 4]}`, { method: 'POST', body: new URLSearchParams({ password: 'x' }) })
        statuses.push(r.status)
        if (r.status === 429) expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
      }
      expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true)
      expect(statuses[30]).toBe(429)
    } finally {
      await b.cleanup()
    }
  })
})

describe('bounded password hashing (attacker finding 5)', () => {
  test('the gate runs at most 4 checks, queues 64, refuses the rest with 503 and Retry-After', async () => {
    let running = 0
    let most = 0
    const release: (() => void)[] = []
    const gate = createPasswordGate({
      verify: async () => {
        running++
        most = Math.max(most, running)
        await new Promise<void>((r) => release.push(r))
        running--
        return false
      },
    })
    const held = Array.from({ length: 68 }, () => gate.verify('x', 'h'))
    await Promise.resolve()
    expect(gate.running).toBe(4)
    expect(gate.waiting).toBe(64)
    await expect(gate.verify('x', 'h')).rejects.toMatchObject({ status: 503, headers: { 'retry-after': '5' } })
    while (release.length || gate.running) {
      release.splice(0).forEach((r) => r())
      await Bun.sleep(0)
    }
    expect(await Promise.all(held)).toEqual(Array(68).fill(false))
    expect(most).toBe(4)
  })

  test('through the app: 100 wrong passwords at once from 100 clients → 4 checks at a time, 32 answered 503', async () => {
    let running = 0
    let most = 0
    let started = 0
    let open!: () => void
    const opened = new Promise<void>((r) => (open = r))
    const app: RunningApp = startApp(
      { server: { host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1'] } },
      {
        verifyPassword: async () => {
          running++
          started++
          most = Math.max(most, running)
          await opened
          running--
          return false
        },
      },
    )
    try {
      const code = (await app.links.create({ url: `${dest.url}/busy`, password: 'pw' }, null)).hex
      const answers = Array.from({ length: 100 }, (_, i) =>
        fetch(`${app.url}/${code}`, {
          method: 'POST',
          body: new URLSearchParams({ password: 'wrong' }),
          headers: { 'x-forwarded-for': `203.0.113.${i}` },
        }).then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after'), html: await r.text() })),
      )
      // Nothing finishes while the verifier is held, so exactly 4 + 64 wait and the others are refused.
      let busy: { status: number; retry: string | null; html: string }[] = []
      while (busy.length < 32) {
        const settled = await Promise.all(answers.map((a) => Promise.race([a, Bun.sleep(5).then(() => null)])))
        busy = settled.filter((s): s is NonNullable<typeof s> => s !== null)
      }
      expect(busy.every((b) => b.status === 503 && b.retry === '5' && b.html.includes('try again'))).toBe(true)
      expect(started).toBe(4)
      open()
      const all = await Promise.all(answers)
      expect(all.filter((a) => a.status === 401)).toHaveLength(68)
      expect(all.filter((a) => a.status === 503)).toHaveLength(32)
      expect(most).toBe(4)
    } finally {
      open()
      await app.stop()
    }
  })
})

describe('statistics page', () => {
  test('a view does not flush the click buffer (it says it may be a second behind)', async () => {
    const code = await link({ url: `${dest.url}/counted` })
    await visit(`/${code}`)
    expect(box.recorder.pending).toBeGreaterThan(0)
    const r = await visit(`/${code}+`)
    expect(r.status).toBe(200)
    expect(box.recorder.pending).toBeGreaterThan(0)
    expect(await r.text()).toContain('may not be counted here yet')
    await box.recorder.flush()
  })

  test('rate-limited per client: 60 a minute, then a 429 page with Retry-After', async () => {
    const b = await makeBox()
    try {
      const code = await link({ url: `${dest.url}/popular` }, b)
      for (let i = 0; i < 60; i++) expect((await b.request(`/${code}+`)).status).toBe(200)
      const r = await b.request(`/${code}+`)
      expect(r.status).toBe(429)
      expect(r.headers.get('content-type')).toContain('text/html')
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await b.cleanup()
    }
  })

  test('the Clicks headers are right-aligned like their numbers', async () => {
    const code = await link({ url: `${dest.url}/aligned` })
    const html = await (await visit(`/${code}+`)).text()
    expect(html).toContain('<th scope="col" class="n">Clicks</th>')
    const css = await (await box.request(html.match(/href="(\/assets\/style\.css\?v=\w+)"/)![1]!)).text()
    expect(css).toMatch(/th\.n, td\.n \{ text-align: right;/)
  })
})

test('/favicon.ico is an icon with a long cache, not a 404 page', async () => {
  const r = await box.request('/favicon.ico')
  expect(r.status).toBe(200)
  expect(r.headers.get('content-type')).toBe('image/svg+xml')
  expect(r.headers.get('cache-control')).toContain('max-age=')
  expect(await r.text()).toStartWith('<svg')
})

describe('home page', () => {
  const form = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    box.request('/', {
      method: 'POST',
      body: new URLSearchParams(fields),
      headers: { 'user-agent': CHROME_UA, ...headers },
    })
  const count = (b: TestBox = box) => (b.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n
  /** The page a form's 303 leads to (with the cookie the answer set), as a browser shows it. */
  const shown = async (r: Response, b: TestBox = box) => (await follow(b, r)).text()

  test('GET /: the page with its script, and a referrer policy under which the form posts its real Origin', async () => {
    const r = await box.request('/')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(r.headers.get('content-security-policy')).toBe(SCRIPT_CSP)
    // Under no-referrer a browser sends "Origin: null" even to its own origin, which the check below refuses.
    expect(r.headers.get('referrer-policy')).toBe('same-origin')
    const html = await r.text()
    expect(html).toContain('<meta name="referrer" content="same-origin">')
    expect(html).toContain(SCRIPT_TAG)
    expect(html).toContain('<form class="shorten" id="shorten" method="post" action="/">')
    expect(html).toContain('<a href="/api/docs">')
    expect(html).toContain('<a href="/dashboard">')
    // The other pages keep sending no referrer at all.
    const other = await box.request('/NoSuchCode')
    expect(other.headers.get('referrer-policy')).toBe('no-referrer')
    expect(await other.text()).toContain('<meta name="referrer" content="no-referrer">')
  })

  test('a POST creates an anonymous link and answers with a 303 to it: short link, QR, stats link', async () => {
    const r = await form(
      { url: `${dest.url}/from-home`, mode: 'frame', expire: '3600' },
      { origin: 'http://localhost:8080' },
    )
    expect(r.status).toBe(303)
    expect(r.headers.get('location')).toMatch(/^\/\?made=[A-Za-z0-9_-]{22}$/)
    expect(r.headers.get('set-cookie')).toMatch(
      /^lb_home=[A-Za-z0-9_-]{22}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=300$/,
    )
    const html = await shown(r)
    const code = html.match(
      /<input id="short" type="text" readonly value="http:\/\/localhost:8080\/([A-Za-z0-9]{6})">/,
    )![1]!
    expect(html).toContain(`<img class="qr" src="/qr/${code}.svg" alt="QR code of http://localhost:8080/${code}"`)
    expect(html).toContain(`<a href="/${code}+">http://localhost:8080/${code}+</a>`)
    expect(html).toContain(`href="/qr/${code}.png" download="${code}-qr.png"`)
    const row = box.db.query('SELECT account_id, mode, long_url FROM links WHERE code = ?').get(code)
    expect(row).toEqual({ account_id: null, mode: 'frame', long_url: `${dest.url}/from-home` })
  })

  test('errors: 303 back to the form, by field, what was typed kept and escaped', async () => {
    const typed = `"><script>alert(1)</script>`
    const bad = await form({ url: `${dest.url}/x`, alias: typed })
    expect(bad.status).toBe(303)
    expect(bad.headers.get('location')).toMatch(/^\/\?form=[A-Za-z0-9_-]{22}$/)
    const html = await shown(bad)
    expect(html).not.toContain('<script>alert')
    expect(html).toContain(`value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" aria-invalid="true">`)
    expect(html).toContain(
      '<p id="alias-error" class="field-error">The alias must be 2 to 32 characters: letters, digits, _ and -.</p>',
    )
    expect(html).toContain('<details open>')
    expect(html).toContain(`value="${dest.url}/x">`) // the URL kept, and not marked
    expect(html).not.toMatch(/id="url"[^>]*aria-invalid/)

    await form({ url: `${dest.url}/one`, alias: 'home-taken' })
    const taken = await form({ url: `${dest.url}/two`, alias: 'home-taken', password: 'secret' })
    const takenHtml = await shown(taken)
    expect(takenHtml).toContain('The alias &quot;home-taken&quot; is already in use.')
    expect(takenHtml).not.toContain('secret') // a password is never written back into a page

    const missing = await form({})
    expect(await shown(missing)).toContain('<p id="url-error" class="field-error">The URL is required.</p>')

    const mode = await form({ url: `${dest.url}/m`, mode: 'sideways' })
    expect(await shown(mode)).toMatch(
      /<select id="mode" name="mode" aria-describedby="mode-error" aria-invalid="true"><option value="redirect">/,
    )
  })

  test('a cross-site POST is refused with 403 (Origin of another site, "null", or Sec-Fetch-Site: cross-site)', async () => {
    const before = count()
    for (const headers of <Record<string, string>[]>[
      { origin: 'http://evil.example' },
      { origin: 'null' },
      { origin: 'http://localhost:8081' },
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'http://localhost:8080', 'sec-fetch-site': 'cross-site' },
    ]) {
      const r = await form({ url: `${dest.url}/evil` }, headers)
      expect({ headers, status: r.status }).toEqual({ headers, status: 403 })
      expect(await r.text()).toContain('Request refused')
    }
    expect(count()).toBe(before)
    // Its own origin (base_url's, or the request's), same-origin, or no Origin at all (a script) go through.
    for (const headers of <Record<string, string>[]>[
      { origin: 'http://localhost:8080' },
      { 'sec-fetch-site': 'same-origin' },
      {},
    ]) {
      const r = await form({ url: `${dest.url}/fine` }, headers)
      expect({ headers, status: r.status }).toEqual({ headers, status: 303 })
    }
    expect(count()).toBe(before + 3)
  })

  test('the anonymous rate limit is the API one; a body over 8 KiB is a 413 page', async () => {
    const b = await makeBox({ rate: { anon_per_minute: 2 } })
    try {
      expect((await b.post('/api/getLink.json', { url: `${dest.url}/api` })).status).toBe(200)
      const post = (url: string) => b.request('/', { method: 'POST', body: new URLSearchParams({ url }) })
      expect((await post(`${dest.url}/form`)).headers.get('location')).toStartWith('/?made=')
      const limited = await post(`${dest.url}/third`)
      expect(limited.status).toBe(303)
      expect(limited.headers.get('location')).toStartWith('/?form=')
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
      const html = await shown(limited, b)
      expect(html).toMatch(
        /<p id="form-error" class="form-error" role="alert">Too many links from your address: wait \d+ s and try again\.<\/p>/,
      )
      expect(html).toContain(`value="${dest.url}/third"`)
      expect((await b.post('/api/getLink.json', { url: `${dest.url}/api2` })).status).toBe(429)
      expect(count(b)).toBe(2)
    } finally {
      await b.cleanup()
    }
    const big = await form({ url: `${dest.url}/${'a'.repeat(9000)}` })
    expect(big.status).toBe(413)
    expect(big.headers.get('content-type')).toContain('text/html')
  })
})

describe('statistics page range and drawing', () => {
  test('?days= takes 7, 30, 90 or 365; anything else is 30', () => {
    expect(rangeOf('http://h/c+')).toBe(30)
    expect(rangeOf('http://h/c+?days=7')).toBe(7)
    expect(rangeOf('http://h/c+?x=1&days=365#top')).toBe(365)
    expect(rangeOf('http://h/c+?days=90')).toBe(90)
    for (const q of [
      'days=12',
      'days=abc',
      'days=',
      'days=7&days=365',
      'days=0x1e',
      'days=30.0',
      'days=%37',
      'days=1e3',
      'days=-7',
    ])
      expect({ q, days: rangeOf(`http://h/c+?${q}`) }).toEqual({ q, days: q === 'days=%37' ? 7 : 30 })
  })

  test('the window follows ?days, with the current period marked; a password link hides its destination', async () => {
    const code = await link({ url: `${dest.url}/ranged`, password: 'pw' })
    const year = await (await visit(`/${code}+?days=365`)).text()
    expect(year).toContain(`<a href="/${code}+?days=365" aria-current="page">1 year</a>`)
    expect(year).toContain(`<a href="/${code}+">30 days</a>`)
    expect((year.match(/<rect class="bar"/g) ?? []).length).toBe(365)
    expect(year).toContain('Clicks, last 365 days')
    expect(year).toContain('The destination is hidden: the link is password-protected.')
    expect(year).not.toContain(`${dest.url}/ranged`)
    const odd = await (await visit(`/${code}+?days=400`)).text()
    expect(odd).toContain(`<a href="/${code}+" aria-current="page">30 days</a>`)
    expect((odd.match(/<rect class="bar"/g) ?? []).length).toBe(30)
  })

  test('breakdown bars escape names and show count and share as text', () => {
    const html = barTable(
      [
        { name: '<img src=x onerror=alert(1)>', clicks: 3 },
        { name: 'b&b', clicks: 1 },
      ],
      'Source',
    )
    expect(html).not.toContain('<img')
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;')
    expect(html).toContain('b&amp;b')
    expect(html).toContain('<td class="n">3</td><td class="n share">75%</td>')
    expect(html).toContain('<rect class="fill" width="100.0"')
    expect(html).toContain('<rect class="fill" width="33.3"')
    expect(html).toContain('aria-hidden="true"')
    expect(barTable([], 'Source', 'Nothing <here>.')).toBe('<p class="empty">Nothing &lt;here&gt;.</p>')
  })
})
