// The plain redirect's compact cache (src/links/hot-cache.ts) alone, over a storage of plain objects: reads
// shared and overtaken as the row cache's are, the view of a hit, and the bound in URL characters.
import { expect, test } from 'bun:test'
import { createHotCache, NOT_PLAIN } from '../../src/links/hot-cache'
import type { LinkRow } from '../../src/links/storage/contract'
import { linkRow } from '../support/links'

const rowOf = (id: number, code: string, long_url: string, more: Partial<LinkRow> = {}): LinkRow =>
  linkRow({ id, code, long_url, ...more })

test('a miss on PostgreSQL is one read shared by the visits of that code; one overtaken by a change is answered, not kept', async () => {
  const rows = new Map([['abc', rowOf(1, 'abc', 'https://example.com/a')]])
  let reads = 0
  const store = { byCode: async (code: string) => (reads++, rows.get(code) ?? null) }
  const hot = createHotCache({ store, clock: Date.now, ttlMs: 30_000 })
  const first = hot.find('abc')
  expect(first).toBeInstanceOf(Promise)
  expect(hot.find('abc')).toBe(first)
  hot.forget('abc')
  expect(((await first) as LinkRow).long_url).toBe('https://example.com/a')
  expect(hot.rows).toBe(0)
  await hot.find('abc')
  expect(reads).toBe(2)
  // Kept now: a hit is the view of the slot, synchronously, with the row's fields.
  const hit = hot.find('abc') as LinkRow
  expect(hit).toMatchObject({ id: 1, code: 'abc', long_url: 'https://example.com/a', account_id: 7, expires: null })
  expect(reads).toBe(2)
})

test('a generation is full at its codes or its URL characters; a stopped link is NOT_PLAIN', () => {
  const rows = new Map<string, LinkRow>()
  for (let i = 0; i < 10; i++)
    rows.set(`c${i}`, rowOf(i + 1, `c${i}`, `https://example.com/${'x'.repeat(i < 5 ? 10 : 3_000_000)}`))
  rows.set('off', rowOf(99, 'off', 'https://example.com/off', { disabled: 'spam' }))
  const store = { byCode: async () => null, byCodeNow: (code: string) => rows.get(code) ?? null }
  const hot = createHotCache({
    store,
    clock: Date.now,
    ttlMs: 30_000,
    generation: 4,
    stopped: (row) => row.disabled !== null,
  })
  for (let i = 0; i < 5; i++) hot.find(`c${i}`)
  // Four codes a generation: the fifth began a new one.
  expect(hot.rows).toBe(5)
  for (let i = 5; i < 10; i++) expect((hot.find(`c${i}`) as LinkRow).id).toBe(i + 1)
  // Two URLs of 3 MB fill a generation's 8 million characters: never more than about twice that is held.
  expect(hot.rows).toBeLessThanOrEqual(4)
  expect(hot.find('off')).toBe(NOT_PLAIN)
  expect(hot.find('nosuch')).toBeNull()
})

test('one code on two domains (SPEC §13): two slots, each its own link, read, kept and forgotten apart, on both engines', async () => {
  const rows = new Map([
    ['/abc', rowOf(1, 'abc', 'https://example.com/home')],
    ['go.test/abc', rowOf(2, 'abc', 'https://example.com/away', { domain: 'go.test' })],
  ])
  const byCode = (code: string, domain = '') => rows.get(`${domain}/${code}`) ?? null
  const pg = createHotCache({ store: { byCode: async (c, d) => byCode(c, d) }, clock: Date.now, ttlMs: 30_000 })
  const sqlite = createHotCache({
    store: { byCode: async () => null, byCodeNow: byCode },
    clock: Date.now,
    ttlMs: 30_000,
  })
  for (const hot of [pg, sqlite]) {
    const [home, away] = [await hot.find('abc'), await hot.find('abc', 'go.test')]
    expect((home as LinkRow).id).toBe(1)
    expect((away as LinkRow).id).toBe(2)
    // Hits now, each the view of its own slot, domain included.
    expect(hot.find('abc', 'go.test')).toMatchObject({ id: 2, domain: 'go.test', long_url: 'https://example.com/away' })
    expect(hot.find('abc')).toMatchObject({ id: 1, domain: '', long_url: 'https://example.com/home' })
    expect(await hot.find('abc', 'x.test')).toBeNull()
    expect(hot.rows).toBe(2)
    // A change of the other domain's link forgets its slot only (keys: codeKey).
    hot.forget('abc@go.test')
    expect(hot.rows).toBe(1)
    expect(hot.find('abc')).toMatchObject({ id: 1 })
  }
})
