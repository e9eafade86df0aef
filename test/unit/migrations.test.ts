// Schema migrations on a real SQLite file: a database written by an older version moves to the current
// schema with every row, id and aggregate kept (issue 6, finding 1: row ids must never be reused).
import { Database } from 'bun:sqlite'
import { afterEach, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase, type Db } from '../../src/db/sqlite'
import { migrations } from '../../src/db/sqlite/migrations'
import { tempDir } from '../support/app'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** A database file exactly as schema version 1 left it, with two accounts, keys, links and aggregates. */
function version1Database(): string {
  const dir = tempDir('linkbox-migrate-')
  dirs.push(dir)
  const path = join(dir, 'linkbox.db')
  const db = new Database(path, { create: true, strict: true })
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA foreign_keys = ON')
  db.exec(migrations[0] as string)
  db.exec('PRAGMA user_version = 1')
  db.exec(`
    INSERT INTO accounts (id, name, password_hash, admin, created) VALUES (1, 'alice', NULL, 1, 1000), (2, 'bob', 'h', 0, 2000);
    INSERT INTO api_keys (id, account_id, prefix, hash, scopes, label, created, last_used, revoked) VALUES
      (1, 1, 'lb_aaaa', 'hash1', 'links,qr', 'first', 1000, 1500, NULL),
      (2, 2, 'lb_bbbb', 'hash2', 'links', '', 2000, NULL, 2500);
    INSERT INTO links (id, code, long_url, account_id, mode, password_hash, created, updated, expires, clicks, bots) VALUES
      (1, 'abc123', 'https://one.example/', 1, 'redirect', NULL, 1000, 1000, NULL, 7, 1),
      (2, 'zzz999', 'https://two.example/', NULL, 'preview', 'argon', 2000, 2100, 99999, 3, 0),
      (5, 'gap555', 'https://five.example/', 2, 'frame', NULL, 3000, 3000, NULL, 2, 2);
    INSERT INTO click_days (link_id, day, clicks, bots) VALUES
      (1, '2026-01-01', 4, 1), (1, '2026-01-02', 3, 0), (2, '2026-01-01', 3, 0), (5, '2026-01-03', 2, 2);
    INSERT INTO click_dims (link_id, day, dim, name, clicks) VALUES
      (1, '2026-01-01', 'source', 'direct', 4), (1, '2026-01-02', 'browser', 'Chrome', 3),
      (2, '2026-01-01', 'os', 'Linux', 3), (5, '2026-01-03', 'device', 'mobile', 2);
  `)
  db.close()
  return path
}

