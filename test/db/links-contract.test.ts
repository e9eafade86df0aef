// Short links' storage contract (src/links/storage/contract.ts), ONE suite run against both engines: SQLite
// (storage/sqlite.ts) and a real PostgreSQL server (storage/postgres.ts); media tickets' suite is
// test/db/media-contract.test.ts. Two "nodes" are two connections (SQLite) or
// two pools (PostgreSQL) on one database. What a node needs: every field of a link read back as written; ids
// never reused; one code, one link, and the loser told so by a typed outcome; exactly max_visits visits given
// under a race; tags replaced whole; the same search and pages on both engines; counters that add up.
import { describe, expect, test } from 'bun:test'
import { containsPattern } from '../../src/links/listing'
import {
  CODE_TAKEN,
  GONE,
  REFUSED,
  TOO_MANY,
  type LinkOrder,
  type LinkRow,
  type LinkStorage,
  type NewLink,
  type RetaggedLink,
} from '../../src/links/storage/contract'
import { sqliteLinkStorage } from '../../src/links/storage/sqlite'
import { postgresLinkStorage } from '../../src/links/storage/postgres'
import { engineHarness, ROLLBACK, sqliteNotes, postgresNotes } from '../support/engines'

interface Node {
  links: LinkStorage<any>
}

/** What the suite needs of an engine: a fresh database, the stores on one more connection (a node), its rows. */
interface Engine {
  node(): Node
  account(name: string): Promise<number>
  deleteAccount(id: number): Promise<void>
  /** Sets a link's click count (the click writer's job: here only to sort by clicks). */
  setClicks(id: number, clicks: number): Promise<void>
  /** link_counts as stored, and the counts of the links table itself, by owner (0: no account). */
  counters(): Promise<{ stored: Record<number, number>; actual: Record<number, number> }>
  tagRows(linkId: number): Promise<{ tag: string; account_id: number | null }[]>
  /** A row written in the caller's transaction (what `within` writes: the webhook event, a form token). */
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-links-')
  const byOwner = (rows: { owner: number; n: number }[]) => Object.fromEntries(rows.map((r) => [r.owner, r.n]))
  return {
    node() {
      const db = connect()
      return { links: sqliteLinkStorage(db) }
    },
    account: async (name) =>
      Number(
        (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
      ),
    deleteAccount: async (id) => void main.query('DELETE FROM accounts WHERE id = ?').run(id),
    setClicks: async (id, clicks) => void main.query('UPDATE links SET clicks = ? WHERE id = ?').run(clicks, id),
    counters: async () => ({
      stored: byOwner(main.query('SELECT owner, links AS n FROM link_counts WHERE links <> 0').all() as any),
      actual: byOwner(
        main.query('SELECT coalesce(account_id, 0) AS owner, count(*) AS n FROM links GROUP BY 1').all() as any,
      ),
    }),
    tagRows: async (linkId) =>
      main.query('SELECT tag, account_id FROM link_tags WHERE link_id = ? ORDER BY tag').all(linkId) as any,
    ...sqliteNotes(main),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  const byOwner = (rows: { owner: string; n: string }[]) =>
    Object.fromEntries(rows.map((r) => [Number(r.owner), Number(r.n)]))
  return {
    node() {
      const sql = pool(10)
      return { links: postgresLinkStorage(sql) }
    },
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    deleteAccount: async (id) => void (await main.sql`DELETE FROM accounts WHERE id = ${id}`),
    setClicks: async (id, clicks) => void (await main.sql`UPDATE links SET clicks = ${clicks} WHERE id = ${id}`),
    counters: async () => ({
      stored: byOwner(await main.sql`SELECT owner, links AS n FROM link_counts WHERE links <> 0`),
      actual: byOwner(await main.sql`SELECT coalesce(account_id, 0) AS owner, count(*) AS n FROM links GROUP BY 1`),
    }),
    tagRows: async (linkId) =>
      (await main.sql`SELECT tag, account_id FROM link_tags WHERE link_id = ${linkId} ORDER BY tag`).map((r: any) => ({
        tag: r.tag,
        account_id: r.account_id === null ? null : Number(r.account_id),
      })),
    ...postgresNotes(main),
    close,
  }
}

const T0 = 1_800_000_000_123
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

/** Inserts a link that must not collide; its row. */
async function made(node: Node, link: NewLink, tags: string[] = []): Promise<LinkRow> {
  const row = await node.links.insert(link, tags)
  if (row === CODE_TAKEN) throw new Error(`the code ${link.code} was taken`)
  return row
}

// JSON text as the service stores it, with what a round trip through a JSON type would change: key order,
// \u escapes beside the letter itself, and a 13-digit number.
const RULES =
  '[{"if":{"country":["FR","BE"],"device":"mobile"},"to":"https://example.com/fr/\\u00e9t\\u00e9?x=1&y=%2F"},{"if":{"after":1800000000123},"to":"https://example.com/é"}]'
const SPLIT = '[{"to":"https://a.example/","weight":70},{"to":"https://b.example/","weight":30}]'

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('links on %s', (_name, makeEngine) => {
  test('every field of a link reads back as written, through the other node; changes write only the fields sent', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const full = newLink('Full_1', {
        long_url: 'https://example.com/path?q=a%20b&x=%25',
        account_id: alice,
        mode: 'frame',
        password_hash: '$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA',
        created: T0,
        expires: T0 + 86_400_000,
        max_visits: 3,
        rules: RULES,
        split: SPLIT,
        title: 'Ünïcode title, "quoted", over\ntwo lines',
        domain: '',
        expired_url: null,
        og_title: '',
        og_description: '',
        og_image: null,
        meta_due: null,
      })
      const row = await made(a, full, ['red', 'blue'])
      const expected: LinkRow = {
        id: row.id,
        code: 'Full_1',
        long_url: full.long_url,
        account_id: alice,
        mode: 'frame',
        password_hash: full.password_hash,
        created: T0,
        updated: T0,
        expires: T0 + 86_400_000,
        clicks: 0,
        bots: 0,
        disabled: null,
        max_visits: 3,
        visits_used: 0,
        rules: RULES,
        split: SPLIT,
        title: 'Ünïcode title, "quoted", over\ntwo lines',
        domain: '',
        expired_url: null,
        og_title: '',
        og_description: '',
        og_image: null,
        meta_due: null,
      }
      expect(row).toEqual(expected)
      expect(await b.links.byCode('Full_1')).toEqual(expected)
      // The row insert hands back is the stored row, key for key in the same order, bare fields too.
      expect(Object.keys(row)).toEqual(Object.keys((await b.links.byCode('Full_1'))!))
      const plain = await made(a, newLink('Bare_1'))
      expect(plain).toEqual((await b.links.byCode('Bare_1'))!)
      expect(plain.id).toBeGreaterThan(row.id)
      expect(await b.links.byIdAndCode(row.id, 'Full_1')).toEqual(expected)
      expect(typeof (await b.links.byCode('Full_1'))!.created).toBe('number')
      expect(await b.links.codeExists('Full_1')).toBe(true)
      expect(await b.links.codeExists('full_1')).toBe(false) // codes are case-sensitive
      expect(await b.links.byCode('full_1')).toBeNull()
      expect(await b.links.tagsOf(row.id)).toEqual(['blue', 'red'])
      expect(await e.tagRows(row.id)).toEqual([
        { tag: 'blue', account_id: alice },
        { tag: 'red', account_id: alice },
      ])

      // Nothing set: nulls stay nulls.
      const bare = await made(b, newLink('bare'))
      expect(await a.links.byCode('bare')).toEqual({
        id: bare.id,
        code: 'bare',
        long_url: 'https://example.com/bare',
        account_id: null,
        mode: 'redirect',
        password_hash: null,
        created: T0,
        updated: T0,
        expires: null,
        clicks: 0,
        bots: 0,
        disabled: null,
        max_visits: null,
        visits_used: 0,
        rules: null,
        split: null,
        title: '',
        domain: '',
        expired_url: null,
        og_title: '',
        og_description: '',
        og_image: null,
        meta_due: null,
      })
      expect(await a.links.tagsOf(bare.id)).toEqual([])

      // A change of some fields leaves the others as stored; a removed limit takes its used visits with it.
      expect(await a.links.takeVisit(row.id)).toBe(true)
      const mine = (r: LinkRow) => r.account_id === alice
      const changed = await b.links.change(
        row,
        { long_url: 'https://example.com/new', expires: null },
        undefined,
        T0 + 5,
        mine,
      )
      expect(changed).toEqual({
        ...expected,
        long_url: 'https://example.com/new',
        expires: null,
        updated: T0 + 5,
        visits_used: 1,
      })
      expect(await a.links.tagsOf(row.id)).toEqual(['blue', 'red'])
      const cleared = await a.links.change(
        row,
        { password_hash: null, max_visits: null, rules: null, split: null, mode: 'preview' },
        ['green'],
        T0 + 6,
        mine,
      )
      expect(cleared).toEqual({
        ...expected,
        long_url: 'https://example.com/new',
        expires: null,
        updated: T0 + 6,
        password_hash: null,
        max_visits: null,
        visits_used: 0,
        rules: null,
        split: null,
        mode: 'preview',
      })
      expect(await b.links.byCode('Full_1')).toEqual(cleared as LinkRow)
      expect(await b.links.tagsOf(row.id)).toEqual(['green'])
      const limited = await b.links.change(row, { max_visits: 7, rules: RULES, expires: T0 + 1 }, [], T0 + 7, mine)
      expect(limited).toMatchObject({
        max_visits: 7,
        visits_used: 0,
        rules: RULES,
        split: null,
        expires: T0 + 1,
        updated: T0 + 7,
      })
      expect(await a.links.tagsOf(row.id)).toEqual([])

      // Re-checked inside the transaction: another code under that id is gone; another owner is refused.
      expect(await a.links.change({ id: row.id, code: 'other' }, { mode: 'redirect' }, undefined, T0 + 8, mine)).toBe(
        GONE,
      )
      expect(await a.links.change(row, { mode: 'redirect' }, ['x'], T0 + 8, () => false)).toBe(REFUSED)
      expect(await a.links.byCode('Full_1')).toMatchObject({ mode: 'preview', updated: T0 + 7 })

      // `within` writes in the change's transaction; when it throws, nothing of the change stays.
      const noted = await a.links.change(row, { mode: 'redirect' }, ['kept'], T0 + 9, mine, (tx, r) =>
        e.note(tx, `changed ${r.code} ${r.mode}`),
      )
      expect(noted).toMatchObject({ mode: 'redirect' })
      const failing = b.links.change(row, { mode: 'frame' }, ['lost'], T0 + 10, mine, () => {
        throw new Error('the webhook event could not be written')
      })
      await expect(failing).rejects.toThrow('the webhook event could not be written')
      expect(await a.links.byCode('Full_1')).toMatchObject({ mode: 'redirect', updated: T0 + 9 })
      expect(await a.links.tagsOf(row.id)).toEqual(['kept'])
      expect(await e.notes()).toEqual(['changed Full_1 redirect'])

      // Disabled and enabled again.
      expect(await b.links.setDisabled(row.id, 'phishing', T0 + 11)).toMatchObject({
        disabled: 'phishing',
        updated: T0 + 11,
      })
      expect(await a.links.byCode('Full_1')).toMatchObject({ disabled: 'phishing' })
      expect(await a.links.setDisabled(row.id, null, T0 + 12)).toMatchObject({ disabled: null })

      // Deleted with its tags, through the other node; what was deleted comes back (for the webhook event).
      const before = (await a.links.byCode('Full_1'))!
      const removed = await b.links.remove(row, (tx, gone) =>
        e.note(tx, `deleted ${gone.row.code} ${gone.tags.join(',')}`),
      )
      expect(removed).toEqual({ row: before, tags: ['kept'] })
      expect(await a.links.byCode('Full_1')).toBeNull()
      expect(await a.links.tagsOf(row.id)).toEqual([])
      expect(await e.tagRows(row.id)).toEqual([])
      expect(await a.links.remove(row)).toBeNull()
      expect(await a.links.change(row, { mode: 'frame' }, undefined, T0, mine)).toBe(GONE)
      expect(await a.links.setTags(row, ['x'])).toBe(false)
      expect(await a.links.setDisabled(row.id, 'x', T0)).toBeNull()
      expect(await e.notes()).toEqual(['changed Full_1 redirect', 'deleted Full_1 kept'])
    } finally {
      await e.close()
    }
  })

  test('title (issue 36): written, changed alone, cleared; search and pageMatching find it (ASCII case folded)', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const mine = (r: LinkRow) => r.account_id === alice
      const row = await made(a, newLink('Titled', { account_id: alice, title: 'Spring SALE 50%_off' }))
      const other = await made(a, newLink('Other', { account_id: alice }))
      expect(await b.links.byCode('Titled')).toMatchObject({ title: 'Spring SALE 50%_off' })
      expect(await b.links.byCode('Other')).toMatchObject({ title: '' })
      const codes = (rows: LinkRow[]) => rows.map((r) => r.code)
      expect(codes(await b.links.search(alice, containsPattern('sale 50%_'), [], 'created', 10, 0))).toEqual(['Titled'])
      expect(await b.links.searchCount(alice, containsPattern('spring'), [], 10)).toBe(1)
      expect(
        codes((await b.links.pageMatching(alice, Number.MAX_SAFE_INTEGER, '', containsPattern('SALE'), 10, 10)).rows),
      ).toEqual(['Titled'])
      expect(
        codes(
          (await b.links.pageMatching(alice, Number.MAX_SAFE_INTEGER, '', containsPattern('sale 50_'), 10, 10)).rows,
        ),
      ).toEqual([])
      // A change of the title alone leaves the rest; another field's change leaves the title.
      expect(await b.links.change(row, { title: 'Ελλάδα, "quoted"' }, undefined, T0 + 1, mine)).toMatchObject({
        title: 'Ελλάδα, "quoted"',
        long_url: row.long_url,
      })
      expect(await a.links.change(row, { mode: 'preview' }, undefined, T0 + 2, mine)).toMatchObject({
        title: 'Ελλάδα, "quoted"',
        mode: 'preview',
      })
      expect(codes(await a.links.search(alice, containsPattern('Ελλάδα'), [], 'created', 10, 0))).toEqual(['Titled'])
      expect(await a.links.change(row, { title: '' }, undefined, T0 + 3, mine)).toMatchObject({ title: '' })
      expect(await b.links.exportPage(alice, 0, 10)).toEqual([
        { ...row, title: '', mode: 'preview', updated: T0 + 3 },
        other,
      ])
    } finally {
      await e.close()
    }
  })

  test('issue 40: a code is unique per domain; expired_url, og_title, og_description, og_image and meta_due written, read through the other node, changed alone', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const mine = (r: LinkRow) => r.account_id === alice
      const home = await made(a, newLink('same', { account_id: alice }))
      const away = await made(
        b,
        newLink('same', { account_id: alice, domain: 'go.example.com', long_url: 'https://x.example/' }),
      )
      expect(await a.links.insert(newLink('same', { domain: 'go.example.com' }), [])).toBe(CODE_TAKEN)
      expect(
        await a.links.insertFresh(newLink('x', { domain: 'go.example.com' }), () => ['same', 'free'], []),
      ).toMatchObject({
        code: 'free',
        domain: 'go.example.com',
      })
      expect(await b.links.byCode('same')).toEqual(home)
      expect(await a.links.byCode('same', 'go.example.com')).toEqual(away)
      expect(await a.links.byCode('same', 's.example.org')).toBeNull()
      expect(await b.links.codeExists('free')).toBe(false)
      expect(await b.links.codeExists('free', 'go.example.com')).toBe(true)
      const full = await made(
        a,
        newLink('Full', {
          account_id: alice,
          expired_url: 'https://example.com/over',
          og_title: 'Ünïcode "card"',
          og_description: 'Two\nlines',
          og_image: 'v1',
          meta_due: T0 + 5,
        }),
      )
      const read = (await b.links.byCode('Full'))!
      expect(read).toEqual(full)
      expect(read).toMatchObject({
        domain: '',
        expired_url: 'https://example.com/over',
        og_image: 'v1',
        meta_due: T0 + 5,
      })
      expect(await b.links.change(full, { og_image: null, meta_due: null }, undefined, T0 + 1, mine)).toEqual({
        ...full,
        og_image: null,
        meta_due: null,
        updated: T0 + 1,
      })
      expect(
        await a.links.change(full, { expired_url: null, og_title: '', og_description: 'd' }, undefined, T0 + 2, mine),
      ).toEqual({
        ...full,
        og_image: null,
        meta_due: null,
        expired_url: null,
        og_title: '',
        og_description: 'd',
        updated: T0 + 2,
      })
    } finally {
      await e.close()
    }
  })

  test('the import lock (issue 36): one holder per account across nodes, renewed only by it, taken over after its lease; release writes `within`', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const bob = await e.account('bob')
      const claims = await Promise.all([
        a.links.claimImport(alice, 'h1', T0 + 1000, T0),
        b.links.claimImport(alice, 'h2', T0 + 1000, T0),
      ])
      expect(claims.filter(Boolean).length).toBe(1)
      const [winner, loser] = claims[0] ? ['h1', 'h2'] : ['h2', 'h1']
      expect(await a.links.importUntil(alice)).toBe(T0 + 1000)
      expect(await b.links.claimImport(bob, 'h3', T0 + 1000, T0)).toBe(true) // another account is not held up
      expect(await a.links.renewImport(alice, loser, T0 + 5000)).toBe(false)
      expect(await a.links.renewImport(alice, winner, T0 + 2000)).toBe(true)
      expect(await b.links.claimImport(alice, loser, T0 + 9000, T0 + 1999)).toBe(false)
      // Past its lease (a node that died mid-import) the lock is taken over; the old holder can no longer renew or free it.
      expect(await b.links.claimImport(alice, loser, T0 + 9000, T0 + 2000)).toBe(true)
      expect(await a.links.renewImport(alice, winner, T0 + 9999)).toBe(false)
      await a.links.releaseImport(alice, winner)
      expect(await a.links.importUntil(alice)).toBe(T0 + 9000)
      await b.links.releaseImport(alice, loser, (tx) => e.note(tx, 'imported'))
      expect(await a.links.importUntil(alice)).toBeNull()
      expect(await e.notes()).toEqual(['imported'])
      expect(await a.links.claimImport(alice, 'h4', T0 + 1000, T0)).toBe(true)
    } finally {
      await e.close()
    }
  })

  test('ids are never reused: a link made after the newest was deleted gets a greater id; its code may be taken again', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const one = await made(a, newLink('one'))
      const two = await made(b, newLink('two'))
      expect(two.id).toBeGreaterThan(one.id)
      expect(await a.links.remove(two)).not.toBeNull()
      const again = await made(a, newLink('two'))
      expect(again.id).toBeGreaterThan(two.id)
      // The row read before the delete names the old link only: it is gone, though its code lives again.
      expect(await b.links.byIdAndCode(two.id, 'two')).toBeNull()
      expect(await b.links.remove(two)).toBeNull()
      expect(await b.links.byCode('two')).toMatchObject({ id: again.id })
    } finally {
      await e.close()
    }
  })

  test('two nodes inserting the same code at once: one link, and the other is told CODE_TAKEN with nothing written', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      for (let round = 0; round < 10; round++) {
        const code = `same${round}`
        const outcomes = await Promise.all(
          [a, b, a, b].map((node, i) =>
            node.links.insert(
              newLink(code, { long_url: `https://example.com/${i}`, account_id: alice }),
              [`t${i}`],
              (tx, r) => e.note(tx, `${r.code} by ${i}`),
            ),
          ),
        )
        const won = outcomes.filter((o): o is LinkRow => o !== CODE_TAKEN)
        expect(won).toHaveLength(1)
        expect(outcomes.filter((o) => o === CODE_TAKEN)).toHaveLength(3)
        const winner = outcomes.indexOf(won[0]!)
        expect(await a.links.byCode(code)).toEqual(won[0]!)
        expect(won[0]!.long_url).toBe(`https://example.com/${winner}`)
        // The losers wrote nothing: not their tags, not their `within` rows.
        expect(await e.tagRows(won[0]!.id)).toEqual([{ tag: `t${winner}`, account_id: alice }])
        expect((await e.notes()).filter((n) => n.startsWith(`${code} `))).toEqual([`${code} by ${winner}`])
      }
      // Taken once committed, whichever node asks; a `within` that throws leaves no link (and the code free).
      expect(await b.links.insert(newLink('same0'), [])).toBe(CODE_TAKEN)
      const failing = a.links.insert(newLink('fails'), ['t'], () => {
        throw new Error('the form token was taken')
      })
      await expect(failing).rejects.toThrow('the form token was taken')
      expect(await b.links.codeExists('fails')).toBe(false)
      expect(await b.links.insert(newLink('fails'), [])).not.toBe(CODE_TAKEN)
      const counted = await e.counters()
      expect(counted.stored).toEqual(counted.actual)
      expect(counted.stored).toEqual({ 0: 1, [alice]: 10 })
    } finally {
      await e.close()
    }
  }, 60_000)

  test('a `within` that is async and throws after an await: the insert rejects and no link is stored (either engine)', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const inserting = a.links.insert(newLink('late'), ['t'], async (tx, r) => {
        await e.note(tx, `${r.code} before the await`)
        await Promise.resolve()
        throw new Error('refused after an await')
      })
      await expect(inserting).rejects.toThrow()
      expect(await b.links.codeExists('late')).toBe(false)
      expect(await b.links.byCode('late')).toBeNull()
      expect((await e.notes()).filter((n) => n.startsWith('late '))).toEqual([])
      // The same for a code drawn by the storage's caller (insertFresh), and the code stays free.
      const fresh = a.links.insertFresh(
        { ...newLink('unused') },
        () => ['late2'],
        [],
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 5))
          throw new Error('refused after an await')
        },
      )
      await expect(fresh).rejects.toThrow()
      expect(await b.links.codeExists('late2')).toBe(false)
      expect(await b.links.insert(newLink('late'), [])).not.toBe(CODE_TAKEN)
      const counted = await e.counters()
      expect(counted.stored).toEqual(counted.actual)
    } finally {
      await e.close()
    }
  })

  test('insertFresh tries the codes it is given in one transaction: the first free one wins, CODE_TAKEN when none is, and flush awaits what is under way', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      await made(b, newLink('Taken1'))
      await made(b, newLink('Taken2'))
      const before = a.links.creations()
      const drawn: string[] = []
      const draw = function* () {
        for (const code of ['Taken1', 'Taken2', 'Fresh1', 'Fresh2']) {
          drawn.push(code)
          yield code
        }
      }
      const row = await a.links.insertFresh(
        { ...newLink('unused', { account_id: alice }) },
        draw,
        ['x', 'a'],
        (tx, r) => e.note(tx, `fresh ${r.code}`),
      )
      expect(row).toMatchObject({ code: 'Fresh1', account_id: alice, long_url: 'https://example.com/unused' })
      // Drawing stops at the first free code; the taken ones wrote nothing.
      expect(drawn).toEqual(['Taken1', 'Taken2', 'Fresh1'])
      expect(await e.tagRows((row as LinkRow).id)).toEqual([
        { tag: 'a', account_id: alice },
        { tag: 'x', account_id: alice },
      ])
      expect(await e.notes()).toEqual(['fresh Fresh1'])
      expect(await b.links.byCode('Taken1')).toMatchObject({ long_url: 'https://example.com/Taken1' })
      // One transaction, one link, whatever the number of codes tried.
      expect(a.links.creations()).toEqual({ commits: before.commits + 1, links: before.links + 1 })
      expect(await a.links.insertFresh(newLink('unused'), () => ['Taken1', 'Fresh1'], [])).toBe(CODE_TAKEN)
      expect(await a.links.insertFresh(newLink('unused'), () => [], [])).toBe(CODE_TAKEN)
      expect(a.links.creations().links).toBe(before.links + 1)
      // Inserts under way are committed (or failed) once flush settles.
      const pending = [
        a.links.insert(newLink('Flush1'), []),
        a.links.insertFresh(newLink('unused'), () => ['Taken1', 'Flush2'], []),
      ]
      let flushed = false
      await a.links.flush().then(() => (flushed = true))
      expect(flushed).toBe(true)
      expect(await b.links.codeExists('Flush1')).toBe(true)
      expect(await b.links.codeExists('Flush2')).toBe(true)
      expect(await Promise.all(pending)).toMatchObject([{ code: 'Flush1' }, { code: 'Flush2' }])
      expect(await a.links.flush()).toBeUndefined()
    } finally {
      await e.close()
    }
  }, 60_000)

  test('creations of one turn go in together: one commit; a code two of them ask for goes to the first; one whose within refuses fails alone', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      await made(b, newLink('Before1'))
      const before = a.links.creations()
      // Started in one turn: the group of the turn.
      const turn = await Promise.all([
        a.links.insert(newLink('Group1', { account_id: alice }), ['t1'], (tx, r) => e.note(tx, `made ${r.code}`)),
        a.links.insert(newLink('Group2'), []),
        a.links.insert(newLink('Group2'), []), // the same alias again: the first asked has it
        a.links.insertFresh(newLink('unused'), () => ['Before1', 'Group1', 'Group3'], ['t3']), // taken, taken in this group, free
        a.links.insert(newLink('Before1'), []),
      ])
      expect(turn.map((r) => (r === CODE_TAKEN ? r : (r as LinkRow).code))).toEqual([
        'Group1',
        'Group2',
        CODE_TAKEN,
        'Group3',
        CODE_TAKEN,
      ])
      expect(a.links.creations()).toEqual({ commits: before.commits + 1, links: before.links + 3 })
      expect(await e.notes()).toEqual(['made Group1'])
      expect(await e.tagRows((turn[3] as LinkRow).id)).toEqual([{ tag: 't3', account_id: null }])
      expect(await b.links.byCode('Group2')).toMatchObject({ long_url: 'https://example.com/Group2' })
      // The rows a group's insert hands back are the stored rows, key for key in the same order: every field
      // set on one, none on another, one made with its third code.
      const full = {
        mode: 'frame' as const,
        password_hash: '$argon2id$v=19$x',
        expires: T0 + 5,
        max_visits: 2,
        rules: RULES,
        split: SPLIT,
      }
      const rows = await Promise.all([
        a.links.insert(newLink('Rows1', { account_id: alice, ...full }), ['r']),
        a.links.insert(newLink('Rows2'), []),
        a.links.insertFresh(
          newLink('unused', { account_id: alice, expires: T0 + 9 }),
          () => ['Before1', 'Rows1', 'Rows3'],
          [],
        ),
        // Text that means something inside an array literal or a VALUES list, and the word NULL, kept as text.
        a.links.insert(
          newLink('Rows4', {
            long_url: 'https://example.com/{"a\\b",NULL} (x)\'y\'',
            password_hash: 'NULL',
            rules: '',
            split: ' {} ',
          }),
          [],
        ),
      ])
      for (const row of rows as LinkRow[]) {
        const stored = (await b.links.byCode(row.code))!
        expect(row).toEqual(stored)
        expect(Object.entries(row)).toEqual(Object.entries(stored))
      }
      expect(rows.map((r) => (r as LinkRow).code)).toEqual(['Rows1', 'Rows2', 'Rows3', 'Rows4'])
      expect(rows[0]).toMatchObject({ account_id: alice, ...full, clicks: 0, bots: 0, disabled: null, visits_used: 0 })
      expect(await b.links.byCode('Rows4')).toMatchObject({
        long_url: 'https://example.com/{"a\\b",NULL} (x)\'y\'',
        password_hash: 'NULL',
        rules: '',
        split: ' {} ',
      })
      expect(a.links.creations()).toEqual({ commits: before.commits + 2, links: before.links + 7 })
      // A refusal inside one creation's transaction: that one fails, the others of its turn are made.
      const refusing = await Promise.allSettled([
        a.links.insert(newLink('Ok1'), ['k'], (tx, r) => e.note(tx, `made ${r.code}`)),
        a.links.insert(newLink('Refused1'), [], () => {
          throw new Error('this form was sent already')
        }),
        a.links.insert(newLink('Ok2'), []),
      ])
      expect(refusing.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
      expect(String((refusing[1] as PromiseRejectedResult).reason)).toContain('this form was sent already')
      expect(await b.links.codeExists('Refused1')).toBe(false)
      expect(await b.links.codeExists('Ok1')).toBe(true)
      expect(await b.links.codeExists('Ok2')).toBe(true)
      expect(await e.notes()).toEqual(['made Group1', 'made Ok1'])
      expect(a.links.creations().links).toBe(before.links + 9)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('change hands `within` the link as written and its tags: those given, or those it has, read in the transaction', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const row = await made(a, newLink('Tagged'), ['b', 'a'])
      const seen: { url: string; tags: readonly string[] }[] = []
      const note = (tx: any, r: LinkRow, tags: readonly string[]) => {
        seen.push({ url: r.long_url, tags })
        return e.note(tx, `${r.code} ${tags.join(',')}`)
      }
      await b.links.change(row, { long_url: 'https://example.com/one' }, undefined, T0 + 1, () => true, note)
      await b.links.change(row, { long_url: 'https://example.com/two' }, ['z', 'c'], T0 + 2, () => true, note)
      expect(seen).toEqual([
        { url: 'https://example.com/one', tags: ['a', 'b'] },
        { url: 'https://example.com/two', tags: ['c', 'z'] },
      ])
      expect(await e.notes()).toEqual(['Tagged a,b', 'Tagged c,z'])
      expect(await a.links.tagsOf(row.id)).toEqual(['c', 'z'])
    } finally {
      await e.close()
    }
  })

  test('tags made from the tags read in the transaction (issue 38): tags added at once on two nodes are all kept', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const row = await made(a, newLink('retagged'), ['old'])
      const add = (tag: string) => (now: string[]) => [...now, tag]
      // Twenty additions at once, half on each node: a list read before the write would lose some of them.
      const tags = [...Array(20)].map((_, i) => `t${String(i).padStart(2, '0')}`)
      await Promise.all(tags.map((t, i) => (i % 2 ? a : b).links.change(row, {}, add(t), T0 + i, () => true)))
      expect(await a.links.tagsOf(row.id)).toEqual(['old', ...tags])
      const seen: (readonly string[])[] = []
      await b.links.change(
        row,
        {},
        (now) => now.filter((t) => t !== 'old'),
        T0 + 30,
        () => true,
        (_tx, _r, t) => {
          seen.push(t)
        },
      )
      expect(seen).toEqual([tags])
      // A function that throws (too many tags) writes nothing.
      const refused = a.links.change(
        row,
        { title: 'lost' },
        () => {
          throw new Error('too many')
        },
        T0 + 31,
        () => true,
      )
      await expect(refused).rejects.toThrow('too many')
      expect(await b.links.byCode('retagged')).toMatchObject({ title: '' })
      expect(await b.links.tagsOf(row.id)).toEqual(tags)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('tag summary, rename, merge and removal (issue 38): one transaction, only the account’s links, events per link', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const bob = await e.account('bob')
      const one = await made(a, newLink('one', { account_id: alice }), ['news', 'old'])
      const two = await made(a, newLink('two', { account_id: alice }), ['old'])
      const three = await made(a, newLink('three', { account_id: alice }), ['news'])
      const bobs = await made(b, newLink('bobs', { account_id: bob }), ['old'])
      await e.setClicks(one.id, 5)
      await e.setClicks(two.id, 2)
      expect(await b.links.tagSummary(alice, 100)).toEqual([
        { tag: 'news', links: 2, clicks: 5 },
        { tag: 'old', links: 2, clicks: 7 },
      ])
      expect(await b.links.tagSummary(alice, 1)).toEqual([{ tag: 'news', links: 2, clicks: 5 }])
      // Rename onto a tag in use: a merge; the link with both keeps one; bob's tag of the same name stays.
      const seen: { code: string; tags: string[]; updated: number }[] = []
      const note = (tx: any, changed: RetaggedLink[]) => {
        seen.push(...changed.map((c) => ({ code: c.row.code, tags: c.tags, updated: c.row.updated })))
        return e.note(tx, changed.map((c) => c.row.code).join(','))
      }
      expect(await a.links.retagAll(alice, 'old', 'news', T0 + 5, 10, note)).toBe(2)
      expect(seen).toEqual([
        { code: 'one', tags: ['news'], updated: T0 + 5 },
        { code: 'two', tags: ['news'], updated: T0 + 5 },
      ])
      expect(await e.notes()).toEqual(['one,two'])
      expect(await b.links.tagsOf(one.id)).toEqual(['news'])
      expect(await b.links.tagsOf(two.id)).toEqual(['news'])
      expect(await b.links.tagsOf(bobs.id)).toEqual(['old'])
      expect(await b.links.tagSummary(alice, 100)).toEqual([{ tag: 'news', links: 3, clicks: 7 }])
      // A plain rename, then a bound: more links than `max` change nothing.
      expect(await b.links.retagAll(alice, 'news', 'daily', T0 + 6, 10)).toBe(3)
      expect(await a.links.retagAll(alice, 'daily', 'weekly', T0 + 7, 2)).toBe(TOO_MANY)
      expect(await a.links.tagsOf(three.id)).toEqual(['daily'])
      // A `within` that throws: nothing changed.
      const failing = a.links.retagAll(alice, 'daily', 'lost', T0 + 8, 10, () => {
        throw new Error('refused')
      })
      await expect(failing).rejects.toThrow('refused')
      expect(await a.links.tagsOf(three.id)).toEqual(['daily'])
      // Removal: the links stay, without the tag; a tag nobody has changes nothing.
      expect(await a.links.retagAll(alice, 'daily', null, T0 + 9, 10)).toBe(3)
      expect(await b.links.tagsOf(one.id)).toEqual([])
      expect(await b.links.byCode('one')).toMatchObject({ updated: T0 + 9 })
      expect(await b.links.tagSummary(alice, 100)).toEqual([])
      expect(await a.links.retagAll(alice, 'daily', null, T0 + 10, 10)).toBe(0)
      expect(await b.links.tagsOf(bobs.id)).toEqual(['old'])
    } finally {
      await e.close()
    }
  }, 60_000)

  test('takeVisit under a race: two nodes, ten visits each at once, on a link limited to 5 give exactly 5', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      for (let round = 0; round < 5; round++) {
        const row = await made(a, newLink(`limited${round}`, { max_visits: 5 }))
        const taken = await Promise.all(
          [...Array(10)].flatMap(() => [a.links.takeVisit(row.id), b.links.takeVisit(row.id)]),
        )
        expect(taken.filter(Boolean)).toHaveLength(5)
        expect(await b.links.byCode(row.code)).toMatchObject({ max_visits: 5, visits_used: 5 })
        expect(await a.links.visitsLeft(row.id)).toBe(0)
        expect(await b.links.takeVisit(row.id)).toBe(false)
      }
      const free = await made(b, newLink('unlimited'))
      expect(await a.links.takeVisit(free.id)).toBe(false)
      expect(await a.links.visitsLeft(free.id)).toBeNull()
      expect(await a.links.visitsLeft(999_999)).toBeNull()
      const two = await made(b, newLink('two-left', { max_visits: 2 }))
      expect(await a.links.visitsLeft(two.id)).toBe(2)
      expect(await a.links.takeVisit(two.id)).toBe(true)
      expect(await b.links.visitsLeft(two.id)).toBe(1)
      // A lower limit set after visits: none left (never a negative count).
      await b.links.change(two, { max_visits: 0 }, undefined, T0, () => true)
      expect(await a.links.visitsLeft(two.id)).toBe(0)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('tags are replaced whole: two nodes setting different sets at once end with one of the two, never a mix', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const row = await made(a, newLink('tagged', { account_id: alice }), ['old'])
      const first = ['a1', 'a2', 'a3', 'shared']
      const second = ['b1', 'b2', 'shared']
      for (let round = 0; round < 20; round++) {
        // setTags on its own and as part of a change, on both nodes at once.
        const results = await Promise.all([
          a.links.setTags(row, first),
          b.links.setTags(row, second),
          round % 2
            ? a.links.change(row, {}, second, T0 + round, () => true)
            : b.links.change(row, {}, first, T0 + round, () => true),
        ])
        expect(results.slice(0, 2)).toEqual([true, true])
        const now = await a.links.tagsOf(row.id)
        expect([first, second]).toContainEqual(now)
        // Each row carries the link's owner (links.json?tag= reads along it).
        expect(await e.tagRows(row.id)).toEqual(now.map((tag) => ({ tag, account_id: alice })))
      }
      // Several links' tags at once; a link without tags is absent; no ids: an empty map.
      const other = await made(b, newLink('other'), ['z', 'm'])
      const none = await made(b, newLink('none'))
      const tags = await b.links.tagsFor([row.id, other.id, none.id, 999_999])
      expect([...tags.keys()].sort()).toEqual([row.id, other.id].sort())
      expect(tags.get(other.id)).toEqual(['m', 'z'])
      expect((await a.links.tagsFor([])).size).toBe(0)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('the links counter of each owner follows creations and deletions on two nodes, and an account’s deletion', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [alice, bob] = [await e.account('alice'), await e.account('bob')]
      const owners = [alice, bob, null]
      const rows = await Promise.all(
        [...Array(30)].map((_, i) => made(i % 2 ? a : b, newLink(`c${i}`, { account_id: owners[i % 3] ?? null }))),
      )
      expect(await a.links.count(alice)).toBe(10)
      expect(await b.links.count(bob)).toBe(10)
      expect(await a.links.total()).toBe(30)
      // Deletions on both nodes at once, some of the same link twice.
      const gone = await Promise.all(
        rows.filter((_, i) => i % 4 === 0).flatMap((r) => [a.links.remove(r), b.links.remove(r)]),
      )
      expect(gone.filter((g) => g !== null)).toHaveLength(8)
      const counted = await e.counters()
      expect(counted.stored).toEqual(counted.actual)
      const left = (owner: number | null) => rows.filter((r, i) => i % 4 !== 0 && r.account_id === owner).length
      expect(await b.links.count(alice)).toBe(left(alice))
      expect(await b.links.count(bob)).toBe(left(bob))
      expect(await a.links.total()).toBe(22)
      // An account deleted: its links stay, without an owner, and are counted as such.
      await e.deleteAccount(bob)
      expect(await a.links.count(bob)).toBe(0)
      const after = await e.counters()
      expect(after.stored).toEqual(after.actual)
      expect(after.stored[0]).toBe(left(null) + left(bob))
      expect(await b.links.total()).toBe(22)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('search, pageMatching and the cursor pages: the expected rows in the expected order, %, _ and \\ taken literally', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const alice = await e.account('alice')
      const bob = await e.account('bob')
      const data = await seed(e, a, alice, bob)
      for (const q of QUERIES) {
        for (const tag of ['', 'red']) {
          const pattern = containsPattern(q)
          const want = data.filter((d) => matches(d, q, tag, alice))
          const newest = [...want].sort((x, y) => y.row.id - x.row.id).map((d) => d.row.code)
          const byClicks = [...want]
            .sort((x, y) => y.row.clicks - x.row.clicks || y.row.id - x.row.id)
            .map((d) => d.row.code)
          const codes = (rows: LinkRow[]) => rows.map((r) => r.code)
          expect({
            q,
            tag,
            got: codes(await b.links.search(alice, pattern, tag ? [tag] : [], 'created', 100, 0)),
          }).toEqual({
            q,
            tag,
            got: newest,
          })
          expect({
            q,
            tag,
            got: codes(await b.links.search(alice, pattern, tag ? [tag] : [], 'clicks', 100, 0)),
          }).toEqual({
            q,
            tag,
            got: byClicks,
          })
          expect(codes(await a.links.search(alice, pattern, tag ? [tag] : [], 'clicks', 3, 2))).toEqual(
            byClicks.slice(2, 5),
          )
          expect(await a.links.searchCount(alice, pattern, tag ? [tag] : [], 1000)).toBe(want.length)
          expect(await a.links.searchCount(alice, pattern, tag ? [tag] : [], 2)).toBe(Math.min(2, want.length))
          // links.json?q=: a window of 4 links at a time, 2 matches a page at most, followed to the end.
          const walked: string[] = []
          let before = Number.MAX_SAFE_INTEGER
          for (let pages = 0; ; pages++) {
            expect(pages).toBeLessThan(100)
            const { rows, floor, full } = await b.links.pageMatching(alice, before, tag, pattern, 3, 4)
            const more = rows.length > 2
            const page = more ? rows.slice(0, 2) : rows
            walked.push(...codes(page))
            const next = more ? page[page.length - 1]!.id : full ? floor : null
            if (next === null) break
            before = next
          }
          expect({ q, tag, walked }).toEqual({ q, tag, walked: newest })
        }
      }
      // The whole row, not only the code.
      const full = data.find((d) => d.row.code === 'Pct-50%')!.row
      expect(await a.links.search(alice, containsPattern('50%'), [], 'created', 10, 0)).toEqual([full])
      // Another account's links are never found; a search of an account without links finds none.
      expect(await a.links.search(bob, '%', [], 'created', 100, 0)).toEqual([
        data.find((d) => d.row.account_id === bob)!.row,
      ])
      expect(await a.links.searchCount(999_999, '%', [], 100)).toBe(0)
      expect(await a.links.pageMatching(999_999, Number.MAX_SAFE_INTEGER, '', '%', 10, 10)).toEqual({
        rows: [],
        floor: 0,
        full: false,
      })

      // links.json without q: newest first by cursor; with a tag: along the tag; the export: oldest first.
      const mine = data.filter((d) => d.row.account_id === alice).map((d) => d.row)
      const desc = [...mine].sort((x, y) => y.id - x.id)
      const walk = async (next: (cursor: number) => Promise<LinkRow[]>, start: number) => {
        const out: LinkRow[] = []
        for (let cursor = start, rows = await next(cursor); rows.length > 0; rows = await next(cursor)) {
          out.push(...rows)
          cursor = rows[rows.length - 1]!.id
        }
        return out
      }
      expect(await walk((c) => a.links.page(alice, c, 3), Number.MAX_SAFE_INTEGER)).toEqual(desc)
      const red = desc.filter((r) => data.find((d) => d.row.id === r.id)!.tags.includes('red'))
      expect(red.length).toBeGreaterThan(3)
      expect(await walk((c) => b.links.pageByTag(alice, 'red', c, 2), Number.MAX_SAFE_INTEGER)).toEqual(red)
      expect(await walk((c) => b.links.exportPage(alice, c, 4), 0)).toEqual([...mine].sort((x, y) => x.id - y.id))
      expect(await b.links.pageByTag(alice, 'RED', Number.MAX_SAFE_INTEGER, 10)).toEqual([]) // a tag is matched exactly
      expect(await a.links.count(alice)).toBe(mine.length)
    } finally {
      await e.close()
    }
  }, 60_000)
})

