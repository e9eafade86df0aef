// The abuse service (src/abuse/service.ts) is handed its storages and does not know the engine: ONE suite runs
// the same service on SQLite (sqliteAbuseRows, sqliteAuditRows, sqliteWebhookQueue) and on a real PostgreSQL
// server (their postgres* forms), two services on one database standing for two nodes. A report writes its
// link.reported event in its transaction; two admins closing one report at once on two nodes: one closes it with
// its change and audit rows, the other hears 409 and writes nothing; a ban is in this node's memory as soon as
// banHost returns; an account disabled by anyone is seen within a second; a link disabled by code is audited.
// The link service is not on PostgreSQL yet: each node resolves codes from a map of rows read through the link
// storage, as the service's cache would hold them.
import { describe, expect, test } from 'bun:test'
import type { SQL } from 'bun'
import { createAbuseService } from '../../src/abuse/service'
import { sqliteAbuseRows } from '../../src/abuse/storage/sqlite'
import { postgresAbuseRows } from '../../src/abuse/storage/postgres'
import { BAN_TOPIC } from '../../src/abuse'
import { CHANNEL, decodeChange, postgresChangeFeed } from '../../src/db/postgres/changes'
import { sqliteAuditRows } from '../../src/audit/storage/sqlite'
import { postgresAuditRows } from '../../src/audit/storage/postgres'
import { byAccount } from '../../src/audit'
import type { LinkRow, LinkStorage } from '../../src/links'
import { createDomains } from '../../src/links/domains'
import { sqliteLinkStorage } from '../../src/links/storage/sqlite'
import { postgresLinkStorage } from '../../src/links/storage/postgres'
import { sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'
import { postgresWebhookQueue } from '../../src/webhooks/storage/postgres'
import { testConfig } from '../support/app'
import { engineHarness } from '../support/engines'

const engines = engineHarness()

interface Engine {
  /** A node's storages. */
  node(): { rows: any; audit: any; queue: any; links: LinkStorage<any> }
  /** Rows read through the suite's own connection. */
  all(query: string, ...params: unknown[]): Promise<Record<string, unknown>[]>
  close(): Promise<void>
}

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-abusesvc-')
  return {
    node() {
      const db = connect()
      return {
        rows: sqliteAbuseRows(db),
        audit: sqliteAuditRows(db),
        queue: sqliteWebhookQueue(db),
        links: sqliteLinkStorage(db),
      }
    },
    all: async (query, ...params) =>
      main.query(query.replace(/\$\d+/g, '?')).all(...(params as any[])) as Record<string, unknown>[],
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    node() {
      const sql: SQL = pool()
      return {
        rows: postgresAbuseRows(sql),
        audit: postgresAuditRows(sql),
        queue: postgresWebhookQueue(sql),
        links: postgresLinkStorage(sql),
      }
    },
    all: async (query, ...params) =>
      (await main.sql.unsafe(query, params)).map((r: Record<string, unknown>) =>
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [
            k,
            typeof v === 'string' && /^\d+$/.test(v) && k !== 'detail' ? Number(v) : v,
          ]),
        ),
      ),
    close,
  }
}

