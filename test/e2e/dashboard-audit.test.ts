// Issue 25 in the dashboard, through the real app and its SQLite file: the audit page (rows, filters by
// actor, action and dates, pages newest first; only for admins), and the accounts an admin manages — the
// last sign-in, deleting with or without the links (after a confirmation page that needs no script), a new
// password that ends the sessions, disabling that stops the key and the session at once (also from the CLI
// while the service runs), and the refusals (oneself, the last admin).
import { afterEach, describe, expect, test } from 'bun:test'
import { createLinkbox, type Linkbox } from '../../src/app/app'
import { CLI } from '../../src/audit'
import { loadConfig } from '../../src/kernel/config'
import { makeBox, type TestBox } from '../support/app'
import { follow, postForm, signIn, type SignedIn } from '../support/dashboard'
import { removeDir, runCli, startServer, writeConfig } from '../support/server'

let box: TestBox
afterEach(async () => box?.cleanup())

const PW = 'correct horse battery'

async function setup(): Promise<{ root: SignedIn; aliceKey: string }> {
  box = await makeBox({ media: { allow_private_networks: true } })
  await box.accounts.createAccount({ name: 'root', password: PW, admin: true })
  const { key } = await box.accounts.createAccount({ name: 'alice', password: PW })
  const root = await signIn(box, 'root', PW)
  return { root, aliceKey: key.key }
}
const page = async (who: SignedIn, path: string) => {
  const res = await box.request(path, { headers: { cookie: who.cookie } })
  return { status: res.status, html: await res.text() }
}
const auditRows = (html: string) =>
  [
    ...html.matchAll(
      /<tr><td class="nowrap" data-label="Time"><time[^>]*>[^<]*<\/time><\/td><td data-label="Actor">(.*?)<\/td><td data-label="Action"><code>([^<]*)<\/code><\/td>/g,
    ),
  ].map(
    (m) =>
      `${m[2]} by ${m[1]!
        .replace(/<[^>]+>/g, '')
        .replace(/&quot;/g, '"')
        .trim()}`,
  )
const idOf = (name: string) =>
  (box.db.query('SELECT id FROM accounts WHERE name = ?').get(name) as { id: number } | null)?.id ?? null
const noticeOf = (res: Response) => res.headers.get('set-cookie')!.match(/lb_notice=[^;]+/)![0]
const qrWith = (key: string) => box.get('/api/qr.json', { data: 'x' }, { 'x-api-key': key })

