// Issue 24: an API key's label and scopes are changed in the dashboard (GET and POST
// /dashboard/keys/ID/edit) instead of revoking it and making another, over a real socket: a scope taken away
// is refused by the API from the next request (the key cache too) with the existing scope_denied error, one
// given back works again; only the owner's active keys; scope names and the label checked as at creation;
// every answer a 303 (post → redirect → get).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, readAnswer, type TestBox } from '../support/app'
import { follow, overSocket, postForm, signIn, type SignedIn } from '../support/dashboard'

let box: TestBox
let http: ReturnType<typeof overSocket>
let url: string
let alice: SignedIn
let bob: SignedIn

beforeAll(async () => {
  box = await makeBox({ server: { host: '127.0.0.1', port: 0 } })
  url = `http://127.0.0.1:${box.listen().port}`
  http = overSocket(url)
  await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  await box.accounts.createAccount({ name: 'bob', password: 'battery staple' })
  alice = await signIn(http, 'alice', 'correct horse')
  bob = await signIn(http, 'bob', 'battery staple')
})
afterAll(async () => box?.cleanup())

const row = (id: number) =>
  box.db.query('SELECT label, scopes, revoked FROM api_keys WHERE id = ?').get(id) as {
    label: string
    scopes: string
    revoked: number | null
  }
const page = async (who: SignedIn, path: string) => http.request(path, { headers: { cookie: who.cookie } })
const links = async (key: string) =>
  readAnswer(
    await fetch(`${url}/api/getLink.json`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'url=https://example.com/x',
    }),
  )
const qr = async (key: string) =>
  readAnswer(await fetch(`${url}/api/qr.json?data=hi`, { headers: { 'x-api-key': key } }))

/** The edit form as the page sends it: scopes repeated, the label. */
function edit(who: SignedIn, id: number | string, scopes: string[], label: string, extra: Record<string, string> = {}) {
  const body = new URLSearchParams({ _csrf: who.csrf, label, ...extra })
  for (const s of scopes) body.append('scope', s)
  return http.request(`/dashboard/keys/${id}/edit`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: who.cookie },
    body: body.toString(),
  })
}

const aliceId = () => (box.db.query("SELECT id FROM accounts WHERE name = 'alice'").get() as { id: number }).id

async function aliceKey(
  scopes: ('links' | 'qr' | 'media' | 'mail' | 'webhooks')[] = ['links', 'qr'],
  label = 'script',
) {
  return box.accounts.createKeyForAccount({ accountId: aliceId(), scopes, label })
}