/** One seeded link: its row as stored (clicks included) and its tags. */
interface Seeded {
  row: LinkRow
  tags: string[]
}

// Codes, destinations and tags with ASCII case differences, LIKE's own characters and a non-ASCII letter
// (whose case is NOT folded: SQLite's LIKE folds ASCII only, and PostgreSQL's ILIKE on COLLATE "C" text too).
const SEED: [code: string, url: string, tags: string[]][] = [
  ['abcDEF', 'https://example.com/plain', ['red']],
  ['ABCdef2', 'https://example.com/UPPER/Path', []],
  ['Pct-50%', 'https://example.com/discount', ['red', 'sale']],
  ['pct50', 'https://example.com/50-percent', []],
  ['under_score', 'https://example.com/a', ['red']],
  ['underXscore', 'https://example.com/b', []],
  ['back\\slash', 'https://example.com/c', []],
  ['backslash', 'https://example.com/d\\e', ['red']],
  ['café', 'https://example.com/É', ['blue']],
  ['CAFÉ2', 'https://example.com/é', []],
  ['tagonly', 'https://example.com/x', ['percent_tag', 'red']],
  ['x', 'https://EXAMPLE.com/Y?z=%25', ['blue', 'red']],
  ['y', 'https://example.org/', []],
]
const QUERIES = [
  'abc',
  'ABC',
  'Def',
  '%',
  '50%',
  '_',
  'r_s',
  'under_',
  '\\',
  'k\\s',
  'd\\e',
  'é',
  'É',
  'caf',
  'RED',
  'percent_',
  'example.COM',
  'nothing',
  '%25',
]

