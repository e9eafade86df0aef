// The command line with [database] url set (SPEC §11), on a real PostgreSQL server, as an operator runs it:
// `linkbox doctor` checks the connection, the server's version and the schema; account, key, audit, import and
// webhook work on the database, never on a SQLite file in data_dir. The password is never printed.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { judgePostgresVersion } from '../../src/app/doctor-storage'
import { openPostgres } from '../../src/db/postgres'
import { PG_SCHEMA_VERSION } from '../../src/db/postgres/migrations'
import { sharedPostgres, type Postgres } from '../support/postgres'
import { freePort, removeDir, runCli, tempDir, writeConfig } from '../support/server'

let pg: Postgres
const dirs: string[] = []
beforeAll(async () => {
  pg = await sharedPostgres()
}, 120_000)
afterAll(async () => {
  dirs.forEach(removeDir)
  await pg?.stop()
})

// The test server trusts loopback, so a password in the URL is sent to nobody but still sits in the config.
const PASSWORD = 'n0t-for-any-log-7f3a'
const withPassword = (url: string) => url.replace('@', `:${PASSWORD}@`)
const redacted = (url: string) => url.replace(`:${PASSWORD}@`, ':***@')

async function doctor(url: string) {
  const c = writeConfig(tempDir(), { database: { url } })
  dirs.push(c.dir)
  const r = await runCli(['doctor', '--config', c.configPath], { timeoutMs: 30_000 })
  expect(r.stdout + r.stderr).not.toContain(PASSWORD)
  return { ...r, dataDir: c.dataDir }
}

test('an empty database: connected (password shown as ***), the server version, "empty, will be created"; nothing created, no SQLite file', async () => {
  const url = withPassword(await pg.createDatabase())
  const r = await doctor(url)
  expect(r.code).toBe(0)
  expect(r.stdout).toContain(`ok    database         ${redacted(url)}: connected\n`)
  expect(r.stdout).toMatch(/^ok\s+database server\s+PostgreSQL 1[4-9]\.\d+$/m)
  expect(r.stdout).toContain(
    `ok    database schema  empty, will be created at the first start (schema ${PG_SCHEMA_VERSION})\n`,
  )
  expect(r.stdout).toMatch(/^ok\s+clock\s/m)
  expect(r.stdout).not.toContain('FAIL')
  expect(existsSync(join(r.dataDir, 'linkbox.db'))).toBe(false)
  const sql = new Bun.SQL(url)
  expect((await sql`SELECT to_regclass('linkbox_schema') IS NULL AS missing`)[0].missing).toBe(true) // doctor changed nothing
  expect((await sql`SELECT to_regclass('linkbox_write_probe') IS NULL AS missing`)[0].missing).toBe(true) // its write was rolled back
  await sql.close()
  expect(r.stdout).toMatch(/^ok\s+database write\s+writable \(a write tried and rolled back\)$/m)
  expect(r.stdout).toMatch(/^ok\s+mail store\s+in the database: empty \(no mail received yet\)$/m)
})

// Issue 36: doctor on PostgreSQL tries a write (rolled back), and counts mail where it is, in the database.
test("a database that takes no writes: FAIL database write with the server's words, exit 1; the schema row unchanged", async () => {
  const url = withPassword(await pg.createDatabase())
  const db = await openPostgres(url)
  const [before] = await db.sql`SELECT version, migrated FROM linkbox_schema`
  await db.sql.unsafe(`ALTER DATABASE "${new URL(url).pathname.slice(1)}" SET default_transaction_read_only = on`)
  const r = await doctor(url)
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(/^FAIL\s+database write\s+not writable: .*read-only transaction/m)
  expect(r.stdout).toMatch(/^ok\s+database schema\s+schema \d+\/\d+$/m)
  const sql = new Bun.SQL(url)
  expect((await sql`SELECT version, migrated FROM linkbox_schema`)[0]).toEqual(before)
  await sql.close()
  await db.close()
})

