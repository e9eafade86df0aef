// `linkbox migrate --to URL` (issue 22, SPEC §11) on a real PostgreSQL server: a data_dir built by the real
// service (links with tags, rules and a visit limit, clicks flushed, accounts, keys and a dashboard session, a
// webhook endpoint with deliveries to a real receiver, mail with attachments over real SMTP, a signed link),
// the service stopped, the command run as an operator runs it; then everything read back on PostgreSQL
// through the PostgreSQL stores (mail, click counts, signing secret, webhook queue) and every table compared
// row for row with SQLite's. Also what it refuses (a non-empty database, a running service, a bad URL) and
// what a failure half way leaves (no row at all, and a rerun that works).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { sqliteClickCounts } from '../../src/clicks/storage/sqlite'
import { postgresClickCounts } from '../../src/clicks/storage/postgres'
import { restoreBackup } from '../../src/app/backup'
import { writePostgresBackup } from '../../src/app/backup-postgres'
import { buildConfig } from '../../src/kernel/config'
import { openDatabase } from '../../src/db/sqlite'
import { openPostgres } from '../../src/db/postgres'
import { copyToPostgres } from '../../src/app/copy-postgres'
import { PAGE_ROWS } from '../../src/app/copy-tables'
import { CHUNK_BYTES, postgresMessageStore } from '../../src/mail/storage/postgres'
import { sqliteMessageStore } from '../../src/mail/storage/sqlite'
import { createSpool } from '../../src/mail/spool'
import { createLinkSigner, loadSigningSecret } from '../../src/kernel/signing'
import { postgresSigningSecret } from '../../src/db/postgres/signing'
import { sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'
import { postgresWebhookQueue } from '../../src/webhooks/storage/postgres'
import { dashboardHttp } from '../support/dashboard-http'
import { PNG } from 'pngjs'
import { sharedPostgres, type Postgres } from '../support/postgres'
import {
  CHROME_UA,
  apiPost,
  createAccount,
  freePort,
  killAllServers,
  removeDir,
  runCli,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
  type TestConfig,
} from '../support/server'
import { startReceiver, until, type Receiver } from '../support/webhooks'

setDefaultTimeout(120_000)

let pg: Postgres
const dirs: string[] = []
const receivers: Receiver[] = []
beforeAll(async () => {
  pg = await sharedPostgres()
}, 120_000)
afterAll(async () => {
  await killAllServers()
  receivers.forEach((r) => r.stop())
  dirs.forEach(removeDir)
  await pg?.stop()
})

// The test server trusts loopback: a password in the URL is sent to nobody, but must never be printed.
const PASSWORD = 'pa55-n0t-for-output-91c2'
const withPassword = (url: string) => url.replace('@', `:${PASSWORD}@`)
const redacted = (url: string) => url.replace(/:[^:@/]+@/, ':***@')
const DOMAIN = 'migrate.test'

async function migrate(config: TestConfig, url: string) {
  const r = await runCli(['migrate', '--to', url, '--config', config.configPath], { timeoutMs: 60_000 })
  expect(r.stdout + r.stderr).not.toContain(PASSWORD)
  return r
}

/** The primary key of each SQLite table (its order of rows on both sides). */
function primaryKeys(db: Database): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const { name } of db
    .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all() as { name: string }[])
    out[name] = (db.query(`PRAGMA table_info("${name}")`).all() as { name: string; pk: number }[])
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name)
  return out
}

/** Values as one shape on both engines: bigint text → number, bytes → hex. */
const normal = (row: Record<string, unknown>, bigints: Set<string>) =>
  Object.fromEntries(
    Object.entries(row).map(([k, v]) => [
      k,
      v instanceof Uint8Array
        ? Buffer.from(v).toString('hex')
        : bigints.has(k) && typeof v === 'string'
          ? Number(v)
          : v,
    ]),
  )

async function pgTable(sql: InstanceType<typeof Bun.SQL>, table: string, key: string[]) {
  const bigints = new Set<string>(
    (
      await sql`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${table} AND data_type = 'bigint'`
    ).map((r: { column_name: string }) => r.column_name),
  )
  return (await sql.unsafe(`SELECT * FROM "${table}" ORDER BY ${key.map((k) => `"${k}"`).join(', ')}`)).map(
    (r: Record<string, unknown>) => normal(r, bigints),
  )
}

const liteTable = (db: Database, table: string, key: string[]) =>
  (
    db.query(`SELECT * FROM "${table}" ORDER BY ${key.map((k) => `"${k}"`).join(', ')}`).all() as Record<
      string,
      unknown
    >[]
  ).map((r) => normal(r, new Set<string>()))

/** Every linkbox table of a PostgreSQL database with a row in it (the schema-version row aside). */
async function tablesWithRows(sql: InstanceType<typeof Bun.SQL>): Promise<string[]> {
  const tables = (
    await sql`SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'linkbox_schema' ORDER BY tablename`
  ).map((r: { tablename: string }) => r.tablename)
  const found: string[] = []
  for (const t of tables) if ((await sql.unsafe(`SELECT EXISTS (SELECT 1 FROM "${t}") AS any`))[0].any) found.push(t)
  return found
}