/** The service's meaning of a search: the query as a literal substring of the code, the destination or a tag, ASCII letters folded. */
function matches(d: Seeded, q: string, tag: string, accountId: number): boolean {
  const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase())
  const hit = (s: string) => fold(s).includes(fold(q))
  return (
    d.row.account_id === accountId &&
    (tag === '' || d.tags.includes(tag)) &&
    (hit(d.row.code) || hit(d.row.long_url) || d.tags.some(hit))
  )
}

async function seed(e: Engine, node: Node, alice: number, bob: number): Promise<Seeded[]> {
  const out: Seeded[] = []
  for (const [i, [code, url, tags]] of SEED.entries()) {
    const row = await made(node, newLink(code, { long_url: url, account_id: alice, created: T0 + i }), tags)
    // Clicks with ties, so that the order by clicks falls back on the id.
    const clicks = [5, 3, 5, 0, 9, 3, 1, 5, 2, 0, 7, 3, 1][i]!
    await e.setClicks(row.id, clicks)
    out.push({ row: { ...row, clicks }, tags })
  }
  const bobs = await made(node, newLink('bobs', { long_url: 'https://example.com/abc', account_id: bob }), ['red'])
  out.push({ row: bobs, tags: ['red'] })
  // One without an account, matching everything alice's do.
  await made(node, newLink('abcnobody', { long_url: 'https://example.com/abc' }), ['red'])
  return out
}

