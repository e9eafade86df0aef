// The dashboard's Admin section through the real app and SQLite file: only administrators get in; the
// accounts list and its counts; creating an account (its key in the POST's own answer, once); disabling
// and enabling (keys refused at once, sessions ended; never oneself); forms without their CSRF token or
// from another site change nothing; the health page's numbers; and metrics.snapshot(), which it draws.
import { afterEach, describe, expect, test } from 'bun:test'
import { renameSync } from 'node:fs'
import { join } from 'node:path'
import { createMetrics } from '../../src/kernel/metrics'
import { barTable, bytes, duration } from '../../src/dashboard/admin-figures'
import { makeBox, type TestBox } from '../support/app'
import { follow, postForm, signIn, type SignedIn } from '../support/dashboard'

let box: TestBox
afterEach(async () => box?.cleanup())

const PW = 'correct horse battery'

/** A box with an admin "root" and a user "alice" (both with passwords), root signed in. */
async function setup(): Promise<{ root: SignedIn; aliceKey: string }> {
  box = await makeBox()
  await box.accounts.createAccount({ name: 'root', password: PW, admin: true })
  const { key } = await box.accounts.createAccount({ name: 'alice', password: PW })
  const root = await signIn(box, 'root', PW)
  return { root, aliceKey: key.key }
}

const row = (name: string) =>
  box.db.query('SELECT id, name, admin, disabled, password_hash FROM accounts WHERE name = ?').get(name) as {
    id: number
    name: string
    admin: number
    disabled: number | null
    password_hash: string | null
  } | null
const accountCount = () => (box.db.query('SELECT count(*) AS n FROM accounts').get() as { n: number }).n
const sessionsOf = (name: string) =>
  (
    box.db
      .query('SELECT count(*) AS n FROM web_sessions s JOIN accounts a ON a.id = s.account_id WHERE a.name = ?')
      .get(name) as { n: number }
  ).n
const qrWith = (key: string) => box.get('/api/qr.json', { data: 'x' }, { 'x-api-key': key })

describe('who gets in', () => {
  test('signed out: a redirect to sign in; a signed-in non-admin: 403 on every page and form, nothing changed', async () => {
    await setup()
    const out = await box.request('/dashboard/admin/health')
    expect(out.status).toBe(303)
    expect(out.headers.get('location')).toBe('/login?next=%2Fdashboard%2Fadmin%2Fhealth')

    const alice = await signIn(box, 'alice', PW)
    for (const path of ['/dashboard/admin', '/dashboard/admin/health', '/dashboard/admin?page=2']) {
      const res = await box.request(path, { headers: { cookie: alice.cookie } })
      expect(res.status).toBe(403)
      expect(await res.text()).toContain('This page is for administrator accounts.')
    }
    expect(
      (
        await postForm(box, alice, '/dashboard/admin/accounts', {
          name: 'mallory',
          password: 'long enough',
          admin: '1',
        })
      ).status,
    ).toBe(403)
    expect((await postForm(box, alice, '/dashboard/admin/accounts/disable', { account: 'root' })).status).toBe(403)
    expect(row('mallory')).toBeNull()
    expect(row('root')!.disabled).toBeNull()
    // The navigation shows Admin to administrators only.
    expect(await (await box.request('/dashboard', { headers: { cookie: alice.cookie } })).text()).not.toContain(
      '/dashboard/admin',
    )
  })
})