async function readAll(bytes: Blob | Uint8Array | ReadableStream<Uint8Array> | null): Promise<Buffer> {
  if (bytes === null) throw new Error('no bytes')
  if (bytes instanceof Uint8Array) return Buffer.from(bytes)
  if (bytes instanceof Blob) return Buffer.from(await bytes.arrayBuffer())
  return Buffer.from(await new Response(bytes).arrayBuffer())
}

describe('a data_dir made by the real service, copied into PostgreSQL', () => {
  let config: TestConfig
  let key: string
  let server: RunningServer
  const sent = { small: randomBytes(1500), large: randomBytes(CHUNK_BYTES + 300 * 1024) } // the large one spans two chunks
  let signedUrl = ''
  let migratedUrl = ''
  /** What the SQLite service answered before it stopped: the PostgreSQL node must answer the same. */
  const answered: { links?: unknown; stats?: unknown; messages?: unknown; address?: string; code?: string } = {}

  test('the service makes the data: links, clicks, accounts, keys, a session, webhooks, mail, a signed link; then stops', async () => {
    const receiver = startReceiver()
    receivers.push(receiver)
    config = writeConfig(tempDir('linkbox-migrate-'), {
      mail: { smtp_host: '127.0.0.1', smtp_port: await freePort(), domains: [DOMAIN] },
      media: { allow_private_networks: true }, // the webhook receiver is on 127.0.0.1
    })
    dirs.push(config.dir)
    await createAccount(config.configPath, 'admin', { admin: true })
    key = await createAccount(config.configPath, 'alice')
    const pw = await runCli(['account', 'password', 'alice', '--password', '-', '--config', config.configPath], {
      stdin: 'correct horse battery\n',
    })
    expect(pw.code).toBe(0)
    expect(
      (
        await runCli([
          'key',
          'create',
          'alice',
          '--scopes',
          'links,mail',
          '--label',
          'phone',
          '--config',
          config.configPath,
        ])
      ).code,
    ).toBe(0)
    const hook = await runCli([
      'webhook',
      'create',
      'alice',
      receiver.url,
      '--events',
      'link.created,link.deleted',
      '--config',
      config.configPath,
    ])
    expect(hook.code).toBe(0)
    receiver.secret = hook.stdout.trimEnd().split('\n').at(-1)!
    // A second endpoint nobody answers: its deliveries stay pending or fail.
    expect(
      (
        await runCli([
          'webhook',
          'create',
          'alice',
          `http://127.0.0.1:${await freePort()}/gone`,
          '--events',
          'link.created',
          '--config',
          config.configPath,
        ])
      ).code,
    ).toBe(0)

    server = await startServer({ config })
    for (const deadline = Date.now() + 15_000; !/SMTP on \S+:\d+ for /.test(server.stdout()); await Bun.sleep(20))
      if (Date.now() > deadline) throw new Error(`no SMTP line\n${server.stdout()}\n${server.stderr()}`)
    const smtpPort = Number(server.stdout().match(/SMTP on \S+:(\d+) for /)![1])

    expect((await apiPost(server.url, 'getLink.json', { url: 'https://example.org/anonymous' })).status).toBe(200) // no owner: link_counts owner 0
    const codes: string[] = []
    const made: Record<string, string>[] = [
      { url: 'https://example.org/tagged', tags: 'news,blue' },
      { url: 'https://example.org/limited', max_visits: '50' },
      {
        url: 'https://example.org/ruled',
        rules: JSON.stringify([{ url: 'https://example.org/mobile', device: ['mobile'] }]),
      },
      {
        url: 'https://example.org/split',
        split: JSON.stringify([
          { url: 'https://a.example.org/', weight: 30 },
          { url: 'https://b.example.org/', weight: 70 },
        ]),
      },
      { url: 'https://example.org/deleted-later' },
    ]
    for (const fields of made) {
      const r = await apiPost(server.url, 'getLink.json', fields, { 'x-api-key': key })
      expect(r.status).toBe(200)
      codes.push(r.body.return.hex)
    }
    // The newest link goes: SQLite's AUTOINCREMENT remembers its id, which PostgreSQL must never give again.
    expect((await apiPost(server.url, 'delete.json', { code: codes[4]! }, { 'x-api-key': key })).status).toBe(200)
    // A social preview's image on the first link (issue 40): link_images holds bytes (a BLOB; bytea on PostgreSQL).
    const png = new PNG({ width: 4, height: 2 })
    png.data.fill(200)
    const form = new FormData()
    form.append('code', codes[0]!)
    form.append('og_title', 'A card')
    form.append('og_image', new Blob([new Uint8Array(PNG.sync.write(png))], { type: 'image/png' }))
    const previewed = await fetch(`${server.url}/api/update.json`, {
      method: 'POST',
      body: form,
      headers: { 'x-api-key': key },
    })
    expect(previewed.status).toBe(200)
    for (let i = 0; i < 4; i++)
      await fetch(`${server.url}/${codes[0]}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })
    for (let i = 0; i < 2; i++)
      await fetch(`${server.url}/${codes[1]}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })
    for (let i = 0; ; i++) {
      const stats = await apiPost(server.url, 'stats.json', { code: codes[0]! }, { 'x-api-key': key })
      if (stats.body.return?.clicks === 4) break
      if (i > 100) throw new Error(`clicks not flushed: ${JSON.stringify(stats.body)}`)
      await Bun.sleep(100)
    }
    await until(() => receiver.got.length >= 6, 'the link.created and link.deleted deliveries')

    // Mail over real SMTP: a small message (kept in mail_inline) and a large one (files under data_dir/mail).
    const mailbox = await fetch(`${server.url}/api/mailbox.json?address=inbox`, { headers: { 'x-api-key': key } })
    const address = ((await mailbox.json()) as any).return.address
    const smtp = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      ignoreTLS: true,
    } as any)
    await smtp.sendMail({
      from: 'a@example.org',
      to: address,
      subject: 'small',
      text: 'hello',
      attachments: [{ filename: 's.bin', content: sent.small }],
    })
    await smtp.sendMail({
      from: 'b@example.org',
      to: address,
      subject: 'large',
      text: 'big one',
      attachments: [{ filename: 'l.bin', content: sent.large }],
    })
    smtp.close()
    const list = (await (
      await fetch(`${server.url}/api/messages.json?address=${address}`, { headers: { 'x-api-key': key } })
    ).json()) as any
    expect(list.return.messages.length).toBe(2)
    const large = list.return.messages.find((m: any) => m.subject === 'large')
    const full = (await (
      await fetch(`${server.url}/api/message.json?address=${address}&id=${large.id}`, { headers: { 'x-api-key': key } })
    ).json()) as any
    signedUrl = full.return.attachments[0].url
    const u = new URL(signedUrl)
    expect(
      Buffer.from(await (await fetch(`${server.url}${u.pathname}${u.search}`)).arrayBuffer()).equals(sent.large),
    ).toBe(true)

    // A dashboard session (web_sessions, and the sign-in's form token).
    await dashboardHttp(() => ({ url: server.url }) as any).signIn('alice', 'correct horse battery')

    // The answers the PostgreSQL node must give the same (read last: nothing changes them after this). The
    // second link's 2 clicks are written first (stats.json writes a link's pending clicks), so that
    // links.json does not depend on when the click writer's second passed.
    expect(
      (await apiPost(server.url, 'stats.json', { code: codes[1]! }, { 'x-api-key': key })).body.return.clicks,
    ).toBe(2)
    answered.code = codes[0]!
    answered.address = address
    answered.links = (await apiPost(server.url, 'links.json', {}, { 'x-api-key': key })).body
    answered.stats = (await apiPost(server.url, 'stats.json', { code: codes[0]! }, { 'x-api-key': key })).body
    answered.messages = (
      (await (
        await fetch(`${server.url}/api/messages.json?address=${address}`, { headers: { 'x-api-key': key } })
      ).json()) as any
    ).return.messages
    expect((answered.links as any).return.links.length).toBe(4)
    expect(await server.stop()).toBe(0)
  })

  test('migrate copies it: one line per table, the totals; every table equal row for row; the stores read it back', async () => {
    const url = withPassword(await pg.createDatabase())
    const r = await migrate(config, url)
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    migratedUrl = url
    const lines = r.stdout.trimEnd().split('\n')
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^copied \\d+ rows of \\d+ tables, the bytes of 2 messages and the signing key into ${redacted(url).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} in \\d+\\.\\d s; every count and hash checked equal$`,
      ),
    )

    const lite = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
    const sql = new Bun.SQL(url, { max: 2 })
    try {
      // One line per copied table, with SQLite's count, in foreign-key order (accounts before what refers to them).
      const keys = primaryKeys(lite)
      const copied = Object.keys(keys).filter(
        (t) => !['mail_inline', 'mail_inline_parts', 'mail_bodies', 'secrets'].includes(t),
      )
      for (const t of copied) {
        const n = (lite.query(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n
        expect(lines.filter((l) => new RegExp(`^${t} +${n}$`).test(l)).length).toBe(1)
      }
      const order = lines.map((l) => l.split(/\s+/)[0])
      expect(order.indexOf('accounts')).toBeLessThan(order.indexOf('links'))
      expect(order.indexOf('links')).toBeLessThan(order.indexOf('click_days'))
      expect(order.indexOf('webhook_events')).toBeLessThan(order.indexOf('webhook_deliveries'))
      // 2 messages: body, raw and one attachment each; the large one's raw and attachment take two chunks each.
      const [bodies] = await sql`SELECT count(*)::int AS chunks, sum(length(data))::int AS bytes FROM mail_bodies`
      expect(bodies.chunks).toBe(8)
      expect(lines.filter((l) => l.startsWith('mail_bodies'))).toEqual([
        `${'mail_bodies'.padEnd(20)}8 (the bytes of 2 messages: 6 parts, ${bodies.bytes} bytes, sha256 equal)`,
      ])
      expect(lines.find((l) => l.startsWith('secrets'))).toMatch(/^secrets +1 \(data_dir\/secrets\/signing\.key\)$/)

      // Every table, row for row (what the service wrote is really there: no empty table passes by accident).
      for (const t of [
        'accounts',
        'api_keys',
        'links',
        'link_tags',
        'click_days',
        'click_months',
        'link_counts',
        'mailboxes',
        'mail_messages',
        'mail_attachments',
        'webhook_endpoints',
        'webhook_events',
        'webhook_deliveries',
        'web_sessions',
        'audit_log',
      ])
        expect(liteTable(lite, t, keys[t]!).length).toBeGreaterThan(0)
      for (const t of copied)
        expect({ [t]: await pgTable(sql, t, keys[t]!) }).toEqual({ [t]: liteTable(lite, t, keys[t]!) })
      expect(await pgTable(sql, 'mail_inline', ['blob'])).toEqual([]) // the PostgreSQL store reads mail_bodies only
      expect(liteTable(lite, 'mail_inline', ['blob']).length).toBe(1)

      // Mail through the PostgreSQL store: the same list, bodies, and attachments byte for byte.
      const pgMail = postgresMessageStore(sql)
      const db = openDatabase(join(config.dataDir, 'linkbox.db'))
      try {
        const liteMail = sqliteMessageStore(db, createSpool(config.dataDir))
        const box = (await pgMail.mailboxByAddress(`inbox@${DOMAIN}`))!
        expect(box).toEqual((await liteMail.mailboxByAddress(`inbox@${DOMAIN}`))!)
        const messages = await pgMail.list(box.id, 0, 10)
        expect(messages).toEqual(await liteMail.list(box.id, 0, 10))
        const got: Buffer[] = []
        for (const m of messages) {
          const row = (await pgMail.message(m.id))!
          expect(await pgMail.body(row.blob)).toEqual(await liteMail.body(row.blob))
          expect(
            (await readAll(await pgMail.bytes(row.blob, 0))).equals(await readAll(await liteMail.bytes(row.blob, 0))),
          ).toBe(true)
          for (const a of await pgMail.attachmentsOf(m.id))
            got.push(await readAll(await pgMail.bytes(row.blob, a.part)))
        }
        expect(got.sort((a, b) => a.length - b.length)).toEqual([sent.small, sent.large])

        // Click counts per day, through both stores.
        const tagged = lite.query("SELECT id FROM links WHERE long_url = 'https://example.org/tagged'").get() as {
          id: number
        }
        const today = new Date().toISOString().slice(0, 10)
        const days = await postgresClickCounts(sql, postgresWebhookQueue(sql)).days(tagged.id, '2000-01-01', today)
        expect(days).toEqual(await sqliteClickCounts(db).days(tagged.id, '2000-01-01', today))
        expect(days.reduce((n, d) => n + d.clicks, 0)).toBe(4)

        // The webhook queue: the delivery log and counts of every endpoint are the same.
        const pgQueue = postgresWebhookQueue(sql)
        const liteQueue = sqliteWebhookQueue(db)
        const alice = lite.query("SELECT id FROM accounts WHERE name = 'alice'").get() as { id: number }
        expect(await pgQueue.counts(alice.id)).toEqual(await liteQueue.counts(alice.id))
        for (const { id } of lite.query('SELECT id FROM webhook_endpoints').all() as { id: number }[])
          expect(await pgQueue.log(id, 50)).toEqual(await liteQueue.log(id, 50))
      } finally {
        db.close()
      }

      // The signing secret: the same key, so the link signed by the SQLite service verifies on PostgreSQL.
      const secret = await postgresSigningSecret(sql)()
      expect(secret.equals(loadSigningSecret(config.dataDir))).toBe(true)
      const u = new URL(signedUrl)
      const attachmentId = /^\/mail\/attachment\/(\d+)$/.exec(u.pathname)![1]
      const check = (key: Buffer) =>
        createLinkSigner(key).check(
          `mail-attachment-${attachmentId}`,
          u.searchParams.get('exp'),
          u.searchParams.get('sig'),
          Date.now(),
        )
      expect(check(secret)).toBe('ok')
      expect(check(randomBytes(32))).toBe('tampered')

      // A row made on PostgreSQL afterwards gets an id above every id SQLite gave, the deleted link's included.
      const seq = (lite.query("SELECT seq FROM sqlite_sequence WHERE name = 'links'").get() as { seq: number }).seq
      const maxId = (lite.query('SELECT max(id) AS n FROM links').get() as { n: number }).n
      expect(seq).toBeGreaterThan(maxId)
      const [made] =
        await sql`INSERT INTO links (code, long_url, created, updated) VALUES ('after-copy', 'https://example.org/', 1, 1) RETURNING id`
      expect(Number(made.id)).toBe(seq + 1)
      const [audit] = await sql`INSERT INTO audit_log (at, actor_kind, action) VALUES (1, 'cli', 'test') RETURNING id`
      expect(Number(audit.id)).toBeGreaterThan(
        (lite.query('SELECT max(id) AS n FROM audit_log').get() as { n: number }).n,
      )
      // The counter triggers were switched back on: the new link counts.
      expect(Number((await sql`SELECT links FROM link_counts WHERE owner = 0`)[0].links)).toBe(
        (lite.query('SELECT links FROM link_counts WHERE owner = 0').get() as { links: number }).links + 1,
      )
    } finally {
      lite.close()
      await sql.close()
    }
  })

  test('a node serving the migrated database answers links.json, stats.json and messages.json as the SQLite service did', async () => {
    const url = await pg.createDatabase()
    expect((await migrate(config, url)).code).toBe(0)
    // A node of its own: an empty data_dir, the same config otherwise, the database named by database.url.
    const node = writeConfig(tempDir('linkbox-migrated-node-'), { database: { url }, mail: { domains: [DOMAIN] } })
    dirs.push(node.dir)
    const onPg = await startServer({ config: node })
    try {
      expect((await apiPost(onPg.url, 'links.json', {}, { 'x-api-key': key })).body).toEqual(answered.links)
      expect((await apiPost(onPg.url, 'stats.json', { code: answered.code! }, { 'x-api-key': key })).body).toEqual(
        answered.stats,
      )
      const messages = (
        (await (
          await fetch(`${onPg.url}/api/messages.json?address=${answered.address}`, { headers: { 'x-api-key': key } })
        ).json()) as any
      ).return.messages
      expect(messages).toEqual(answered.messages)
      // The link signed by the SQLite service opens on the PostgreSQL node, its bytes as sent.
      const u = new URL(signedUrl)
      const res = await fetch(`${onPg.url}${u.pathname}${u.search}`)
      expect(res.status).toBe(200)
      expect(Buffer.from(await res.arrayBuffer()).equals(sent.large)).toBe(true)
      expect(await Bun.file(join(node.dataDir, 'linkbox.db')).exists()).toBe(false)
    } finally {
      await onPg.stop()
    }
  })

  test('a database that holds a row is refused, naming the table, the password not shown; nothing changes', async () => {
    const sql = new Bun.SQL(migratedUrl, { max: 1 })
    try {
      const before = (await sql`SELECT count(*) AS n FROM links`)[0].n
      const r = await migrate(config, migratedUrl)
      expect(r.code).toBe(1)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain(
        `linkbox: migrate: ${redacted(migratedUrl)} is not empty (rows in accounts, api_keys, audit_log`,
      )
      expect(r.stderr).toContain('the copy goes into an empty database only')
      expect(r.stderr.trim().split('\n').length).toBe(1)
      expect((await sql`SELECT count(*) AS n FROM links`)[0].n).toBe(before)
    } finally {
      await sql.close()
    }
    // A database with someone else's tables: openPostgres refuses it.
    const other = await pg.createDatabase()
    const admin = new Bun.SQL(other, { max: 1 })
    await admin`CREATE TABLE links (id integer)`
    await admin.close()
    const r = await migrate(config, withPassword(other))
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('is not a linkbox database')
  })

  test('refused while the service runs on the data_dir (its lock), before the database is touched', async () => {
    const running = await startServer({ config })
    try {
      const url = withPassword(await pg.createDatabase())
      const r = await migrate(config, url)
      expect(r.code).toBe(1)
      expect(r.stderr).toMatch(/^linkbox: migrate: linkbox \(pid \d+\) holds .*linkbox\.lock; stop it first/)
      const sql = new Bun.SQL(url, { max: 1 })
      expect((await sql`SELECT to_regclass('linkbox_schema') IS NULL AS untouched`)[0].untouched).toBe(true)
      await sql.close()
    } finally {
      expect(await running.stop()).toBe(0)
    }
  })

  test('a bad URL: what is wrong, never the value; a server that is not there: the cause, the password as ***', async () => {
    const wrong = await runCli(['migrate', '--to', `mysql://u:${PASSWORD}@127.0.0.1/db`, '--config', config.configPath])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toBe(
      'linkbox: --to must start with postgres:// or postgresql:// (empty means SQLite in data_dir) (the value is not shown: it may hold a password)\n',
    )
    const noDb = await runCli([
      'migrate',
      '--to',
      `postgres://u:${PASSWORD}@127.0.0.1:5432`,
      '--config',
      config.configPath,
    ])
    expect(noDb.code).toBe(2)
    expect(noDb.stderr).toContain('--to must name one database after the host')
    expect(noDb.stderr).not.toContain(PASSWORD)
    const missing = await runCli(['migrate', '--config', config.configPath])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toBe('linkbox: usage: linkbox migrate --to URL (or set [database] url in the config)\n')
    const closed = `postgres://u:${PASSWORD}@127.0.0.1:${await freePort()}/db`
    const refused = await migrate(config, closed)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toBe(
      `linkbox: migrate: ${redacted(closed)}: connection refused: is PostgreSQL running on that host and port?\n`,
    )
  })

  test('the URL from stdin (--to -), kept out of the process list', async () => {
    const url = withPassword(await pg.createDatabase())
    const r = await runCli(['migrate', '--to', '-', '--config', config.configPath], {
      stdin: `${url}\n`,
      timeoutMs: 60_000,
    })
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toContain(`into ${redacted(url)} in `)
    expect(r.stdout).not.toContain(PASSWORD)
  })

  test('a failure half way (a trigger that raises on webhook_deliveries) leaves no row anywhere; fixed, a rerun copies all', async () => {
    const url = withPassword(await pg.createDatabase())
    // The schema as migrate makes it, then a trap on a table copied late (after accounts, links, clicks, mail rows, …).
    await (await openPostgres(url)).close()
    const sql = new Bun.SQL(url, { max: 1 })
    try {
      await sql.unsafe(`
        CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure on %', TG_TABLE_NAME; END $$;
        CREATE TRIGGER boom BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION boom();`)
      const failed = await migrate(config, url)
      expect(failed.code).toBe(1)
      expect(failed.stdout).toBe('')
      expect(failed.stderr).toContain('injected failure on webhook_deliveries')
      expect(failed.stderr).toContain(
        `nothing was copied into ${redacted(url)} (one transaction: fix the cause and run migrate again)`,
      )
      expect(await tablesWithRows(sql)).toEqual([])
      // The counter triggers migrate switches off for the copy are on (their ALTERs were rolled back with it).
      expect((await sql`SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgenabled = 'D'`).length).toBe(0)

      await sql.unsafe('DROP TRIGGER boom ON webhook_deliveries')
      const again = await migrate(config, url)
      expect(again.stderr).toBe('')
      expect(again.code).toBe(0)
      const lite = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
      const expected = (lite.query('SELECT count(*) AS n FROM webhook_deliveries').get() as { n: number }).n
      lite.close()
      expect((await sql`SELECT count(*)::int AS n FROM webhook_deliveries`)[0].n).toBe(expected)
    } finally {
      await sql.close()
    }
  })
  test('a table another session holds locked: the copy waits 10 s at most, then says so; nothing kept', async () => {
    const url = withPassword(await pg.createDatabase())
    await (await openPostgres(url)).close()
    const sql = new Bun.SQL(url, { max: 2 })
    const holder = await sql.reserve()
    try {
      await holder`BEGIN`
      await holder`LOCK TABLE audit_log IN ROW EXCLUSIVE MODE` // what an open INSERT holds
      const started = Date.now()
      const r = await migrate(config, url)
      expect(Date.now() - started).toBeGreaterThanOrEqual(10_000)
      expect(r.code).toBe(1)
      expect(r.stderr).toBe(
        `linkbox: migrate: another session holds a lock on a table of the database for longer than 10s (a node running on it, or an open transaction?): canceling statement due to lock timeout (SQLSTATE 55P03); nothing was copied into ${redacted(url)} (one transaction: fix the cause and run migrate again)\n`,
      )
      await holder`ROLLBACK`
      expect(await tablesWithRows(sql)).toEqual([])
    } finally {
      holder.release()
      await sql.close()
    }
  })

  test('the checks can fail: a row that does not arrive, or bytes that arrive changed, stop the copy (exit 1, no row kept)', async () => {
    const lite = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
    const audits = (lite.query('SELECT count(*) AS n FROM audit_log').get() as { n: number }).n
    lite.close()
    // A trigger that silently drops one audit row: the INSERT succeeds, the count does not match.
    const dropping = withPassword(await pg.createDatabase())
    await (await openPostgres(dropping)).close()
    const a = new Bun.SQL(dropping, { max: 1 })
    try {
      await a.unsafe(`
        CREATE FUNCTION skip_one() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 1 THEN RETURN NULL; END IF; RETURN NEW; END $$;
        CREATE TRIGGER skip_one BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION skip_one();`)
      const r = await migrate(config, dropping)
      expect(r.code).toBe(1)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(
        `linkbox: migrate: the table audit_log has ${audits} rows on SQLite, ${audits} were copied and PostgreSQL counts ${audits - 1}; nothing was copied into ${redacted(dropping)} (one transaction: fix the cause and run migrate again)\n`,
      )
      expect(await tablesWithRows(a)).toEqual([])
    } finally {
      await a.close()
    }
    // A trigger that changes a byte of every chunk written: the read-back hashes differ.
    const changing = withPassword(await pg.createDatabase())
    await (await openPostgres(changing)).close()
    const b = new Bun.SQL(changing, { max: 1 })
    try {
      await b.unsafe(`
        CREATE FUNCTION flip() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF length(NEW.data) > 0 THEN NEW.data := set_byte(NEW.data, 0, 255 - get_byte(NEW.data, 0)); END IF; RETURN NEW; END $$;
        CREATE TRIGGER flip BEFORE INSERT ON mail_bodies FOR EACH ROW EXECUTE FUNCTION flip();`)
      const r = await migrate(config, changing)
      expect(r.code).toBe(1)
      expect(r.stderr).toMatch(
        /^linkbox: migrate: the bytes of message [0-9a-f]{32} read back from PostgreSQL differ from data_dir's \(\d+ chunks there, \d+ here\); nothing was copied into /,
      )
      expect(await tablesWithRows(b)).toEqual([])
    } finally {
      await b.close()
    }
  })
})

