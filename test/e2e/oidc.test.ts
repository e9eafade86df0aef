// Single sign-on (SPEC §7, issue 25) over real sockets: linkbox listening on 127.0.0.1 and a real OpenID
// provider (oidc-provider, test/support/oidc-provider.ts) in this process; the browser's part is played with
// fetch and cookie jars (the Chromium walk is test/browser/oidc.test.ts). Assertions on answers, cookies,
// pages and rows.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildConfig } from '../../src/kernel/config'
import { OIDC_STARTS_PER_CLIENT_PER_MINUTE } from '../../src/dashboard/oidc'
import { checkOidc } from '../../src/app/doctor-services'
import { isReserved } from '../../src/links/validate'
import { accountNameFrom, groupsOf } from '../../src/oidc'
import { createOidcClient, PENDING_MAX, PENDING_TTL_MS, SignInRefused } from '../../src/oidc'
import { capturedLog, tempDir, testConfig } from '../support/app'
import type { RunningApp } from '../support/browser'
import {
  capturedLines,
  freePort,
  Jar,
  startProvider,
  startWithProvider,
  throughProvider,
  visit,
  type TestProvider,
} from '../support/oidc-provider'
import { tampered as changed } from '../support/tamper'

const sessionOf = (res: Response) =>
  res.headers.getSetCookie().find((c) => c.startsWith('lb_session=') && !/Max-Age=0/.test(c)) ?? null

/** Follows a 303 to a page of the app with the jar; returns its text. */
async function pageAfter(jar: Jar, appUrl: string, res: Response): Promise<string> {
  expect(res.status).toBe(303)
  const location = res.headers.get('location')!
  return (await visit(jar, new URL(location, appUrl).href)).text()
}

