// The links list's bulk forms (issue 38) through the real app and SQLite file, for what a browser test does
// not reach cheaply: the bound of 1,000 links an action changes (and the words saying so), another
// account's codes in a forged form (refused by the service inside the write, and named), an admin's actions
// refused to an account that is not one, and the forms refused without their CSRF token.
import { afterEach, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'
import { follow, signIn, type SignedIn, dashboardCaller } from '../support/dashboard'

let box: TestBox
afterEach(async () => box?.cleanup())

const send = (who: SignedIn, path: string, fields: [string, string][], csrf = who.csrf) =>
  box.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: who.cookie },
    body: new URLSearchParams([['_csrf', csrf], ...fields]).toString(),
  })
const noticeOf = async (who: SignedIn, res: Response) =>
  ((await (await follow(box, res, who.cookie)).text()).match(/<p class="notice [a-z]+" role="\w+">([^<]*)<\/p>/) ??
    [])[1]
const exists = (code: string) => box.db.query('SELECT 1 FROM links WHERE code = ?').get(code) !== null
const tagged = (tag: string) =>
  (box.db.query('SELECT count(*) AS n FROM link_tags WHERE tag = ?').get(tag) as { n: number }).n

async function setup() {
  box = await makeBox()
  await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  await box.accounts.createAccount({ name: 'bob', password: 'battery staple' })
  const callerOf = (name: string) => dashboardCaller(box.db, name)
  return {
    alice: await signIn(box, 'alice', 'correct horse'),
    aliceCaller: callerOf('alice'),
    bobCaller: callerOf('bob'),
  }
}

describe('bulk forms', () => {
  test('"all that match" changes at most 1,000 links and says how many of how many; run again for the rest', async () => {
    const { alice, aliceCaller } = await setup()
    for (let i = 0; i < 1005; i++)
      await box.links.create({ url: `https://example.com/${i}`, alias: `m${i}` }, aliceCaller)
    const fields: [string, string][] = [
      ['scope', 'all'],
      ['q', 'example'],
      ['action', 'add-tag'],
      ['bulk_tag', 'many'],
    ]
    const first = await send(alice, '/dashboard/links-bulk', fields)
    expect(first.headers.get('location')).toBe('/dashboard?q=example')
    expect(await noticeOf(alice, first)).toBe(
      'Tagged 1,000 links with “many” (the first 1,000 of 1,005 that match: run it again for the rest).',
    )
    expect(tagged('many')).toBe(1000)
    // The newest first: the 5 oldest are left, and a second run reaches them (the others already have it).
    expect(
      exists('m0') &&
        !box.db.query("SELECT 1 FROM link_tags t JOIN links l ON l.id = t.link_id WHERE l.code = 'm0'").get(),
    ).toBe(true)
    const confirm = await box.request('/dashboard/links-bulk/delete?scope=all&q=example', {
      headers: { cookie: alice.cookie },
    })
    const html = await confirm.text()
    expect(html).toContain('<h1>Delete 1,000 links?</h1>')
    expect(html).toContain('The first 1,000 of 1,005 that match: run it again for the rest.')
  }, 60_000)

  test("another account's code in a forged form is not deleted, and is named as not done", async () => {
    const { alice, aliceCaller, bobCaller } = await setup()
    await box.links.create({ url: 'https://example.com/a', alias: 'mine' }, aliceCaller)
    await box.links.create({ url: 'https://example.com/b', alias: 'bobs' }, bobCaller)
    const res = await send(alice, '/dashboard/links-bulk/delete', [
      ['code', 'mine'],
      ['code', 'bobs'],
      ['code', 'gone-already'],
    ])
    expect(await noticeOf(alice, res)).toBe(
      'Deleted 1 link. 2 links could not be: bobs (not yours), gone-already (gone).',
    )
    expect(exists('mine')).toBe(false)
    expect(exists('bobs')).toBe(true)
  })

  test('disable and enable are refused to an account that is not an admin; a tag that is not one is refused', async () => {
    const { alice, aliceCaller } = await setup()
    await box.links.create({ url: 'https://example.com/a', alias: 'mine' }, aliceCaller)
    const res = await send(alice, '/dashboard/links-bulk', [
      ['code', 'mine'],
      ['action', 'disable'],
    ])
    expect(await noticeOf(alice, res)).toBe('Choose what to do with the selected links.')
    expect(
      (box.db.query("SELECT disabled FROM links WHERE code = 'mine'").get() as { disabled: null }).disabled,
    ).toBeNull()
    const bad = await send(alice, '/dashboard/links-bulk', [
      ['code', 'mine'],
      ['action', 'add-tag'],
      ['bulk_tag', 'two words'],
    ])
    expect(await noticeOf(alice, bad)).toBe('Type the tag to add or remove: letters, digits, _ and -, at most 32.')
    const none = await send(alice, '/dashboard/links-bulk', [['action', 'delete']])
    expect(await noticeOf(alice, none)).toBe('No link was selected: tick the links first.')
  })

  test('without the CSRF token every bulk form is refused and nothing changes', async () => {
    const { alice, aliceCaller } = await setup()
    await box.links.create({ url: 'https://example.com/a', alias: 'mine' }, aliceCaller)
    for (const path of ['/dashboard/links-bulk', '/dashboard/links-bulk/delete', '/dashboard/tags/delete']) {
      const res = await send(
        alice,
        path,
        [
          ['code', 'mine'],
          ['action', 'add-tag'],
          ['bulk_tag', 'x'],
          ['tag', 'x'],
        ],
        'wrong',
      )
      expect({ path, status: res.status }).toEqual({ path, status: 403 })
    }
    expect(exists('mine')).toBe(true)
    expect(tagged('x')).toBe(0)
  })
})