describe('links: the same answers from both engines', () => {
  test('search, searchCount, pageMatching, page, pageByTag and exportPage give equal rows for the same data', async () => {
    const sqlite = await sqliteEngine()
    const postgres = await postgresEngine()
    try {
      const [s, p] = [sqlite.node(), postgres.node()]
      const alice = [await sqlite.account('alice'), await postgres.account('alice')]
      const bob = [await sqlite.account('bob'), await postgres.account('bob')]
      await seed(sqlite, s, alice[0]!, bob[0]!)
      await seed(postgres, p, alice[1]!, bob[1]!)
      expect(alice[0]).toBe(alice[1]!)
      const both = async <T>(ask: (n: Node) => Promise<T>) => {
        const [x, y] = [await ask(s), await ask(p)]
        expect(y).toEqual(x)
        return x
      }
      const id = alice[0]!
      for (const q of QUERIES)
        for (const tag of ['', 'red', 'blue']) {
          const pattern = containsPattern(q)
          const tags = tag ? [tag] : []
          for (const sort of ['created', 'clicks'] as const)
            for (const offset of [0, 2, 5]) await both((n) => n.links.search(id, pattern, tags, sort, 4, offset))
          await both((n) => n.links.searchCount(id, pattern, tags, 3))
          for (const before of [Number.MAX_SAFE_INTEGER, 10, 4])
            await both((n) => n.links.pageMatching(id, before, tag, pattern, 2, 5))
        }
      for (const before of [Number.MAX_SAFE_INTEGER, 12, 3]) {
        await both((n) => n.links.page(id, before, 5))
        await both((n) => n.links.pageByTag(id, 'red', before, 2))
      }
      for (const after of [0, 5, 13]) await both((n) => n.links.exportPage(id, after, 4))
      await both((n) => n.links.tagsFor([1, 2, 3, 11, 12]))
      await both(async (n) => [await n.links.count(id), await n.links.total()])
    } finally {
      await sqlite.close()
      await postgres.close()
    }
  }, 60_000)
})