/** One node: the abuse service over that node's storages, and the link rows it has "cached". */
async function nodeOf(e: Engine, name: string) {
  const s = e.node()
  const cached = new Map<string, LinkRow>()
  const abuse = createAbuseService<any>({
    ...s,
    config: testConfig(engines.tracked(`linkbox-abusesvc-${name}-`)),
    links: {
      resolve: (code) => cached.get(code) ?? null,
      forget: (links) => links.forEach((l) => cached.delete(l.code)),
      domains: createDomains(testConfig('/nonexistent')),
    },
    clock: Date.now,
    // Someone listens: which endpoints get the event is read from the table in the report's transaction.
    outbox: { wanted: () => true, wake: () => {} },
  })
  await abuse.ready
  /** The link's row as the link service would cache it on a visit. */
  const visit = async (code: string) => {
    const row = cached.get(code) ?? (await s.links.byCode(code))
    if (row) cached.set(code, row)
    return row!
  }
  return { abuse, visit }
}

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('the abuse service on %s', (_name, makeEngine) => {
  test('two nodes: a report with its event, one report closed at once by two admins (one wins, 409 for the other), bans, disabled accounts and links', async () => {
    const e = await makeEngine()
    const nodes: Awaited<ReturnType<typeof nodeOf>>[] = []
    try {
      const [owner] = await e.all("INSERT INTO accounts (name, created) VALUES ('owner', 0) RETURNING id")
      const [root] = await e.all("INSERT INTO accounts (name, created, admin) VALUES ('root', 0, 1) RETURNING id")
      const ownerId = Number(owner!.id)
      await e.all(
        "INSERT INTO webhook_endpoints (account_id, url, events, secret, enabled, created) VALUES ($1, 'https://hooks.example.com/in', 'link.reported', 'whsec_x', 1, 0)",
        ownerId,
      )
      for (const [code, url] of [
        ['abc', 'https://x.phish.example/login'],
        ['def', 'https://fine.example/'],
        ['ghi', 'https://y.bad.example/'],
      ])
        await e.all(
          'INSERT INTO links (code, long_url, account_id, created, updated) VALUES ($1, $2, $3, 0, 0)',
          code,
          url,
          ownerId,
        )
      const [a, b] = [await nodeOf(e, 'a'), await nodeOf(e, 'b')]
      nodes.push(a, b)
      const admin = byAccount({ accountId: Number(root!.id), accountName: 'root' }, '192.0.2.1')

      // A report on node A, with its link.reported event and delivery in the same transaction; read on node B.
      await a.visit('abc')
      const { id } = await a.abuse.report({ code: 'abc', reason: 'phishing', text: 'my bank', contact: '' })
      expect(id).toBeGreaterThan(0)
      const events = await e.all('SELECT type, payload FROM webhook_events')
      expect(events).toHaveLength(1)
      expect(JSON.parse(events[0]!.payload as string)).toMatchObject({
        type: 'link.reported',
        data: { hex: 'abc', reason: 'phishing', text: 'my bank', report: id },
      })
      expect(await e.all('SELECT state FROM webhook_deliveries')).toEqual([{ state: 'pending' }])
      expect(await b.abuse.openReports()).toMatchObject([
        { id, code: 'abc', owner: 'owner', long_url: 'https://x.phish.example/login' },
      ])

      // Two admins close it at once on the two nodes, each with another change: one wins, the other is 409.
      const results = await Promise.allSettled([
        a.abuse.closeReport(id!, 'link_disabled', Number(root!.id), admin, {
          disableLink: { code: 'abc', reason: 'phishing' },
        }),
        b.abuse.closeReport(id!, 'host_banned', null, admin, { ban: { host: 'x.phish.example', reason: 'phishing' } }),
      ])
      const won = results.findIndex((r) => r.status === 'fulfilled')
      expect(won).toBeGreaterThanOrEqual(0)
      expect((results[1 - won] as PromiseRejectedResult).reason).toMatchObject({ status: 409 })
      const closes = await e.all(
        "SELECT action, target, detail, address FROM audit_log WHERE action IN ('link.disable', 'host.ban', 'report.close') ORDER BY id",
      )
      expect(closes).toEqual([
        won === 0
          ? { action: 'link.disable', target: 'link abc', detail: 'phishing', address: '192.0.2.1' }
          : { action: 'host.ban', target: 'host x.phish.example', detail: 'phishing', address: '192.0.2.1' },
        {
          action: 'report.close',
          target: `report ${id} (link abc)`,
          detail: won === 0 ? 'link_disabled' : 'host_banned',
          address: '192.0.2.1',
        },
      ])
      expect(await e.all('SELECT host FROM banned_hosts')).toEqual(won === 1 ? [{ host: 'x.phish.example' }] : [])
      expect(await e.all("SELECT disabled FROM links WHERE code = 'abc'")).toEqual([
        { disabled: won === 0 ? 'phishing' : null },
      ])
      // The winner's node answers the next visit with 451 at once (its link row dropped and read again, or its ban in memory).
      const winner = [a, b][won]!
      expect(winner.abuse.verdict(await winner.visit('abc'))).toMatchObject({ kind: won === 0 ? 'disabled' : 'banned' })

      // A ban is in the banning node's memory when banHost returns: no await between it and the next visit.
      const ghi = await b.visit('ghi')
      expect(b.abuse.verdict(ghi)).toBeNull()
      expect(await b.abuse.banHost('https://bad.example/whatever', 'kit', null, admin)).toEqual({
        host: 'bad.example',
        added: true,
      })
      expect(b.abuse.verdict(ghi)).toEqual({ kind: 'banned', host: 'bad.example', reason: 'kit' })
      expect(() => b.abuse.checkDestination('https://z.bad.example/')).toThrow('banned (kit)')
      expect(await a.abuse.banHost('bad.example', 'again', null, admin)).toEqual({ host: 'bad.example', added: false })
      expect(await a.abuse.unbanHost('bad.example', admin)).toBe(true)
      expect(a.abuse.verdict(await a.visit('ghi'))).toBeNull()
      expect(await b.abuse.unbanHost('bad.example', admin)).toBe(false)

      // An account disabled by anyone (another node, the CLI): its links answer 451 on every node within a second.
      const def = await a.visit('def')
      expect(a.abuse.verdict(def)).toBeNull()
      await e.all('UPDATE accounts SET disabled = 1 WHERE id = $1', ownerId)
      const t0 = Date.now()
      while (a.abuse.verdict(def) === null && Date.now() - t0 < 2_000) await Bun.sleep(20)
      expect(a.abuse.verdict(def)).toEqual({ kind: 'account' })
      expect(Date.now() - t0).toBeLessThan(1_100)

      // A link disabled by its code on node B, with its audit row; an unknown code is 404.
      expect(await b.abuse.setLinkDisabled('def', 'spam', admin)).toMatchObject({ code: 'def' })
      expect(await e.all("SELECT disabled FROM links WHERE code = 'def'")).toEqual([{ disabled: 'spam' }])
      await expect(b.abuse.setLinkDisabled('nope', 'x', admin)).rejects.toThrow('No link with the code "nope".')
      expect(
        (
          await e.all(
            "SELECT action, target FROM audit_log WHERE action IN ('host.ban', 'host.unban', 'link.disable') ORDER BY id",
          )
        ).slice(-3),
      ).toEqual([
        { action: 'host.ban', target: 'host bad.example' },
        { action: 'host.unban', target: 'host bad.example' },
        { action: 'link.disable', target: 'link def' },
      ])
    } finally {
      for (const n of nodes) n.abuse.close()
      await e.close()
    }
  }, 60_000)
})

