// The dashboard's Links section through the real app and SQLite file: creating from the form (and its
// errors tied to fields), search with LIKE's own characters taken literally, sorting, pages of 25, editing
// (mode, expiry, password), deleting after a confirmation, another account's links answered 404 and left
// alone, and every form refused without its CSRF token with nothing changed.
import { afterEach, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'
import { follow, postForm, signIn, type SignedIn, dashboardCaller } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

let box: TestBox
afterEach(async () => box?.cleanup())

interface Row {
  id: number
  code: string
  long_url: string
  account_id: number | null
  mode: string
  password_hash: string | null
  expires: number | null
  clicks: number
}
const rowOf = (code: string) => box.db.query('SELECT * FROM links WHERE code = ?').get(code) as Row | null
const allRows = () => box.db.query('SELECT * FROM links ORDER BY id').all() as Row[]
const page = async (who: SignedIn, path: string) => {
  const res = await box.request(path, { headers: { cookie: who.cookie } })
  return { status: res.status, html: await res.text(), res }
}
/** The codes of the list's rows, in order. */
const codesIn = (html: string) => [...html.matchAll(/id="short-([A-Za-z0-9_-]+)"/g)].map((m) => m[1]!)
/** A POST with the session cookie but without the form's _csrf field. */
const postWithoutToken = (who: SignedIn, path: string, fields: Record<string, string>) =>
  box.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: who.cookie },
    body: new URLSearchParams(fields).toString(),
  })

async function setup() {
  box = await makeBox()
  await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  await box.accounts.createAccount({ name: 'bob', password: 'battery staple' })
  const alice = await signIn(box, 'alice', 'correct horse')
  const bob = await signIn(box, 'bob', 'battery staple')
  return { alice, bob, aliceCaller: callerOf('alice'), bobCaller: callerOf('bob') }
}
const callerOf = (name: string) => dashboardCaller(box.db, name)

describe('create', () => {
  test('the form creates a link of the account (alias, mode, expiry, password); the answer shows it', async () => {
    const { alice, aliceCaller } = await setup()
    const before = Date.now()
    const res = await postForm(box, alice, '/dashboard/links', {
      url: 'https://example.com/a?b=c',
      alias: 'my-alias',
      mode: 'preview',
      expire: '86400',
      password: 'open sesame',
    })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard?new=my-alias')
    const row = rowOf('my-alias')!
    expect(row.account_id).toBe(aliceCaller.accountId)
    expect(row.long_url).toBe('https://example.com/a?b=c')
    expect(row.mode).toBe('preview')
    expect(row.expires! - before).toBeGreaterThanOrEqual(86_400_000)
    expect(row.expires! - Date.now()).toBeLessThanOrEqual(86_400_000)
    expect(row.password_hash).toStartWith('$argon2id$')
    // The notice rides the redirect to the list, where the new row is marked.
    const cookie = `${alice.cookie}; ${res.headers.get('set-cookie')!.split(';')[0]}`
    const list = await box.request('/dashboard?new=my-alias', { headers: { cookie } })
    const html = await list.text()
    expect(html).toContain('Created http://localhost:8080/my-alias → example.com/a?b=c')
    expect(html).toContain('<tr class="fresh">')
    expect(html).toContain('Password protected')
    expect(html).toContain('href="/dashboard/links/my-alias/stats"')
    expect(html).toContain('href="/qr/my-alias.png"')
    expect(html).toContain('data-copy="short-my-alias"')
  })

  test('only a URL: a random code, redirect mode, no expiry, no password', async () => {
    const { alice } = await setup()
    const res = await postForm(box, alice, '/dashboard/links', {
      url: 'https://example.com/',
      alias: '',
      mode: 'redirect',
      expire: '',
      password: '',
    })
    expect(res.status).toBe(303)
    const [row] = allRows()
    expect(row!.code).toMatch(/^[A-Za-z0-9]{6}$/)
    expect(res.headers.get('location')).toBe(`/dashboard?new=${row!.code}`)
    expect(row!.mode).toBe('redirect')
    expect(row!.expires).toBeNull()
    expect(row!.password_hash).toBeNull()
  })

  test('an error: 303 back to the form, tied to its field, what was typed kept (not the password), nothing stored', async () => {
    const { alice } = await setup()
    const posted = await postForm(box, alice, '/dashboard/links', {
      url: 'ftp://example.com/"x',
      alias: 'ok-alias',
      password: 'secret pw',
    })
    expect(posted.headers.get('location')).toMatch(/^\/dashboard\?form=[A-Za-z0-9_-]{22}$/)
    const bad = await follow(box, posted, alice.cookie)
    expect(bad.status).toBe(200)
    const html = await bad.text()
    expect(html).toMatch(
      /id="url"[^>]*value="ftp:\/\/example.com\/&quot;x" data-scheme aria-describedby="url-scheme url-error" aria-invalid="true"/,
    )
    expect(html).toContain(
      '<span class="error" id="url-error">The URL must be an absolute URL with the scheme http or https.</span>',
    )
    expect(html).toContain('value="ok-alias"')
    expect(html).not.toContain('secret pw')
    expect(allRows()).toHaveLength(0)

    await postForm(box, alice, '/dashboard/links', { url: 'https://example.com/', alias: 'taken' })
    const taken = await follow(
      box,
      await postForm(box, alice, '/dashboard/links', { url: 'https://example.org/', alias: 'taken' }),
      alice.cookie,
    )
    const t = await taken.text()
    expect(t).toContain('aria-invalid="true"')
    expect(t).toContain('aria-describedby="alias-hint alias-error"')
    expect(t).toContain('The alias &quot;taken&quot; is already in use.')
    expect(t).toContain('<details class="more" open>')
    expect(allRows()).toHaveLength(1)

    const reserved = await follow(
      box,
      await postForm(box, alice, '/dashboard/links', { url: 'https://example.org/', alias: 'dashboard' }),
      alice.cookie,
    )
    expect(await reserved.text()).toContain('id="alias-error"')
  })
})