test('mail store: counted in the database (messages, bytes, mailboxes), not in data_dir/mail', async () => {
  const url = withPassword(await pg.createDatabase())
  const db = await openPostgres(url)
  const [account] = await db.sql`INSERT INTO accounts (name, created) VALUES ('mallory', 1) RETURNING id`
  const [box] =
    await db.sql`INSERT INTO mailboxes (address, account_id, created, expires) VALUES ('m@localhost', ${account.id}, 1, 9999999999999) RETURNING id`
  for (const [blob, size] of [
    ['a'.repeat(32), 1500],
    ['b'.repeat(32), 2596],
  ] as const)
    await db.sql`INSERT INTO mail_messages (mailbox_id, blob, received, size, envelope_from, from_address, from_name, subject, intro, attachments)
      VALUES (${box.id}, ${blob}, 1, ${size}, 'x@example.com', 'x@example.com', '', 'hi', '', 0)`
  await db.close()
  const c = writeConfig(tempDir(), { database: { url } })
  dirs.push(c.dir)
  // What a node's data directory may still hold from before: not the store, not counted.
  mkdirSync(join(c.dataDir, 'mail', 'ab'), { recursive: true })
  writeFileSync(join(c.dataDir, 'mail', 'ab', 'raw.eml'), 'x'.repeat(3000))
  const r = await runCli(['doctor', '--config', c.configPath], { timeoutMs: 30_000 })
  expect(r.stdout).toMatch(/^ok\s+mail store\s+in the database: 4\.0 KiB in 2 messages, 1 mailboxes$/m)
  expect(r.stdout).toMatch(/^ok\s+database write\s+writable/m)
})

test('a migrated database: schema N/N; a newer one is a FAIL that says to upgrade linkbox', async () => {
  const url = withPassword(await pg.createDatabase())
  const db = await openPostgres(url)
  expect((await doctor(url)).stdout).toContain(
    `ok    database schema  schema ${PG_SCHEMA_VERSION}/${PG_SCHEMA_VERSION}\n`,
  )
  await db.sql`UPDATE linkbox_schema SET version = ${PG_SCHEMA_VERSION + 3}`
  await db.close()
  const r = await doctor(url)
  expect(r.code).toBe(1)
  expect(r.stdout).toContain(
    `FAIL  database schema  schema ${PG_SCHEMA_VERSION + 3} is newer than this linkbox knows (${PG_SCHEMA_VERSION}): upgrade linkbox on this node\n`,
  )
})

test('the wrong port: FAIL naming the redacted URL and the cause, the dependent checks skipped, exit 1', async () => {
  const port = await freePort()
  const url = `postgres://linkbox:${PASSWORD}@127.0.0.1:${port}/linkbox`
  const r = await doctor(url)
  expect(r.code).toBe(1)
  expect(r.stdout).toContain(
    `FAIL  database         postgres://linkbox:***@127.0.0.1:${port}/linkbox: connection refused: is PostgreSQL running on that host and port?\n`,
  )
  expect(r.stdout).toMatch(/^skip\s+database server\s+no connection$/m)
  expect(r.stdout).toMatch(/^skip\s+database schema\s+no connection$/m)
})

test('a database that does not exist on the server: FAIL with the server’s words', async () => {
  const url = withPassword(pg.url.replace(/\/postgres$/, '/no_such_db'))
  const r = await doctor(url)
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(
    /^FAIL\s+database\s+postgres:\/\/lb_[0-9a-f]+:\*\*\*@127\.0\.0\.1:\d+\/no_such_db: .*"no_such_db" does not exist/m,
  )
})

test('a config whose database.url is not a postgres URL: the config FAIL, without the value', async () => {
  const c = writeConfig(tempDir(), { database: { url: `mysql://root:${PASSWORD}@db/linkbox` } })
  dirs.push(c.dir)
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.code).toBe(1)
  expect(r.stdout).toContain('"database.url" must start with postgres:// or postgresql://')
  expect(r.stdout + r.stderr).not.toContain(PASSWORD)
})

test('server version: 14 and newer ok, 13 and older a FAIL naming both', () => {
  expect(judgePostgresVersion(150008, '15.8')).toEqual({
    verdict: 'ok',
    what: 'database server',
    detail: 'PostgreSQL 15.8',
  })
  expect(judgePostgresVersion(140000, '14.0').verdict).toBe('ok')
  expect(judgePostgresVersion(130016, '13.16')).toEqual({
    verdict: 'FAIL',
    what: 'database server',
    detail: 'PostgreSQL 13.16: linkbox needs 14 or newer; upgrade the server',
  })
  expect(judgePostgresVersion(90624, '9.6.24').verdict).toBe('FAIL')
})

