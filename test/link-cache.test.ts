// The cache of visited links (links/service.ts resolve): two generations, so that eviction costs nothing;
// a change or a deletion must reach a row in either generation.
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Caller } from '../src/accounts/service'
import { createClickRecorder } from '../src/clicks/recorder'
import { openDatabase } from '../src/db'
import { createEvents } from '../src/events'
import { createLinkService } from '../src/links/service'
import { tempDir, testConfig } from './support/app'

const dir = tempDir()
const db = openDatabase(join(dir, 'linkbox.db'))
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})
const admin: Caller = { accountId: 0, accountName: 'admin', admin: true, scopes: new Set(), keyId: null, via: 'key' }
// Two rows per generation: the third visited code turns the first two into the old generation.
const links = createLinkService({
  db,
  config: testConfig(dir),
  recorder: createClickRecorder(db, { writeOn: 'main' }),
  events: createEvents(),
  hotGeneration: 2,
})

test('a row in the old generation is dropped when its link changes or goes, and served again after', async () => {
  const codes: string[] = []
  for (let i = 0; i < 5; i++) codes.push((await links.create({ url: `https://example.com/${i}` }, null)).hex)
  const [a, b, c, d] = codes as [string, string, string, string]
  for (const code of [a, b, c]) expect(links.resolve(code)?.long_url).toStartWith('https://example.com/')
  // a and b are in the old generation now, c in the young one.
  await links.update({ code: a, url: 'https://example.org/changed' }, admin)
  expect(links.resolve(a)?.long_url).toBe('https://example.org/changed')
  links.delete({ code: b }, admin)
  expect(links.resolve(b)).toBeNull()
  // Visited again and again across many swaps, a row keeps its latest state.
  for (let round = 0; round < 5; round++) for (const code of [a, c, d, codes[4]!]) expect(links.resolve(code)).not.toBeNull()
  await links.update({ code: d, url: 'https://example.org/d' }, admin)
  expect(links.resolve(d)?.long_url).toBe('https://example.org/d')
  expect(links.resolve(a)?.long_url).toBe('https://example.org/changed')
})