describe('links: the dashboard orders and several tags (issue 38)', () => {
  test('each order both ways and tags ANDed give the expected rows, equal on both engines', async () => {
    const sqlite = await sqliteEngine()
    const postgres = await postgresEngine()
    try {
      const [s, p] = [sqlite.node(), postgres.node()]
      const alice = await sqlite.account('alice')
      expect(await postgres.account('alice')).toBe(alice)
      const bob = [await sqlite.account('bob'), await postgres.account('bob')]
      const data = await seed(sqlite, s, alice, bob[0]!)
      await seed(postgres, p, alice, bob[1]!)
      const mine = data.filter((d) => d.row.account_id === alice)
      const byte = (x: string, y: string) =>
        Buffer.from(x) < Buffer.from(y) ? -1 : Buffer.from(x) > Buffer.from(y) ? 1 : 0
      const orders: Record<LinkOrder, (x: Seeded, y: Seeded) => number> = {
        'created-desc': (x, y) => y.row.id - x.row.id,
        'created-asc': (x, y) => x.row.id - y.row.id,
        'clicks-desc': (x, y) => y.row.clicks - x.row.clicks || y.row.id - x.row.id,
        'clicks-asc': (x, y) => x.row.clicks - y.row.clicks || x.row.id - y.row.id,
        'code-asc': (x, y) => byte(x.row.code, y.row.code),
        'code-desc': (x, y) => byte(y.row.code, x.row.code),
        'destination-asc': (x, y) => byte(x.row.long_url, y.row.long_url) || x.row.id - y.row.id,
        'destination-desc': (x, y) => byte(y.row.long_url, x.row.long_url) || y.row.id - x.row.id,
      }
      for (const tags of [[], ['red'], ['red', 'blue'], ['sale', 'red'], ['red', 'nope']])
        for (const [order, compare] of Object.entries(orders) as [LinkOrder, (typeof orders)[LinkOrder]][]) {
          const want = mine
            .filter((d) => tags.every((t) => d.tags.includes(t)))
            .sort(compare)
            .map((d) => d.row.code)
          for (const node of [s, p]) {
            const got = (await node.links.search(alice, '%', tags, 'created', 100, 0, order)).map((r) => r.code)
            expect({ tags, order, got }).toEqual({ tags, order, got: want })
            const paged = (await node.links.search(alice, '%', tags, 'created', 3, 2, order)).map((r) => r.code)
            expect({ tags, order, paged }).toEqual({ tags, order, paged: want.slice(2, 5) })
          }
          expect(await p.links.searchCount(alice, '%', tags, 100)).toBe(want.length)
          expect(await s.links.searchCount(alice, '%', tags, 100)).toBe(want.length)
        }
    } finally {
      await sqlite.close()
      await postgres.close()
    }
  }, 60_000)
})