describe('accounts', () => {
  test('the list: every account with its role, status and what it owns, counted', async () => {
    const { root, aliceKey } = await setup()
    for (let i = 0; i < 3; i++)
      expect(
        (await box.post('/api/getLink.json', { url: `https://example.com/${i}` }, { 'x-api-key': aliceKey })).status,
      ).toBe(200)
    expect((await box.get('/api/mailbox.json', {}, { 'x-api-key': aliceKey })).status).toBe(200)
    await box.accounts.createKey({ account: 'alice' })
    const revoked = await box.accounts.createKey({ account: 'alice' })
    await box.accounts.revokeKey(String(revoked.id))

    const res = await box.request('/dashboard/admin', { headers: { cookie: root.cookie } })
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const html = await res.text()
    const aliceRow = html.match(/<tr><th scope="row"><span class="acc-name">alice<\/span>.*?<\/tr>/)![0]
    expect(aliceRow).toContain('User')
    expect(aliceRow).toContain('Active')
    // 3 links, 2 live keys (the first and one more; the revoked one is not counted), 1 mailbox.
    expect([...aliceRow.matchAll(/<td class="n"[^>]*>(\d+)<\/td>/g)].map((m) => m[1])).toEqual(['3', '2', '1'])
    expect(aliceRow).toContain('action="/dashboard/admin/accounts/disable"')
    const rootRow = html.match(/<tr><th scope="row"><span class="acc-name">root<\/span>.*?<\/tr>/)![0]
    expect(rootRow).toContain('<span class="tag">you</span>')
    expect(rootRow).toContain('Admin')
    expect(rootRow).toContain('Cannot disable yourself')
    expect(rootRow).not.toContain('<form')
  })

  test('50 a page, with a pager; a page past the end shows the last', async () => {
    const { root } = await setup()
    for (let i = 0; i < 118; i++) await box.accounts.createAccount({ name: `user${String(i).padStart(3, '0')}` })
    const page = async (q: string) =>
      (await box.request(`/dashboard/admin${q}`, { headers: { cookie: root.cookie } })).text()
    const names = (html: string) => [...html.matchAll(/<span class="acc-name">([^<]+)<\/span>/g)].map((m) => m[1])
    const first = await page('')
    expect(names(first)).toHaveLength(50)
    expect(names(first)[0]).toBe('root')
    expect(first).toContain('Page 1 of 3')
    expect(first).toContain('<span class="count">120</span>')
    expect(first).toContain('href="/dashboard/admin?page=2" rel="next"')
    const last = await page('?page=3')
    expect(names(last)).toHaveLength(20)
    expect(names(last).at(-1)).toBe('user117')
    expect(last).not.toContain('rel="next"')
    expect(names(await page('?page=999999999'))).toEqual(names(last))
    expect(names(await page('?page=-1'))).toEqual(names(first))
    expect(names(await page('?page=abc'))).toEqual(names(first))
  })

  test('create: the first key is on the page the 303 leads to, once (no-store), works at once, and only its hash is stored', async () => {
    const { root } = await setup()
    const posted = await postForm(box, root, '/dashboard/admin/accounts', {
      name: 'bob',
      password: 'bobs password',
      admin: '1',
    })
    expect(posted.status).toBe(303)
    const location = posted.headers.get('location')!
    expect(location).toMatch(/^\/dashboard\/admin\?page=1&created=[A-Za-z0-9_-]{22}$/)
    expect(posted.headers.get('set-cookie')).toBeNull()
    const res = await follow(box, posted, root.cookie)
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const html = await res.text()
    const key = html.match(/<input id="new-key" readonly value="(lbk_[A-Za-z0-9]{40})"/)![1]!
    expect(html).toContain('Shown once.')
    expect(html).toContain('<button type="button" class="copy" data-copy="new-key" hidden>Copy</button>')
    expect(html).toContain('<span class="acc-name">bob</span>') // in the list under it
    // The same address again: no key, and a note that it was shown once.
    const again = await (await box.request(location, { headers: { cookie: root.cookie } })).text()
    expect(again).not.toContain(key)
    expect(again).toContain('The new account&#39;s key was shown once, and is not shown again')

    const bob = row('bob')!
    expect(bob.admin).toBe(1)
    expect(bob.password_hash).toStartWith('$argon2id$')
    const stored = box.db.query('SELECT hash FROM api_keys WHERE account_id = ?').all(bob.id) as { hash: string }[]
    expect(stored).toEqual([{ hash: new Bun.CryptoHasher('sha256').update(key).digest('hex') }])
    expect((await qrWith(key)).status).toBe(200)
    // The password signs in; the page after shows no key.
    const signedIn = await signIn(box, 'bob', 'bobs password')
    expect(
      await (await box.request('/dashboard/admin', { headers: { cookie: signedIn.cookie } })).text(),
    ).not.toContain(key)
  })

  test('create without a password: an API-only account, not an admin unless ticked', async () => {
    const { root } = await setup()
    const res = await follow(
      box,
      await postForm(box, root, '/dashboard/admin/accounts', { name: 'api-only', password: '' }),
      root.cookie,
    )
    expect(await res.text()).toContain('No dashboard password')
    expect(row('api-only')).toMatchObject({ admin: 0, password_hash: null, disabled: null })
  })

  test('input errors: 303 back to the form, the message tied to its field, the name and the box kept', async () => {
    const { root } = await setup()
    const posted = await postForm(box, root, '/dashboard/admin/accounts', {
      name: 'no spaces<b>',
      password: '',
      admin: '1',
    })
    expect(posted.headers.get('location')).toMatch(/^\/dashboard\/admin\?form=[A-Za-z0-9_-]{22}$/)
    const bad = await follow(box, posted, root.cookie)
    expect(bad.status).toBe(200)
    const html = await bad.text()
    expect(html).toContain('aria-describedby="acc-name-hint acc-name-error" aria-invalid="true"')
    expect(html).toMatch(/<span class="error" id="acc-name-error">Account names are 1-64 characters/)
    expect(html).toContain('value="no spaces&lt;b&gt;"')
    expect(html).not.toContain('no spaces<b>')
    expect(html).toMatch(/<input id="acc-admin" [^>]*checked>/)

    const taken = await follow(
      box,
      await postForm(box, root, '/dashboard/admin/accounts', { name: 'alice', password: '' }),
      root.cookie,
    )
    expect(await taken.text()).toContain('id="acc-name-error">The account &quot;alice&quot; exists already.')

    const short = await follow(
      box,
      await postForm(box, root, '/dashboard/admin/accounts', { name: 'carol', password: 'short' }),
      root.cookie,
    )
    const shortHtml = await short.text()
    expect(shortHtml).toContain('id="acc-password-error">The dashboard password must be 8 to 128 characters.')
    expect(shortHtml).toContain('aria-describedby="acc-password-hint acc-password-error" aria-invalid="true"')
    expect(shortHtml).toContain('value="carol"')
    expect(shortHtml).not.toContain('value="short"') // a password is never sent back
    expect(accountCount()).toBe(2)
  })

  test('disable: its key is refused at once, it is signed out everywhere, it cannot sign in; enable gives them back', async () => {
    const { root, aliceKey } = await setup()
    const alice = await signIn(box, 'alice', PW)
    expect((await qrWith(aliceKey)).status).toBe(200) // cached as working
    expect(sessionsOf('alice')).toBe(1)

    const res = await postForm(box, root, '/dashboard/admin/accounts/disable', { account: 'alice', page: '1' })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard/admin?page=1')
    expect(row('alice')!.disabled).toBeNumber()
    expect(sessionsOf('alice')).toBe(0)
    expect((await qrWith(aliceKey)).status).toBe(401)
    expect((await box.request('/dashboard', { headers: { cookie: alice.cookie } })).status).toBe(303)
    await expect(signIn(box, 'alice', PW)).rejects.toThrow('sign-in refused')

    // The notice is carried to the list, where alice shows as disabled with an Enable button.
    const notice = res.headers.get('set-cookie')!.match(/lb_notice=[^;]+/)![0]
    const list = await (
      await box.request('/dashboard/admin?page=1', { headers: { cookie: `${root.cookie}; ${notice}` } })
    ).text()
    expect(list).toContain('alice is disabled: its API keys are refused and it is signed out everywhere.')
    expect(list).toMatch(
      /<tr class="is-disabled"><th scope="row"><span class="acc-name">alice<\/span>.*?Disabled.*?accounts\/enable/,
    )

    expect((await postForm(box, root, '/dashboard/admin/accounts/enable', { account: 'alice' })).status).toBe(303)
    expect(row('alice')!.disabled).toBeNull()
    expect((await qrWith(aliceKey)).status).toBe(200)
    await signIn(box, 'alice', PW)
  })

  test('an admin cannot disable itself, and is told so', async () => {
    const { root } = await setup()
    const res = await postForm(box, root, '/dashboard/admin/accounts/disable', { account: 'root' })
    expect(res.status).toBe(303)
    const notice = res.headers.get('set-cookie')!.match(/lb_notice=[^;]+/)![0]
    const page = await (
      await box.request('/dashboard/admin', { headers: { cookie: `${root.cookie}; ${notice}` } })
    ).text()
    expect(page).toContain('<p class="notice error" role="alert">You cannot disable your own account')
    expect(row('root')!.disabled).toBeNull()
    expect(sessionsOf('root')).toBe(1)
  })

  test('an unknown account: a notice, nothing changed; an unknown action: 404', async () => {
    const { root } = await setup()
    const res = await postForm(box, root, '/dashboard/admin/accounts/disable', { account: 'nobody' })
    expect(res.status).toBe(303)
    expect(
      Buffer.from(res.headers.get('set-cookie')!.match(/lb_notice=([^;]+)/)![1]!, 'base64url').toString(),
    ).toContain('No account named')
    expect((await postForm(box, root, '/dashboard/admin/accounts/delete', { account: 'alice' })).status).toBe(404)
    expect(accountCount()).toBe(2)
  })

  test("forms without their CSRF token, with another session's, or from another site: 403, nothing changed", async () => {
    const { root, aliceKey } = await setup()
    const other = await signIn(box, 'root', PW) // a second session of the same admin: another token
    expect(other.csrf).not.toBe(root.csrf)
    const attempts: [string, Record<string, string>, Record<string, string>][] = [
      ['/dashboard/admin/accounts', { _csrf: '', name: 'mallory', password: 'long enough', admin: '1' }, {}],
      ['/dashboard/admin/accounts', { _csrf: other.csrf, name: 'mallory', admin: '1' }, {}],
      ['/dashboard/admin/accounts', { name: 'mallory', admin: '1' }, { origin: 'http://evil.example' }],
      ['/dashboard/admin/accounts/disable', { _csrf: '', account: 'alice' }, {}],
      ['/dashboard/admin/accounts/disable', { _csrf: other.csrf, account: 'alice' }, {}],
      ['/dashboard/admin/accounts/disable', { account: 'alice' }, { 'sec-fetch-site': 'cross-site' }],
    ]
    for (const [path, fields, headers] of attempts) {
      const res = await postForm(box, root, path, fields, headers)
      expect(res.status).toBe(403)
      const html = await res.text()
      expect(html).toContain('This form has expired or was sent from another site.')
      expect(html).not.toContain('lbk_')
    }
    // A body without the field at all (not even empty).
    const bare = await box.request('/dashboard/admin/accounts/disable', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: root.cookie },
      body: 'account=alice',
    })
    expect(bare.status).toBe(403)
    expect(accountCount()).toBe(2)
    expect(row('mallory')).toBeNull()
    expect(row('alice')!.disabled).toBeNull()
    expect((await qrWith(aliceKey)).status).toBe(200)
  })
})

