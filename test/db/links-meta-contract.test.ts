// The title fetch's rows in the links storage contract (LinkMetaStore, issue 40 item 3), ONE suite on both engines:
// due links claimed under a lease (two nodes claiming at once never get the same link), a claim's writes honoured
// only while its lease holds, and the fetched page written only where the link still wants it (title still '',
// destination unchanged, og fields only where ''), with `within` in the same transaction.
import { describe, expect, test } from 'bun:test'
import { CODE_TAKEN, type LinkRow, type LinkStorage, type NewLink } from '../../src/links/storage/contract'
import { sqliteLinkStorage } from '../../src/links/storage/sqlite'
import { postgresLinkStorage } from '../../src/links/storage/postgres'
import { engineHarness, postgresNotes, sqliteNotes } from '../support/engines'

interface Engine {
  node(): LinkStorage<any>
  account(name: string): Promise<number>
  tag(linkId: number, tag: string, accountId: number): Promise<void>
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-meta-')
  return {
    node: () => sqliteLinkStorage(connect()),
    account: async (name) =>
      Number(
        (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
      ),
    tag: async (linkId, tag, accountId) =>
      void main.query('INSERT INTO link_tags (link_id, tag, account_id) VALUES (?, ?, ?)').run(linkId, tag, accountId),
    ...sqliteNotes(main),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node: () => postgresLinkStorage(pool(10)),
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    tag: async (linkId, tag, accountId) =>
      void (await main.sql`INSERT INTO link_tags (link_id, tag, account_id) VALUES (${linkId}, ${tag}, ${accountId})`),
    ...postgresNotes(main),
    close,
  }
}

const T0 = 1_800_000_000_000
const LEASE = 60_000
const newLink = (code: string, o: Partial<NewLink> = {}): NewLink => ({
  code,
  long_url: `https://example.com/${code}`,
  account_id: null,
  mode: 'redirect',
  password_hash: null,
  created: T0,
  expires: null,
  max_visits: null,
  rules: null,
  split: null,
  ...o,
})
const PAGE = { title: 'The page', og_title: 'OG title', og_description: 'OG description' }

async function made(store: LinkStorage<any>, link: NewLink): Promise<LinkRow> {
  const row = await store.insert(link, [])
  if (row === CODE_TAKEN) throw new Error(`the code ${link.code} was taken`)
  return row
}

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('the title fetch on %s', (_name, makeEngine) => {
  test('claimMeta takes due links only, the earliest, at most `limit`, and moves them to the lease; nextMetaDue', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      expect(await a.nextMetaDue()).toBeNull()
      await made(a, newLink('none'))
      const late = await made(a, newLink('late', { meta_due: T0 + 500 }))
      const second = await made(a, newLink('second', { meta_due: T0 + 20 }))
      const first = await made(a, newLink('first', { meta_due: T0 + 10 }))
      const third = await made(a, newLink('third', { meta_due: T0 + 30 }))
      expect(await a.nextMetaDue()).toBe(T0 + 10)
      const claimed = await a.claimMeta(T0 + 100, T0 + 100 + LEASE, 2)
      const byCode = (x: LinkRow, y: LinkRow) => (x.code < y.code ? -1 : 1)
      expect(claimed.sort(byCode).map((r) => [r.code, r.meta_due])).toEqual([
        ['first', T0 + 100 + LEASE],
        ['second', T0 + 100 + LEASE],
      ])
      expect(claimed[0]).toEqual({ ...first, meta_due: T0 + 100 + LEASE })
      expect((await a.claimMeta(T0 + 100, T0 + 100 + LEASE, 10)).map((r) => r.code)).toEqual(['third'])
      // Nothing due before the leases run out, but the one not yet due.
      expect(await a.claimMeta(T0 + 200, T0 + 200 + LEASE, 10)).toEqual([])
      expect(await a.nextMetaDue()).toBe(late.meta_due)
      // A lease that ran out: claimed again (a node that died while fetching).
      const again = await a.claimMeta(T0 + 100 + LEASE, T0 + 100 + 2 * LEASE, 10)
      expect(again.map((r) => r.code).sort()).toEqual(['first', 'late', 'second', 'third'])
      expect([second.meta_due, third.meta_due]).toEqual([T0 + 20, T0 + 30])
    } finally {
      await e.close()
    }
  })

  test('two nodes claiming at once: each due link goes to one of them, none to both, none left', async () => {
    const e = await makeEngine()
    try {
      const [a, b, seed] = [e.node(), e.node(), e.node()]
      for (let round = 0; round < 5; round++) {
        const codes: string[] = []
        for (let i = 0; i < 30; i++) {
          const code = `r${round}-${i}`
          codes.push(code)
          await made(seed, newLink(code, { meta_due: T0 + i }))
        }
        const now = T0 + 1_000 + round * 10 * LEASE
        // Small claims, over and over from both sides, as two fetchers with two slots each would.
        const take = async (store: LinkStorage<any>, lease: number) => {
          const got: string[] = []
          for (;;) {
            const rows = await store.claimMeta(now, lease, 2)
            if (rows.length === 0) return got
            got.push(...rows.map((r) => r.code))
          }
        }
        const [fromA, fromB] = await Promise.all([take(a, now + LEASE), take(b, now + LEASE + 1)])
        expect(fromA.filter((c) => fromB.includes(c))).toEqual([])
        expect([...fromA, ...fromB].sort()).toEqual([...codes].sort())
        for (const code of codes) {
          const row = (await seed.byCode(code))!
          expect(row.meta_due).toBe(fromA.includes(code) ? now + LEASE : now + LEASE + 1)
          // Done with: cleared, so that the next round sees only its own.
          expect(await seed.deferMeta(row.id, row.meta_due!, null)).toBe(true)
        }
      }
      expect(await a.nextMetaDue()).toBeNull()
    } finally {
      await e.close()
    }
  })