describe('sign-in with the provider', () => {
  let provider: TestProvider
  let app: RunningApp
  let appUrl: string
  const logged = capturedLines()

  beforeAll(async () => {
    ;({ provider, app, appUrl } = await startWithProvider({}, { logger: logged.logger }))
  })
  afterAll(async () => {
    await app.stop()
    await provider.stop()
  })

  const accountRow = (name: string) =>
    app.db.query('SELECT id, name, admin, password_hash, disabled FROM accounts WHERE name = ?').get(name) as any
  const identityOf = (sub: string) =>
    app.db.query('SELECT issuer, sub, account_id FROM oidc_identities WHERE sub = ?').get(sub) as any

  test('the first sign-in makes the account, named from preferred_username and linked by issuer + sub; admin from the groups claim; the session is the password sign-in’s', async () => {
    const login = await (await fetch(`${appUrl}/login`)).text()
    expect(login).toContain('href="/login/oidc?next=%2Fdashboard">Sign in with Test IdP</a>')
    expect(login).toContain('name="password"') // passwords still work

    const { callback, app: jar } = await throughProvider(appUrl, provider, 'alice')
    expect(callback.startsWith(`${appUrl}/login/oidc/callback?code=`)).toBe(true)
    const binding = jar.get('lb_oidc')!
    expect(binding.length).toBeGreaterThanOrEqual(32)
    const res = await visit(jar, callback)
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard')
    const cookie = sessionOf(res)!
    // Same cookie, same flags as the password sign-in (shell.sessionCookie).
    expect(cookie).toMatch(/^lb_session=[A-Za-z0-9_-]{40,}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=604800$/)
    const alice = accountRow('alice')
    expect(alice).toMatchObject({ name: 'alice', admin: 1, password_hash: null, disabled: null })
    expect(identityOf('sub-alice-7f3a')).toEqual({
      issuer: provider.issuer,
      sub: 'sub-alice-7f3a',
      account_id: alice.id,
    })
    const dash = await (await visit(jar, `${appUrl}/dashboard`)).text()
    expect(dash).toContain('Signed in as </span><strong>alice</strong><span class="who-label"> (admin)</span>')
    expect(dash).toContain('Welcome, alice.')
    expect(dash).toContain('href="/dashboard/admin"')
    const adminPage = await (await visit(jar, `${appUrl}/dashboard/admin`)).text()
    expect(adminPage).toContain(
      '<span class="acc-name">alice</span> <span class="tag">you</span><span class="sub">single sign-on</span>',
    )
    // The audit log (issue 25): the account made by its first sign-in, then the sign-in, each one row.
    const rows = app.db
      .query(
        "SELECT actor_kind, actor_name, action, target, detail FROM audit_log WHERE target LIKE 'account alice %' ORDER BY id",
      )
      .all()
    expect(rows).toEqual([
      {
        actor_kind: 'account',
        actor_name: 'alice',
        action: 'account.create',
        target: `account alice (#${alice.id})`,
        detail: `first sign-in with the provider ${provider.issuer}, admin by its groups`,
      },
      {
        actor_kind: 'account',
        actor_name: 'alice',
        action: 'signin.ok',
        target: `account alice (#${alice.id})`,
        detail: 'oidc',
      },
    ])

    const bob = await throughProvider(appUrl, provider, 'bob')
    const bobRes = await visit(bob.app, bob.callback)
    expect(sessionOf(bobRes)).not.toBeNull()
    expect(accountRow('bob')).toMatchObject({ admin: 0, password_hash: null })
    const bobDash = await (await visit(bob.app, `${appUrl}/dashboard`)).text()
    expect(bobDash).toContain('Signed in as </span><strong>bob</strong></span>')
    expect(bobDash).not.toContain('href="/dashboard/admin"')
    expect((await visit(bob.app, `${appUrl}/dashboard/admin`)).status).toBe(403)
  })

  test('a later sign-in finds the account by sub (no alice-2); a password account with the same name is never taken over', async () => {
    const before = (app.db.query('SELECT count(*) AS n FROM accounts').get() as any).n
    const id = accountRow('alice').id
    // A fresh browser, and one the provider remembers (no sign-in or consent pages then).
    const first = await throughProvider(appUrl, provider, 'alice')
    expect(sessionOf(await visit(first.app, first.callback))).not.toBeNull()
    const again = await throughProvider(appUrl, provider, 'alice', { idp: first.idp })
    expect(sessionOf(await visit(again.app, again.callback))).not.toBeNull()
    expect((app.db.query('SELECT count(*) AS n FROM accounts').get() as any).n).toBe(before)
    expect(accountRow('alice-2')).toBeNull()
    expect(identityOf('sub-alice-7f3a').account_id).toBe(id)

    // carol has a password account here; the provider's carol is another person: she gets carol-2.
    await app.accounts.createAccount({ name: 'carol', password: 'carol-password-1' })
    provider.users.set('sub-carol-55', { sub: 'sub-carol-55', preferred_username: 'carol', groups: [] })
    const c = await throughProvider(appUrl, provider, 'carol')
    await visit(c.app, c.callback)
    expect(await (await visit(c.app, `${appUrl}/dashboard`)).text()).toContain(
      'Signed in as </span><strong>carol-2</strong>',
    )
    expect(identityOf('sub-carol-55').account_id).toBe(accountRow('carol-2').id)
    expect(accountRow('carol').password_hash).not.toBeNull()
    // Renamed at the provider: still the same account (linked by sub, not by name).
    provider.users.set('sub-carol-55', { sub: 'sub-carol-55', preferred_username: 'Caroline Ünal', groups: [] })
    const c2 = await throughProvider(appUrl, provider, 'Caroline Ünal')
    await visit(c2.app, c2.callback)
    expect(await (await visit(c2.app, `${appUrl}/dashboard`)).text()).toContain(
      'Signed in as </span><strong>carol-2</strong>',
    )
  })

  test('admin follows admin_groups at each sign-in: taken away out of the group (also from sessions open), given back in it', async () => {
    const open = await throughProvider(appUrl, provider, 'alice')
    await visit(open.app, open.callback)
    expect((await visit(open.app, `${appUrl}/dashboard/admin`)).status).toBe(200)
    provider.users.get('sub-alice-7f3a')!.groups = ['staff']
    const out = await throughProvider(appUrl, provider, 'alice')
    await visit(out.app, out.callback)
    expect(accountRow('alice').admin).toBe(0)
    expect((await visit(out.app, `${appUrl}/dashboard/admin`)).status).toBe(403)
    expect((await visit(open.app, `${appUrl}/dashboard/admin`)).status).toBe(403)
    provider.users.get('sub-alice-7f3a')!.groups = ['linkbox-admins']
    const back = await throughProvider(appUrl, provider, 'alice')
    await visit(back.app, back.callback)
    expect(accountRow('alice').admin).toBe(1)
  })

  test('a tampered state and a replayed callback are refused with a sentence on the sign-in page, no session; the real callback still works once', async () => {
    const { callback, app: jar } = await throughProvider(appUrl, provider, 'bob')
    const tampered = new URL(callback)
    tampered.searchParams.set('state', changed(tampered.searchParams.get('state')!))
    const tokenCalls = provider.hits.get('/token') ?? 0
    const refused = await visit(jar, tampered.href)
    expect(refused.status).toBe(303)
    expect(refused.headers.get('location')).toBe('/login')
    expect(sessionOf(refused)).toBeNull()
    const page = await pageAfter(jar, appUrl, refused)
    expect(page).toContain('That sign-in was used already or has expired. Start again with “Sign in with Test IdP”.')
    expect(page).toContain('role="alert"')
    expect(page).not.toMatch(/at .*\.ts:\d+|Error:/)
    const missing = new URL(callback)
    missing.searchParams.delete('state')
    const noState = await visit(jar, missing.href)
    expect(sessionOf(noState)).toBeNull()
    expect(await pageAfter(jar, appUrl, noState)).toContain('That sign-in answer is incomplete.')
    expect(provider.hits.get('/token') ?? 0).toBe(tokenCalls) // the code never reached the provider
    // Each refusal is a signin.failed row with its reason (bounded per address: see 'refused callbacks in the audit log').
    const failed = app.db
      .query(
        "SELECT actor_kind, action, detail FROM audit_log WHERE action = 'signin.failed' AND actor_name LIKE '(single sign-on%' ORDER BY id DESC LIMIT 2",
      )
      .all() as any[]
    expect(failed.map((r) => [r.actor_kind, r.action])).toEqual([
      ['anonymous', 'signin.failed'],
      ['anonymous', 'signin.failed'],
    ])

    const real = await visit(jar, callback)
    expect(sessionOf(real)).not.toBeNull()
    // Again from the same browser (signed in now: no second session), and from another one.
    const replayed = await visit(jar, callback)
    expect(replayed.headers.get('location')).toBe('/login')
    expect(sessionOf(replayed)).toBeNull()
    const elsewhere = new Jar()
    const replay = await visit(elsewhere, callback)
    expect(sessionOf(replay)).toBeNull()
    expect(await pageAfter(elsewhere, appUrl, replay)).toContain('That sign-in was used already or has expired.')
    expect(provider.hits.get('/token')).toBe(tokenCalls + 1) // the real one only
    expect(logged.errors).toContain('sign-in with the provider refused')
  })

  test('a code the provider already redeemed (under a state still open) is refused by the provider: a sentence, the reason in the log', async () => {
    const jar = new Jar()
    const idp = new Jar()
    const a = await throughProvider(appUrl, provider, 'bob', { app: jar, idp })
    expect(sessionOf(await visit(jar, a.callback))).not.toBeNull()
    jar.delete('lb_session') // the same browser, signed out: its binding cookie stays
    const b = await throughProvider(appUrl, provider, 'bob', { app: jar, idp })
    const forged = new URL(b.callback)
    forged.searchParams.set('code', new URL(a.callback).searchParams.get('code')!)
    const res = await visit(jar, forged.href)
    expect(sessionOf(res)).toBeNull()
    expect(await pageAfter(jar, appUrl, res)).toContain(
      'The answer from Test IdP could not be checked, so you are not signed in.',
    )
    expect(
      logged.lines.some((l) => l.msg === 'sign-in with the provider refused' && /invalid_grant/.test(String(l.reason))),
    ).toBe(true)
  })

  test('a callback opened in another browser (without the cookie that started it) is refused', async () => {
    const { callback } = await throughProvider(appUrl, provider, 'bob')
    const other = new Jar()
    const res = await visit(other, callback)
    expect(sessionOf(res)).toBeNull()
    expect(await pageAfter(other, appUrl, res)).toContain('That sign-in was started in another browser.')
  })

  test('error=access_denied from the provider (the person cancelled) lands on the sign-in page with a sentence', async () => {
    const { callback, app: jar } = await throughProvider(appUrl, provider, 'bob', { cancel: true })
    expect(new URL(callback).searchParams.get('error')).toBe('access_denied')
    const res = await visit(jar, callback)
    expect(sessionOf(res)).toBeNull()
    const page = await pageAfter(jar, appUrl, res)
    expect(page).toContain('Signing in with Test IdP was cancelled or not allowed.')
    // A reload of the sign-in page does not say it again (the sentence was carried once).
    expect(await (await visit(jar, `${appUrl}/login`)).text()).not.toContain('was cancelled')
  })

  test('a disabled account cannot sign in with the provider', async () => {
    await app.accounts.setDisabled('bob', true)
    const { callback, app: jar } = await throughProvider(appUrl, provider, 'bob')
    const res = await visit(jar, callback)
    expect(sessionOf(res)).toBeNull()
    expect(await pageAfter(jar, appUrl, res)).toContain('This account has been disabled by an administrator.')
    await app.accounts.setDisabled('bob', false)
  })

  test('sign-out ends the session (the old cookie opens nothing) and offers the provider’s sign-out, which knows where to come back to', async () => {
    const { callback, app: jar } = await throughProvider(appUrl, provider, 'bob')
    await visit(jar, callback)
    const cookie = jar.get('lb_session')!
    const dash = await (await visit(jar, `${appUrl}/dashboard`)).text()
    const csrf = dash.match(/action="\/logout"><input type="hidden" name="_csrf" value="([^"]+)"/)![1]!
    const out = await visit(jar, `${appUrl}/logout`, {
      method: 'POST',
      body: `_csrf=${encodeURIComponent(csrf)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: appUrl, 'sec-fetch-site': 'same-origin' },
    })
    expect(out.status).toBe(303)
    expect(out.headers.get('location')).toBe('/login?signed_out=provider')
    const old = await fetch(`${appUrl}/dashboard`, { headers: { cookie: `lb_session=${cookie}` }, redirect: 'manual' })
    expect(old.status).toBe(303)
    expect(old.headers.get('location')).toStartWith('/login?next=%2Fdashboard')
    const page = await pageAfter(jar, appUrl, out)
    expect(page).toContain('You are signed out.')
    expect(page).toContain('<a href="/login/oidc/logout">Also sign out of Test IdP</a>')
    const toProvider = await visit(jar, `${appUrl}/login/oidc/logout`)
    expect(toProvider.status).toBe(303)
    const end = new URL(toProvider.headers.get('location')!)
    expect(`${end.origin}${end.pathname}`).toBe(`${provider.issuer}/session/end`)
    expect(end.searchParams.get('client_id')).toBe(provider.clientId)
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${appUrl}/`)
    // The provider takes it (an unregistered post_logout_redirect_uri would be a 400 there).
    expect((await fetch(end.href)).status).toBe(200)
  })
})