describe('list', () => {
  test('search: a substring of the code or the destination; %, _ and \\ are taken literally; what was typed is escaped', async () => {
    const { alice, bob, aliceCaller, bobCaller } = await setup()
    const make = (url: string, alias: string, caller = aliceCaller) => box.links.create({ url, alias }, caller)
    await make('https://example.com/100%25-sure', 'pct')
    await make('https://example.com/snake_case', 'under')
    await make('https://example.com/plain', 'plain')
    await make('https://example.com/back?slash=a\\b', 'back')
    expect(rowOf('back')!.long_url).toBe('https://example.com/back?slash=a\\b')
    await make('https://other.example/Shop', 'SHOPPING')
    await make('https://example.com/100%25-bob', 'bobs', bobCaller)

    const q = async (text: string) =>
      codesIn((await page(alice, `/dashboard?q=${encodeURIComponent(text)}`)).html).sort()
    expect(await q('%')).toEqual(['pct'])
    expect(await q('_')).toEqual(['under'])
    expect(await q('\\')).toEqual(['back'])
    expect(await q('shop')).toEqual(['SHOPPING']) // code and destination, either case
    expect(await q('plain')).toEqual(['plain'])
    expect(await q('example.com')).toEqual(['back', 'pct', 'plain', 'under']) // never bob's
    expect(await q('')).toEqual(['SHOPPING', 'back', 'pct', 'plain', 'under'])

    const none = await page(alice, `/dashboard?q=${encodeURIComponent('"><img src=x>')}`)
    expect(none.status).toBe(200)
    expect(none.html).toContain('No link matches “&quot;&gt;&lt;img src=x&gt;”.')
    expect(none.html).toContain('value="&quot;&gt;&lt;img src=x&gt;"')
    expect(none.html).not.toContain('<img src=x>')
    expect(codesIn((await page(bob, '/dashboard')).html)).toEqual(['bobs'])
  })

  test('sort: newest first, or most clicks first (real visits)', async () => {
    const { alice, aliceCaller } = await setup()
    for (const alias of ['one', 'two', 'three'])
      await box.links.create({ url: `https://example.com/${alias}`, alias }, aliceCaller)
    const visit = (code: string, n: number) =>
      Promise.all(Array.from({ length: n }, () => box.request(`/${code}`, { headers: { 'user-agent': CHROME_UA } })))
    await visit('one', 3)
    await visit('two', 1)
    await visit('three', 2)
    await box.recorder.flush()
    expect(codesIn((await page(alice, '/dashboard')).html)).toEqual(['three', 'two', 'one'])
    const byClicks = await page(alice, '/dashboard?sort=clicks')
    expect(codesIn(byClicks.html)).toEqual(['one', 'three', 'two'])
    expect(byClicks.html).toContain('<a href="/dashboard?sort=clicks" aria-current="true">Most clicks</a>')
    expect(byClicks.html).toMatch(/<td class="n" data-label="Clicks"><span>3<\/span><\/td>/)
  })

  test('pages of 25: "26–30 of 30", previous and next keep the search and sort; a page past the end is the last', async () => {
    const { alice, aliceCaller } = await setup()
    for (let i = 1; i <= 30; i++)
      await box.links.create(
        { url: `https://example.com/p${i}`, alias: `link${String(i).padStart(2, '0')}` },
        aliceCaller,
      )
    const first = await page(alice, '/dashboard')
    expect(codesIn(first.html)).toHaveLength(25)
    expect(codesIn(first.html)[0]).toBe('link30')
    expect(first.html).toContain('<span class="range">1–25 of 30</span>')
    expect(first.html).toContain('href="/dashboard?page=2" rel="next"')
    expect(first.html).not.toContain('rel="prev"')
    const second = await page(alice, '/dashboard?page=2')
    expect(codesIn(second.html)).toEqual(['link05', 'link04', 'link03', 'link02', 'link01'])
    expect(second.html).toContain('<span class="range">26–30 of 30</span>')
    expect(second.html).toContain('href="/dashboard" rel="prev"')
    expect(second.html).not.toContain('rel="next"')
    expect(codesIn((await page(alice, '/dashboard?page=99')).html)).toEqual(codesIn(second.html))
    expect(codesIn((await page(alice, '/dashboard?page=x')).html)).toEqual(codesIn(first.html))
    const searched = await page(alice, '/dashboard?q=link&sort=clicks')
    expect(searched.html).toContain('href="/dashboard?q=link&amp;sort=clicks&amp;page=2" rel="next"')
  })

  test('the empty state says what to do', async () => {
    const { alice } = await setup()
    const { html } = await page(alice, '/dashboard')
    expect(html).toContain('No links yet.')
    expect(html).toContain('href="/dashboard/keys"')
    expect(html).not.toContain('<table')
  })

  test('signed out: the list and its forms lead to the sign-in page, and nothing is created', async () => {
    box = await makeBox()
    const res = await box.request('/dashboard?q=x')
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/login?next=%2Fdashboard%3Fq%3Dx')
    const post = await box.request('/dashboard/links', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'url=https%3A%2F%2Fexample.com%2F',
    })
    expect(post.status).toBe(303)
    expect(allRows()).toHaveLength(0)
  })
})

