// The composition of the stores (src/app/storages.ts), on both engines: one Storages per engine with the same
// members, and one `within` written once for both — a link, its webhook event and its audit row committed in
// one transaction, or none of them — which is the shape every service takes once it runs on either engine.
import { describe, expect, test } from 'bun:test'
import { allWritten } from '../../src/db/written'
import { postgresStorages } from '../../src/app/storages-postgres'
import { sqliteStorages, type Storages } from '../../src/app/storages'
import { engineHarness } from '../support/engines'

const engines = engineHarness()

interface Engine {
  storages(): Promise<{ s: Storages<any>; close(): Promise<void> }>
}

const ENGINES: [string, Engine][] = [
  [
    'SQLite',
    {
      async storages() {
        const d = engines.sqlite('linkbox-storages-')
        return { s: sqliteStorages(d.main), close: d.close }
      },
    },
  ],
  [
    'PostgreSQL',
    {
      async storages() {
        const d = await engines.postgres()
        return { s: postgresStorages(d.main.sql), close: d.close }
      },
    },
  ],
]

const NOW = Date.UTC(2026, 10, 26, 12)
const link = (code: string, accountId: number) => ({
  code,
  long_url: `https://example.com/${code}`,
  account_id: accountId,
  mode: 'redirect' as const,
  password_hash: null,
  created: NOW,
  expires: null,
  max_visits: null,
  rules: null,
  split: null,
})
const ALL = {
  actor: null,
  action: null,
  from: 0,
  to: Number.MAX_SAFE_INTEGER,
  before: Number.MAX_SAFE_INTEGER,
  limit: 10,
}
const auditRow = (target: string) => ({
  at: NOW,
  actorKind: 'account' as const,
  actorId: null,
  actorName: 'owner',
  action: 'link.create',
  target,
  detail: '',
  address: '',
})

test('both engines give the same stores', async () => {
  const [sqlite, postgres] = [await ENGINES[0]![1].storages(), await ENGINES[1]![1].storages()]
  try {
    expect(Object.keys(postgres.s).sort()).toEqual(Object.keys(sqlite.s).sort())
    expect([sqlite.s.engine, postgres.s.engine]).toEqual(['sqlite', 'postgres'])
  } finally {
    await sqlite.close()
    await postgres.close()
  }
})

describe.each(ENGINES)('one within for both engines, on %s', (_name, engine) => {
  /** An account with an endpoint subscribed to link.created, so an event makes a delivery. */
  async function owner(s: Storages<any>) {
    const made = await s.accounts.createAccount({
      name: 'owner',
      passwordHash: null,
      admin: false,
      now: NOW,
      key: null,
    })
    if (!made.ok) throw new Error('account')
    const endpoint = await s.endpoints.insertUnder(made.account.id, 10, {
      url: 'https://hooks.example/in',
      events: 'link.created',
      secret: 'whsec_x',
      now: NOW,
    })
    if (typeof endpoint === 'string') throw new Error(endpoint)
    return made.account.id
  }
  // The service's within: the event and the audit row, in the link's transaction; one promise only while a
  // write is pending (PostgreSQL's): SQLite's storage refuses a pending one (db/sqlite/within.ts).
  const both = (s: Storages<any>, accountId: number) => (tx: unknown, row: { code: string }) =>
    allWritten([
      s.queue.enqueue(tx, { type: 'link.created', accountId, at: NOW, data: { hex: row.code } }, NOW),
      s.audit.insert(tx, auditRow(row.code)),
    ])

  test('a link, its webhook event and its audit row commit together', async () => {
    const { s, close } = await engine.storages()
    try {
      const accountId = await owner(s)
      const row = await s.links.insert(link('abc123', accountId), ['news'], both(s, accountId))
      expect(typeof row).toBe('object')
      expect((await s.links.byCode('abc123'))?.long_url).toBe('https://example.com/abc123')
      expect(await s.links.tagsOf((row as { id: number }).id)).toEqual(['news'])
      expect((await s.queue.outbox()).pending).toBe(1)
      expect((await s.audit.page(ALL)).map((r) => r.target)).toEqual(['abc123'])
    } finally {
      await close()
    }
  })

  test('a within that fails after writing leaves none of the three', async () => {
    const { s, close } = await engine.storages()
    try {
      const accountId = await owner(s)
      const failing = (tx: unknown, row: { code: string }) => {
        const written = both(s, accountId)(tx, row)
        // Synchronous on SQLite (its writes are done by now), after them on PostgreSQL: either way, last.
        if (s.engine === 'sqlite') throw new Error('refused')
        return (written as Promise<unknown>).then(() => {
          throw new Error('refused')
        })
      }
      await expect(s.links.insert(link('abc124', accountId), ['news'], failing)).rejects.toThrow('refused')
      expect(await s.links.byCode('abc124')).toBeNull()
      expect((await s.queue.outbox()).pending).toBe(0)
      expect(await s.audit.page(ALL)).toEqual([])
      // And the stores still work afterwards (no transaction left open, no savepoint left behind).
      expect(typeof (await s.links.insert(link('abc125', accountId), [], both(s, accountId)))).toBe('object')
      expect((await s.queue.outbox()).pending).toBe(1)
    } finally {
      await close()
    }
  })
})
