// Abuse handling's rows behind the async interface (src/abuse/storage/contract.ts), ONE suite run against both engines:
// SQLite (storage/sqlite.ts) and a real PostgreSQL server (storage/postgres.ts). Two "nodes" are
// two connections (SQLite) or two pools (PostgreSQL) on one database: a report filed through one is read and
// closed through the other; the bounds on open reports hold when two nodes file the last allowed one at once;
// two admins closing one report at once close it once; a host banned twice at once is one row.
import { describe, expect, test } from 'bun:test'
import { postgresAbuseRows } from '../../src/abuse/storage/postgres'
import type { AbuseRows, NewReport, ReportRow } from '../../src/abuse/storage/contract'
import { sqliteAbuseRows } from '../../src/abuse/storage/sqlite'
import { engineHarness, sqliteNotes, postgresNotes } from '../support/engines'

interface Engine {
  node(): AbuseRows<any>
  account(name: string, disabled?: number): Promise<number>
  link(code: string, url: string, accountId: number | null, clicks?: number): Promise<number>
  removeLink(id: number): Promise<void>
  note(tx: any, text: string): unknown
  notes(): Promise<string[]>
  reportCount(): Promise<number>
  disabledOf(linkId: number): Promise<{ disabled: string | null; updated: number } | null>
  close(): Promise<void>
}

const engines = engineHarness()

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-abuse-')
  return {
    node: () => sqliteAbuseRows(connect()),
    account: async (name, disabled) =>
      Number(
        (
          main
            .query('INSERT INTO accounts (name, created, disabled) VALUES (?, 0, ?) RETURNING id')
            .get(name, disabled ?? null) as { id: number }
        ).id,
      ),
    link: async (code, url, accountId, clicks = 0) =>
      Number(
        (
          main
            .query(
              'INSERT INTO links (code, long_url, account_id, created, updated, clicks) VALUES (?, ?, ?, 0, 0, ?) RETURNING id',
            )
            .get(code, url, accountId, clicks) as { id: number }
        ).id,
      ),
    removeLink: async (id) => void main.query('DELETE FROM links WHERE id = ?').run(id),
    ...sqliteNotes(main),
    reportCount: async () => (main.query('SELECT count(*) AS n FROM link_reports').get() as { n: number }).n,
    disabledOf: async (id) =>
      (main.query('SELECT disabled, updated FROM links WHERE id = ?').get(id) as {
        disabled: string | null
        updated: number
      } | null) ?? null,
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node: () => postgresAbuseRows(pool()),
    account: async (name, disabled) =>
      Number(
        (
          await main.sql`INSERT INTO accounts (name, created, disabled) VALUES (${name}, 0, ${disabled ?? null}) RETURNING id`
        )[0].id,
      ),
    link: async (code, url, accountId, clicks = 0) =>
      Number(
        (
          await main.sql`INSERT INTO links (code, long_url, account_id, created, updated, clicks) VALUES (${code}, ${url}, ${accountId}, 0, 0, ${clicks}) RETURNING id`
        )[0].id,
      ),
    removeLink: async (id) => void (await main.sql`DELETE FROM links WHERE id = ${id}`),
    ...postgresNotes(main),
    reportCount: async () => Number((await main.sql`SELECT count(*) AS n FROM link_reports`)[0].n),
    disabledOf: async (id) => {
      const [row] = await main.sql`SELECT disabled, updated FROM links WHERE id = ${id}`
      return row ? { disabled: row.disabled, updated: Number(row.updated) } : null
    },
    close,
  }
}