describe('health', () => {
  test('the /metrics numbers drawn: status, version, counts and bars by outcome and status class', async () => {
    const { root, aliceKey } = await setup()
    const code = (await box.post('/api/getLink.json', { url: 'https://example.com/h' }, { 'x-api-key': aliceKey })).body
      .return.hex
    for (let i = 0; i < 3; i++) await box.request(`/${code}`, { redirect: 'manual' })
    await box.request('/nosuch1')
    await box.post('/api/links.json', {})
    await box.recorder.flush()
    const res = await box.request('/dashboard/admin/health', { headers: { cookie: root.cookie } })
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('<span class="dot" aria-hidden="true"></span>Working</h2>')
    const stat = (label: string) =>
      html.match(new RegExp(`<dt>${label}</dt><dd><span class="stat-value">([^<]+)</span>`))?.[1]
    expect(stat('Version')).toBe((await import('../../package.json')).version)
    expect(stat('Links')).toBe('1')
    expect(stat('Clicks written')).toBe('3')
    expect(stat('Dropped clicks')).toBe('0')
    expect(stat('Database')).toMatch(/^\d+(\.\d)? KiB$/)
    expect(stat('Memory')).toMatch(/^\d+(\.\d)? MiB$/)
    expect(stat('Answers')).toBe('2')
    // Bars: a row for each label, with its number, the largest full width.
    const bar = (label: string) =>
      html.match(
        new RegExp(
          `<tr><th scope="row">${label}</th><td class="bar-cell"><svg[^>]*>.*?<rect class="fill[^"]*" x="0" y="0" width="([\\d.]+)" height="10"/></svg></td><td class="n">(\\d+)</td></tr>`,
        ),
      )
    expect(bar('Redirected')?.slice(1)).toEqual(['100.00', '3'])
    expect(bar('Not found')?.slice(1)).toEqual(['33.33', '1'])
    expect(bar('2xx')?.slice(1)).toEqual(['100.00', '1'])
    expect(bar('4xx')?.slice(1)).toEqual(['100.00', '1'])
    expect(bar('5xx')?.slice(1)).toEqual(['0.00', '0'])
    // Nothing delivered yet: said in words, not an empty chart.
    expect(html).toMatch(/Delivery attempts by outcome[^<]*<\/p><p class="empty">Nothing counted yet.<\/p>/)
    // No inline style anywhere (the CSP would refuse it).
    expect(html).not.toMatch(/\sstyle=/)
  })

  test('no SQLite file in data_dir (as on PostgreSQL): the Database figure is "—", the page and health.json still answer', async () => {
    const { root } = await setup()
    const file = join(box.config.data_dir, 'linkbox.db')
    // The open connection keeps working on the renamed file; the page reads the size by the name.
    renameSync(file, `${file}.away`)
    try {
      const res = await box.request('/dashboard/admin/health', { headers: { cookie: root.cookie } })
      expect(res.status).toBe(200)
      const html = await res.text()
      expect(html.match(/<dt>Database<\/dt><dd><span class="stat-value">([^<]+)<\/span>/)?.[1]).toBe('—')
      const json = await (
        await box.request('/dashboard/admin/health.json', { headers: { cookie: root.cookie } })
      ).json()
      expect(json.stats.find((x: { key: string }) => x.key === 'database')).toEqual({
        key: 'database',
        value: '—',
        note: 'file and write-ahead log',
        tone: null,
      })
    } finally {
      renameSync(`${file}.away`, file)
    }
  })

  test('a database that cannot be written: Degraded, with the reason /readyz gives', async () => {
    const { root } = await setup()
    box.db.exec('PRAGMA query_only = ON')
    expect((await box.request('/readyz')).status).toBe(503)
    const html = await (await box.request('/dashboard/admin/health', { headers: { cookie: root.cookie } })).text()
    expect(html).toContain('class="card health-status degraded"')
    expect(html).toMatch(/The database cannot be written: [^<]*readonly/)
    box.db.exec('PRAGMA query_only = OFF')
  })
})