describe('a provider that is down', () => {
  test('serve starts all the same; the button answers a readable page; discovery is asked again later, not on every click', async () => {
    let offset = 0
    const { provider, app, appUrl } = await startWithProvider({}, { clock: () => Date.now() + offset })
    try {
      provider.down = true
      const jar = new Jar()
      expect(await (await visit(jar, `${appUrl}/login`)).text()).toContain('Sign in with Test IdP')
      const res = await visit(jar, `${appUrl}/login/oidc`)
      expect(res.status).toBe(303)
      expect(res.headers.get('location')).toBe('/login')
      expect(await pageAfter(jar, appUrl, res)).toContain(
        'Test IdP cannot be reached right now, so signing in with it does not work: try again in a minute, or ask the administrator.',
      )
      const asked = provider.hits.get('/.well-known/openid-configuration')
      expect(asked).toBe(1)
      provider.down = false
      await visit(jar, `${appUrl}/login/oidc`) // within the pause: the same answer, without asking
      expect(provider.hits.get('/.well-known/openid-configuration')).toBe(1)
      offset = 11_000
      const later = await visit(jar, `${appUrl}/login/oidc`)
      expect(later.headers.get('location')).toStartWith(`${provider.issuer}/auth?`)
      const auth = new URL(later.headers.get('location')!)
      expect(auth.searchParams.get('code_challenge_method')).toBe('S256')
      expect(auth.searchParams.get('scope')).toBe('openid profile email groups')
      expect(auth.searchParams.get('redirect_uri')).toBe(`${appUrl}/login/oidc/callback`)
      expect(auth.searchParams.get('state')!.length).toBeGreaterThanOrEqual(32)
      expect(auth.searchParams.get('nonce')!.length).toBeGreaterThanOrEqual(32)
      expect(later.headers.getSetCookie().join()).toMatch(
        /lb_oidc=[A-Za-z0-9_-]+; Path=\/login\/oidc; HttpOnly; SameSite=Lax; Max-Age=600/,
      )
    } finally {
      await app.stop()
      await provider.stop()
    }
  })
})

