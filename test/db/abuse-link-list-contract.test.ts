// The admin's list of every link (issue 38) behind the abuse rows' contract, ONE suite against both engines: search
// (code, destination, owner; any case; LIKE's characters literal), the five orders, the four narrowings, pages and
// the total; and the list's disable/enable, which changes a link only while it is as the list showed it.
import { describe, expect, test } from 'bun:test'
import type { AbuseRows, LinkListQuery } from '../../src/abuse/storage/contract'
import { postgresAbuseRows } from '../../src/abuse/storage/postgres'
import { sqliteAbuseRows } from '../../src/abuse/storage/sqlite'
import { engineHarness, sqliteNotes, postgresNotes } from '../support/engines'

interface Engine {
  node(): AbuseRows<any>
  run(text: string, ...args: (string | number | null)[]): Promise<Record<string, unknown>[]>
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-abuse-list-')
  return {
    node: () => sqliteAbuseRows(connect()),
    run: async (text, ...args) => main.query(text).all(...args) as Record<string, unknown>[],
    ...sqliteNotes(main),
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node: () => postgresAbuseRows(pool()),
    // Placeholders written ?1, ?2 … in the shared statements become $1, $2 … here.
    run: async (text, ...args) => [...(await main.sql.unsafe(text.replace(/\?(\d)/g, '$$$1'), args))],
    ...postgresNotes(main),
    close,
  }
}

const T0 = 1_800_000_000_000
const q = (over: Partial<LinkListQuery> = {}): LinkListQuery => ({
  search: '',
  sort: 'newest',
  show: 'all',
  offset: 0,
  limit: 50,
  ...over,
})

/** Accounts zoe and Adam; links in this order of creation (ids ascending). */
async function seed(e: Engine) {
  const account = async (name: string) =>
    Number((await e.run('INSERT INTO accounts (name, created) VALUES (?1, 0) RETURNING id', name))[0]!.id)
  const zoe = await account('zoe')
  const adam = await account('Adam')
  const link = async (code: string, url: string, owner: number | null, clicks: number) =>
    Number(
      (
        await e.run(
          'INSERT INTO links (code, long_url, account_id, created, updated, clicks) VALUES (?1, ?2, ?3, ?4, ?4, ?5) RETURNING id',
          code,
          url,
          owner,
          T0 + clicks,
          clicks,
        )
      )[0]!.id,
    )
  const ids = {
    beta: await link('beta', 'https://shop.example/sale', zoe, 5),
    alpha: await link('alpha', 'https://news.example/a', adam, 40),
    Zed: await link('Zed', 'https://phish.example/login', null, 12),
    under: await link('under_score', 'https://example.org/100%25', zoe, 0),
  }
  await e.run("UPDATE links SET disabled = 'phishing' WHERE id = ?1", ids.Zed)
  const report = (id: number, code: string, closed: number | null) =>
    e.run(
      "INSERT INTO link_reports (link_id, code, reason, text, contact, created, closed) VALUES (?1, ?2, 'spam', '', '', 0, ?3)",
      id,
      code,
      closed,
    )
  await report(ids.alpha, 'alpha', null)
  await report(ids.alpha, 'alpha', null)
  await report(ids.beta, 'beta', T0) // closed: not counted
  return ids
}