describe('links on PostgreSQL, two nodes at the same moment', () => {
  test('an insert of a code another node is inserting waits for that transaction: taken when it commits, free when it rolls back', async () => {
    const { main, pool, close } = await engines.postgres(1)
    const [one, two] = [postgresLinkStorage(pool(2)), postgresLinkStorage(pool(2))]
    try {
      for (const [code, outcome] of [
        ['held1', 'commit'],
        ['held2', 'rollback'],
      ] as const) {
        let release!: () => void
        const held = new Promise<void>((r) => (release = r))
        let inserted!: () => void
        const aInserted = new Promise<void>((r) => (inserted = r))
        const first = one
          .insert(newLink(code, { long_url: 'https://example.com/first' }), [], async () => {
            inserted()
            await held
            if (outcome === 'rollback') throw ROLLBACK
          })
          .catch((err) => {
            if (err !== ROLLBACK) throw err
            return null
          })
        await aInserted
        let secondDone = false
        const second = two.insert(newLink(code, { long_url: 'https://example.com/second' }), []).then((r) => {
          secondDone = true
          return r
        })
        await Bun.sleep(200)
        expect(secondDone).toBe(false) // waiting on the first transaction's row
        release()
        await first
        const got = await second
        if (outcome === 'commit') expect(got).toBe(CODE_TAKEN)
        else expect(got).toMatchObject({ code, long_url: 'https://example.com/second' })
        const rows = await main.sql`SELECT long_url FROM links WHERE code = ${code}`
        expect(rows.map((r: { long_url: string }) => r.long_url)).toEqual([
          outcome === 'commit' ? 'https://example.com/first' : 'https://example.com/second',
        ])
      }
    } finally {
      await close()
    }
  }, 60_000)

  test('a change waits for a deletion of the same link on another node, then finds it gone', async () => {
    const { main, pool, close } = await engines.postgres(1)
    const [one, two] = [postgresLinkStorage(pool(2)), postgresLinkStorage(pool(2))]
    try {
      const row = await one.insert(newLink('doomed'), ['t'])
      if (row === CODE_TAKEN) throw new Error('taken')
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      let deleting!: () => void
      const inDelete = new Promise<void>((r) => (deleting = r))
      const removal = one.remove(row, async () => {
        deleting()
        await held
      })
      await inDelete
      let changeDone = false
      const change = two
        .change(row, { long_url: 'https://example.com/late' }, ['late'], T0, () => true)
        .then((r) => {
          changeDone = true
          return r
        })
      await Bun.sleep(200)
      expect(changeDone).toBe(false)
      release()
      expect(await removal).toMatchObject({ tags: ['t'] })
      expect(await change).toBe(GONE)
      expect(Number((await main.sql`SELECT count(*) AS n FROM link_tags`)[0].n)).toBe(0)
    } finally {
      await close()
    }
  }, 60_000)
})