describe('the audit page', () => {
  test('admins see the rows newest first and filter them by actor, action and dates; the filters are a GET form', async () => {
    const { root } = await setup()
    await signIn(box, 'alice', PW)
    await expect(signIn(box, 'alice', 'wrong password!')).rejects.toThrow('sign-in refused')
    await box.accounts.createKey({ account: 'alice', scopes: ['qr'] }, CLI)
    const { status, html } = await page(root, '/dashboard/admin/audit')
    expect(status).toBe(200)
    expect(html).toContain('<a href="/dashboard/admin/audit" aria-current="page">Audit log</a>')
    expect(html).toContain('<form method="get" action="/dashboard/admin/audit"')
    // Newest first: the CLI's key, alice's failed and good sign-ins, root's sign-in, the two accounts made by the service.
    expect(auditRows(html)).toEqual([
      'key.create by cli',
      'signin.failed by nobody (tried "alice")',
      'signin.ok by alice #2',
      'signin.ok by root #1',
      'account.create by linkbox (system)',
      'account.create by linkbox (system)',
    ])

    expect(auditRows((await page(root, '/dashboard/admin/audit?actor=alice')).html)).toEqual([
      'signin.failed by nobody (tried "alice")',
      'signin.ok by alice #2',
    ])
    expect(auditRows((await page(root, '/dashboard/admin/audit?action=signin')).html)).toEqual([
      'signin.failed by nobody (tried "alice")',
      'signin.ok by alice #2',
      'signin.ok by root #1',
    ])
    const exact = await page(root, '/dashboard/admin/audit?action=signin.ok&actor=root')
    expect(auditRows(exact.html)).toEqual(['signin.ok by root #1'])
    expect(exact.html).toContain('<option value="signin.ok" selected>')
    expect(exact.html).toContain('value="root"')
    const today = new Date().toISOString().slice(0, 10)
    expect(auditRows((await page(root, `/dashboard/admin/audit?from=${today}&to=${today}`)).html)).toHaveLength(6)
    expect((await page(root, '/dashboard/admin/audit?to=2000-01-01')).html).toContain('No rows match these filters.')
    // A filter that cannot be read: said at its field, nothing shown, no 500.
    const bad = await page(root, '/dashboard/admin/audit?from=2026-02-30')
    expect(bad.status).toBe(200)
    expect(bad.html).toContain(
      'id="audit-error" role="alert">The parameter &quot;from&quot; is invalid: a date as YYYY-MM-DD (UTC).',
    )
    expect(bad.html).toMatch(/id="audit-from" name="from" type="date" value="2026-02-30" aria-invalid="true"/)
    const odd = await page(root, '/dashboard/admin/audit?action=%3Cscript%3E&actor=%22%3E%3Cb%3E')
    expect(odd.html).not.toContain('<script>')
    expect(odd.html).not.toContain('"><b>')
  })

  test('pages of 50, newest first, with an "Older" link that keeps the filters', async () => {
    const { root } = await setup()
    for (let i = 0; i < 120; i++) await box.accounts.createKey({ account: 'alice' }, CLI)
    const first = await page(root, '/dashboard/admin/audit?action=key')
    expect(auditRows(first.html)).toHaveLength(50)
    const older = first.html.match(/<a href="([^"]+)" rel="next">Older →<\/a>/)![1]!.replace(/&amp;/g, '&')
    expect(older).toMatch(/^\/dashboard\/admin\/audit\?action=key&before=\d+$/)
    const second = await page(root, older)
    expect(auditRows(second.html)).toHaveLength(50)
    expect(second.html).toContain('<a href="/dashboard/admin/audit?action=key">← Newest</a>')
    const third = await page(root, second.html.match(/<a href="([^"]+)" rel="next">/)![1]!.replace(/&amp;/g, '&'))
    expect(auditRows(third.html)).toHaveLength(20)
    expect(third.html).not.toContain('rel="next"')
    // Every row once, newest first, across the pages.
    const ids = [first, second, third].flatMap((p) =>
      [...p.html.matchAll(/key lbk_\w{7}… \(#(\d+)\)/g)].map((m) => Number(m[1])),
    )
    expect(ids).toHaveLength(120)
    expect(ids).toEqual([...ids].sort((a, b) => b - a))
  })

  test('a signed-in non-admin gets the 403 of every admin page; signed out, the way to sign in', async () => {
    await setup()
    const alice = await signIn(box, 'alice', PW)
    for (const path of [
      '/dashboard/admin/audit',
      '/dashboard/admin/audit?actor=root',
      `/dashboard/admin/account/1/delete`,
      '/dashboard/admin/account/1/password',
    ]) {
      const res = await page(alice, path)
      expect({ path, status: res.status }).toEqual({ path, status: 403 })
      expect(res.html).toContain('This page is for administrator accounts.')
      expect(res.html).not.toContain('signin.ok')
    }
    for (const path of ['/dashboard/admin/account/1/delete', '/dashboard/admin/account/1/password'])
      expect((await postForm(box, alice, path, { links: 'delete', password: 'a new password!' })).status).toBe(403)
    expect(idOf('root')).toBe(1)
    const out = await box.request('/dashboard/admin/audit')
    expect(out.status).toBe(303)
    expect(out.headers.get('location')).toBe('/login?next=%2Fdashboard%2Fadmin%2Faudit')
  })
})

describe('accounts an admin manages', () => {
  test("the list shows each account's last sign-in", async () => {
    const { root } = await setup()
    const { html } = await page(root, '/dashboard/admin')
    expect(html).toContain('<th scope="col">Last sign-in</th>')
    const alice = html.match(/<tr><th scope="row"><span class="acc-name">alice<\/span>.*?<\/tr>/)![0]
    expect(alice).toContain('<td class="date" data-label="Last sign-in">never</td>')
    const rootRow = html.match(/<tr><th scope="row"><span class="acc-name">root<\/span>.*?<\/tr>/)![0]
    const signedIn = (
      box.db.query("SELECT last_signin FROM accounts WHERE name = 'root'").get() as { last_signin: number }
    ).last_signin
    expect(signedIn).toBeNumber()
    const [day, time] = new Date(signedIn).toISOString().slice(0, 16).split('T')
    expect(rootRow).toContain(
      `<td class="date" data-label="Last sign-in"><time datetime="${new Date(signedIn).toISOString()}"><span class="nowrap">${day}</span> <span class="nowrap">${time} UTC</span></time></td>`,
    )
    expect(alice).toContain('href="/dashboard/admin/account/2/delete"')
    expect(alice).toContain('href="/dashboard/admin/account/2/password"')
    expect(rootRow).not.toContain('/delete"') // not oneself
  })

  test('delete, its links kept: asked first on a page without script; keys, sessions, mailboxes, webhooks go; the links stay, owned by nobody', async () => {
    const { root, aliceKey } = await setup()
    const alice = await signIn(box, 'alice', PW)
    const made = await box.post('/api/getLink.json', { url: 'https://example.com/kept' }, { 'x-api-key': aliceKey })
    const code = made.body.return.hex
    expect((await box.get('/api/mailbox.json', {}, { 'x-api-key': aliceKey })).status).toBe(200)
    await box.webhooks.createFor(idOf('alice')!, { url: 'http://127.0.0.1:9/hook' })

    const confirm = await page(root, '/dashboard/admin/account/2/delete')
    expect(confirm.status).toBe(200)
    expect(confirm.html).toContain('Delete the account alice?')
    expect(confirm.html).toContain('<form method="post" action="/dashboard/admin/account/2/delete">')
    expect(confirm.html).toMatch(/<input type="radio" id="links-keep" name="links" value="keep" checked>/)
    expect(confirm.html).toContain('1 link, 1 active key, 1 mailbox')
    expect(confirm.html).toContain('<button type="submit" class="danger">Delete alice</button>') // a plain form: no script needed

    const res = await postForm(box, root, '/dashboard/admin/account/2/delete', { links: 'keep' })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard/admin')
    const list = await (
      await box.request('/dashboard/admin', { headers: { cookie: `${root.cookie}; ${noticeOf(res)}` } })
    ).text()
    expect(list).toContain('alice is deleted, with its keys, mailboxes and webhooks; its 1 link stay, owned by nobody.')
    expect(list).not.toContain('<span class="acc-name">alice</span>')
    expect(idOf('alice')).toBeNull()
    for (const table of ['api_keys', 'web_sessions', 'mailboxes', 'webhook_endpoints'])
      expect({
        table,
        n: (box.db.query(`SELECT count(*) AS n FROM ${table} WHERE account_id = 2`).get() as { n: number }).n,
      }).toEqual({ table, n: 0 })
    expect(box.db.query('SELECT account_id FROM links WHERE code = ?').get(code)).toEqual({ account_id: null })
    expect((await box.request(`/${code}`)).status).toBe(302)
    expect((await qrWith(aliceKey)).status).toBe(401)
    expect((await box.request('/dashboard', { headers: { cookie: alice.cookie } })).status).toBe(303)
    // Back to the confirmation page of an account that is gone: said so, nothing to send.
    const gone = await page(root, '/dashboard/admin/account/2/delete')
    expect(gone.status).toBe(404)
    expect(gone.html).toContain('There is no such account')
    const again = await postForm(box, root, '/dashboard/admin/account/2/delete', { links: 'keep' })
    expect(await (await follow(box, again, root.cookie)).text()).toContain(
      'That account does not exist any more: nothing was deleted.',
    )
  })

  test('delete with its links: they go at once, even one the redirect had cached', async () => {
    const { root, aliceKey } = await setup()
    const code = (await box.post('/api/getLink.json', { url: 'https://example.com/gone' }, { 'x-api-key': aliceKey }))
      .body.return.hex
    expect((await box.request(`/${code}`)).status).toBe(302) // now in the cache of visited links
    const res = await postForm(box, root, '/dashboard/admin/account/2/delete', { links: 'delete' })
    expect(res.status).toBe(303)
    expect(await (await follow(box, res, root.cookie)).text()).toContain(
      'alice is deleted, with its keys, mailboxes and webhooks; its 1 link too.',
    )
    expect(box.db.query('SELECT count(*) AS n FROM links').get()).toEqual({ n: 0 })
    expect((await box.request(`/${code}`)).status).toBe(404)
    const row = box.db.query("SELECT actor_name, action, detail FROM audit_log WHERE action = 'account.delete'").get()
    expect(row).toEqual({ actor_name: 'root', action: 'account.delete', detail: 'its 1 link deleted with it' })
  })

  test('oneself and the last admin: the confirmation page says why, and the POST is refused', async () => {
    const { root } = await setup()
    const self = await page(root, '/dashboard/admin/account/1/delete')
    expect(self.html).toContain('You cannot delete your own account')
    expect(self.html).not.toContain('<form method="post" action="/dashboard/admin/account/1/delete">')
    const res = await postForm(box, root, '/dashboard/admin/account/1/delete', { links: 'keep' })
    expect(await (await follow(box, res, root.cookie)).text()).toContain('You cannot delete your own account')
    expect(idOf('root')).toBe(1)
    const disable = await postForm(box, root, '/dashboard/admin/accounts/disable', { account: 'root' })
    expect(await (await follow(box, disable, root.cookie)).text()).toContain('You cannot disable your own account')
    // (The last active administrator can only be reached from the command line here, where an admin acting is
    // active too: the account service refuses it there, see audit.test.ts and cli.)
    expect(
      box.db.query("SELECT count(*) AS n FROM audit_log WHERE action IN ('account.delete', 'account.disable')").get(),
    ).toEqual({ n: 0 })
  })

  test('a new password: the old one and every session of the account end at once; a short one is refused at its field', async () => {
    const { root } = await setup()
    const alice = await signIn(box, 'alice', PW)
    await signIn(box, 'alice', PW)
    const short = await postForm(box, root, '/dashboard/admin/account/2/password', { password: 'short' })
    expect(short.status).toBe(303)
    expect(short.headers.get('location')).toMatch(/^\/dashboard\/admin\/account\/2\/password\?form=[\w-]{22}$/)
    const form = await (await follow(box, short, root.cookie)).text()
    expect(form).toContain('id="new-password-error">The dashboard password must be 8 to 128 characters.')
    expect(form).toContain('aria-invalid="true"')
    expect(form).not.toContain('value="short"')

    const res = await postForm(box, root, '/dashboard/admin/account/2/password', { password: 'a brand new password' })
    expect(res.headers.get('location')).toBe('/dashboard/admin')
    expect(await (await follow(box, res, root.cookie)).text()).toContain('alice has a new password; 2 sessions ended.')
    expect((await box.request('/dashboard', { headers: { cookie: alice.cookie } })).status).toBe(303)
    await expect(signIn(box, 'alice', PW)).rejects.toThrow('sign-in refused')
    await signIn(box, 'alice', 'a brand new password')
    expect(box.db.query("SELECT detail FROM audit_log WHERE action = 'account.password'").all()).toEqual([
      { detail: '2 sessions ended' },
    ])
  })
})

describe('the CLI while the service runs', () => {
  let app: Linkbox | null = null
  const config = writeConfig()
  afterEach(async () => {
    await app?.close()
    app = null
  })

  test('account disable: the key is refused and the session ends at the next request; enable gives them back', async () => {
    await runCli(['account', 'create', 'root', '--admin', '--config', config.configPath])
    const made = await runCli(['account', 'create', 'hal', '--password', '-', '--config', config.configPath], {
      stdin: `${PW}\n`,
    })
    const key = made.stdout.trimEnd().split('\n').pop()!
    app = createLinkbox(loadConfig(config.configPath))
    const request = (path: string, init?: RequestInit) =>
      app!.app.handle(new Request(`http://localhost:8080${path}`, init))
    const hal = await signIn({ request }, 'hal', PW)
    const qr = () => request('/api/qr.json?data=x', { headers: { 'x-api-key': key } })
    expect((await qr()).status).toBe(200)
    expect((await runCli(['account', 'disable', 'hal', '--config', config.configPath])).stdout).toBe(
      'account hal disabled: its API keys are refused and its sessions ended\n',
    )
    expect((await qr()).status).toBe(401)
    expect((await request('/dashboard', { headers: { cookie: hal.cookie } })).status).toBe(303)
    expect((await runCli(['account', 'enable', 'hal', '--config', config.configPath])).code).toBe(0)
    expect((await qr()).status).toBe(200)
    await signIn({ request }, 'hal', PW)
  })

  test('account delete --with-links is refused while `serve` runs (it keeps visited links in memory); without it, allowed', async () => {
    await runCli(['account', 'create', 'ivy', '--config', config.configPath])
    const server = await startServer({ config })
    try {
      const r = await runCli(['account', 'delete', 'ivy', '--with-links', '--config', config.configPath])
      expect(r.code).toBe(2)
      expect(r.stderr).toMatch(
        /^linkbox: account delete --with-links: linkbox \(pid \d+\) holds .*linkbox\.lock, which keeps visited links in memory; delete the account from the dashboard \(Admin\), or stop the service first\n$/,
      )
      const kept = await runCli(['account', 'delete', 'ivy', '--config', config.configPath])
      expect(kept.stdout).toBe(
        'account ivy deleted with its keys, mailboxes and webhooks; its 0 links kept, owned by nobody\n',
      )
    } finally {
      expect(await server.stop()).toBe(0)
      removeDir(config.dir)
    }
  }, 30_000)
})

describe('more actors: open sign-up, a marketplace user, forms from elsewhere', () => {
  test('an account made by open sign-up is the actor of its own row, from the client address', async () => {
    box = await makeBox({ web: { signup: true } })
    const form = await box.request('/signup')
    const login = form.headers.get('set-cookie')!.match(/lb_login=([^;]+)/)![1]!
    const csrf = (await form.text()).match(/name="_csrf" value="([^"]+)"/)![1]!
    const res = await box.request('/signup', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `lb_login=${login}` },
      body: new URLSearchParams({ _csrf: csrf, name: 'newbie', password: 'long enough' }),
    })
    expect(res.status).toBe(303)
    expect(box.db.query('SELECT actor_kind, actor_id, actor_name, action, target FROM audit_log').all()).toEqual([
      {
        actor_kind: 'account',
        actor_id: 1,
        actor_name: 'newbie',
        action: 'account.create',
        target: 'account newbie (#1)',
      },
    ])
  })

  test('a marketplace user\'s account, made on first use: one row by the system "marketplace"; later uses add none', async () => {
    box = await makeBox({ marketplace: { proxy_secret: 'mp-secret' } })
    for (let i = 0; i < 2; i++)
      expect(
        (
          await box.get(
            '/api/qr.json',
            { data: 'x' },
            { 'X-RapidAPI-Proxy-Secret': 'mp-secret', 'X-RapidAPI-User': 'buyer-7' },
          )
        ).status,
      ).toBe(200)
    expect(box.db.query('SELECT actor_kind, actor_name, action, target, detail FROM audit_log').all()).toEqual([
      {
        actor_kind: 'system',
        actor_name: 'marketplace',
        action: 'account.create',
        target: 'account marketplace:buyer-7 (#1)',
        detail: 'a marketplace user, on first use',
      },
    ])
  })

  test("the new forms without the session's CSRF token, or sent from another site: 403, nothing changed, no row", async () => {
    const { root } = await setup()
    const changes = () => box.db.query("SELECT count(*) AS n FROM audit_log WHERE action NOT LIKE 'signin.%'").get()
    const before = changes()
    for (const [path, fields] of [
      ['/dashboard/admin/account/2/delete', { links: 'delete' }],
      ['/dashboard/admin/account/2/password', { password: 'a brand new password' }],
    ] as const) {
      expect((await postForm(box, root, path, { ...fields, _csrf: 'wrong' })).status).toBe(403)
      expect((await postForm(box, root, path, fields, { 'sec-fetch-site': 'cross-site' })).status).toBe(403)
    }
    expect(idOf('alice')).toBe(2)
    await signIn(box, 'alice', PW)
    expect(changes()).toEqual(before)
  })
})