const T0 = 1_800_000_000_000
const filing = (linkId: number, code: string, n: number): NewReport => ({
  linkId,
  code,
  reason: 'phishing',
  text: `report ${n}`,
  contact: n % 2 ? '' : `r${n}@example.com`,
  created: T0 + n,
})
const BIG = { maxOpen: 10_000, maxPerLink: 50 }

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('abuse rows on %s', (_name, makeEngine) => {
  test('a `within` that is async and throws after an await: the write rejects and nothing of it is stored (either engine)', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const link = await e.link('late', 'https://phish.example/', null)
      const late = (what: string) => async (tx: unknown) => {
        await e.note(tx, `${what} before the await`)
        await new Promise((resolve) => setTimeout(resolve, 5))
        throw new Error('refused after an await')
      }
      await expect(a.fileReport(filing(link, 'late', 1), BIG, late('report'))).rejects.toThrow()
      expect(await e.reportCount()).toBe(0)
      await expect(a.addBan({ host: 'late.example', reason: '', at: T0, by: null }, late('ban'))).rejects.toThrow()
      expect(await b.bans()).toEqual([])
      await expect(a.setLinkDisabled('late', 'gone bad', T0 + 5, late('disable'))).rejects.toThrow()
      expect(await e.disabledOf(link)).toEqual({ disabled: null, updated: 0 })
      expect(await e.notes()).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('a report filed through one node is read through the other with its link, owner and clicks; `within` goes in its transaction; a link gone meanwhile: no_link', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const ann = await e.account('ann')
      const link = await e.link('abc', 'https://phish.example/login', ann, 7)
      const filed = await a.fileReport(filing(link, 'abc', 1), BIG, (tx, r) =>
        e.note(tx, `reported #${(r as ReportRow).id}`),
      )
      expect(filed).toEqual({
        id: expect.any(Number),
        link_id: link,
        code: 'abc',
        reason: 'phishing',
        text: 'report 1',
        contact: '',
        created: T0 + 1,
        closed: null,
        action: null,
        closed_by: null,
      })
      const row = filed as ReportRow
      expect(await e.notes()).toEqual([`reported #${row.id}`])
      const open = { ...row, long_url: 'https://phish.example/login', clicks: 7, owner: 'ann', link_disabled: null }
      expect(await b.openReport(row.id)).toEqual(open)
      expect(await b.openReports(10)).toEqual([open])
      expect(await b.report(row.id)).toEqual(row)
      expect(await b.openCount()).toBe(1)
      expect(await b.report(row.id + 1000)).toBeNull()
      expect(await b.openReport(row.id + 1000)).toBeNull()

      // A filing whose outbox row fails leaves no report.
      const failing = b.fileReport(filing(link, 'abc', 2), BIG, () => {
        throw new Error('the event could not be written')
      })
      await expect(failing).rejects.toThrow('the event could not be written')
      expect(await e.reportCount()).toBe(1)

      // Newest first; a report of a link without an owner, and of a link deleted since, keep their code.
      const orphan = await e.link('xyz', 'https://other.example/', null)
      const second = (await b.fileReport(filing(orphan, 'xyz', 3), BIG)) as ReportRow
      expect((await a.openReports(10)).map((r) => [r.id, r.code, r.owner])).toEqual([
        [second.id, 'xyz', null],
        [row.id, 'abc', 'ann'],
      ])
      expect(await a.openReports(1)).toHaveLength(1)

      // A link deleted (on another node) since the service found it: no_link, nothing stored or run; the
      // reports it had stay, without their link.
      await e.removeLink(link)
      expect(await a.fileReport(filing(link, 'abc', 4), BIG, (tx) => e.note(tx, 'never'))).toBe('no_link')
      expect(await e.reportCount()).toBe(2)
      expect(await b.openReport(row.id)).toEqual({ ...open, link_id: null, long_url: null, clicks: null, owner: null })
      expect(await e.notes()).toEqual([`reported #${row.id}`])
    } finally {
      await e.close()
    }
  })

  test('the bounds: past the link’s open reports one is kept back (link_full), past all open reports refused (full); closed ones do not count', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [one, two] = [
        await e.link('one', 'https://a.example/', null),
        await e.link('two', 'https://b.example/', null),
      ]
      const bounds = { maxOpen: 3, maxPerLink: 2 }
      expect(await a.fileReport(filing(one, 'one', 1), bounds)).toMatchObject({ code: 'one' })
      const r2 = (await b.fileReport(filing(one, 'one', 2), bounds)) as ReportRow
      expect(await a.fileReport(filing(one, 'one', 3), bounds, (tx) => e.note(tx, 'never'))).toBe('link_full')
      expect(await b.fileReport(filing(two, 'two', 4), bounds)).toMatchObject({ code: 'two' })
      expect(await a.fileReport(filing(two, 'two', 5), bounds)).toBe('full')
      expect(await e.reportCount()).toBe(3)
      // One closed: a place again, for that link too.
      expect(await b.closeReport(r2.id, { action: 'dismissed', by: null, at: T0 + 10 })).toMatchObject({
        id: r2.id,
        closed: T0 + 10,
        action: 'dismissed',
      })
      expect(await a.fileReport(filing(one, 'one', 6), bounds)).toMatchObject({ code: 'one', text: 'report 6' })
      expect(await a.openCount()).toBe(3)
      expect(await e.notes()).toEqual([])
    } finally {
      await e.close()
    }
  })

  test('two nodes filing the last allowed report at once, round after round: exactly one more is stored (all reports, and one link’s)', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const links = [await e.link('l1', 'https://a.example/', null), await e.link('l2', 'https://b.example/', null)]
      let open = 0
      for (let round = 0; round < 12; round++) {
        // Even rounds: one place left in all (each node reports another link). Odd rounds: one place left for
        // link l1 (a fresh bound per link: the ones it already has, plus one), both nodes reporting it.
        const perLink = round % 2 === 1
        const mine = perLink ? [links[0]!, links[0]!] : [links[0]!, links[1]!]
        const ofL1 = (await a.openReports(1000)).filter((r) => r.link_id === links[0]).length
        const bounds = perLink ? { maxOpen: 10_000, maxPerLink: ofL1 + 1 } : { maxOpen: open + 1, maxPerLink: 10_000 }
        const results = await Promise.all(
          [a, b].map((node, i) =>
            node.fileReport(filing(mine[i]!, `l${i + 1}`, 100 * round + i), bounds, (tx) =>
              e.note(tx, `round ${round} node ${i}`),
            ),
          ),
        )
        const stored = results.filter((r) => typeof r === 'object')
        expect(stored).toHaveLength(1)
        expect(results.filter((r) => typeof r === 'string')).toEqual([perLink ? 'link_full' : 'full'])
        open++
        expect(await b.openCount()).toBe(open)
      }
      expect(await e.reportCount()).toBe(12)
      expect(await e.notes()).toHaveLength(12)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('closing: through either node; the other then hears already_closed, an unknown id missing; `within` runs with the close only', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const admin = await e.account('root')
      const link = await e.link('abc', 'https://phish.example/', null)
      const r = (await a.fileReport(filing(link, 'abc', 1), BIG)) as ReportRow
      // A change that fails undoes the close.
      await expect(
        b.closeReport(r.id, { action: 'link_disabled', by: admin, at: T0 + 5 }, () => {
          throw new Error('the link could not be disabled')
        }),
      ).rejects.toThrow('the link could not be disabled')
      expect(await a.openReport(r.id)).not.toBeNull()

      const closed = await b.closeReport(r.id, { action: 'host_banned', by: admin, at: T0 + 6 }, (tx, c) =>
        e.note(tx, `closed #${(c as ReportRow).id} ${(c as ReportRow).action}`),
      )
      expect(closed).toEqual({ ...r, closed: T0 + 6, action: 'host_banned', closed_by: admin })
      expect(
        await a.closeReport(r.id, { action: 'dismissed', by: admin, at: T0 + 7 }, (tx) => e.note(tx, 'never')),
      ).toBe('already_closed')
      expect(await a.closeReport(r.id + 1000, { action: 'dismissed', by: admin, at: T0 + 7 })).toBe('missing')
      expect(await a.report(r.id)).toEqual(closed as ReportRow)
      expect(await a.openReport(r.id)).toBeNull()
      expect(await a.openCount()).toBe(0)
      expect(await e.notes()).toEqual([`closed #${r.id} host_banned`])
    } finally {
      await e.close()
    }
  })

  test('closing with a change: the link disabled or the host banned in the same transaction; a link gone meanwhile is no_link and the report stays open', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const root = await e.account('root')
      const link = await e.link('abc', 'https://phish.example/', null)
      const [r1, r2, r3] = [
        (await a.fileReport(filing(link, 'abc', 1), BIG)) as ReportRow,
        (await a.fileReport(filing(link, 'abc', 2), BIG)) as ReportRow,
        (await a.fileReport(filing(link, 'abc', 3), BIG)) as ReportRow,
      ]
      // A failing `within` undoes the change with the close.
      await expect(
        b.closeReport(
          r1.id,
          { action: 'link_disabled', by: root, at: T0 + 5, disableLink: { code: 'abc', reason: 'phishing' } },
          () => {
            throw new Error('audit failed')
          },
        ),
      ).rejects.toThrow('audit failed')
      expect(await e.disabledOf(link)).toEqual({ disabled: null, updated: 0 })
      expect(await a.openReport(r1.id)).not.toBeNull()

      const closed = await b.closeReport(
        r1.id,
        { action: 'link_disabled', by: root, at: T0 + 6, disableLink: { code: 'abc', reason: 'phishing' } },
        (tx, c, done) => e.note(tx, `closed #${c.id} link ${done.link?.code}#${done.link?.id} ban ${done.ban}`),
      )
      expect(closed).toMatchObject({ id: r1.id, action: 'link_disabled', closed: T0 + 6 })
      expect(await e.disabledOf(link)).toEqual({ disabled: 'phishing', updated: T0 + 6 })
      expect(await e.notes()).toEqual([`closed #${r1.id} link abc#${link} ban null`])

      // A ban: written with the close; the same host banned already is left as it was (done.ban null).
      expect(
        await a.closeReport(
          r2.id,
          { action: 'host_banned', by: root, at: T0 + 7, ban: { host: 'phish.example', reason: 'kit' } },
          (tx, _c, done) => e.note(tx, `ban ${done.ban?.host}`),
        ),
      ).toMatchObject({ action: 'host_banned' })
      expect(await b.bans()).toEqual([{ host: 'phish.example', reason: 'kit', created: T0 + 7, created_by: root }])
      expect(
        await b.closeReport(
          r3.id,
          { action: 'host_banned', by: null, at: T0 + 8, ban: { host: 'phish.example', reason: 'again' } },
          (tx, _c, done) => e.note(tx, `ban again ${done.ban}`),
        ),
      ).toMatchObject({ action: 'host_banned' })
      expect(await a.bans()).toEqual([{ host: 'phish.example', reason: 'kit', created: T0 + 7, created_by: root }])
      expect((await e.notes()).slice(1)).toEqual(['ban phish.example', 'ban again null'])

      // The link deleted (on another node) before its report is closed by disabling it: nothing written or run.
      const r4 = (await a.fileReport(filing(link, 'abc', 4), BIG)) as ReportRow
      await e.removeLink(link)
      expect(
        await b.closeReport(
          r4.id,
          { action: 'link_disabled', by: root, at: T0 + 9, disableLink: { code: 'abc', reason: 'x' } },
          (tx) => e.note(tx, 'never'),
        ),
      ).toBe('no_link')
      expect(await a.openReport(r4.id)).toMatchObject({ id: r4.id, closed: null })
      expect(await e.notes()).toHaveLength(3)
      // An already closed report is not changed again, and nor is its link.
      expect(
        await b.closeReport(r1.id, {
          action: 'link_disabled',
          by: root,
          at: T0 + 10,
          disableLink: { code: 'abc', reason: 'x' },
        }),
      ).toBe('already_closed')
    } finally {
      await e.close()
    }
  })

  test('a link disabled and enabled by its code through either node, with `within` in its transaction; an unknown code is null', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const link = await e.link('abc', 'https://phish.example/', null)
      expect(
        await a.setLinkDisabled('abc', 'phishing', T0, (tx, l) => e.note(tx, `disabled ${l.code}#${l.id}`)),
      ).toEqual({ id: link, code: 'abc', domain: '' })
      expect(await e.disabledOf(link)).toEqual({ disabled: 'phishing', updated: T0 })
      await expect(
        b.setLinkDisabled('abc', null, T0 + 1, () => {
          throw new Error('audit failed')
        }),
      ).rejects.toThrow('audit failed')
      expect(await e.disabledOf(link)).toEqual({ disabled: 'phishing', updated: T0 })
      expect(await b.setLinkDisabled('abc', null, T0 + 2, (tx) => e.note(tx, 'enabled'))).toEqual({
        id: link,
        code: 'abc',
        domain: '',
      })
      expect(await e.disabledOf(link)).toEqual({ disabled: null, updated: T0 + 2 })
      expect(await a.setLinkDisabled('ABC', 'x', T0 + 3, (tx) => e.note(tx, 'never'))).toBeNull()
      expect(await e.notes()).toEqual([`disabled abc#${link}`, 'enabled'])
    } finally {
      await e.close()
    }
  })

  test('two admins closing the same report at once, round after round: one closes it, the other hears already_closed and writes nothing', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const [root, other] = [await e.account('root'), await e.account('other')]
      const link = await e.link('abc', 'https://phish.example/', null)
      for (let round = 0; round < 12; round++) {
        const r = (await a.fileReport(filing(link, 'abc', round), BIG)) as ReportRow
        const results = await Promise.all(
          [a, b].map((node, i) =>
            node.closeReport(
              r.id,
              { action: i === 0 ? 'dismissed' : 'link_disabled', by: i === 0 ? root : other, at: T0 + round },
              (tx) => e.note(tx, `${round}:${i}`),
            ),
          ),
        )
        const winner = results.findIndex((x) => typeof x === 'object')
        expect(winner).toBeGreaterThanOrEqual(0)
        expect(results[1 - winner]).toBe('already_closed')
        expect(await b.report(r.id)).toMatchObject({
          action: winner === 0 ? 'dismissed' : 'link_disabled',
          closed_by: winner === 0 ? root : other,
        })
        expect((await e.notes()).filter((n) => n.startsWith(`${round}:`))).toEqual([`${round}:${winner}`])
      }
    } finally {
      await e.close()
    }
  }, 60_000)

  test('bans: added on one node, seen on the other; the same host banned twice at once is one row and one `within`; removed once', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const root = await e.account('root')
      expect(
        await a.addBan({ host: 'phish.example', reason: 'phishing', at: T0, by: root }, (tx, row) =>
          e.note(tx, `ban ${row.host}`),
        ),
      ).toEqual({
        host: 'phish.example',
        reason: 'phishing',
        created: T0,
        created_by: root,
      })
      expect(
        await b.addBan({ host: 'phish.example', reason: 'again', at: T0 + 1, by: null }, (tx) => e.note(tx, 'never')),
      ).toBeNull()
      await expect(
        b.addBan({ host: 'bad.example', reason: '', at: T0, by: null }, () => {
          throw new Error('audit failed')
        }),
      ).rejects.toThrow('audit failed')
      expect(await b.bans()).toEqual([{ host: 'phish.example', reason: 'phishing', created: T0, created_by: root }])

      for (let round = 0; round < 10; round++) {
        const host = `h${round}.example`
        const added = await Promise.all(
          [a, b].map((node, i) =>
            node.addBan({ host, reason: `node ${i}`, at: T0 + round, by: null }, (tx) =>
              e.note(tx, `ban ${host} ${i}`),
            ),
          ),
        )
        expect(added.filter((x) => x !== null)).toHaveLength(1)
        const winner = added.findIndex((x) => x !== null)
        expect((await a.bans()).filter((x) => x.host === host)).toEqual([
          { host, reason: `node ${winner}`, created: T0 + round, created_by: null },
        ])
        expect((await e.notes()).filter((n) => n.startsWith(`ban ${host} `))).toEqual([`ban ${host} ${winner}`])
        const removed = await Promise.all(
          [a, b].map((node) => node.removeBan(host, (tx) => e.note(tx, `unban ${host}`))),
        )
        expect(removed.sort()).toEqual([false, true])
      }
      // Hosts sort the same on both engines (byte order).
      for (const host of ['b.example', 'B.example', 'a-b.example', 'ab.example', 'é.example'])
        await a.addBan({ host, reason: '', at: T0, by: null })
      expect((await b.bans()).map((x) => x.host)).toEqual([
        'B.example',
        'a-b.example',
        'ab.example',
        'b.example',
        'phish.example',
        'é.example',
      ])
      expect(await a.removeBan('nothing.example')).toBe(false)
      expect((await e.notes()).filter((n) => n.startsWith('unban'))).toHaveLength(10)
    } finally {
      await e.close()
    }
  }, 60_000)

  test('disabled accounts, and destinations a page at a time by link id', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const x = await e.account('x', T0)
      await e.account('y')
      const z = await e.account('z', T0 + 1)
      expect((await a.disabledAccounts()).sort((p, q) => p - q)).toEqual([x, z])
      const ids: number[] = []
      for (let i = 0; i < 7; i++) ids.push(await e.link(`c${i}`, `https://d${i}.example/`, null))
      const first = await a.destinations(0, 3)
      expect(first).toEqual(ids.slice(0, 3).map((id, i) => ({ id, long_url: `https://d${i}.example/` })))
      expect((await a.destinations(first[2]!.id, 3)).map((d) => d.id)).toEqual(ids.slice(3, 6))
      expect((await a.destinations(ids[5]!, 3)).map((d) => d.id)).toEqual([ids[6]!])
      expect(await a.destinations(ids[6]!, 3)).toEqual([])
    } finally {
      await e.close()
    }
  })
})
