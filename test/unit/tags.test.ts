// Tags on links and links.json's tag= and q= (SPEC §2a), through the real app and SQLite file.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sqliteLinkStorage } from '../../src/links/storage/sqlite'
import { makeBox, type TestBox } from '../support/app'

let box: TestBox
let alice: string
let bob: string

beforeAll(async () => {
  // Webhook receivers on 127.0.0.1 are a private address: allowed here (the events are only written, never sent).
  box = await makeBox({ media: { allow_private_networks: true } })
  alice = await box.account('alice')
  bob = await box.account('bob')
})
afterAll(() => box.cleanup())

const as = (key: string) => ({ 'x-api-key': key })
const create = (fields: Record<string, string>, key = alice) => box.post('/api/getLink.json', fields, as(key))
const update = (fields: Record<string, string>, key = alice) => box.post('/api/update.json', fields, as(key))
const list = (fields: Record<string, string>, key = alice) => box.post('/api/links.json', fields, as(key))
const tagRows = (code: string) =>
  box.db
    .query(
      'SELECT t.tag, t.account_id FROM link_tags t JOIN links l ON l.id = t.link_id WHERE l.code = ? ORDER BY t.tag',
    )
    .all(code)

describe('tags on getLink.json and update.json', () => {
  test('stored lower-case, each once, sorted; the record, links.json and the rows carry them', async () => {
    const r = await create({
      url: 'https://example.com/tagged',
      alias: 'tagged1',
      tags: 'News, news ,SPRING-sale,2026',
    })
    expect(r.status).toBe(200)
    expect(r.body.return.tags).toEqual(['2026', 'news', 'spring-sale'])
    expect(tagRows('tagged1')).toEqual([
      { tag: '2026', account_id: expect.any(Number) },
      { tag: 'news', account_id: expect.any(Number) },
      { tag: 'spring-sale', account_id: expect.any(Number) },
    ])
    const listed = (await list({ tag: 'news' })).body.return.links
    expect(listed.map((l: any) => [l.hex, l.tags])).toEqual([['tagged1', ['2026', 'news', 'spring-sale']]])
    // Without tags: an empty array, in the answer and in the list.
    const plain = await create({ url: 'https://example.com/untagged', alias: 'untagged1' })
    expect(plain.body.return.tags).toEqual([])
    expect((await list({ limit: '1' })).body.return.links[0]).toMatchObject({ hex: 'untagged1', tags: [] })
  })

  test('refused with 400 invalid_parameter naming "tags": too many, too long, other characters, an empty item', async () => {
    const cases = [
      Array.from({ length: 11 }, (_, i) => `t${i}`).join(','),
      'a'.repeat(33),
      'two words',
      'café',
      'a,,b',
      'a,',
      '\u212Aelvin', // the Kelvin sign lower-cases to an ASCII "k": refused, not stored as "kelvin"
      'semi;colon',
    ]
    for (const tags of cases) {
      const r = await create({ url: 'https://example.com/bad-tags', tags })
      expect([tags, r.status, r.body.code]).toEqual([tags, 400, 'invalid_parameter'])
      expect(r.body.message).toContain('"tags"')
      const u = await update({ code: 'tagged1', tags })
      expect([tags, u.status]).toEqual([tags, 400])
      expect(u.body.message).toContain('"tags"')
    }
    // Nothing was made or changed.
    expect(
      box.db.query("SELECT count(*) AS n FROM links WHERE long_url = 'https://example.com/bad-tags'").get(),
    ).toEqual({ n: 0 })
    expect(tagRows('tagged1').map((r: any) => r.tag)).toEqual(['2026', 'news', 'spring-sale'])
    // Exactly ten of 32 characters is fine.
    const ten = Array.from({ length: 10 }, (_, i) => `${i}`.padEnd(32, 'x')).join(',')
    expect((await create({ url: 'https://example.com/ten', tags: ten })).body.return.tags).toHaveLength(10)
  })

  test('update.json replaces them, keeps them when not sent, and tags="" removes them', async () => {
    await create({ url: 'https://example.com/upd', alias: 'upd-tags', tags: 'one,two' })
    expect((await update({ code: 'upd-tags', tags: 'Three' })).body.return.tags).toEqual(['three'])
    expect((await update({ code: 'upd-tags', mode: 'preview' })).body.return.tags).toEqual(['three'])
    expect(tagRows('upd-tags').map((r: any) => r.tag)).toEqual(['three'])
    const cleared = await update({ code: 'upd-tags', tags: '' })
    expect(cleared.body.return.tags).toEqual([])
    expect(tagRows('upd-tags')).toEqual([])
  })

  test('the webhook events of link.created and link.updated carry the tags; a deleted link takes its tag rows', async () => {
    const hook = await box.post('/api/webhooks.json', { action: 'create', url: 'http://127.0.0.1:9/hook' }, as(alice))
    expect(hook.status).toBe(200)
    await create({ url: 'https://example.com/hooked', alias: 'hooked', tags: 'hook' })
    await update({ code: 'hooked', tags: 'hook,again' })
    const payloads = box.db
      .query('SELECT type, payload FROM webhook_events WHERE payload LIKE \'%"hooked"%\' ORDER BY id')
      .all()
      .map((r: any) => [r.type, JSON.parse(r.payload).data.tags])
    expect(payloads).toEqual([
      ['link.created', ['hook']],
      ['link.updated', ['again', 'hook']],
    ])
    const id = (box.db.query("SELECT id FROM links WHERE code = 'hooked'").get() as any).id
    expect((await box.post('/api/delete.json', { code: 'hooked' }, as(alice))).status).toBe(200)
    expect(box.db.query('SELECT count(*) AS n FROM link_tags WHERE link_id = ?').get(id)).toEqual({ n: 0 })
  })
})

