// The test PostgreSQL server (test/support/postgres.ts): it starts in its own directory on a loopback port,
// answers queries through Bun.SQL, gives each test its own database, and leaves nothing behind when stopped.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PG_SCHEMA_VERSION } from '../../src/db/postgres/migrations'
import { sharedPostgres, startPostgres, type Postgres } from '../support/postgres'

let pg: Postgres
beforeAll(async () => {
  pg = await startPostgres()
}, 120_000)
afterAll(async () => {
  await pg?.stop()
})

test('the server answers a query through Bun.SQL, on 127.0.0.1, as a superuser without a password', async () => {
  expect(pg.url).toMatch(/^postgres:\/\/lb_[0-9a-f]{12}@127\.0\.0\.1:\d+\/postgres$/)
  const sql = new Bun.SQL(pg.url)
  try {
    const [row] =
      await sql`SELECT 1 + 1 AS two, current_setting('server_version_num')::int AS version, current_setting('listen_addresses') AS listen`
    expect(row.two).toBe(2)
    expect(row.version).toBeGreaterThanOrEqual(140000)
    expect(row.listen).toBe('127.0.0.1')
    const [me] = await sql`SELECT rolsuper FROM pg_roles WHERE rolname = current_user`
    expect(me.rolsuper).toBe(true)
  } finally {
    await sql.close()
  }
})

test('as root, the server runs as the postgres user in a directory it owns', () => {
  if (process.getuid?.() !== 0) return
  const postgres = Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim())
  expect(statSync(pg.dir).uid).toBe(postgres)
  expect(statSync(`${pg.dir}/data/PG_VERSION`).uid).toBe(postgres)
})

test('each database is its own: a table made in one is not in another', async () => {
  const a = await pg.createDatabase()
  const b = await pg.createDatabase('named_one')
  expect(b).toEndWith('/named_one')
  const sa = new Bun.SQL(a)
  const sb = new Bun.SQL(b)
  try {
    await sa`CREATE TABLE only_here (x int)`
    await sa`INSERT INTO only_here VALUES (7)`
    expect((await sa`SELECT x FROM only_here`)[0].x).toBe(7)
    const [found] = await sb`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'only_here'`
    expect(found.n).toBe(0)
  } finally {
    await Promise.all([sa.close(), sb.close()])
  }
  await expect(pg.createDatabase('Robert"); DROP')).rejects.toThrow(/not a plain lower-case name/)
})

test('stop() stops the server and removes its directory; a second server starts on another port meanwhile', async () => {
  const other = await startPostgres()
  expect(other.port).not.toBe(pg.port)
  expect(existsSync(other.dir)).toBe(true)
  const sql = new Bun.SQL(other.url, { connectionTimeout: 2 })
  expect((await sql`SELECT 42 AS n`)[0].n).toBe(42)
  await sql.close()
  await other.stop()
  expect(existsSync(other.dir)).toBe(false)
  const gone = new Bun.SQL(other.url, { connectionTimeout: 2 })
  await expect(gone`SELECT 1`).rejects.toThrow()
  await gone.close().catch(() => {})
  await other.stop() // twice: nothing happens
}, 120_000)

test('halt() takes the server away and resume() brings it back on the same port with the same data; stop() after halt() still cleans up', async () => {
  const other = await startPostgres()
  try {
    const url = await other.createDatabase()
    const sql = new Bun.SQL(url, { max: 1, connectionTimeout: 2 })
    await sql`CREATE TABLE kept (x int)`
    await sql`INSERT INTO kept VALUES (7)`
    await other.halt() // fast: the open session is ended (57P01)
    await other.halt() // twice: nothing happens
    await expect(sql`SELECT 1`).rejects.toMatchObject({ code: 'ERR_POSTGRES_CONNECTION_REFUSED' })
    await other.resume()
    await other.resume() // twice: nothing happens
    expect((await sql`SELECT x FROM kept`)[0].x).toBe(7)
    await other.restart('immediate')
    expect((await sql`SELECT x FROM kept`)[0].x).toBe(7)
    await sql.close()
    await other.halt('immediate')
  } finally {
    await other.stop()
  }
  expect(existsSync(other.dir)).toBe(false)
  await expect(other.resume()).rejects.toThrow(/stopped and removed/)
}, 120_000)

test('a process that ends without stop() (a crash, a failed test file) leaves no server and no directory behind', async () => {
  const support = join(import.meta.dir, '..', 'support', 'postgres.ts')
  const child = Bun.spawn(
    [
      process.execPath,
      '-e',
      `const pg = await (await import(${JSON.stringify(support)})).startPostgres(); console.log(pg.dir + ' ' + pg.url); process.kill(process.pid, 'SIGKILL')`,
    ],
    {
      stdout: 'pipe',
      stderr: 'pipe',
    },
  )
  const [dir, url] = (await new Response(child.stdout).text()).trim().split(' ') as [string, string]
  await child.exited
  expect(dir).toStartWith(tmpdir())
  const deadline = Date.now() + 15_000
  while (existsSync(dir) && Date.now() < deadline) await Bun.sleep(100)
  expect(existsSync(dir)).toBe(false)
  const gone = new Bun.SQL(url, { connectionTimeout: 2 })
  await expect(gone`SELECT 1`).rejects.toThrow()
  await gone.close().catch(() => {})
}, 60_000)

test("the shared server: one per process, a migrated copy in a few milliseconds, empty by default; it cannot be halted, and stop() drops only its handle's databases", async () => {
  const one = await sharedPostgres()
  const two = await sharedPostgres()
  expect(two.url).toBe(one.url)
  await one.createDatabase({ migrated: true }) // the template is made once, at the first migrated database
  const started = performance.now()
  const migrated = await one.createDatabase({ migrated: true })
  const took = performance.now() - started
  console.log(`a migrated database from the template: ${took.toFixed(0)} ms`)
  const empty = await two.createDatabase()
  const m = new Bun.SQL(migrated, { max: 1 })
  const e = new Bun.SQL(empty, { max: 1 })
  try {
    expect(Number((await m`SELECT version FROM linkbox_schema`)[0].version)).toBe(PG_SCHEMA_VERSION)
    expect((await e`SELECT to_regclass('linkbox_schema') AS t`)[0].t).toBeNull()
  } finally {
    await m.close()
    await e.close()
  }
  await expect(one.halt()).rejects.toThrow(/cannot be halted/)
  await expect(one.restart()).rejects.toThrow(/cannot be halted/)
  await one.stop()
  const admin = new Bun.SQL(two.url, { max: 1 })
  try {
    const names = (await admin`SELECT datname FROM pg_database`).map((r: { datname: string }) => r.datname)
    expect(names).toContain(empty.slice(empty.lastIndexOf('/') + 1))
    expect(names).not.toContain(migrated.slice(migrated.lastIndexOf('/') + 1))
  } finally {
    await admin.close()
  }
  await two.stop()
}, 120_000)
