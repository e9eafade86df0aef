// The dashboard's API section through the real app and SQLite file: a key created with chosen scopes is
// shown once (on the page the POST's 303 leads to, only its hash stored) and works within its scopes; no
// scope is an error tied to the fieldset (on the page the refusal's 303 leads to); the account's keys are
// listed; revoking works only on the account's own keys (another account's → 404, left alone); the bounds
// on keys; every form refused without its CSRF token.
import { afterEach, describe, expect, test } from 'bun:test'
import { hashKey, MAX_ACTIVE_KEYS, REVOKED_KEYS_KEPT } from '../../src/accounts'
import { makeBox, type TestBox } from '../support/app'
import { follow, postForm, signIn, type SignedIn } from '../support/dashboard'

let box: TestBox
afterEach(async () => box?.cleanup())

interface KeyRow {
  id: number
  account_id: number
  prefix: string
  hash: string
  scopes: string
  label: string
  revoked: number | null
  last_used: number | null
}
const keyRows = () => box.db.query('SELECT * FROM api_keys ORDER BY id').all() as KeyRow[]
const accountId = (name: string) =>
  (box.db.query('SELECT id FROM accounts WHERE name = ?').get(name) as { id: number }).id
const keysPage = async (who: SignedIn) =>
  (await box.request('/dashboard/keys', { headers: { cookie: who.cookie } })).text()
const keyIn = (html: string) => html.match(/id="new-key" readonly value="(lbk_[A-Za-z0-9]+)"/)?.[1] ?? null
/** Posts the key form and follows its 303 (a browser's view): the page it leads to. */
const create = async (who: SignedIn, fields: Record<string, string>) =>
  follow(box, await postForm(box, who, '/dashboard/keys', fields), who.cookie)

async function setup() {
  box = await makeBox()
  await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  await box.accounts.createAccount({ name: 'bob', password: 'battery staple' })
  return { alice: await signIn(box, 'alice', 'correct horse'), bob: await signIn(box, 'bob', 'battery staple') }
}

