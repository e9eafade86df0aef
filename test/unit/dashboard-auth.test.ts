// Dashboard sign-in, sessions and the checks every form passes, through the real app and SQLite file:
// cookies and their attributes, wrong passwords, the CSRF token and the same-origin rule, the rate limit,
// sign-out, disabled accounts, where a sign-in may send the browser, and open sign-up (off by default).
import { afterEach, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'
import { follow, postForm, signIn } from '../support/dashboard'
import { safeNext } from '../../src/dashboard/auth'

let box: TestBox
afterEach(async () => box?.cleanup())

async function loginForm(b: TestBox) {
  const res = await b.request('/login')
  const login = res.headers.get('set-cookie')!.match(/lb_login=([^;]+)/)![1]!
  const csrf = (await res.text()).match(/name="_csrf" value="([^"]+)"/)![1]!
  return { login, csrf }
}
const post = (
  b: TestBox,
  path: string,
  cookie: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) =>
  b.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
    body: new URLSearchParams(fields).toString(),
  })

describe('sign-in', () => {
  test('the right password makes an HttpOnly, SameSite=Lax session cookie; only its hash is stored', async () => {
    box = await makeBox()
    await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    const f = await loginForm(box)
    const res = await post(box, '/login', `lb_login=${f.login}`, {
      _csrf: f.csrf,
      name: 'alice',
      password: 'correct horse',
      next: '/dashboard/keys',
    })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard/keys')
    const cookie = res.headers.get('set-cookie')!
    expect(cookie).toMatch(/^lb_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=604800$/)
    const token = cookie.match(/lb_session=([^;]+)/)![1]!
    const rows = box.db.query('SELECT token_hash FROM web_sessions').all() as { token_hash: string }[]
    expect(rows).toHaveLength(1)
    expect(rows[0]!.token_hash).not.toContain(token)
    expect(rows[0]!.token_hash).toBe(new Bun.CryptoHasher('sha256').update(token).digest('hex'))
    const page = await box.request('/dashboard', { headers: { cookie: `lb_session=${token}` } })
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('Signed in as </span><strong>alice</strong>')
    expect(page.headers.get('cache-control')).toBe('no-store')
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
  })

  test('Secure and the __Host- prefix behind https', async () => {
    box = await makeBox({ server: { base_url: 'https://links.example.org' } })
    await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    const f = await loginForm(box)
    expect((await box.request('/login')).headers.get('set-cookie')).toContain('; Secure')
    const res = await post(box, '/login', `lb_login=${f.login}`, {
      _csrf: f.csrf,
      name: 'alice',
      password: 'correct horse',
    })
    expect(res.headers.get('set-cookie')).toMatch(
      /^__Host-lb_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=/,
    )
  })

  test('a wrong password, an unknown name and an account without a password get one answer (303 back to the form), and no session', async () => {
    box = await makeBox()
    await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    await box.accounts.createAccount({ name: 'nopass' })
    for (const [name, password] of [
      ['alice', 'wrong'],
      ['nobody', 'correct horse'],
      ['nopass', 'anything at all'],
      ['alice', ''],
    ]) {
      const f = await loginForm(box)
      const posted = await post(box, '/login', `lb_login=${f.login}`, {
        _csrf: f.csrf,
        name: name!,
        password: password!,
        next: '/dashboard/mail',
      })
      expect(posted.status).toBe(303)
      expect(posted.headers.get('location')).toMatch(/^\/login\?next=%2Fdashboard%2Fmail&form=[A-Za-z0-9_-]{22}$/)
      expect(posted.headers.get('set-cookie')).toBeNull()
      const res = await follow(box, posted, `lb_login=${f.login}`)
      expect(res.status).toBe(200)
      const html = await res.text()
      expect(html).toContain('That account name and password do not match.')
      expect(html).toContain('aria-invalid="true"')
      expect(html).toContain(`name="name" autocomplete="username" required maxlength="64" value="${name}"`)
      expect(html).toContain('name="next" value="/dashboard/mail"')
      if (password) expect(html).not.toContain(password)
      expect(res.headers.get('set-cookie')).not.toContain('lb_session')
      // Shown to the browser with that sign-in cookie only, and once.
      expect(await (await box.request(posted.headers.get('location')!)).text()).not.toContain('do not match')
      expect(await (await follow(box, posted, `lb_login=${f.login}`)).text()).not.toContain('do not match')
    }
    expect(box.db.query('SELECT count(*) AS n FROM web_sessions').get()).toEqual({ n: 0 })
  })

  test('without the form token, or from another site, the sign-in is refused (403) before the password is checked', async () => {
    box = await makeBox()
    await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    const f = await loginForm(box)
    const fields = { name: 'alice', password: 'correct horse' }
    expect((await post(box, '/login', `lb_login=${f.login}`, fields)).status).toBe(403)
    expect((await post(box, '/login', '', { ...fields, _csrf: f.csrf })).status).toBe(403)
    expect((await post(box, '/login', `lb_login=${f.login}`, { ...fields, _csrf: 'x' + f.csrf })).status).toBe(403)
    const other = await post(
      box,
      '/login',
      `lb_login=${f.login}`,
      { ...fields, _csrf: f.csrf },
      { origin: 'http://evil.example' },
    )
    expect(other.status).toBe(403)
    expect(await other.text()).toContain('sent from another site')
    expect(
      (
        await post(
          box,
          '/login',
          `lb_login=${f.login}`,
          { ...fields, _csrf: f.csrf },
          { 'sec-fetch-site': 'cross-site' },
        )
      ).status,
    ).toBe(403)
    expect(box.db.query('SELECT count(*) AS n FROM web_sessions').get()).toEqual({ n: 0 })
    // The same request from this site works.
    expect(
      (
        await post(
          box,
          '/login',
          `lb_login=${f.login}`,
          { ...fields, _csrf: f.csrf },
          { origin: 'http://localhost:8080' },
        )
      ).status,
    ).toBe(303)
  })

  test('attempts are limited per client and name: the 11th in a minute is refused with Retry-After, even with the right password', async () => {
    box = await makeBox()
    await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    const f = await loginForm(box)
    for (let i = 0; i < 10; i++) {
      const wrong = await post(box, '/login', `lb_login=${f.login}`, {
        _csrf: f.csrf,
        name: 'alice',
        password: `wrong${i}`,
      })
      expect(wrong.status).toBe(303)
      expect(wrong.headers.get('retry-after')).toBeNull()
    }
    const res = await post(box, '/login', `lb_login=${f.login}`, {
      _csrf: f.csrf,
      name: 'alice',
      password: 'correct horse',
    })
    expect(res.status).toBe(303)
    expect(res.headers.get('set-cookie')).toBeNull()
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await (await follow(box, res, `lb_login=${f.login}`)).text()).toContain('Too many sign-in attempts')
    expect(box.db.query('SELECT count(*) AS n FROM web_sessions').get()).toEqual({ n: 0 })
  })

  test('next may only lead into the dashboard', () => {
    expect(safeNext('/dashboard/keys?x=1')).toBe('/dashboard/keys?x=1')
    for (const bad of [
      'https://evil.example/',
      '//evil.example/dashboard',
      '/dashboardx',
      '/\\evil.example',
      '/dashboard/\nx',
      null,
      '',
    ])
      expect(safeNext(bad)).toBe('/dashboard')
  })
})