describe('the ID token and the started sign-ins', () => {
  test('an ID token whose signature does not verify against the provider’s published keys is refused: no account, no session, the reason in the log', async () => {
    const log = capturedLines()
    const { provider, app, appUrl } = await startWithProvider({}, { logger: log.logger })
    try {
      provider.wrongKeys = true
      const { callback, app: jar } = await throughProvider(appUrl, provider, 'alice')
      const res = await visit(jar, callback)
      expect(sessionOf(res)).toBeNull()
      expect(await pageAfter(jar, appUrl, res)).toContain(
        'The answer from Test IdP could not be checked, so you are not signed in.',
      )
      expect(provider.hits.get('/jwks')).toBeGreaterThanOrEqual(1)
      expect(app.db.query('SELECT count(*) AS n FROM accounts').get()).toEqual({ n: 0 })
      const line = log.lines.find((l) => l.msg === 'sign-in with the provider refused')!
      expect(String(line.reason)).toContain('code exchange or ID token check failed')
      expect(String(line.reason)).toMatch(/signature/i)
      // (With its real keys the same provider signs alice in: the first test of this file.)
    } finally {
      await app.stop()
      await provider.stop()
    }
  })

  test('started sign-ins are bounded (the oldest go first) and expire after PENDING_TTL_MS', async () => {
    const provider = await startProvider({
      redirectUri: 'http://127.0.0.1:1/login/oidc/callback',
      postLogoutUri: 'http://127.0.0.1:1/',
    })
    try {
      let now = Date.now()
      const settings = testConfig(tempDir(), {
        oidc: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret },
      }).oidc
      const client = createOidcClient({ oidc: settings, baseUrl: 'http://127.0.0.1:1', clock: () => now })
      const first = await client.start({ next: '/dashboard' })
      const firstState = new URL(first.url).searchParams.get('state')!
      for (let i = 0; i < PENDING_MAX; i++) await client.start({ next: '/dashboard', binding: first.binding })
      expect(client.pending).toBe(PENDING_MAX)
      const refused = await client
        .finish({ query: new URLSearchParams({ code: 'x', state: firstState }), binding: first.binding })
        .catch((e) => e)
      expect(refused).toBeInstanceOf(SignInRefused)
      expect(refused.reason).toStartWith('state unknown')
      const late = await client.start({ next: '/dashboard' })
      now += PENDING_TTL_MS
      const expired = await client
        .finish({
          query: new URLSearchParams({ code: 'x', state: new URL(late.url).searchParams.get('state')! }),
          binding: late.binding,
        })
        .catch((e) => e)
      expect(expired.reason).toBe('state expired')
      await client.start({ next: '/dashboard' }) // sweeps what expired
      expect(client.pending).toBe(1)
    } finally {
      await provider.stop()
    }
  })
})