describe('create a key', () => {
  test('scopes qr only: the key is shown once, stored only as its hash, and works for qr.json but not links.json', async () => {
    const { alice } = await setup()
    const before = keyRows()
    const posted = await postForm(box, alice, '/dashboard/keys', { scope: 'qr', label: 'my <b>script</b>' })
    expect(posted.status).toBe(303)
    expect(posted.headers.get('cache-control')).toBe('no-store')
    const location = posted.headers.get('location')!
    expect(location).toMatch(/^\/dashboard\/keys\?created=[A-Za-z0-9_-]{22}$/)
    expect(posted.headers.get('set-cookie') ?? '').not.toContain('lbk_')
    const res = await follow(box, posted, alice.cookie)
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const html = await res.text()
    const key = keyIn(html)!
    expect(key).toMatch(/^lbk_[A-Za-z0-9]{40}$/)
    expect(html).toContain('Shown once.')
    expect(html).toContain('data-copy="new-key"')
    expect(html).toContain(
      `curl -H &quot;X-Api-Key: ${key}&quot; &quot;http://localhost:8080/api/qr.json?data=hello&quot;`,
    )
    expect(html).toContain('Your new API key: my &lt;b&gt;script&lt;/b&gt;')
    expect(html).not.toContain('<b>script</b>')

    const rows = keyRows()
    expect(rows).toHaveLength(before.length + 1)
    const row = rows[rows.length - 1]!
    expect(row.account_id).toBe(accountId('alice'))
    expect(row.scopes).toBe('qr')
    expect(row.label).toBe('my <b>script</b>')
    expect(row.hash).toBe(hashKey(key))
    expect(row.prefix).toBe(key.slice(0, 11))
    // The secret is nowhere in the database (only its SHA-256 and an 11-character prefix).
    const dump =
      JSON.stringify(box.db.query('SELECT * FROM api_keys').all()) +
      JSON.stringify(box.db.query('SELECT * FROM web_sessions').all())
    expect(dump).not.toContain(key.slice(11))

    const qr = await box.get('/api/qr.json', { data: 'hello' }, { 'x-api-key': key })
    expect(qr.status).toBe(200)
    const links = await box.post('/api/links.json', {}, { 'x-api-key': key })
    expect(links.status).toBe(403)
    expect(links.body.code).toBe('scope_denied')

    // Shown only on that page, once: the same address again says so; the list shows its prefix, never the key.
    const again = await (await box.request(location, { headers: { cookie: alice.cookie } })).text()
    expect(keyIn(again)).toBeNull()
    expect(again).not.toContain(key)
    expect(again).toContain('Your new key was shown once, and is not shown again')
    const list = await keysPage(alice)
    expect(keyIn(list)).toBeNull()
    expect(list).not.toContain(key)
    expect(list).toContain(`<code>${key.slice(0, 11)}…</code>`)
  })

  test('all scopes are checked by default; a key with links only gets the links.json example', async () => {
    const { alice } = await setup()
    const html = await keysPage(alice)
    for (const scope of ['links', 'qr', 'media', 'mail', 'webhooks'])
      expect(html).toContain(`name="scope" value="${scope}" checked`)
    expect(html).toContain('href="/api/docs"')
    const body = await (await create(alice, { scope: 'links' })).text()
    expect(body).toContain('-d limit=5 &quot;http://localhost:8080/api/links.json&quot;')
    const key = keyIn(body)!
    expect((await box.post('/api/links.json', { limit: '5' }, { 'x-api-key': key })).status).toBe(200)
    expect((await box.get('/api/qr.json', { data: 'x' }, { 'x-api-key': key })).status).toBe(403)
  })

  test('no scope: 303 back to the form, the error tied to the fieldset, the label kept, no key made', async () => {
    const { alice } = await setup()
    const before = keyRows()
    const posted = await postForm(box, alice, '/dashboard/keys', { label: 'kept label' })
    expect(posted.headers.get('location')).toMatch(/^\/dashboard\/keys\?form=[A-Za-z0-9_-]{22}$/)
    const res = await follow(box, posted, alice.cookie)
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('<fieldset class="scopes" aria-describedby="scopes-hint scopes-error">')
    expect(html).toContain('<p class="error" id="scopes-error">Choose at least one scope.</p>')
    expect(html).toContain('value="kept label"')
    expect(html).not.toContain('checked')
    expect(keyIn(html)).toBeNull()
    expect(keyRows()).toEqual(before)

    const unknown = await create(alice, { scope: 'admin' })
    expect(await unknown.text()).toContain(
      '<p class="error" id="scopes-error">Scopes are links, qr, media, mail, webhooks.</p>',
    )
    expect(keyRows()).toEqual(before)

    const badLabel = await create(alice, { scope: 'qr', label: 'a\tb' })
    const b = await badLabel.text()
    expect(b).toContain('aria-describedby="label-hint label-error"')
    expect(b).toContain('id="label-error"')
    expect(keyRows()).toEqual(before)
  })

  test('an account holds at most MAX_ACTIVE_KEYS active keys; creating prunes revoked ones beyond REVOKED_KEYS_KEPT', async () => {
    const { alice } = await setup()
    const id = accountId('alice')
    const revoked = () => keyRows().filter((r) => r.account_id === id && r.revoked !== null)
    // Each creation keeps the REVOKED_KEYS_KEPT latest revoked keys: after the loop, those and the last one.
    for (let i = 0; i < REVOKED_KEYS_KEPT + 5; i++) {
      const k = await box.accounts.createKeyForAccount({ accountId: id, scopes: ['qr'] })
      await box.accounts.revokeKeyOfAccount(id, k.id)
    }
    const revokedBefore = revoked()
    expect(revokedBefore).toHaveLength(REVOKED_KEYS_KEPT + 1)
    const bobsBefore = keyRows().filter((r) => r.account_id !== id)
    expect(keyIn(await (await create(alice, { scope: 'qr' })).text())).not.toBeNull()
    expect(revoked()).toHaveLength(REVOKED_KEYS_KEPT)
    expect(revoked().map((r) => r.id)).toEqual(revokedBefore.slice(1).map((r) => r.id))
    // The list shows them all (bounded by the same numbers).
    expect((await keysPage(alice)).match(/class="tag revoked"/g)).toHaveLength(REVOKED_KEYS_KEPT)
    expect(keyRows().filter((r) => r.account_id !== id)).toEqual(bobsBefore)

    while (keyRows().filter((r) => r.account_id === id && r.revoked === null).length < MAX_ACTIVE_KEYS)
      await box.accounts.createKeyForAccount({ accountId: id, scopes: ['qr'] })
    const count = keyRows().length
    const full = await create(alice, { scope: 'qr' })
    expect(await full.text()).toContain(`An account can hold ${MAX_ACTIVE_KEYS} active keys`)
    expect(keyRows()).toHaveLength(count)
  })
})