describe('signed in', () => {
  test('pages need a session: without one, a redirect to the sign-in page that comes back', async () => {
    box = await makeBox()
    const res = await box.request('/dashboard/keys?page=2')
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/login?next=%2Fdashboard%2Fkeys%3Fpage%3D2')
    const forged = await box.request('/dashboard', {
      headers: { cookie: 'lb_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
    })
    expect(forged.status).toBe(303)
  })

  test('sign-out needs the form token; then the session is gone', async () => {
    box = await makeBox()
    await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    const who = await signIn(box, 'alice', 'correct horse')
    const forged = await postForm(box, who, '/logout', { _csrf: 'nope' })
    expect(forged.status).toBe(403)
    expect((await box.request('/dashboard', { headers: { cookie: who.cookie } })).status).toBe(200)
    const out = await postForm(box, who, '/logout', {})
    expect(out.status).toBe(303)
    expect(out.headers.get('set-cookie')).toContain('lb_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0')
    expect((await box.request('/dashboard', { headers: { cookie: who.cookie } })).status).toBe(303)
  })

  test('a session expires after a week unused', async () => {
    let now = Date.now()
    box = await makeBox({}, { clock: () => now })
    await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    const who = await signIn(box, 'alice', 'correct horse')
    now += 6 * 24 * 3600_000
    expect((await box.request('/dashboard', { headers: { cookie: who.cookie } })).status).toBe(200)
    now += 6 * 24 * 3600_000 // slid: 6 days after the last use
    expect((await box.request('/dashboard', { headers: { cookie: who.cookie } })).status).toBe(200)
    now += 8 * 24 * 3600_000
    expect((await box.request('/dashboard', { headers: { cookie: who.cookie } })).status).toBe(303)
    expect(box.db.query('SELECT count(*) AS n FROM web_sessions').get()).toEqual({ n: 0 })
  })

  test('an account keeps at most 20 sessions: the 21st sign-in ends the oldest', async () => {
    box = await makeBox()
    await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    const first = await signIn(box, 'alice', 'correct horse')
    for (let i = 0; i < 20; i++) await box.sessions.create(1)
    expect(box.db.query('SELECT count(*) AS n FROM web_sessions').get()).toEqual({ n: 20 })
    expect((await box.request('/dashboard', { headers: { cookie: first.cookie } })).status).toBe(303)
  })

  test('a disabled account: its keys, its sessions and its sign-in stop working', async () => {
    box = await makeBox()
    const { key } = await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
    const who = await signIn(box, 'alice', 'correct horse')
    expect((await box.get('/api/qr.json', { data: 'x' }, { 'x-api-key': key.key })).status).toBe(200)
    await box.accounts.setDisabled('alice', true)
    expect((await box.get('/api/qr.json', { data: 'x' }, { 'x-api-key': key.key })).status).toBe(401)
    expect((await box.request('/dashboard', { headers: { cookie: who.cookie } })).status).toBe(303)
    await expect(signIn(box, 'alice', 'correct horse')).rejects.toThrow('sign-in refused')
  })
})

describe('open sign-up', () => {
  test('off by default: /signup is not there', async () => {
    box = await makeBox()
    expect((await box.request('/signup')).status).toBe(404)
    expect(await (await box.request('/login')).text()).not.toContain('/signup')
  })

  test('on: an account with a password, signed in at once; names and passwords are checked', async () => {
    box = await makeBox({ web: { signup: true } })
    const res = await box.request('/signup')
    const login = res.headers.get('set-cookie')!.match(/lb_login=([^;]+)/)![1]!
    const csrf = (await res.text()).match(/name="_csrf" value="([^"]+)"/)![1]!
    const short = await post(box, '/signup', `lb_login=${login}`, { _csrf: csrf, name: 'bob', password: 'short' })
    expect(short.headers.get('location')).toMatch(/^\/signup\?form=[A-Za-z0-9_-]{22}$/)
    const shortPage = await (await follow(box, short, `lb_login=${login}`)).text()
    expect(shortPage).toContain('8 to 128 characters')
    expect(shortPage).toContain('value="bob"')
    const ok = await post(box, '/signup', `lb_login=${login}`, { _csrf: csrf, name: 'bob', password: 'long enough' })
    expect(ok.status).toBe(303)
    expect(ok.headers.get('set-cookie')).toContain('lb_session=')
    const again = await post(box, '/signup', `lb_login=${login}`, { _csrf: csrf, name: 'bob', password: 'long enough' })
    expect(await (await follow(box, again, `lb_login=${login}`)).text()).toContain(
      'The account &quot;bob&quot; exists already.',
    )
    expect(box.db.query('SELECT admin FROM accounts WHERE name = ?').get('bob')).toEqual({ admin: 0 })
  })
})