describe('starting sign-ins', () => {
  test(`one address may start ${OIDC_STARTS_PER_CLIENT_PER_MINUTE} a minute (each holds an entry until its callback); then a sentence, and a minute later again`, async () => {
    let offset = 0
    const { provider, app, appUrl } = await startWithProvider({}, { clock: () => Date.now() + offset })
    try {
      const jar = new Jar()
      for (let i = 0; i < OIDC_STARTS_PER_CLIENT_PER_MINUTE; i++)
        expect((await visit(jar, `${appUrl}/login/oidc`)).headers.get('location')).toStartWith(
          `${provider.issuer}/auth?`,
        )
      const refused = await visit(jar, `${appUrl}/login/oidc`)
      expect(refused.headers.get('location')).toBe('/login')
      expect(await pageAfter(jar, appUrl, refused)).toMatch(/Too many sign-ins started: wait \d+ s and try again\./)
      offset = 61_000
      expect((await visit(jar, `${appUrl}/login/oidc`)).headers.get('location')).toStartWith(`${provider.issuer}/auth?`)
    } finally {
      await app.stop()
      await provider.stop()
    }
  })
})

describe('refused callbacks in the audit log', () => {
  test(`anyone may call the callback with made-up values: one address adds at most ${OIDC_STARTS_PER_CLIENT_PER_MINUTE} signin.failed rows a minute; each is still refused`, async () => {
    const { provider, app, appUrl } = await startWithProvider()
    try {
      const jar = new Jar()
      const rows = () =>
        (app.db.query("SELECT count(*) AS n FROM audit_log WHERE action = 'signin.failed'").get() as { n: number }).n
      for (let i = 0; i < OIDC_STARTS_PER_CLIENT_PER_MINUTE + 20; i++) {
        const res = await visit(jar, `${appUrl}/login/oidc/callback?code=made-up&state=made-up-${i}`)
        expect(res.headers.get('location')).toBe('/login')
        expect(sessionOf(res)).toBeNull()
      }
      expect(rows()).toBe(OIDC_STARTS_PER_CLIENT_PER_MINUTE)
    } finally {
      await app.stop()
      await provider.stop()
    }
  })
})