test('on PostgreSQL with the change feed: a ban and its lifting on node A reach node B within a second (any spelling of an IPv6 address); only committed ban changes are announced', async () => {
  const p = await engines.postgres()
  const feeds: Awaited<ReturnType<typeof postgresChangeFeed>>[] = []
  const services: ReturnType<typeof createAbuseService<any>>[] = []
  try {
    await p.main
      .sql`INSERT INTO links (code, long_url, created, updated) VALUES ('v6', 'http://[2001:DB8::0:1]/x', 0, 0)`
    const row = (await postgresLinkStorage(p.pool()).byCode('v6'))!
    const node = async (name: string) => {
      const sql = p.pool()
      const changes = await postgresChangeFeed(sql)
      feeds.push(changes)
      const abuse = createAbuseService<any>({
        rows: postgresAbuseRows(sql),
        audit: postgresAuditRows(sql),
        queue: postgresWebhookQueue(sql),
        config: testConfig(engines.tracked(`linkbox-abusefeed-${name}-`)),
        links: { resolve: () => null, forget: () => {}, domains: createDomains(testConfig('/nonexistent')) },
        clock: Date.now,
        changes,
      })
      services.push(abuse)
      await abuse.ready
      return abuse
    }
    const [a, b] = [await node('a'), await node('b')]
    // Seen by B within a second, with nothing of B's own to wait for (its half-second timer reads accounts, not bans).
    const within = async (check: () => boolean) => {
      const t0 = Date.now()
      while (!check() && Date.now() - t0 < 2_000) await Bun.sleep(10)
      return check() ? Date.now() - t0 : -1
    }
    expect(b.verdict(row)).toBeNull()
    expect(await a.banHost('[2001:0db8::1]', 'kit', null)).toEqual({ host: '2001:db8::1', added: true })
    const seen = await within(() => b.verdict(row) !== null)
    expect(seen).toBeGreaterThanOrEqual(0)
    expect(seen).toBeLessThan(1_000)
    expect(b.verdict(row)).toEqual({ kind: 'banned', host: '2001:db8::1', reason: 'kit' })
    expect(() => b.checkDestination('http://[2001:db8:0:0:0:0:0:1]/')).toThrow(
      '2001:db8::1, which the administrator of this service has banned (kit)',
    )
    expect(await b.unbanHost('2001:db8::1')).toBe(true)
    const lifted = await within(() => a.verdict(row) === null)
    expect(lifted).toBeGreaterThanOrEqual(0)
    expect(lifted).toBeLessThan(1_000)

    // What the channel carries about bans: the committed changes only.
    const heard: string[] = []
    const listener = await p.main.sql.listen(CHANNEL, (payload: string) => {
      const m = decodeChange(payload)
      if (m && 't' in m && m.t === BAN_TOPIC && 'k' in m) heard.push(...m.k)
    })
    try {
      await a.banHost('kit.example', 'kit', null)
      expect(await a.banHost('KIT.example.', 'again', null)).toEqual({ host: 'kit.example', added: false })
      // A report closed with a ban, undone by the change that goes with it: no ban, nothing said.
      await p.main
        .sql`INSERT INTO link_reports (link_id, code, reason, text, contact, created) VALUES (${row.id}, 'v6', 'phishing', '', '', 0)`
      const [{ id }] = await p.main.sql`SELECT id FROM link_reports`
      await expect(
        a.closeReport(Number(id), 'host_banned', null, undefined, {
          ban: { host: 'undone.example', reason: 'x' },
          change: () => Promise.reject(new Error('refused')),
        }),
      ).rejects.toThrow('refused')
      await a.unbanHost('kit.example')
      await within(() => heard.length >= 2)
      await Bun.sleep(200)
      expect(heard).toEqual(['kit.example', 'kit.example'])
      expect((await a.bans()).map((x) => x.host)).toEqual([])
    } finally {
      await listener.unlisten()
    }
  } finally {
    for (const s of services) s.close()
    for (const f of feeds) await f.close()
    await p.close()
  }
}, 60_000)