describe('links.json tag= and q=', () => {
  beforeAll(async () => {
    await create({ url: 'https://shop.example.com/100%25-off', alias: 'pct', tags: 'sale' })
    await create({ url: 'https://example.com/a_b', alias: 'under', tags: 'misc' })
    await create({ url: 'https://example.com/a-b', alias: 'dash', tags: 'sale,misc' })
    await create({ url: 'https://example.com/aXb', alias: 'plain-x', tags: 'Sale-Extra' })
    // Another account's link with the same tag is never listed for alice.
    await create({ url: 'https://example.com/bobs', alias: 'bobs', tags: 'sale' }, bob)
  })

  test("tag= lists only the caller's links with that tag, newest first, paged with the cursor", async () => {
    const all = (await list({ tag: 'SALE' })).body.return
    expect(all.links.map((l: any) => l.hex)).toEqual(['dash', 'pct'])
    expect(all.next).toBeNull()
    const first = (await list({ tag: 'sale', limit: '1' })).body.return
    expect(first.links.map((l: any) => l.hex)).toEqual(['dash'])
    const second = (await list({ tag: 'sale', limit: '1', cursor: first.next })).body.return
    expect(second.links.map((l: any) => l.hex)).toEqual(['pct'])
    expect(second.next).toBeNull()
    expect((await list({ tag: 'sale' }, bob)).body.return.links.map((l: any) => l.hex)).toEqual(['bobs'])
    expect((await list({ tag: 'nothing-here' })).body.return.links).toEqual([])
    const bad = await list({ tag: 'a b' })
    expect([bad.status, bad.body.code]).toEqual([400, 'invalid_parameter'])
    expect(bad.body.message).toContain('"tag"')
  })

  test('q= matches code, destination or a tag, in any letter case; % and _ are plain characters', async () => {
    const hexes = async (fields: Record<string, string>) =>
      (await list(fields)).body.return.links.map((l: any) => l.hex).sort()
    expect(await hexes({ q: '_' })).toEqual(['under'])
    expect(await hexes({ q: '%' })).toEqual(['pct'])
    expect(await hexes({ q: '100%25-OFF' })).toEqual(['pct'])
    expect(await hexes({ q: 'a_b' })).toEqual(['under'])
    // By code (PLAIN-X), by destination (AXB) and by tag (EXTRA), without regard to case.
    expect(await hexes({ q: 'PLAIN-X' })).toEqual(['plain-x'])
    expect(await hexes({ q: 'AXB' })).toEqual(['plain-x'])
    expect(await hexes({ q: 'EXTRA' })).toEqual(['plain-x'])
    expect(await hexes({ q: 'misc' })).toEqual(['dash', 'under'])
    // With a tag too: both must hold.
    expect(await hexes({ q: 'misc', tag: 'sale' })).toEqual(['dash'])
    // Never another account's.
    expect(await hexes({ q: 'bobs' })).toEqual([])
    const long = await list({ q: 'x'.repeat(201) })
    expect([long.status, long.body.code]).toEqual([400, 'invalid_parameter'])
    expect(long.body.message).toContain('"q"')
  })

  test('q= looks at a bounded window of links per page and says where to go on', async () => {
    const store = sqliteLinkStorage(box.db)
    const accountId = (box.db.query("SELECT id FROM accounts WHERE name = 'alice'").get() as any).id
    const ids = (
      box.db.query('SELECT id FROM links WHERE account_id = ? ORDER BY id DESC').all(accountId) as any[]
    ).map((r) => r.id)
    // A window of 2 links: the newest two are looked at, none of them matches "_", and the window was full.
    const w = await store.pageMatching(accountId, Number.MAX_SAFE_INTEGER, '', '%\\_%', 10, 2)
    expect(w.rows).toEqual([])
    expect(w.full).toBe(true)
    expect(w.floor).toBe(ids[1])
    // Walking on window by window finds the match, and the last window is not full.
    let before = Number.MAX_SAFE_INTEGER
    const found: string[] = []
    for (let i = 0; i < ids.length; i++) {
      const page = await store.pageMatching(accountId, before, '', '%\\_%', 10, 2)
      found.push(...page.rows.map((r) => r.code))
      if (!page.full) break
      before = page.floor
    }
    expect(found).toEqual(['under'])
  })
})