describe('oidc.only = true', () => {
  test('no password form, a password POST is refused (no session) and there is no sign-up', async () => {
    const { provider, app, appUrl } = await startWithProvider({ only: true }, {}, { web: { signup: true } })
    try {
      await app.accounts.createAccount({ name: 'dora', password: 'dora-password-1' })
      const jar = new Jar()
      const page = await (await visit(jar, `${appUrl}/login`)).text()
      expect(page).toContain('Sign in with Test IdP')
      expect(page).not.toContain('name="password"')
      expect(page).not.toContain('<form method="post" action="/login"')
      expect(page).not.toContain('/signup')
      const res = await visit(jar, `${appUrl}/login`, {
        method: 'POST',
        body: new URLSearchParams({
          _csrf: jar.get('lb_login')!,
          name: 'dora',
          password: 'dora-password-1',
          next: '/dashboard',
        }).toString(),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          origin: appUrl,
          'sec-fetch-site': 'same-origin',
        },
      })
      expect(res.status).toBe(303)
      expect(sessionOf(res)).toBeNull()
      expect(await pageAfter(jar, appUrl, res)).toContain(
        'Password sign-in is off on this server: use “Sign in with Test IdP”.',
      )
      expect((await fetch(`${appUrl}/signup`, { redirect: 'manual' })).status).toBe(404)
      // The way in still works.
      const { callback, app: j } = await throughProvider(appUrl, provider, 'bob')
      expect(sessionOf(await visit(j, callback))).not.toBeNull()
    } finally {
      await app.stop()
      await provider.stop()
    }
  })
})