describe('editing a key', () => {
  test('a scope taken away is refused at the next request (scope_denied), given back it works; the label shows in the list', async () => {
    const k = await aliceKey()
    expect((await links(k.key)).status).toBe(200) // and now the caller is cached
    expect((await qr(k.key)).status).toBe(200)

    const form = await page(alice, `/dashboard/keys/${k.id}/edit`)
    expect(form.status).toBe(200)
    const html = await form.text()
    expect(html).toContain('<input type="checkbox" name="scope" value="links" checked>')
    expect(html).toContain('<input type="checkbox" name="scope" value="mail">')
    expect(html).toContain('value="script"')
    expect(html).toContain(`action="/dashboard/keys/${k.id}/edit"`)

    const res = await edit(alice, k.id, ['qr'], 'qr only now')
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/dashboard/keys')
    expect(row(k.id)).toEqual({ label: 'qr only now', scopes: 'qr', revoked: null })
    const refused = await links(k.key)
    expect(refused.status).toBe(403)
    expect(refused.body).toEqual({
      status: 'error',
      code: 'scope_denied',
      message: 'The API key does not have the "links" scope.',
    })
    expect((await qr(k.key)).status).toBe(200)
    const list = await (await follow(http, res, alice.cookie)).text()
    expect(list).toContain(`The key ${k.prefix}… is changed: its scopes are qr.`)
    expect(list).toContain('<td data-label="Label"><span>qr only now</span></td>')
    expect(list).toContain(`<a href="/dashboard/keys/${k.id}/edit" aria-label="Edit the key ${k.prefix}…">Edit</a>`)

    // Given back (in any order, each once): it works again. The CLI's list shows the same.
    expect((await edit(alice, k.id, ['webhooks', 'links', 'links'], 'qr only now')).status).toBe(303)
    expect(row(k.id).scopes).toBe('links,webhooks')
    expect((await links(k.key)).status).toBe(200)
    expect((await qr(k.key)).status).toBe(403)
    expect((await box.accounts.listKeys({ account: 'alice' })).find((x) => x.id === k.id)).toMatchObject({
      scopes: ['links', 'webhooks'],
      label: 'qr only now',
    })
  })

  test('refused: no scope, an unknown scope, a label with a control character — back to the form with the message, nothing changed', async () => {
    const k = await aliceKey(['links'], 'kept')
    const cases: [string[], string, string][] = [
      [[], 'kept', 'Choose at least one scope.'],
      [['links', 'admin'], 'kept', 'Scopes are links, qr, media, mail, webhooks.'],
      [['links'], 'tab\there', 'The key label must not contain control characters'],
      [['links'], 'x'.repeat(201), 'The key label must be at most 200 characters.'],
    ]
    for (const [scopes, label, message] of cases) {
      const res = await edit(alice, k.id, scopes, label)
      expect(res.status).toBe(303)
      const location = res.headers.get('location')!
      expect(location).toMatch(new RegExp(`^/dashboard/keys/${k.id}/edit\\?form=[A-Za-z0-9_-]{22}$`))
      const shown = await (await follow(http, res, alice.cookie)).text()
      expect(shown).toContain(message.replace(/'/g, '&#39;'))
      expect(shown).toContain('aria-invalid="true"')
      // The page shows it once: a reload is the plain form again.
      expect(await (await page(alice, location)).text()).not.toContain(message)
      expect(row(k.id)).toEqual({ label: 'kept', scopes: 'links', revoked: null })
    }
  })

  test("another account's key, a revoked key, no such key: 404 and nothing changed; without the CSRF token: 403", async () => {
    const k = await aliceKey(['links'], 'mine')
    for (const res of [await page(bob, `/dashboard/keys/${k.id}/edit`), await edit(bob, k.id, ['qr'], 'taken')]) {
      expect(res.status).toBe(404)
      expect(await res.text()).toContain('This account has no such')
    }
    expect(row(k.id)).toEqual({ label: 'mine', scopes: 'links', revoked: null })
    const forged = await edit(alice, k.id, ['qr'], 'forged', { _csrf: 'wrong' })
    expect(forged.status).toBe(403)
    expect(row(k.id).scopes).toBe('links')
    expect((await edit(alice, 99999, ['qr'], 'none')).status).toBe(404)
    expect((await edit(alice, 'abc', ['qr'], 'none')).status).toBe(404)

    await box.accounts.revokeKeyOfAccount(aliceId(), k.id)
    const revoked = await edit(alice, k.id, ['qr'], 'after')
    expect(revoked.status).toBe(404)
    expect(row(k.id)).toMatchObject({ label: 'mine', scopes: 'links' })
    const form = await page(alice, `/dashboard/keys/${k.id}/edit`)
    expect(form.status).toBe(404)
    expect(await form.text()).toContain('is revoked: it cannot be changed')
    // A revoked key's row offers no Edit.
    expect(await (await page(alice, '/dashboard/keys')).text()).not.toContain(`href="/dashboard/keys/${k.id}/edit"`)
  })

  test('signed out: the POST goes to sign in and comes back to the edit page; nothing changed', async () => {
    const k = await aliceKey(['links'], 'anon')
    const res = await postForm(http, { cookie: '', csrf: 'x' }, `/dashboard/keys/${k.id}/edit`, {
      scope: 'qr',
      label: 'anon',
    })
    expect(res.status).toBe(303)
    expect(decodeURIComponent(res.headers.get('location')!)).toContain(`/dashboard/keys/${k.id}/edit`)
    expect(row(k.id).scopes).toBe('links')
  })
})