describe('pieces', () => {
  test('metrics.snapshot(): families in order, labelled counters with their labels, gauges read now', () => {
    const m = createMetrics()
    const visits = m.counter('v_total', 'Visits.', 'outcome')
    const answers = m.counter('a_total', 'Answers.')
    let gauge = 5
    m.sampled('g', 'A gauge.', () => gauge)
    m.sampled('c_total', 'Counted elsewhere.', () => 7, 'counter')
    visits.inc('redirect')
    visits.inc('redirect')
    visits.inc('a "quoted"\nvalue', 3)
    answers.incLabels({ method: 'qr.json', status: '200' })
    answers.incLabels({ method: 'qr.json', status: '200' }, 4)
    gauge = 9
    expect(m.snapshot()).toEqual([
      {
        name: 'v_total',
        help: 'Visits.',
        type: 'counter',
        samples: [
          { labels: { outcome: 'redirect' }, value: 2 },
          { labels: { outcome: 'a "quoted"\nvalue' }, value: 3 },
        ],
      },
      {
        name: 'a_total',
        help: 'Answers.',
        type: 'counter',
        samples: [{ labels: { method: 'qr.json', status: '200' }, value: 5 }],
      },
      { name: 'g', help: 'A gauge.', type: 'gauge', samples: [{ labels: {}, value: 9 }] },
      { name: 'c_total', help: 'Counted elsewhere.', type: 'counter', samples: [{ labels: {}, value: 7 }] },
    ])
    // A snapshot is a copy: changing it changes nothing.
    m.snapshot()[0]!.samples[0]!.labels.outcome = 'changed'
    expect(m.snapshot()[0]!.samples[0]!.labels).toEqual({ outcome: 'redirect' })
    // And the text format is what it was.
    expect(m.render()).toContain('v_total{outcome="a \\"quoted\\"\\nvalue"} 3\n')
  })

  test('numbers as people read them; bars escape their labels', () => {
    expect(bytes(0)).toBe('0 bytes')
    expect(bytes(1536)).toBe('1.5 KiB')
    expect(bytes(300 * 1024 * 1024)).toBe('300 MiB')
    expect(duration(0)).toBe('0 s')
    expect(duration(125)).toBe('2 min 5 s')
    expect(duration(93784)).toBe('1 d 2 h')
    expect(duration(86400 + 5)).toBe('1 d')
    const t = barTable(
      'Things <by> kind',
      [
        { label: '<script>', value: 2 },
        { label: 'b', value: 1 },
      ],
      'Kind',
    )
    expect(t).toContain('<caption>Things &lt;by&gt; kind</caption>')
    expect(t).toContain('<th scope="row">&lt;script&gt;</th>')
    expect(t).not.toContain('<script>')
  })
})