describe('[oidc] config', () => {
  const base = { issuer: 'https://id.example.com', client_id: 'linkbox', client_secret: 's3cret-value' }
  const message = (doc: Record<string, unknown>) => {
    try {
      buildConfig(doc)
      return ''
    } catch (err) {
      return (err as Error).message
    }
  }

  test('the issuer is https; http only on a loopback address; the message names oidc.issuer', () => {
    expect(message({ oidc: { ...base, issuer: 'http://id.example.com' } })).toContain(
      '"oidc.issuer" must be an https URL (http is accepted only on a loopback address',
    )
    expect(message({ oidc: { ...base, issuer: 'http://192.168.1.5:9091' } })).toContain('"oidc.issuer"')
    expect(message({ oidc: { ...base, issuer: 'ftp://id.example.com' } })).toContain('"oidc.issuer"')
    expect(message({ oidc: { ...base, issuer: 'https://id.example.com/?x=1' } })).toContain(
      '"oidc.issuer" must not have a query',
    )
    for (const ok of [
      'http://127.0.0.1:5556',
      'http://localhost:9000',
      'http://[::1]:8080',
      'https://auth.example.com/application/o/linkbox/',
    ])
      expect(buildConfig({ oidc: { ...base, issuer: ok } }).oidc.issuer).toBe(ok) // kept as written (trailing slash too)
  })

  test('what an issuer needs; secrets from a file; defaults', () => {
    expect(message({ oidc: { issuer: base.issuer, client_secret: 'x' } })).toBe(
      'config: "oidc.client_id" must be set when "oidc.issuer" is set',
    )
    expect(message({ oidc: { issuer: base.issuer, client_id: 'linkbox' } })).toContain(
      '"oidc.client_secret" (or "oidc.client_secret_file") must be set',
    )
    expect(message({ oidc: { only: true } })).toContain('"oidc.only" needs "oidc.issuer"')
    expect(message({ oidc: { ...base, scopes: 'profile email' } })).toContain('"oidc.scopes" must include "openid"')
    expect(message({ oidc: { ...base, admin_groups: 'admins' } })).toContain('"oidc.admin_groups" must be a list')
    expect(message({ oidc: { ...base, nme: 'x' } })).toBe('config: unknown key "oidc.nme"')
    const secret = message({ oidc: { ...base, client_secret: 'bad\nsecret' } })
    expect(secret).toContain('"oidc.client_secret"')
    expect(secret).not.toContain('bad')
    const dir = tempDir()
    writeFileSync(join(dir, 'secret'), 'from-a-file-0123\n')
    const c = buildConfig({ oidc: { issuer: base.issuer, client_id: 'linkbox', client_secret_file: 'secret' } }, dir)
    expect(c.oidc.client_secret).toBe('from-a-file-0123')
    expect(c.oidc.name).toBe('id.example.com')
    expect(c.oidc.scopes).toBe('openid profile email groups')
    expect(message({ oidc: { ...base, client_secret_file: 'secret' } })).toContain(
      '"oidc.client_secret_file" and "oidc.client_secret" are both set',
    )
    expect(
      message({ oidc: { issuer: base.issuer, client_id: 'x', client_secret_file: join(dir, 'missing') } }),
    ).toContain('"oidc.client_secret_file" cannot be read')
  })

  test('oidc keys need a restart on SIGHUP (they are not applied while running)', async () => {
    const { reloadConfig } = await import('../../src/kernel/reload')
    const dir = tempDir()
    const running = testConfig(dir)
    const next = testConfig(dir, { oidc: base })
    const outcome = reloadConfig(running, next, capturedLog().logger)
    expect(outcome.restart).toEqual(
      expect.arrayContaining(['oidc.issuer', 'oidc.client_id', 'oidc.client_secret', 'oidc.name']),
    )
    expect(outcome.applied).toEqual([])
    expect(running.oidc.issuer).toBe('')
  })
})