/** A config on a new database (its URL with the password) and a runner of commands on it that must succeed quietly. */
async function onNewDatabase() {
  const url = withPassword(await pg.createDatabase())
  const c = writeConfig(tempDir(), { database: { url } })
  dirs.push(c.dir)
  const cli = async (...args: string[]) => {
    const r = await runCli([...args, '--config', c.configPath], { timeoutMs: 30_000 })
    expect(r.stdout + r.stderr).not.toContain(PASSWORD)
    // account create off a terminal says, on stderr, how to set the dashboard password later (issue 38).
    const stderr = r.stderr.replace(/^account \S+ has no dashboard password yet\. .*\n/, '')
    expect([args.join(' '), r.code, stderr]).toEqual([args.join(' '), 0, ''])
    return r.stdout
  }
  return { url, c, cli }
}

test('import and webhook run on the PostgreSQL database too: the links and the endpoint are rows there, none in data_dir', async () => {
  const { url, c, cli } = await onNewDatabase()
  await cli('account', 'create', 'alice')
  const csv = join(c.dir, 'links.csv')
  await Bun.write(csv, 'code,longurl\nfirst,https://example.com/1\nsecond,https://example.com/2\n')
  expect(await cli('import', csv, '--account', 'alice')).toContain('2')
  expect(
    await cli('webhook', 'create', 'alice', 'https://hooks.example.com/in', '--events', 'link.created'),
  ).toStartWith('webhook 1 for alice: https://hooks.example.com/in')
  expect((await cli('webhook', 'list')).split('\n')[1]).toMatch(/^1\talice\tenabled\t/)
  expect(existsSync(join(c.dataDir, 'linkbox.db'))).toBe(false)
  const sql = new Bun.SQL(url)
  try {
    expect((await sql`SELECT code, long_url FROM links ORDER BY code`).map((r: any) => [r.code, r.long_url])).toEqual([
      ['first', 'https://example.com/1'],
      ['second', 'https://example.com/2'],
    ])
    expect((await sql`SELECT url FROM webhook_endpoints`).map((r: any) => r.url)).toEqual([
      'https://hooks.example.com/in',
    ])
  } finally {
    await sql.close()
  }
})

test('serve with a database that is not there: one line naming the redacted URL and the cause, exit 1, no stack', async () => {
  const port = await freePort()
  const c = writeConfig(tempDir(), { database: { url: `postgres://linkbox:${PASSWORD}@127.0.0.1:${port}/linkbox` } })
  dirs.push(c.dir)
  const r = await runCli(['serve', '--config', c.configPath], { timeoutMs: 30_000 })
  expect([r.code, r.stdout, r.stderr]).toEqual([
    1,
    '',
    `linkbox: postgres://linkbox:***@127.0.0.1:${port}/linkbox: connection refused: is PostgreSQL running on that host and port?\n`,
  ])
})

test('account, key and audit run on the PostgreSQL database: the rows are there, none in data_dir, the password never printed', async () => {
  const { url, c, cli } = await onNewDatabase()
  const made = await cli('account', 'create', 'alice', '--admin')
  expect(made).toMatch(/^account alice created \(admin\); its API key \(shown once\):\nlbk_[A-Za-z0-9_]+\n$/)
  const key = made.split('\n')[1]!
  expect(await cli('key', 'create', 'alice', '--label', 'ci')).toMatch(/^key 2 for alice with scopes /)
  expect((await cli('account', 'list')).split('\n')[1]).toMatch(/^1\talice\tadmin\tactive\t/)
  expect((await cli('key', 'list', 'alice')).split('\n').filter(Boolean).length).toBe(3) // the header and two keys
  expect(await cli('key', 'revoke', '2')).toBe('key 2 revoked\n')
  const audit = (await cli('audit', '--json'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
  expect(audit.map((r) => r.action)).toEqual(['account.create', 'key.create', 'key.revoke'])
  expect(existsSync(c.dataDir)).toBe(false)
  // What the CLI wrote is in the database: the account, its two keys (one revoked), the first one's hash.
  const sql = new Bun.SQL(url)
  try {
    const [a] = await sql`SELECT name, admin FROM accounts`
    expect([a.name, Number(a.admin)]).toEqual(['alice', 1])
    expect(
      (await sql`SELECT id, revoked IS NOT NULL AS revoked FROM api_keys ORDER BY id`).map((k: any) => [
        Number(k.id),
        k.revoked,
      ]),
    ).toEqual([
      [1, false],
      [2, true],
    ])
  } finally {
    await sql.close()
  }
  expect(key.length).toBeGreaterThan(20)
})