const codes = (r: { links: { code: string }[] }) => r.links.map((l) => l.code)

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('the admin list of links on %s', (_name, makeEngine) => {
  test('every link with its owner, clicks, disabled reason and open reports; the five orders; pages and the total', async () => {
    const e = await makeEngine()
    try {
      const ids = await seed(e)
      const rows = e.node()
      const all = await rows.listLinks(q())
      expect(all.total).toBe(4)
      expect(codes(all)).toEqual(['under_score', 'Zed', 'alpha', 'beta'])
      expect(all.links.find((l) => l.code === 'alpha')).toEqual({
        id: ids.alpha,
        code: 'alpha',
        long_url: 'https://news.example/a',
        created: T0 + 40,
        clicks: 40,
        owner: 'Adam',
        disabled: null,
        reports: 2,
      })
      expect(all.links.find((l) => l.code === 'Zed')).toMatchObject({ owner: null, disabled: 'phishing', reports: 0 })
      expect(all.links.find((l) => l.code === 'beta')!.reports).toBe(0)
      expect(codes(await rows.listLinks(q({ sort: 'oldest' })))).toEqual(['beta', 'alpha', 'Zed', 'under_score'])
      expect(codes(await rows.listLinks(q({ sort: 'clicks' })))).toEqual(['alpha', 'Zed', 'beta', 'under_score'])
      // Byte order on both engines: capitals first.
      expect(codes(await rows.listLinks(q({ sort: 'code' })))).toEqual(['Zed', 'alpha', 'beta', 'under_score'])
      // By owner's name, anonymous last, newest first within one owner.
      expect(codes(await rows.listLinks(q({ sort: 'owner' })))).toEqual(['alpha', 'under_score', 'beta', 'Zed'])
      const second = await rows.listLinks(q({ sort: 'oldest', offset: 2, limit: 2 }))
      expect({ total: second.total, codes: codes(second) }).toEqual({ total: 4, codes: ['Zed', 'under_score'] })
      expect(codes(await rows.listLinks(q({ offset: 4 })))).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('search in code, destination and owner, any case, with % and _ taken literally; the four narrowings', async () => {
    const e = await makeEngine()
    try {
      await seed(e)
      const rows = e.node()
      const found = async (over: Partial<LinkListQuery>) => {
        const r = await rows.listLinks(q(over))
        expect(r.total).toBe(r.links.length)
        return codes(r)
      }
      expect(await found({ search: 'ALPHA' })).toEqual(['alpha'])
      expect(await found({ search: 'phish.example' })).toEqual(['Zed'])
      expect(await found({ search: 'adam' })).toEqual(['alpha'])
      expect(await found({ search: 'zoe' })).toEqual(['under_score', 'beta'])
      expect(await found({ search: '_' })).toEqual(['under_score'])
      expect(await found({ search: '%25' })).toEqual(['under_score'])
      expect(await found({ search: '%' })).toEqual(['under_score'])
      expect(await found({ search: 'nothing-like-it' })).toEqual([])
      expect(await found({ show: 'anonymous' })).toEqual(['Zed'])
      expect(await found({ show: 'disabled' })).toEqual(['Zed'])
      expect(await found({ show: 'reported' })).toEqual(['alpha'])
      expect(await found({ show: 'anonymous', search: 'alpha' })).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('disable and enable from the list only while the link is as it was shown, with `within` in the write', async () => {
    const e = await makeEngine()
    try {
      const ids = await seed(e)
      const [a, b] = [e.node(), e.node()]
      expect(await a.setLinkDisabledIf(ids.alpha, 'spam', T0, (tx, l) => e.note(tx, `off ${l.code}`))).toEqual({
        id: ids.alpha,
        code: 'alpha',
        domain: '',
      })
      // A second admin's disable of the same row, shown enabled a moment ago: nothing written, nothing run.
      expect(await b.setLinkDisabledIf(ids.alpha, 'other', T0 + 1, (tx) => e.note(tx, 'never'))).toBeNull()
      expect((await a.listLinks(q({ search: 'alpha' }))).links[0]!.disabled).toBe('spam')
      // A failing `within` undoes the change.
      await expect(
        b.setLinkDisabledIf(ids.alpha, null, T0 + 2, () => {
          throw new Error('audit failed')
        }),
      ).rejects.toThrow('audit failed')
      expect((await a.listLinks(q({ search: 'alpha' }))).links[0]!.disabled).toBe('spam')
      expect(await b.setLinkDisabledIf(ids.alpha, null, T0 + 3, (tx, l) => e.note(tx, `on ${l.code}`))).not.toBeNull()
      expect(await a.setLinkDisabledIf(ids.alpha, null, T0 + 4, (tx) => e.note(tx, 'never'))).toBeNull()
      await e.run('DELETE FROM links WHERE id = ?1', ids.beta)
      expect(await a.setLinkDisabledIf(ids.beta, 'gone', T0 + 5, (tx) => e.note(tx, 'never'))).toBeNull()
      expect(await e.notes()).toEqual(['off alpha', 'on alpha'])
    } finally {
      await e.close()
    }
  })
})