describe('names and groups', () => {
  test('account names from preferred_username: the account rules, room for a suffix, fallbacks', () => {
    expect(accountNameFrom('alice', undefined)).toBe('alice')
    expect(accountNameFrom('Élodie Dupont', undefined)).toBe('Elodie-Dupont')
    expect(accountNameFrom('  ../weird//name!! ', undefined)).toBe('weird-name')
    expect(accountNameFrom('marketplace:bob', undefined)).toBe('marketplace-bob') // never the marketplace's namespace
    expect(accountNameFrom('x'.repeat(100), undefined)).toBe('x'.repeat(58))
    expect(accountNameFrom('日本', 'taro@example.jp')).toBe('taro')
    expect(accountNameFrom(undefined, undefined)).toBe('user')
    expect(accountNameFrom(42, 'not-an-email')).toBe('not-an-email')
    for (const n of ['alice', 'Elodie-Dupont', 'weird-name', 'x'.repeat(58) + '-99999'])
      expect(n).toMatch(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/)
  })

  test('groups: a list or a single string', () => {
    expect(groupsOf(['a', 1, 'b'])).toEqual(['a', 'b'])
    expect(groupsOf('admins')).toEqual(['admins'])
    expect(groupsOf(undefined)).toEqual([])
  })

  test('the sign-in paths are under /login, which no short link can take', () => {
    expect(isReserved('login')).toBe(true)
    expect(isReserved('LOGIN')).toBe(true)
  })
})

describe('doctor', () => {
  test('OK against a working provider (with the redirect URI to register), FAIL against a dead port or a wrong issuer', async () => {
    const provider = await startProvider({
      redirectUri: 'http://127.0.0.1:1/login/oidc/callback',
      postLogoutUri: 'http://127.0.0.1:1/',
    })
    try {
      const dir = tempDir()
      const config = testConfig(dir, {
        server: { base_url: 'http://127.0.0.1:8080' },
        oidc: { issuer: provider.issuer, client_id: 'c', client_secret: 's' },
      })
      const ok = await checkOidc(config)
      expect(ok).toEqual({
        verdict: 'ok',
        what: 'oidc',
        detail: `${provider.issuer}: discovery ok; register the redirect URI http://127.0.0.1:8080/login/oidc/callback and the post-logout redirect URI http://127.0.0.1:8080/`,
      })
      const wrong = await checkOidc({
        ...config,
        oidc: { ...config.oidc, issuer: provider.issuer.replace('127.0.0.1', 'localhost') },
      })
      expect(wrong.verdict).toBe('FAIL')
      expect(wrong.detail).toContain(`the provider's issuer is "${provider.issuer}"`)
      const port = await freePort()
      const dead = await checkOidc({
        ...config,
        oidc: { ...config.oidc, issuer: `http://127.0.0.1:${port}`, name: 'Dead' },
      })
      expect(dead.verdict).toBe('FAIL')
      expect(dead.detail).toStartWith(`http://127.0.0.1:${port}/.well-known/openid-configuration: `)
      provider.down = true
      const down = await checkOidc(config)
      expect(down).toMatchObject({ verdict: 'FAIL', detail: expect.stringContaining('answered HTTP 503') })
      expect(await checkOidc(testConfig(dir))).toEqual({
        verdict: 'ok',
        what: 'oidc',
        detail: 'no oidc.issuer: single sign-on is off',
      })
    } finally {
      await provider.stop()
    }
  })
})