describe('list and revoke', () => {
  test('the list shows prefix, label, scopes, created and last used; revoking refuses the key at once (401)', async () => {
    const { alice } = await setup()
    const key = keyIn(await (await create(alice, { scope: 'qr', label: 'cron' })).text())!
    expect((await box.get('/api/qr.json', { data: 'x' }, { 'x-api-key': key })).status).toBe(200)
    const row = keyRows().find((r) => r.hash === hashKey(key))!
    let html = await keysPage(alice)
    const tr = html.match(
      new RegExp(`<tr>\\s*<td data-label="Key"><code>${row.prefix}…</code></td>[\\s\\S]*?</tr>`),
    )![0]
    expect(tr).toContain('<td data-label="Label"><span>cron</span></td>')
    expect(tr).toContain('<span class="tag">qr</span>')
    expect(tr).toMatch(
      /<td class="date" data-label="Last used"><time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time><\/td>/,
    )
    expect(tr).toContain(`href="/dashboard/keys/${row.id}/revoke"`)

    const res = await postForm(box, alice, `/dashboard/keys/${row.id}/revoke`, {})
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard/keys')
    expect(keyRows().find((r) => r.id === row.id)!.revoked).not.toBeNull()
    const refused = await box.get('/api/qr.json', { data: 'x' }, { 'x-api-key': key })
    expect(refused.status).toBe(401)
    expect(refused.body.code).toBe('invalid_key')
    html = await keysPage(alice)
    expect(html).toContain('<span class="tag revoked">revoked</span>')
    expect(html).not.toContain(`href="/dashboard/keys/${row.id}/revoke"`)

    // Revoked already: 404, and it stays as it was.
    const again = await postForm(box, alice, `/dashboard/keys/${row.id}/revoke`, {})
    expect(again.status).toBe(404)
  })

  test("another account's key, an unknown id and a malformed one: 404, and every key left as it was", async () => {
    const { alice } = await setup()
    const bobKey = keyRows().find((r) => r.account_id === accountId('bob'))!
    const before = keyRows()
    for (const id of [String(bobKey.id), '999999', 'abc', '1e3', '-1']) {
      const res = await postForm(box, alice, `/dashboard/keys/${id}/revoke`, {})
      expect(res.status).toBe(404)
      expect(await res.text()).toContain('Key not found')
    }
    expect(keyRows()).toEqual(before)
    // Nor does bob's key show in alice's list.
    expect(await keysPage(alice)).not.toContain(bobKey.prefix)
  })

  test('the key forms without their CSRF token (or from another site) are refused (403) and nothing changes', async () => {
    const { alice, bob } = await setup()
    const own = keyRows().find((r) => r.account_id === accountId('alice'))!
    const before = keyRows()
    const noToken = (path: string, fields: Record<string, string>) =>
      box.request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice.cookie },
        body: new URLSearchParams(fields).toString(),
      })
    for (const [path, fields] of [
      ['/dashboard/keys', { scope: 'qr' }],
      [`/dashboard/keys/${own.id}/revoke`, {}],
    ] as const) {
      const res = await noToken(path, fields)
      expect(res.status).toBe(403)
      expect(keyIn(await res.text())).toBeNull()
      expect((await postForm(box, alice, path, { ...fields, _csrf: bob.csrf })).status).toBe(403)
      expect((await postForm(box, alice, path, fields, { 'sec-fetch-site': 'cross-site' })).status).toBe(403)
    }
    expect(keyRows()).toEqual(before)
  })
})