describe('backup and restore with database.url: one archive for either engine', () => {
  let source: TestConfig
  let url = ''
  let archive = ''

  test("backup copies the database (one snapshot) into the archive's linkbox.db, the mail bytes and the key into its files", async () => {
    // A data_dir made by the real service (links, clicks, a message over SMTP), migrated into PostgreSQL.
    source = writeConfig(tempDir('linkbox-pgbackup-'), {
      mail: { smtp_host: '127.0.0.1', smtp_port: await freePort(), domains: [DOMAIN] },
    })
    dirs.push(source.dir)
    const key = await createAccount(source.configPath, 'bob')
    const server = await startServer({ config: source })
    try {
      for (const deadline = Date.now() + 15_000; !/SMTP on \S+:\d+ for /.test(server.stdout()); await Bun.sleep(20))
        if (Date.now() > deadline) throw new Error(`no SMTP line\n${server.stdout()}\n${server.stderr()}`)
      const made = await apiPost(
        server.url,
        'getLink.json',
        { url: 'https://example.org/b', tags: 'x' },
        { 'x-api-key': key },
      )
      await fetch(`${server.url}/${made.body.return.hex}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })
      const address = (
        (await (
          await fetch(`${server.url}/api/mailbox.json?address=box`, { headers: { 'x-api-key': key } })
        ).json()) as any
      ).return.address
      const smtp = nodemailer.createTransport({
        host: '127.0.0.1',
        port: Number(server.stdout().match(/SMTP on \S+:(\d+) for /)![1]),
        secure: false,
        ignoreTLS: true,
      } as any)
      await smtp.sendMail({
        from: 'a@example.org',
        to: address,
        subject: 's',
        text: 'hi',
        attachments: [{ filename: 'a.bin', content: randomBytes(CHUNK_BYTES + 10) }],
      })
      smtp.close()
      for (let i = 0; ; i++) {
        if (
          (await apiPost(server.url, 'stats.json', { code: made.body.return.hex }, { 'x-api-key': key })).body.return
            ?.clicks === 1
        )
          break
        if (i > 100) throw new Error('clicks not flushed')
        await Bun.sleep(100)
      }
    } finally {
      expect(await server.stop()).toBe(0)
    }
    url = withPassword(await pg.createDatabase())
    expect((await migrate(source, url)).code).toBe(0)

    const onPg = writeConfig(tempDir('linkbox-pgbackup-'), { database: { url } })
    dirs.push(onPg.dir)
    archive = join(onPg.dir, 'pg.tar')
    const r = await runCli(['backup', archive, '--config', onPg.configPath], { timeoutMs: 60_000 })
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(
      /^backup written to .*pg\.tar: linkbox\.db \(schema \d+, copied from PostgreSQL\) and 4 files\n$/,
    ) // raw.eml, body.json, 1.bin, signing.key
    expect(r.stdout + r.stderr).not.toContain(PASSWORD)
  })

  test('restored into SQLite: every table as on PostgreSQL, the mail readable, the key the same', async () => {
    const target = writeConfig(tempDir('linkbox-pgbackup-'))
    dirs.push(target.dir)
    const r = await runCli(['restore', archive, '--config', target.configPath], { timeoutMs: 60_000 })
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    const lite = new Database(join(target.dataDir, 'linkbox.db'), { readonly: true })
    const sql = new Bun.SQL(url, { max: 1 })
    try {
      const keys = primaryKeys(lite)
      for (const t of Object.keys(keys).filter(
        (t) => !['mail_inline', 'mail_inline_parts', 'mail_bodies', 'secrets'].includes(t),
      ))
        expect({ [t]: liteTable(lite, t, keys[t]!) }).toEqual({ [t]: await pgTable(sql, t, keys[t]!) })
      expect(liteTable(lite, 'links', ['id']).length).toBe(1)
      // Ids: SQLite goes on after PostgreSQL's last one.
      const [{ last_value }] = await sql`SELECT last_value FROM links_id_seq`
      expect((lite.query("SELECT seq FROM sqlite_sequence WHERE name = 'links'").get() as { seq: number }).seq).toBe(
        Number(last_value),
      )
      expect(loadSigningSecret(target.dataDir).equals(await postgresSigningSecret(sql)())).toBe(true)
      const db = openDatabase(join(target.dataDir, 'linkbox.db'))
      try {
        const mail = sqliteMessageStore(db, createSpool(target.dataDir))
        const pgMail = postgresMessageStore(sql)
        const [m] = await mail.list((await mail.mailboxByAddress(`box@${DOMAIN}`))!.id, 0, 10)
        const row = (await mail.message(m!.id))!
        expect(await mail.body(row.blob)).toEqual(await pgMail.body(row.blob))
        for (const part of [0, 1])
          expect(
            (await readAll(await mail.bytes(row.blob, part))).equals(await readAll(await pgMail.bytes(row.blob, part))),
          ).toBe(true)
      } finally {
        db.close()
      }
    } finally {
      lite.close()
      await sql.close()
    }
  })

  test('restored into another PostgreSQL database: every table and every chunk as on the first; a non-empty one refused', async () => {
    const other = withPassword(await pg.createDatabase())
    const target = writeConfig(tempDir('linkbox-pgbackup-'), { database: { url: other } })
    dirs.push(target.dir)
    const r = await runCli(['restore', archive, '--config', target.configPath], { timeoutMs: 60_000 })
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout.trimEnd().split('\n').at(-1)).toMatch(
      new RegExp(
        `^restored .*pg\\.tar \\(made by linkbox .*\\) into ${redacted(other).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`,
      ),
    )
    expect(r.stdout).not.toContain(PASSWORD)
    const a = new Bun.SQL(url, { max: 1 })
    const b = new Bun.SQL(other, { max: 1 })
    try {
      const lite = new Database(join(source.dataDir, 'linkbox.db'), { readonly: true })
      const keys = primaryKeys(lite)
      lite.close()
      for (const t of Object.keys(keys).filter((t) => t !== 'secrets'))
        expect({ [t]: await pgTable(b, t, keys[t]!) }).toEqual({ [t]: await pgTable(a, t, keys[t]!) })
      expect((await pgTable(b, 'mail_bodies', keys.mail_bodies!)).length).toBe(5) // body, raw (two chunks), attachment (two chunks)
      expect((await b`SELECT value FROM secrets`)[0].value).toEqual((await a`SELECT value FROM secrets`)[0].value)

      // Into a database that holds rows: refused, nothing changes; --force is for a data_dir only.
      const again = await runCli(['restore', archive, '--config', target.configPath], { timeoutMs: 60_000 })
      expect(again.code).toBe(1)
      expect(again.stderr).toContain(`linkbox: restore: ${redacted(other)} is not empty (rows in `)
      const forced = await runCli(['restore', archive, '--force', '--config', target.configPath])
      expect(forced.code).toBe(2)
      expect(forced.stderr).toBe(
        'linkbox: --force moves a data_dir aside; restore into PostgreSQL (database.url) needs an empty database instead\n',
      )
    } finally {
      await a.close()
      await b.close()
    }
  })
})

describe('tables in pages, unknown tables, ids past SQLite’s sequence (in-process)', () => {
  function liteDir() {
    const dir = tempDir('linkbox-migrate-pages-')
    dirs.push(dir)
    return { dir, config: buildConfig({ data_dir: dir, server: { host: '127.0.0.1', port: 0 } }) }
  }

  test(`${PAGE_ROWS * 3 + 7} links and their click days cross several pages; all arrive, equal`, async () => {
    const { dir, config } = liteDir()
    const db = openDatabase(join(dir, 'linkbox.db'))
    const n = PAGE_ROWS * 3 + 7
    db.exec(`WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < ${n})
      INSERT INTO links (code, long_url, created, updated, clicks) SELECT 'c' || x, 'https://example.org/' || x, x, x, x FROM i`)
    db.exec(
      `INSERT INTO click_days (link_id, day, clicks, dims) SELECT id, '2026-11-0' || (id % 9 + 1), id, '{"x":' || id || '}' FROM links`,
    )
    db.exec(
      `INSERT INTO click_days (link_id, day, clicks) SELECT id, '2026-10-01', 9007199254740993 FROM links WHERE id = 1`,
    ) // past 2^53: exact
    db.close()
    const url = await pg.createDatabase()
    const lines: string[] = []
    const result = await copyToPostgres(config, url, (l) => lines.push(l))
    expect(result.tables.find((t) => t.name === 'links')!.rows).toBe(n)
    expect(result.tables.find((t) => t.name === 'click_days')!.rows).toBe(n + 1)
    expect(result.tables.find((t) => t.name === 'link_counts')!.rows).toBe(1)
    const sql = new Bun.SQL(url, { max: 1 })
    const lite = new Database(join(dir, 'linkbox.db'), { readonly: true })
    try {
      for (const t of ['links', 'link_counts'])
        expect(await pgTable(sql, t, t === 'links' ? ['id'] : ['owner'])).toEqual(
          liteTable(lite, t, t === 'links' ? ['id'] : ['owner']),
        )
      const pgDays = (
        await sql`SELECT link_id::text, day, clicks::text, dims FROM click_days ORDER BY click_days.link_id, day`
      ).map((r: any) => `${r.link_id} ${r.day} ${r.clicks} ${r.dims}`)
      const liteDays = (
        lite
          .query('SELECT link_id, day, clicks, dims FROM click_days ORDER BY link_id, day')
          .safeIntegers(true)
          .all() as any[]
      ).map((r) => `${r.link_id} ${r.day} ${r.clicks} ${r.dims}`)
      expect(pgDays).toEqual(liteDays)
      expect(pgDays).toContain('1 2026-10-01 9007199254740993 {}')
      expect(Number((await sql`SELECT links FROM link_counts WHERE owner = 0`)[0].links)).toBe(n) // copied, not counted twice by the trigger

      // The reverse copy (backup with database.url) pages the same way: back into SQLite, equal to the start.
      const archive = join(liteDir().dir, 'back.tar')
      await writePostgresBackup(
        buildConfig({ data_dir: liteDir().dir, server: { port: 0 }, database: { url } }),
        archive,
      )
      const restored = liteDir().dir
      await restoreBackup(buildConfig({ data_dir: restored, server: { port: 0 } }), archive)
      const back = new Database(join(restored, 'linkbox.db'), { readonly: true })
      try {
        expect(liteTable(back, 'links', ['id'])).toEqual(liteTable(lite, 'links', ['id']))
        expect(liteTable(back, 'link_counts', ['owner'])).toEqual(liteTable(lite, 'link_counts', ['owner']))
        const backDays = (
          back
            .query('SELECT link_id, day, clicks, dims FROM click_days ORDER BY link_id, day')
            .safeIntegers(true)
            .all() as any[]
        ).map((r) => `${r.link_id} ${r.day} ${r.clicks} ${r.dims}`)
        expect(backDays).toEqual(liteDays)
      } finally {
        back.close()
      }
    } finally {
      lite.close()
      await sql.close()
    }
  })

  test('a table the copy has no rule for stops it, named, before anything is written', async () => {
    const { dir, config } = liteDir()
    const db = openDatabase(join(dir, 'linkbox.db'))
    db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('x')")
    db.close()
    const url = await pg.createDatabase()
    await expect(copyToPostgres(config, url, () => {})).rejects.toThrow(
      'migrate: the SQLite table "notes" has no counterpart in PostgreSQL; this copy does not know where it goes',
    )
    const sql = new Bun.SQL(url, { max: 1 })
    expect(await tablesWithRows(sql)).toEqual([])
    await sql.close()
  })
})
