// Issue 20, item 7, over real sockets against the real app and SQLite file: a dashboard form sent after its
// session ended (signed out in another tab, expired) leads to the sign-in page, which says so, then back to
// the page the form was on, with what was typed (never a password) and a word that the form was not sent.
// What is kept lives in a cookie for the dashboard's pages only, for 15 minutes, at most about 3 KB, and
// never for another site's form; `next` never leads off the dashboard.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { safeNext } from '../../src/dashboard/auth'
import { startApp, type RunningApp } from '../support/browser'
import { dashboardHttp, setCookie } from '../support/dashboard-http'

/** What the sign-in page says after a session ended (the words are the test). */
const SESSION_ENDED = 'Your session ended — sign in again to continue where you were.'
/** How long a form's draft is kept. */
const DRAFT_TTL_MS = 15 * 60_000

let app: RunningApp
let skew = 0

beforeAll(async () => {
  app = startApp({}, { clock: () => Date.now() + skew })
  await app.accounts.createAccount({ name: 'alice', password: 'alice password' })
})
afterAll(async () => app?.stop())

const { get, post, signIn, signOut, callerOf } = dashboardHttp(() => app)

const html = (s: string) => s.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;')
const linkCount = () => (app.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n

describe('a form sent after its session ended', () => {
  test("signed out in another tab: to the sign-in page, which says why, then back to the form's page with what was typed (not the password)", async () => {
    const tab = await signIn('alice', 'alice password')
    await signOut(tab) // the other tab: the session is gone (and its cookie, in the browser)
    const before = linkCount()

    // The create form was on the list's second page of a search: that is where it comes back to.
    const sent = await post(
      '/dashboard/links',
      '',
      {
        _csrf: tab.csrf,
        url: 'https://example.com/typed/before/sign-out',
        alias: 'kept-alias',
        mode: 'preview',
        expire: '86400',
        password: 'secret pw',
      },
      { referer: `${app.url}/dashboard?q=typed&page=2` },
    )
    expect(sent.status).toBe(303)
    expect(sent.headers.get('location')).toBe(
      `/login?next=${encodeURIComponent('/dashboard?q=typed&page=2')}&reason=session_ended`,
    )
    expect(sent.headers.get('cache-control')).toBe('no-store')
    expect(linkCount()).toBe(before) // nothing was created
    const draft = setCookie(sent, 'lb_draft')!
    expect(draft.line).toBe(
      `lb_draft=${draft.value}; Path=/dashboard; HttpOnly; SameSite=Lax; Max-Age=${DRAFT_TTL_MS / 1000}`,
    )
    // Kept in the browser: what was typed, never the password (nor the form's token).
    const kept = Buffer.from(draft.value, 'base64url').toString('utf8')
    expect(kept).toContain('https://example.com/typed/before/sign-out')
    expect(kept).not.toContain('secret pw')
    expect(kept).not.toContain(tab.csrf)

    // The sign-in page says the session ended, and will come back.
    const login = await get(sent.headers.get('location')!)
    expect(login.status).toBe(200)
    const loginHtml = await login.text()
    expect(loginHtml).toContain(`<p class="notice warn" role="status">${SESSION_ENDED}</p>`)
    expect(loginHtml).toContain(`<input type="hidden" name="next" value="${html('/dashboard?q=typed&page=2')}">`)

    const again = await signIn('alice', 'alice password', '/dashboard?q=typed&page=2')
    expect(again.location).toBe('/dashboard?q=typed&page=2')
    const back = await get(again.location, `${again.cookie}; lb_draft=${draft.value}`)
    expect(back.status).toBe(200)
    const page = await back.text()
    expect(page).toContain(
      '<p class="notice warn" role="status">Your session had ended, so the form was not sent. What you typed is back in it: check it and send it again. Passwords are never kept: type yours again.</p>',
    )
    expect(page).toContain('value="https://example.com/typed/before/sign-out"')
    expect(page).toContain('name="alias" autocomplete="off" maxlength="32" value="kept-alias"')
    expect(page).toContain('<option value="preview" selected>')
    expect(page).toContain('<option value="86400" selected>')
    expect(page).toContain('<details class="more" open>')
    expect(page).not.toContain('secret pw')
    // Shown once: the page clears the cookie.
    expect(setCookie(back, 'lb_draft')!.line).toBe('lb_draft=; Path=/dashboard; HttpOnly; SameSite=Lax; Max-Age=0')
    expect(await (await get('/dashboard', again.cookie)).text()).not.toContain('Your session had ended')
    expect(linkCount()).toBe(before)
  })

  test('every form where people type keeps what was typed for its page: link edit, webhook, mailbox, account', async () => {
    await app.accounts.createAccount({ name: 'root', password: 'root password', admin: true })
    const link = await app.links.create({ url: 'https://example.com/before-edit', alias: 'edit-me' }, callerOf('root'))
    // `secret`: typed, but never kept (not in the cookie, not on the page).
    const forms: {
      path: string
      page: string
      fields: [string, string][]
      shown: string[]
      notShown: string[]
      secret?: string
    }[] = [
      {
        path: `/dashboard/links/${link.hex}`,
        page: `/dashboard/links/${link.hex}`,
        fields: [
          ['url', 'https://example.com/after-edit'],
          ['mode', 'frame'],
          ['expire', '3600'],
          ['password_action', 'set'],
          ['password', 'new secret'],
        ],
        shown: [
          'value="https://example.com/after-edit"',
          '<option value="frame" selected>',
          '<option value="3600" selected>',
          '<input type="radio" name="password_action" value="set" checked>',
        ],
        notShown: [],
        secret: 'new secret',
      },
      {
        path: '/dashboard/webhooks',
        page: '/dashboard/webhooks',
        fields: [
          ['url', 'https://hooks.example.com/typed'],
          ['events', 'link.clicked'],
          ['events', 'no.such.event'],
        ],
        shown: [
          'value="https://hooks.example.com/typed"',
          '<input type="checkbox" name="events" value="link.clicked" checked>',
          '<input type="checkbox" name="events" value="link.created">',
        ],
        notShown: ['no.such.event'],
      },
      {
        path: '/dashboard/mail',
        page: '/dashboard/mail',
        fields: [
          ['local', 'typed-box'],
          ['domain', 'localhost'],
        ],
        shown: ['name="local" value="typed-box"'],
        notShown: [],
      },
      {
        path: '/dashboard/admin/accounts',
        page: '/dashboard/admin',
        fields: [
          ['name', 'carol-typed'],
          ['password', 'carol secret'],
          ['admin', '1'],
        ],
        shown: [
          'value="carol-typed"',
          'name="admin" type="checkbox" value="1" aria-describedby="acc-admin-hint" checked',
        ],
        notShown: [],
        secret: 'carol secret',
      },
    ]
    for (const f of forms) {
      const sent = await post(f.path, '', [['_csrf', 'x'], ...f.fields])
      expect(sent.headers.get('location')).toBe(`/login?next=${encodeURIComponent(f.page)}&reason=session_ended`)
      const draft = setCookie(sent, 'lb_draft')!.value
      const again = await signIn('root', 'root password', f.page)
      expect(again.location).toBe(f.page)
      const page = await (await get(f.page, `${again.cookie}; lb_draft=${draft}`)).text()
      expect(page).toContain('Your session had ended, so the form was not sent. What you typed is back in it')
      for (const shown of f.shown) expect(page).toContain(shown)
      for (const text of f.notShown) expect(page).not.toContain(text)
      if (f.secret) {
        expect(page).toContain('Passwords are never kept: type yours again.')
        expect(page).not.toContain(f.secret)
        expect(Buffer.from(draft, 'base64url').toString('utf8')).not.toContain(f.secret)
      }
    }
    // Nothing was sent: the link as it was, no endpoint, no mailbox, no account.
    expect(app.db.query('SELECT long_url, mode FROM links WHERE code = ?').get(link.hex)).toEqual({
      long_url: 'https://example.com/before-edit',
      mode: 'redirect',
    })
    expect(app.db.query("SELECT count(*) AS n FROM accounts WHERE name = 'carol-typed'").get()).toEqual({ n: 0 })
    expect(app.db.query("SELECT count(*) AS n FROM webhook_endpoints WHERE url LIKE '%typed%'").get()).toEqual({ n: 0 })
  })

  test('a form with nothing typed (a confirmation) comes back to its page: nothing was changed', async () => {
    const who = await signIn('alice', 'alice password')
    const link = await app.links.create({ url: 'https://example.com/keep-me', alias: 'keep-me' }, callerOf('alice'))
    await signOut(who)
    const sent = await post(
      `/dashboard/links/${link.hex}/delete`,
      '',
      { _csrf: who.csrf },
      { referer: `${app.url}/dashboard/links/${link.hex}/delete` },
    )
    expect(sent.headers.get('location')).toBe(
      `/login?next=${encodeURIComponent(`/dashboard/links/${link.hex}/delete`)}&reason=session_ended`,
    )
    const draft = setCookie(sent, 'lb_draft')!.value
    const again = await signIn('alice', 'alice password', `/dashboard/links/${link.hex}/delete`)
    const page = await (await get(again.location, `${again.cookie}; lb_draft=${draft}`)).text()
    expect(page).toContain('<h1>Delete this link?</h1>')
    expect(page).toContain(
      'Your session had ended, so the form was not sent. Nothing was changed: send it again if you still mean to.',
    )
    expect(app.db.query('SELECT count(*) AS n FROM links WHERE code = ?').get(link.hex)).toEqual({ n: 1 })
  })

  test('a form whose route is not a page comes back to the page it is on; a Referer of another page or site is not followed', async () => {
    // The endpoint page's "Send a test event" posts to …/test: the page is the endpoint's.
    const test = await post('/dashboard/webhooks/7/test', '', { _csrf: 'x' })
    expect(test.headers.get('location')).toBe(
      `/login?next=${encodeURIComponent('/dashboard/webhooks/7')}&reason=session_ended`,
    )
    const redeliver = await post('/dashboard/webhooks/7/redeliver', '', { _csrf: 'x', event: '1' })
    expect(redeliver.headers.get('location')).toBe(
      `/login?next=${encodeURIComponent('/dashboard/webhooks/7')}&reason=session_ended`,
    )
    // The admin's forms are on /dashboard/admin (with its page number, from the Referer).
    const disable = await post(
      '/dashboard/admin/accounts/disable',
      '',
      { _csrf: 'x', account: 'bob', page: '2' },
      { referer: `${app.url}/dashboard/admin?page=2` },
    )
    expect(disable.headers.get('location')).toBe(
      `/login?next=${encodeURIComponent('/dashboard/admin?page=2')}&reason=session_ended`,
    )
    // The links form, shown again at /dashboard/links after a mistake (a POST's answer): the list's page.
    for (const referer of [`${app.url}/dashboard/links`, 'http://evil.example/dashboard?q=x', 'not a url', '']) {
      const res = await post(
        '/dashboard/links',
        '',
        { _csrf: 'x', url: 'https://example.com/' },
        referer ? { referer } : {},
      )
      expect(res.headers.get('location')).toBe('/login?next=%2Fdashboard&reason=session_ended')
    }
  })

  test('a page asked for: the sign-in page says the session ended only when there was one', async () => {
    // Never signed in (no cookie, no dashboard page before): a plain sign-in.
    expect((await get('/dashboard/keys')).headers.get('location')).toBe('/login?next=%2Fdashboard%2Fkeys')
    expect((await get('/dashboard/keys', '', { referer: `${app.url}/` })).headers.get('location')).toBe(
      '/login?next=%2Fdashboard%2Fkeys',
    )
    expect(
      (await get('/dashboard/keys', '', { referer: 'http://evil.example/dashboard' })).headers.get('location'),
    ).toBe('/login?next=%2Fdashboard%2Fkeys')
    // A cookie of a session that ended, or a link followed from a dashboard page: it ended.
    const who = await signIn('alice', 'alice password')
    await signOut(who)
    const stale = await get('/dashboard/keys', who.cookie)
    expect(stale.headers.get('location')).toBe('/login?next=%2Fdashboard%2Fkeys&reason=session_ended')
    expect(setCookie(stale, 'lb_draft')).toBeNull() // nothing to keep for a page asked for
    expect((await get('/dashboard/keys', '', { referer: `${app.url}/dashboard/mail` })).headers.get('location')).toBe(
      '/login?next=%2Fdashboard%2Fkeys&reason=session_ended',
    )
    const plain = await (await get('/login?next=%2Fdashboard%2Fkeys')).text()
    expect(plain).not.toContain(SESSION_ENDED)
  })

  test("another site's form sent to a signed-out browser keeps nothing: it cannot fill in the form its visitor sees next", async () => {
    const senders: Record<string, string>[] = [
      { origin: 'http://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
    ]
    for (const headers of senders) {
      const res = await post('/dashboard/links', '', { url: 'https://evil.example/planted' }, headers)
      expect(res.status).toBe(303)
      expect(setCookie(res, 'lb_draft')).toBeNull()
    }
  })

  test('a draft is for its own page, for 15 minutes, at most about 3 KB; a broken one is ignored', async () => {
    const who = await signIn('alice', 'alice password')
    const sent = await post('/dashboard/keys', '', { _csrf: 'x', scope: 'qr', label: 'nightly backup' })
    expect(sent.headers.get('location')).toBe('/login?next=%2Fdashboard%2Fkeys&reason=session_ended')
    const draft = setCookie(sent, 'lb_draft')!.value
    // Another page does not take it (nor clear it).
    const other = await get('/dashboard/webhooks', `${who.cookie}; lb_draft=${draft}`)
    expect(await other.text()).not.toContain('nightly backup')
    expect(setCookie(other, 'lb_draft')).toBeNull()
    // Its page does: the label, and only the scope that was ticked.
    const keys = await (await get('/dashboard/keys', `${who.cookie}; lb_draft=${draft}`)).text()
    expect(keys).toContain('value="nightly backup"')
    expect(keys).toContain('<input type="checkbox" name="scope" value="qr" checked>')
    expect(keys).toContain('<input type="checkbox" name="scope" value="links">')
    // After 15 minutes it is nothing.
    skew += DRAFT_TTL_MS + 1000
    try {
      const later = await signIn('alice', 'alice password')
      const page = await (await get('/dashboard/keys', `${later.cookie}; lb_draft=${draft}`)).text()
      expect(page).not.toContain('nightly backup')
      expect(page).not.toContain('Your session had ended')
    } finally {
      skew = 0
    }
    // Too long to keep: the page still comes back and says what was lost.
    const long = await post('/dashboard/links', '', { _csrf: 'x', url: `https://example.com/${'a'.repeat(4000)}` })
    const longDraft = setCookie(long, 'lb_draft')!
    expect(longDraft.value.length).toBeLessThan(3100)
    const page = await (await get('/dashboard', `${who.cookie}; lb_draft=${longDraft.value}`)).text()
    expect(page).toContain(
      'Your session had ended, so the form was not sent. What you typed was too long to keep: type it again.',
    )
    expect(page).not.toContain('a'.repeat(100))
    // Past the form limit (64 KiB) it is not even read: the same.
    const huge = await post('/dashboard/links', '', { _csrf: 'x', url: `https://example.com/${'b'.repeat(70_000)}` })
    expect(huge.status).toBe(303)
    const hugeDraft = setCookie(huge, 'lb_draft')!.value
    expect(await (await get('/dashboard', `${who.cookie}; lb_draft=${hugeDraft}`)).text()).toContain(
      'What you typed was too long to keep: type it again.',
    )
    // Not base64 JSON, or the wrong shape: ignored, no error.
    for (const bad of [
      '%%%',
      Buffer.from('{"p":"/dashboard","e":"soon","f":[]}').toString('base64url'),
      Buffer.from('[1,2]').toString('base64url'),
    ]) {
      const res = await get('/dashboard', `${who.cookie}; lb_draft=${bad}`)
      expect(res.status).toBe(200)
      expect(await res.text()).not.toContain('Your session had ended')
    }
  })

  test('next leads only into the dashboard: checked where it is made and where it is followed', async () => {
    for (const bad of [
      '//evil.example/dashboard',
      '/\\evil.example',
      '/dashboard/\\x',
      'https://evil.example/dashboard',
      '/dashboard/é',
      '/dashboard x',
      '/dashboardx',
      ' /dashboard',
    ])
      expect(safeNext(bad)).toBe('/dashboard')
    expect(safeNext('/dashboard/links/abc?x=1')).toBe('/dashboard/links/abc?x=1')
    // Followed: the sign-in form's hidden field, and the redirect after signing in.
    for (const bad of [
      '//evil.example/x',
      '/\\evil.example',
      'https://evil.example/',
      '/dashboard/é',
      '/dashboard/\r\nSet-Cookie: x=1',
    ]) {
      const page = await (await get(`/login?next=${encodeURIComponent(bad)}`)).text()
      expect(page).toContain('<input type="hidden" name="next" value="/dashboard">')
      const done = await signIn('alice', 'alice password', bad)
      expect(done.location).toBe('/dashboard')
    }
    // Made: a page's own path with characters no browser sends unencoded still gives an ASCII path.
    const res = await get('/dashboard/links/%C3%A9?q=%0d%0a')
    expect(res.headers.get('location')).toBe(`/login?next=${encodeURIComponent('/dashboard/links/%C3%A9?q=%0d%0a')}`)
  })
})