  test('deferMeta moves or clears a claimed link only while the claim holds', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const link = await made(a, newLink('defer', { meta_due: T0 }))
      const [claimed] = await a.claimMeta(T0, T0 + LEASE, 1)
      expect(await b.deferMeta(link.id, T0 + 1, T0 + 5)).toBe(false)
      expect(await b.deferMeta(link.id, claimed!.meta_due!, T0 + 5)).toBe(true)
      expect((await a.byCode('defer'))!.meta_due).toBe(T0 + 5)
      // The lease it had is gone: its holder's later write changes nothing.
      expect(await a.deferMeta(link.id, T0 + LEASE, null)).toBe(false)
      const [reclaimed] = await b.claimMeta(T0 + 5, T0 + 5 + LEASE, 1)
      expect(await b.deferMeta(link.id, reclaimed!.meta_due!, null)).toBe(true)
      expect(await a.byCode('defer')).toEqual({ ...link, meta_due: null })
    } finally {
      await e.close()
    }
  })

  test('fillMeta: the title and the og defaults where empty, meta_due cleared, `within` with the row and its tags', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const link = await made(a, newLink('fill', { account_id: alice, og_title: 'Mine', meta_due: T0 }))
      await e.tag(link.id, 'sale', alice)
      await e.tag(link.id, 'a', alice)
      const [claimed] = await b.claimMeta(T0, T0 + LEASE, 1)
      const seen: [LinkRow, readonly string[]][] = []
      const written = await b.fillMeta(link.id, claimed!.meta_due!, link.long_url, PAGE, T0 + 7, (tx, row, tags) => {
        seen.push([row, tags])
        return e.note(tx, `filled ${row.code}`)
      })
      const expected = {
        ...link,
        title: 'The page',
        og_title: 'Mine',
        og_description: 'OG description',
        meta_due: null,
        updated: T0 + 7,
      }
      expect(written).toEqual(expected)
      expect(seen).toEqual([[expected, ['a', 'sale']]])
      expect(await a.byCode('fill')).toEqual(expected)
      expect(await e.notes()).toEqual(['filled fill'])
      // Done: a second write of the same claim finds the claim gone.
      expect(await b.fillMeta(link.id, claimed!.meta_due!, link.long_url, PAGE, T0 + 8)).toBeNull()
    } finally {
      await e.close()
    }
  })

  test('fillMeta writes nothing but the clearing where the link no longer wants it; nothing at all without the claim', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const titled = await made(a, newLink('titled', { meta_due: T0 }))
      const moved = await made(a, newLink('moved', { meta_due: T0 }))
      const bare = await made(a, newLink('bare', { meta_due: T0 }))
      const lost = await made(a, newLink('lost', { meta_due: T0 }))
      const claims = new Map((await b.claimMeta(T0, T0 + LEASE, 10)).map((r) => [r.code, r.meta_due!]))
      expect(claims.size).toBe(4)
      // The owner set a title while the page was fetched: it stays, and no og default is written either.
      await a.change(titled, { title: 'Set by hand' }, undefined, T0 + 1, () => true)
      expect(await b.fillMeta(titled.id, claims.get('titled')!, titled.long_url, PAGE, T0 + 2)).toBeNull()
      expect(await a.byCode('titled')).toMatchObject({ title: 'Set by hand', og_title: '', meta_due: null })
      // The destination changed meanwhile: nothing of the old page; due again at once, for the new one.
      await a.change(moved, { long_url: 'https://example.org/new' }, undefined, T0 + 1, () => true)
      expect(await b.fillMeta(moved.id, claims.get('moved')!, moved.long_url, PAGE, T0 + 3)).toBeNull()
      expect(await a.byCode('moved')).toMatchObject({ title: '', og_title: '', meta_due: T0 + 3 })
      // A page that says nothing: cleared, not changed.
      const empty = { title: '', og_title: '', og_description: '' }
      expect(await b.fillMeta(bare.id, claims.get('bare')!, bare.long_url, empty, T0 + 4)).toBeNull()
      expect(await a.byCode('bare')).toEqual({ ...bare, meta_due: null })
      // Another node took the link after this claim's lease ran out: this node writes nothing.
      const taken = await a.claimMeta(T0 + LEASE, T0 + 2 * LEASE, 10)
      expect(taken.map((r) => r.code).sort()).toEqual(['lost', 'moved'])
      expect(await b.fillMeta(lost.id, claims.get('lost')!, lost.long_url, PAGE, T0 + LEASE + 1)).toBeNull()
      expect(await a.byCode('lost')).toEqual({ ...lost, meta_due: T0 + 2 * LEASE })
      expect(await a.fillMeta(lost.id, T0 + 2 * LEASE, lost.long_url, PAGE, T0 + LEASE + 2)).toMatchObject({
        title: 'The page',
        og_title: 'OG title',
        meta_due: null,
      })
    } finally {
      await e.close()
    }
  })

  test('a `within` that throws leaves the link as it was, still claimed (its title written in the same transaction is undone)', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const link = await made(a, newLink('undone', { meta_due: T0 }))
      const [claimed] = await a.claimMeta(T0, T0 + LEASE, 1)
      const failing = () => {
        throw new Error('refused')
      }
      await expect(a.fillMeta(link.id, claimed!.meta_due!, link.long_url, PAGE, T0 + 1, failing)).rejects.toThrow(
        'refused',
      )
      expect(await a.byCode('undone')).toEqual({ ...link, meta_due: T0 + LEASE })
    } finally {
      await e.close()
    }
  })
})
