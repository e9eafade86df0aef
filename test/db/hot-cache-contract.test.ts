// The plain redirect's compact cache (src/links/hot-cache.ts) on both engines: what it hands out, its bound
// (two generations of `hotGeneration` codes), and every way a code leaves it — a change of this service or of
// another on the change feed, a resync, the TTL, and a new generation of the gate's verdicts.
import { describe, expect, test } from 'bun:test'
import type { Caller } from '../../src/kernel/caller'
import { createClickRecorder } from '../../src/clicks/recorder'
import { countsWriter } from '../../src/clicks/writer'
import { localChangeFeed, type ChangeFeed } from '../../src/db/changes'
import { postgresStorages } from '../../src/app/storages-postgres'
import { createEvents } from '../../src/kernel/events'
import { LINK_CACHE_TTL_MS } from '../../src/links/cache'
import { NOT_PLAIN } from '../../src/links/hot-cache'
import { createLinkService } from '../../src/links/service'
import type { LinkRow } from '../../src/links/storage/contract'
import { testConfig } from '../support/app'
import { engineHarness } from '../support/engines'
import { sqliteLinkDeps } from '../support/links'

const engines = engineHarness()
const admin: Caller = { accountId: 0, accountName: 'admin', admin: true, scopes: new Set(), keyId: null, via: 'key' }

interface Setup {
  feed?: ChangeFeed
  stopped?: (row: LinkRow) => boolean
  gateGeneration?: () => number
}

/** A link service of each engine with a tiny compact cache, counting the reads of its storage. */
const ENGINES = {
  async sqlite(s: Setup, clock: () => number) {
    const db = engines.sqlite('linkbox-hot-cache-')
    const deps = sqliteLinkDeps(db.main)
    const reads: string[] = []
    const store = {
      ...deps.links,
      byCode: (code: string) => (reads.push(code), deps.links.byCode(code)),
      byCodeNow: (code: string) => (reads.push(code), deps.links.byCodeNow!(code)),
    }
    const recorder = createClickRecorder(db.main, { writeOn: 'main' })
    const links = createLinkService({
      ...deps,
      links: store,
      config: testConfig(db.dir),
      recorder,
      events: createEvents(),
      hotGeneration: 2,
      clock,
      changes: s.feed,
      stopped: s.stopped,
      gateGeneration: s.gateGeneration,
    })
    return { links, reads, close: () => (links.close(), db.close()) }
  },
  async postgres(s: Setup, clock: () => number) {
    const pg = await engines.postgres()
    const dir = engines.tracked('linkbox-hot-cache-pg-')
    const st = postgresStorages(pg.pool(4))
    const reads: string[] = []
    const store = { ...st.links, byCode: (code: string) => (reads.push(code), st.links.byCode(code)) }
    const recorder = createClickRecorder(null, { writer: countsWriter(st.counts), log: () => {} })
    const links = createLinkService({
      links: store,
      counts: st.counts,
      queue: st.queue,
      config: testConfig(dir),
      recorder,
      events: createEvents(),
      hotGeneration: 2,
      clock,
      changes: s.feed,
      stopped: s.stopped,
      gateGeneration: s.gateGeneration,
    })
    return { links, reads, close: () => (links.close(), pg.close()) }
  },
}

for (const [engine, make] of Object.entries(ENGINES)) {
  describe(`the compact link cache on ${engine}`, () => {
    test('a plain link is read once and then answered from memory; other links are NOT_PLAIN; the bound holds', async () => {
      const now = Date.UTC(2026, 11, 7, 12)
      const node = await make({}, () => now)
      const { links, reads } = node
      try {
        const plain = (await links.create({ url: 'https://example.com/plain' }, null)).hex
        const first = await links.hotLink(plain)
        expect(first).not.toBeNull()
        expect((first as LinkRow).long_url).toBe('https://example.com/plain')
        expect((first as LinkRow).code).toBe(plain)
        // A hit: synchronous, no read.
        const hit = links.hotLink(plain)
        expect(hit).not.toBeInstanceOf(Promise)
        expect((hit as LinkRow).long_url).toBe('https://example.com/plain')
        expect(reads.filter((c) => c === plain)).toHaveLength(1)
        // A page, a password, a limit: the router's (it reads the whole row).
        for (const input of [
          { url: 'https://example.com/p', mode: 'preview' },
          { url: 'https://example.com/s', password: 'secret-pass' },
          { url: 'https://example.com/l', max_visits: 3 },
        ]) {
          const code = (await links.create(input, null)).hex
          expect(await links.hotLink(code)).toBe(NOT_PLAIN)
          expect(links.hotLink(code)).toBe(NOT_PLAIN)
        }
        // Rules: the whole row, for destinations.ts.
        const routed = (
          await links.create(
            { url: 'https://example.com/r', rules: [{ device: ['mobile'], url: 'https://m.example.com/' }] },
            null,
          )
        ).hex
        expect(((await links.hotLink(routed)) as LinkRow).rules).not.toBeNull()
        expect(await links.hotLink('nosuch7')).toBeNull()
        // Two generations of two codes: never more than four held, however many are visited.
        const more: string[] = []
        for (let i = 0; i < 6; i++) more.push((await links.create({ url: `https://example.com/m${i}` }, null)).hex)
        for (const code of more) await links.hotLink(code)
        expect(links.cachedRows).toBeLessThanOrEqual(4)
        // The last visited are held; the first went with its generation.
        expect(links.hotLink(more[5]!)).not.toBeInstanceOf(Promise)
        const before = reads.length
        await links.hotLink(plain)
        expect(reads.length).toBe(before + 1)
      } finally {
        await node.close()
      }
    })

    test('a change here or on another node, a resync, the TTL and a new gate generation each drop a code', async () => {
      let now = Date.UTC(2026, 11, 7, 12)
      const feed = localChangeFeed()
      let resync = () => {}
      const watched: ChangeFeed = {
        ...feed,
        subscribe: (topic, onKeys, onResync) => ((resync = onResync), feed.subscribe(topic, onKeys, onResync)),
      }
      let gate = 0
      const stopped = new Set<string>()
      const node = await make(
        { feed: watched, stopped: (row) => stopped.has(row.code), gateGeneration: () => gate },
        () => now,
      )
      const { links, reads } = node
      const url = async (code: string) => {
        const found = await links.hotLink(code)
        return found === null || found === NOT_PLAIN ? found : found.long_url
      }
      try {
        const code = (await links.create({ url: 'https://example.com/a' }, null)).hex
        expect(await url(code)).toBe('https://example.com/a')
        await links.update({ code, url: 'https://example.com/b' }, admin)
        expect(await url(code)).toBe('https://example.com/b')
        // Another node's change, heard on the feed.
        feed.publish('link', [code])
        const count = reads.length
        expect(await url(code)).toBe('https://example.com/b')
        expect(reads.length).toBe(count + 1)
        resync()
        expect(await url(code)).toBe('https://example.com/b')
        expect(reads.length).toBe(count + 2)
        now += LINK_CACHE_TTL_MS
        expect(await url(code)).toBe('https://example.com/b')
        expect(reads.length).toBe(count + 3)
        // The gate's verdict is taken when the code is kept, and again once its generation changes.
        stopped.add(code)
        expect(await url(code)).toBe('https://example.com/b')
        gate++
        expect(await url(code)).toBe(NOT_PLAIN)
        stopped.delete(code)
        gate++
        expect(await url(code)).toBe('https://example.com/b')
        await links.delete({ code }, admin)
        expect(await url(code)).toBeNull()
      } finally {
        await node.close()
      }
    })
  })
}