describe('edit and delete', () => {
  test('the edit page shows the link and its QR; saving changes only what changed', async () => {
    const { alice, aliceCaller } = await setup()
    await box.links.create({ url: 'https://example.com/e', alias: 'edit-me', expire: '3600' }, aliceCaller)
    const before = rowOf('edit-me')!
    const { status, html } = await page(alice, '/dashboard/links/edit-me')
    expect(status).toBe(200)
    expect(html).toContain('<img class="qr" src="/qr/edit-me.svg"')
    expect(html).toContain('href="/qr/edit-me.png" download="edit-me.png"')
    expect(html).toContain('href="/qr/edit-me.svg" download="edit-me.svg"')
    expect(html).toContain('value="https://example.com/e"')
    expect(html).toContain('<option value="keep" selected>Keep as it is</option>')
    expect(html).toMatch(
      /<span class="hint" id="expire-hint">It expires <time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time>\.<\/span>/,
    )

    // Mode and a password; the URL and the expiry as they were.
    const save = await postForm(box, alice, '/dashboard/links/edit-me', {
      url: 'https://example.com/e',
      mode: 'frame',
      expire: 'keep',
      password_action: 'set',
      password: 'new secret',
    })
    expect(save.status).toBe(303)
    expect(save.headers.get('location')).toBe('/dashboard/links/edit-me')
    let row = rowOf('edit-me')!
    expect(row.mode).toBe('frame')
    expect(row.long_url).toBe(before.long_url)
    expect(row.expires).toBe(before.expires)
    expect(await Bun.password.verify('new secret', row.password_hash!)).toBe(true)

    // A new URL, no expiry, the password removed.
    await postForm(box, alice, '/dashboard/links/edit-me', {
      url: 'https://example.org/new',
      mode: 'frame',
      expire: '0',
      password_action: 'remove',
    })
    row = rowOf('edit-me')!
    expect(row.long_url).toBe('https://example.org/new')
    expect(row.expires).toBeNull()
    expect(row.password_hash).toBeNull()

    // "Set" without a password, and a bad URL: errors tied to their fields, nothing changed.
    const noPwPosted = await postForm(box, alice, '/dashboard/links/edit-me', {
      url: 'https://example.org/new',
      mode: 'frame',
      expire: 'keep',
      password_action: 'set',
      password: '',
    })
    expect(noPwPosted.headers.get('location')).toMatch(/^\/dashboard\/links\/edit-me\?form=[A-Za-z0-9_-]{22}$/)
    expect(await (await follow(box, noPwPosted, alice.cookie)).text()).toContain('id="password-error"')
    const badUrl = await follow(
      box,
      await postForm(box, alice, '/dashboard/links/edit-me', {
        url: 'javascript:alert(1)',
        mode: 'redirect',
        expire: 'keep',
        password_action: 'keep',
      }),
      alice.cookie,
    )
    const b = await badUrl.text()
    expect(b).toContain('aria-describedby="url-scheme url-error"')
    expect(b).toContain('value="javascript:alert(1)"')
    expect(rowOf('edit-me')).toEqual(row)
  })

  test('title (issue 36): made from the form, shown in the list, found by search, edited; a title over two lines is kept when other fields are saved', async () => {
    const { alice, aliceCaller } = await setup()
    const made = await postForm(box, alice, '/dashboard/links', {
      url: 'https://example.com/t',
      alias: 'titled',
      title: 'Spring <sale> 2026',
    })
    expect(made.status).toBe(303)
    const titleOf = (code: string) =>
      (box.db.query('SELECT title FROM links WHERE code = ?').get(code) as { title: string }).title
    expect(titleOf('titled')).toBe('Spring <sale> 2026')
    const list = await page(alice, '/dashboard')
    expect(list.html).toContain('<div class="link-title">Spring &lt;sale&gt; 2026</div>')
    await box.links.create({ url: 'https://example.com/other', alias: 'untitled' }, aliceCaller)
    expect(codesIn((await page(alice, '/dashboard?q=SALE')).html)).toEqual(['titled'])
    const edit = await page(alice, '/dashboard/links/titled')
    expect(edit.html).toContain(
      '<input id="title" name="title" autocomplete="off" maxlength="200" value="Spring &lt;sale&gt; 2026"',
    )
    await postForm(box, alice, '/dashboard/links/titled', {
      url: 'https://example.com/t',
      mode: 'redirect',
      expire: 'keep',
      password_action: 'keep',
      title: 'Summer',
    })
    expect(titleOf('titled')).toBe('Summer')
    const tooLong = await postForm(box, alice, '/dashboard/links/titled', {
      url: 'https://example.com/t',
      mode: 'redirect',
      expire: 'keep',
      password_action: 'keep',
      title: 'x'.repeat(201),
    })
    expect(await (await follow(box, tooLong, alice.cookie)).text()).toContain('id="title-error"')
    expect(titleOf('titled')).toBe('Summer')
    // An imported title over two lines: the form's text input cannot hold the line break; saving the mode leaves it.
    await box.links.create(
      { url: 'https://example.com/two', alias: 'two-lines', title: 'A post\nover two lines' },
      aliceCaller,
    )
    await postForm(box, alice, '/dashboard/links/two-lines', {
      url: 'https://example.com/two',
      mode: 'preview',
      expire: 'keep',
      password_action: 'keep',
      title: 'A postover two lines',
    })
    expect(rowOf('two-lines')!.mode).toBe('preview')
    expect(titleOf('two-lines')).toBe('A post\nover two lines')
  })

  test('delete: a confirmation page, then the POST removes the link', async () => {
    const { alice, aliceCaller } = await setup()
    await box.links.create({ url: 'https://example.com/d', alias: 'doomed' }, aliceCaller)
    const confirm = await page(alice, '/dashboard/links/doomed/delete')
    expect(confirm.status).toBe(200)
    expect(confirm.html).toContain('<form method="post" action="/dashboard/links/doomed/delete"')
    expect(rowOf('doomed')).not.toBeNull() // a GET never deletes
    const res = await postForm(box, alice, '/dashboard/links/doomed/delete', {})
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard')
    expect(rowOf('doomed')).toBeNull()
    expect((await page(alice, '/dashboard/links/doomed')).status).toBe(404)
  })

  test("another account's link: 404 on every page and form, and it is left as it was", async () => {
    const { alice, bobCaller } = await setup()
    await box.links.create({ url: 'https://example.com/bob', alias: 'bobs-link', mode: 'preview' }, bobCaller)
    const before = rowOf('bobs-link')
    for (const path of [
      '/dashboard/links/bobs-link',
      '/dashboard/links/bobs-link/delete',
      '/dashboard/links/nosuchcode',
    ]) {
      const r = await page(alice, path)
      expect(r.status).toBe(404)
      expect(r.html).toContain('Link not found')
      expect(r.html).not.toContain('example.com/bob')
    }
    const edit = await postForm(box, alice, '/dashboard/links/bobs-link', {
      url: 'https://evil.example/',
      mode: 'redirect',
      expire: '0',
      password_action: 'set',
      password: 'mine',
    })
    expect(edit.status).toBe(404)
    const del = await postForm(box, alice, '/dashboard/links/bobs-link/delete', {})
    expect(del.status).toBe(404)
    expect(rowOf('bobs-link')).toEqual(before)
  })

  test('codes in paths are checked before any look-up', async () => {
    const { alice } = await setup()
    for (const path of [
      '/dashboard/links/a%22b',
      '/dashboard/links/%3Cx%3E',
      `/dashboard/links/${'a'.repeat(65)}`,
      '/dashboard/links/a.b/delete',
    ]) {
      const r = await page(alice, path)
      expect(r.status).toBe(404)
      expect(r.html).not.toContain('<x>')
    }
  })
})

describe('CSRF', () => {
  test("every Links form without its token, or with another session's, is refused (403) and nothing changes", async () => {
    const { alice, bob, aliceCaller } = await setup()
    await box.links.create({ url: 'https://example.com/keep', alias: 'kept', password: 'pw' }, aliceCaller)
    const before = allRows()
    const forms: [string, Record<string, string>][] = [
      ['/dashboard/links', { url: 'https://example.com/new', alias: 'newone' }],
      [
        '/dashboard/links/kept',
        { url: 'https://evil.example/', mode: 'frame', expire: '0', password_action: 'remove' },
      ],
      ['/dashboard/links/kept/delete', {}],
    ]
    for (const [path, fields] of forms) {
      expect((await postWithoutToken(alice, path, fields)).status).toBe(403)
      expect((await postForm(box, alice, path, { ...fields, _csrf: bob.csrf })).status).toBe(403)
      expect((await postForm(box, alice, path, fields, { origin: 'http://evil.example' })).status).toBe(403)
      expect(allRows()).toEqual(before)
    }
  })
})