const TABLES = ['accounts', 'api_keys', 'links']
const dump = (db: Database) => ({
  ...Object.fromEntries(TABLES.map((t) => [t, db.query(`SELECT * FROM ${t} ORDER BY 1, 2`).all()])),
  click_days: db.query('SELECT link_id, day, clicks, bots FROM click_days ORDER BY 1, 2').all(),
})
const indexes = (db: Database) =>
  (
    db
      .query("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .all() as { name: string }[]
  ).map((r) => r.name)

test('a version 1 database migrates with every row, id, index and aggregate kept', () => {
  const path = version1Database()
  const old = new Database(path, { strict: true })
  const before = dump(old)
  const indexesBefore = indexes(old)
  old.close()

  const db: Db = openDatabase(path)
  try {
    expect((db.query('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(migrations.length)
    // Migration 8 adds accounts.disabled, null (active) for every account that was there.
    const after = dump(db) as Record<string, any[]>
    expect(after.accounts!.map((a) => a.disabled)).toEqual((before as Record<string, any[]>).accounts!.map(() => null))
    // Migration 16 (the audit log) adds accounts.last_signin, null (never) for every account that was there.
    expect(after.accounts!.map((a) => a.last_signin)).toEqual(
      (before as Record<string, any[]>).accounts!.map(() => null),
    )
    after.accounts = after.accounts!.map(({ disabled: _, last_signin: __, ...rest }) => rest)
    // Migration 11 adds links.disabled, null (live) for every link that was there.
    expect(after.links!.map((l) => l.disabled)).toEqual((before as Record<string, any[]>).links!.map(() => null))
    // Migration 16 (visit limits, rules and splits) adds links.max_visits, rules and split (null: none) and
    // visits_used (0) for every link that was there.
    expect(after.links!.map((l) => [l.max_visits, l.visits_used, l.rules, l.split])).toEqual(
      (before as Record<string, any[]>).links!.map(() => [null, 0, null, null]),
    )
    // Migration 22 adds links.title ('': none) for every link that was there.
    expect(after.links!.map((l) => l.title)).toEqual((before as Record<string, any[]>).links!.map(() => ''))
    // Migration 26 (issue 40) adds links.domain ('': the default), og_title and og_description (''), and
    // expired_url, og_image and meta_due (null) for every link that was there.
    expect(
      after.links!.map((l) => [l.domain, l.expired_url, l.og_title, l.og_description, l.og_image, l.meta_due]),
    ).toEqual((before as Record<string, any[]>).links!.map(() => ['', null, '', '', null, null]))
    after.links = after.links!.map(
      ({
        disabled: _,
        max_visits: _m,
        visits_used: _v,
        rules: _r,
        split: _s,
        title: _t,
        domain: _d,
        expired_url: _e,
        og_title: _ot,
        og_description: _od,
        og_image: _oi,
        meta_due: _md,
        ...rest
      }) => rest,
    )
    expect(after).toEqual(before)
    // Migrations 5 to 12, 14, 20 and 24 add the mail, media, webhook, session, form token, report, tag, audit,
    // flash, daily count, visitor hash and pending import tables and their indexes (named mail…, media…, webhook…,
    // web_sessions…, form_tokens…, link_reports…, link_tags…, audit_log…, flashes…, daily_counts…, visitor_hashes…,
    // pending_imports…; links_meta_due is migration 26's); the others are kept (26 rebuilds links with its index).
    expect(
      indexes(db).filter(
        (n) =>
          !/^(mail|media|webhook|web_sessions|form_tokens|link_reports|link_tags|audit_log|flashes|daily_counts|visitor_hashes|pending_imports|links_meta_due)/.test(
            n,
          ),
      ),
    ).toEqual(indexesBefore)
    expect(db.query('PRAGMA foreign_key_check').all()).toEqual([])
    // Migration 3: each day's names become the JSON of its row, and each month adds up its days.
    const json = (rows: unknown[]): unknown[] =>
      (rows as { dims: string }[]).map((r) => ({ ...r, dims: JSON.parse(r.dims) }))
    expect(json(db.query('SELECT link_id, day, dims FROM click_days ORDER BY 1, 2').all())).toEqual([
      { link_id: 1, day: '2026-01-01', dims: { source: { direct: 4 } } },
      { link_id: 1, day: '2026-01-02', dims: { browser: { Chrome: 3 } } },
      { link_id: 2, day: '2026-01-01', dims: { os: { Linux: 3 } } },
      { link_id: 5, day: '2026-01-03', dims: { device: { mobile: 2 } } },
    ])
    expect(json(db.query('SELECT * FROM click_months ORDER BY 1, 2').all())).toEqual([
      { link_id: 1, month: '2026-01', clicks: 7, bots: 1, dims: { source: { direct: 4 }, browser: { Chrome: 3 } } },
      { link_id: 2, month: '2026-01', clicks: 3, bots: 0, dims: { os: { Linux: 3 } } },
      { link_id: 5, month: '2026-01', clicks: 2, bots: 2, dims: { device: { mobile: 2 } } },
    ])
    expect(db.query("SELECT name FROM sqlite_master WHERE name = 'click_dims'").get()).toBeNull()
    // Enforcement is back on after the rebuild: deleting a link takes its aggregates with it.
    expect(db.query('PRAGMA foreign_keys').get()).toEqual({ foreign_keys: 1 })
    db.exec('DELETE FROM links WHERE id = 1')
    expect(db.query('SELECT count(*) AS n FROM click_days WHERE link_id = 1').get()).toEqual({ n: 0 })
    expect(db.query('SELECT count(*) AS n FROM click_months WHERE link_id = 1').get()).toEqual({ n: 0 })
    expect(db.query('SELECT count(*) AS n FROM click_days').get()).toEqual({ n: 2 })
    // Every table is AUTOINCREMENT now.
    const sql = db
      .query("SELECT name, sql FROM sqlite_master WHERE name IN ('accounts', 'api_keys', 'links')")
      .all() as { name: string; sql: string }[]
    for (const t of sql)
      expect({ table: t.name, autoincrement: /AUTOINCREMENT/.test(t.sql) }).toEqual({
        table: t.name,
        autoincrement: true,
      })
  } finally {
    db.close()
  }
})

test('after deleting the newest row, the next insert gets a new id (links, accounts, keys)', () => {
  const db = openDatabase(join(version1Database(), '..', 'linkbox.db'))
  try {
    db.exec('DELETE FROM links WHERE id = 5')
    const link = db
      .query(
        "INSERT INTO links (code, long_url, created, updated) VALUES ('new111', 'https://new.example/', 1, 1) RETURNING id",
      )
      .get()
    expect(link).toEqual({ id: 6 })

    db.exec('DELETE FROM api_keys WHERE id = 2')
    db.exec('DELETE FROM accounts WHERE id = 2')
    expect(db.query("INSERT INTO accounts (name, created) VALUES ('carol', 1) RETURNING id").get()).toEqual({ id: 3 })
    expect(
      db
        .query(
          "INSERT INTO api_keys (account_id, prefix, hash, scopes, created) VALUES (3, 'p', 'h3', 'links', 1) RETURNING id",
        )
        .get(),
    ).toEqual({ id: 3 })
  } finally {
    db.close()
  }
})

test('a rebuild that would orphan rows is refused and leaves the database at its old version', () => {
  const path = version1Database()
  const raw = new Database(path, { strict: true })
  raw.exec('PRAGMA foreign_keys = OFF')
  raw.exec("INSERT INTO click_days (link_id, day, clicks, bots) VALUES (42, '2026-01-01', 1, 0)")
  raw.close()
  expect(() => openDatabase(path)).toThrow(/migration 2 .*"click_days" without their "links" row/)
  const after = new Database(path, { strict: true })
  expect(after.query('PRAGMA user_version').get()).toEqual({ user_version: 1 })
  expect(
    (after.query("SELECT sql FROM sqlite_master WHERE name = 'links'").get() as { sql: string }).sql,
  ).not.toContain('AUTOINCREMENT')
  after.close()
})

test('migration 3: a month keeps its 200 busiest names per dimension, the rest summed as "other"', () => {
  const path = version1Database()
  const raw = new Database(path, { strict: true })
  raw.exec(
    "INSERT INTO click_days (link_id, day, clicks, bots) VALUES (1, '2026-02-01', 0, 0), (1, '2026-02-02', 0, 0)",
  )
  const put = raw.query("INSERT INTO click_dims (link_id, day, dim, name, clicks) VALUES (1, ?1, 'source', ?2, ?3)")
  // 250 names over two days: h0…h99 on both (2 clicks each), h100…h249 on one of them (1 click each).
  for (let i = 0; i < 150; i++) put.run('2026-02-01', `h${i}`, 1)
  for (let i = 0; i < 100; i++) put.run('2026-02-02', `h${i}`, 1)
  for (let i = 150; i < 250; i++) put.run('2026-02-02', `h${i}`, 1)
  put.run('2026-02-02', 'other', 7)
  raw.close()
  const db = openDatabase(path)
  try {
    const row = db.query("SELECT dims FROM click_months WHERE link_id = 1 AND month = '2026-02'").get() as {
      dims: string
    }
    const source = new Map(Object.entries(JSON.parse(row.dims).source as Record<string, number>))
    expect(source.size).toBe(201)
    for (let i = 0; i < 100; i++) expect(source.get(`h${i}`)).toBe(2)
    expect(source.get('other')).toBe(50 + 7) // 50 one-click names, and what the days held as "other"
    expect([...source.values()].reduce((a, b) => a + b)).toBe(150 + 200 + 7)
  } finally {
    db.close()
  }
})

test('migration 7: the webhook tables, and an account deleted takes its endpoints, events and deliveries', () => {
  const db = openDatabase(version1Database())
  try {
    expect(indexes(db).filter((n) => n.startsWith('webhook'))).toEqual([
      'webhook_deliveries_due',
      'webhook_deliveries_event',
      'webhook_endpoints_account',
    ])
    db.exec(`
      INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (2, 'https://hook.example/', 'link.created', 'whsec_x', 1);
      INSERT INTO webhook_events (account_id, type, created, payload) VALUES (2, 'link.created', 1, '{}');
      INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (1, 1, 'pending', 1);
    `)
    expect(db.query('SELECT enabled, failing, disabled_reason FROM webhook_endpoints').get()).toEqual({
      enabled: 1,
      failing: 0,
      disabled_reason: null,
    })
    expect(() =>
      db.exec("INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (1, 1, 'pending', 2)"),
    ).toThrow(/UNIQUE/)
    expect(() => db.exec("UPDATE webhook_deliveries SET state = 'sent'")).toThrow(/CHECK/)
    db.exec('DELETE FROM api_keys WHERE account_id = 2')
    db.exec('DELETE FROM accounts WHERE id = 2')
    for (const t of ['webhook_endpoints', 'webhook_events', 'webhook_deliveries'])
      expect({ t, n: (db.query(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n }).toEqual({ t, n: 0 })
  } finally {
    db.close()
  }
})

test('migration 9: events keep their ids and get msg_<id>; new ones a random webhook-id; event ids are not given twice', () => {
  const dir = tempDir('linkbox-migrate-')
  dirs.push(dir)
  const path = join(dir, 'linkbox.db')
  const raw = new Database(path, { create: true, strict: true })
  raw.exec('PRAGMA journal_mode = WAL')
  for (let v = 0; v < 8; v++) {
    const m = migrations[v]!
    raw.exec(typeof m === 'string' ? m : m.sql)
    raw.exec(`PRAGMA user_version = ${v + 1}`)
  }
  raw.exec(`
    INSERT INTO accounts (name, created) VALUES ('alice', 1);
    INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES (1, 'https://hook.example/', 'link.created', 'whsec_x', 1);
    INSERT INTO webhook_events (account_id, type, created, payload) VALUES (1, 'link.created', 1, '{"n":1}'), (1, 'link.created', 2, '{"n":2}'), (1, 'link.created', 3, '{"n":3}');
    INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (1, 1, 'ok', 1), (2, 1, 'pending', 2);
    DELETE FROM webhook_events WHERE id = 3;
  `)
  raw.close()

  const db = openDatabase(path)
  try {
    expect(db.query('PRAGMA user_version').get()).toEqual({ user_version: migrations.length })
    // What was there keeps its row, its payload and the id it was (or will be) sent under.
    expect(db.query('SELECT id, webhook_id, payload FROM webhook_events ORDER BY id').all()).toEqual([
      { id: 1, webhook_id: 'msg_1', payload: '{"n":1}' },
      { id: 2, webhook_id: 'msg_2', payload: '{"n":2}' },
    ])
    expect(db.query('SELECT event_id, state FROM webhook_deliveries ORDER BY event_id').all()).toEqual([
      { event_id: 1, state: 'ok' },
      { event_id: 2, state: 'pending' },
    ])
    // The deleted event 3's id is not given again; a new event's webhook-id is random, never its row number.
    const insert = db.query(
      "INSERT INTO webhook_events (account_id, type, created, payload) VALUES (1, 'link.created', 4, '{}') RETURNING id, webhook_id",
    )
    const a = insert.get() as { id: number; webhook_id: string }
    const b = insert.get() as { id: number; webhook_id: string }
    expect([a.id, b.id]).toEqual([4, 5])
    expect(a.webhook_id).toMatch(/^msg_[0-9a-f]{32}$/)
    expect(b.webhook_id).toMatch(/^msg_[0-9a-f]{32}$/)
    expect(a.webhook_id).not.toBe(b.webhook_id)
    // The deliveries still belong to the rebuilt table: an event deleted takes its deliveries.
    db.exec('DELETE FROM webhook_events WHERE id = 2')
    expect(db.query('SELECT event_id FROM webhook_deliveries').all()).toEqual([{ event_id: 1 }])
    expect(db.query('PRAGMA foreign_key_check').all()).toEqual([])
  } finally {
    db.close()
  }
})

test('migration 21: an endpoint that listened for link.created also gets links.imported; others keep their events', () => {
  const dir = tempDir('linkbox-migrate-')
  dirs.push(dir)
  const path = join(dir, 'linkbox.db')
  const raw = new Database(path, { create: true, strict: true })
  raw.exec('PRAGMA journal_mode = WAL')
  for (let v = 0; v < 20; v++) {
    const m = migrations[v]!
    raw.exec(typeof m === 'string' ? m : m.sql)
    raw.exec(`PRAGMA user_version = ${v + 1}`)
  }
  raw.exec(`
    INSERT INTO accounts (id, name, admin, created) VALUES (1, 'alice', 0, 1);
    INSERT INTO webhook_endpoints (account_id, url, events, secret, created) VALUES
      (1, 'https://a.example/', 'link.created,mail.received', 'whsec_a', 1),
      (1, 'https://b.example/', 'mail.received,link.clicked', 'whsec_b', 1),
      (1, 'https://c.example/', 'link.created', 'whsec_c', 1);
  `)
  raw.close()
  const db = openDatabase(path)
  try {
    expect(db.query('SELECT events FROM webhook_endpoints ORDER BY id').all()).toEqual([
      { events: 'link.created,mail.received,links.imported' },
      { events: 'mail.received,link.clicked' },
      { events: 'link.created,links.imported' },
    ])
  } finally {
    db.close()
  }
})
