// Bans and addresses (issue 36 items 7 and 8), over real sockets: every spelling of a banned address — IPv4 as
// the URL parser reads hex, decimal and short forms, IPv4 inside IPv6 (mapped, NAT64), IPv6 compressed or
// written out, bracketed — is caught at creation and at the visit; an IPv6 address can be banned through the
// dashboard under its own name; and a stopped link's destination is shown nowhere public (its page, keyless
// stats.json and its CSV), while its owner and admins still see it.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { REPORTS } from '../../src/dashboard/admin-tabs'
import { makeBox, type TestBox } from '../support/app'
import { accountWithPassword, follow, overSocket, postForm, signIn, type SignedIn } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

let box: TestBox
let origin: string
let key: string
let admin: SignedIn
const socket = () => overSocket(origin)

beforeAll(async () => {
  box = await makeBox({ server: { host: '127.0.0.1', port: 0 } })
  origin = `http://127.0.0.1:${box.listen().port}`
  key = await box.account('owner')
  await accountWithPassword(box, 'root', 'correct horse battery', true)
  admin = await signIn(socket(), 'root', 'correct horse battery')
})
afterAll(() => box?.cleanup())

const create = async (url: string, fields: Record<string, string> = {}, k = key) => {
  const res = await fetch(`${origin}/api/getLink.json`, {
    method: 'POST',
    headers: { 'x-api-key': k },
    body: new URLSearchParams({ url, ...fields }),
  })
  return { status: res.status, body: (await res.json()) as any }
}
const visit = (code: string) => fetch(`${origin}/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })
/** The dashboard's ban form, as an admin sends it; the page the 303 leads to. */
async function ban(host: string): Promise<string> {
  const res = await postForm(socket(), admin, `${REPORTS}/bans`, { host, reason: 'test' })
  return (await follow(socket(), res, admin.cookie)).text()
}
const unban = async (host: string) =>
  expect((await postForm(socket(), admin, `${REPORTS}/bans/remove`, { host })).status).toBe(303)

// Every way a destination can spell 1.2.3.4, and 2001:db8::1.
const V4_SPELLINGS = [
  'http://1.2.3.4/',
  'http://[::ffff:1.2.3.4]/',
  'http://[::FFFF:0102:0304]/x',
  'http://[0:0:0:0:0:ffff:102:304]/',
  'http://[64:ff9b::1.2.3.4]/',
  'http://0x01020304/',
  'http://16909060/',
  'http://01.02.03.04/',
  'http://1.2.3.4./',
  'https://1.2.3.4:8443/path?q',
]
const V6_SPELLINGS = ['http://[2001:db8::1]/', 'http://[2001:DB8:0:0:0:0:0:1]/', 'http://[2001:0db8:0000::0001]:8080/a']

test('a banned IPv4 address: links to it in any spelling answer 451, and new ones in any spelling are refused; unbanned, they redirect again', async () => {
  const codes: string[] = []
  for (const url of V4_SPELLINGS) {
    const made = await create(url)
    expect(made.status, `${url}: ${JSON.stringify(made.body)}`).toBe(200)
    codes.push(made.body.return.hex)
  }
  expect(await ban('1.2.3.4')).toContain('1.2.3.4 is banned')
  for (const [i, code] of codes.entries()) expect((await visit(code)).status, V4_SPELLINGS[i]).toBe(451)
  for (const url of V4_SPELLINGS) {
    const refused = await create(url)
    expect(refused.status, url).toBe(400)
    expect(refused.body.message, url).toContain('1.2.3.4, which the administrator of this service has banned')
  }
  // Not a neighbour, and not a host whose name merely ends like it.
  expect((await create('http://1.2.3.5/')).status).toBe(200)
  expect((await create('http://[::ffff:1.2.3.5]/')).status).toBe(200)
  // The same address typed another way is the same ban.
  expect(await ban('[::ffff:102:304]')).toContain('1.2.3.4 was banned already')
  await unban('1.2.3.4')
  for (const code of codes) expect((await visit(code)).status).toBe(302)
})

test('an IPv6 address is banned under its own name, whatever its spelling, and holds for every spelling of the destination', async () => {
  const codes: string[] = []
  for (const url of V6_SPELLINGS) {
    const made = await create(url)
    expect(made.status, `${url}: ${JSON.stringify(made.body)}`).toBe(200)
    codes.push(made.body.return.hex)
  }
  const page = await ban('2001:db8::1')
  expect(page).toContain('2001:db8::1 is banned')
  expect(page).not.toContain('2001 is banned')
  for (const typed of ['[2001:DB8::0:1]', 'http://[2001:db8:0:0:0:0:0:1]:8080/x', '2001:0db8::1'])
    expect(await ban(typed)).toContain('2001:db8::1 was banned already')
  expect((await box.abuse.bans()).map((b) => b.host)).toEqual(['2001:db8::1'])
  for (const [i, code] of codes.entries()) expect((await visit(code)).status, V6_SPELLINGS[i]).toBe(451)
  for (const url of V6_SPELLINGS) expect((await create(url)).status, url).toBe(400)
  expect((await create('http://[2001:db8::2]/')).status).toBe(200)
  // A range is not a host: refused by name, rather than cut to its first address.
  expect(await ban('2001:db8::/32')).toContain('a range of addresses')
  expect(await ban('10.0.0.0/8')).toContain('a range of addresses')
  // A name with a path of digits is a name.
  expect(await ban('paths.example/2')).toContain('paths.example is banned')
  await unban('paths.example')
  // Lifted in another spelling too.
  await unban('[2001:DB8:0::1]')
  for (const code of codes) expect((await visit(code)).status).toBe(302)
})

test('`*.host` bans the host and its subdomains', async () => {
  expect(await ban('*.wild.example')).toContain('wild.example is banned')
  expect((await create('https://a.b.wild.example/')).status).toBe(400)
  expect((await create('https://wild.example/')).status).toBe(400)
  await unban('wild.example')
})

test("a stopped link's destination is hidden on its public page, its CSV and keyless stats.json; its owner and admins see it", async () => {
  const made = await create('https://secret-destination.example/landing', {
    split: JSON.stringify([
      { url: 'https://secret-a.example/', weight: 50 },
      { url: 'https://secret-b.example/', weight: 50 },
    ]),
  })
  expect(made.status, JSON.stringify(made.body)).toBe(200)
  const code = made.body.return.hex as string
  expect((await visit(code)).status).toBe(302)
  const stats = async (k?: string) => {
    const res = await fetch(`${origin}/api/stats.json`, {
      method: 'POST',
      headers: k ? { 'x-api-key': k } : {},
      body: new URLSearchParams({ code }),
    })
    return ((await res.json()) as any).return
  }
  // Live: public, as before.
  expect((await stats()).long_url).toBe('https://secret-destination.example/landing')

  expect((await postForm(socket(), admin, `${REPORTS}/link`, { code, reason: 'phishing' })).status).toBe(303)
  expect((await visit(code)).status).toBe(451)
  const publicPage = await (await fetch(`${origin}/${code}+`)).text()
  expect(publicPage).toContain('The destination is hidden')
  expect(publicPage.includes('secret')).toBe(false)
  const csv = await (await fetch(`${origin}/${code}+.csv?table=breakdowns`)).text()
  expect(csv).not.toContain('secret')
  const keyless = await stats()
  expect(keyless.long_url).toBeNull()
  expect(keyless.destinations).toBeUndefined()
  expect(JSON.stringify(keyless)).not.toContain('secret')
  // Another account's key is no better than none.
  expect((await stats(await box.account('stranger'))).long_url).toBeNull()
  // The owner's key and an admin's session still see where it led.
  const owned = await stats(key)
  expect(owned.long_url).toBe('https://secret-destination.example/landing')
  // The one visit went to one of the split's two (chosen by the visitor's day key).
  expect(owned.destinations.map((d: { name: string }) => d.name)).toEqual([
    expect.stringMatching(/^https:\/\/secret-[ab]\.example\/$/),
  ])
  const adminPage = await (
    await fetch(`${origin}/dashboard/links/${code}/stats`, { headers: { cookie: admin.cookie } })
  ).text()
  // (the page breaks a URL at its punctuation with <wbr>)
  expect(adminPage.includes('secret-<wbr>destination.<wbr>example/<wbr>landing')).toBe(true)

  // Enabled again: public again.
  expect((await postForm(socket(), admin, `${REPORTS}/link`, { code, do: 'enable' })).status).toBe(303)
  expect((await stats()).long_url).toBe('https://secret-destination.example/landing')
})
