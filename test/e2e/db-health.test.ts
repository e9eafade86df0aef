// The database's availability as a node sees it (src/db/health.ts, src/db/postgres/health.ts; issue 22,
// SPEC §11: a node that loses the database answers 503 on writes and recovers by itself), against a real
// PostgreSQL server that is stopped and started again under it. The errors classified are the ones Bun.SQL
// really throws, provoked here, not written by hand.
import { afterEach, expect, test } from 'bun:test'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { localHealth } from '../../src/db/health'
import { isConnectionError, postgresHealth } from '../../src/db/postgres/health'
import { postgresForFile, type Postgres } from '../support/postgres'

let pg: Postgres
const unhandled = postgresForFile((started) => (pg = started))
const open: { close(): unknown }[] = []
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close()
  expect(unhandled).toEqual([])
})

const caught = async (work: () => Promise<unknown>) => {
  try {
    await work()
  } catch (err) {
    return err
  }
  throw new Error('it did not fail')
}

async function until(what: string, ok: () => boolean, ms: number) {
  const end = performance.now() + ms
  while (!ok()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`)
    await Bun.sleep(5)
  }
}

test('SQLite is always up: no error marks it down', () => {
  const health = localHealth()
  expect(health.observe(new Error('disk I/O error'))).toBe(false)
  expect(health.isUp()).toBe(true)
  expect(health.reason()).toBeNull()
  health.close()
})

test('errors about the statement are not about availability; a terminated session and a refused database are', async () => {
  const url = await pg.createDatabase()
  const sql = new Bun.SQL(url, { max: 2, connectionTimeout: 2 })
  open.push(sql)
  await sql`CREATE TABLE t (x int PRIMARY KEY)`
  await sql`INSERT INTO t VALUES (1)`
  const statement = [
    await caught(() => sql`INSERT INTO t VALUES (1)`), // 23505
    await caught(() => sql`SELEC 1`), // 42601
    await caught(() => sql`SELECT 1 / 0`), // 22012
    await caught(() => sql.notify('c', 'x'.repeat(8_000))), // 22023 payload string too long
  ]
  expect(statement.map((e) => (e as { errno?: string }).errno)).toEqual(['23505', '42601', '22012', '22023'])
  for (const err of statement) expect(isConnectionError(err)).toBe(false)
  expect(isConnectionError(new Error('plain'))).toBe(false)
  expect(isConnectionError(null)).toBe(false)

  // 57P01: the session is ended under a running query (pg_terminate_backend, as pg_ctl stop -m fast does).
  const victim = new Bun.SQL(url, { max: 1 })
  open.push(victim)
  const [{ pid }] = await victim`SELECT pg_backend_pid() AS pid`
  const sleeping = caught(() => victim`SELECT pg_sleep(10)`)
  await Bun.sleep(100)
  await sql`SELECT pg_terminate_backend(${pid})`
  const terminated = await sleeping
  expect(terminated).toMatchObject({ errno: '57P01' })
  expect(isConnectionError(terminated)).toBe(true)

  // A database that does not accept connections: 55000, FATAL.
  const name = new URL(url).pathname.slice(1)
  const admin = new Bun.SQL(pg.url, { max: 1 })
  open.push(admin)
  await admin.unsafe(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
  const fresh = new Bun.SQL(url, { max: 1, connectionTimeout: 2 })
  open.push(fresh)
  const refused = await caught(() => fresh`SELECT 1`)
  await admin.unsafe(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
  expect(refused).toMatchObject({ errno: '55000', severity: 'FATAL' })
  expect(isConnectionError(refused)).toBe(true)

  // Nobody on the port: ERR_POSTGRES_CONNECTION_REFUSED, at once.
  const nobody = new Bun.SQL(url.replace(`:${pg.port}/`, ':1/'), { max: 1, connectionTimeout: 2 })
  open.push(nobody)
  const closedPort = await caught(() => nobody`SELECT 1`)
  expect(closedPort).toMatchObject({ code: 'ERR_POSTGRES_CONNECTION_REFUSED' })
  expect(isConnectionError(closedPort)).toBe(true)
})

test('the server stopped: a failing write marks it down at once; the probe marks it up within ~2 s of its return', async () => {
  const url = await pg.createDatabase()
  const sql = new Bun.SQL(url, { max: 2, connectionTimeout: 2 })
  open.push(sql)
  await sql`CREATE TABLE t (x int)`
  const health = postgresHealth(sql)
  open.push(health)
  const changes: { up: boolean; at: number }[] = []
  health.onChange((up) => void changes.push({ up, at: performance.now() }))

  // A statement error while the server is there: still up.
  expect(health.observe(await caught(() => sql`INSERT INTO t VALUES ('x')`))).toBe(false)
  expect(health.isUp()).toBe(true)

  await pg.halt('fast')
  let back = 0
  try {
    const started = performance.now()
    const failed = await caught(() => sql`INSERT INTO t VALUES (1)`)
    expect(health.observe(failed)).toBe(true)
    const downIn = performance.now() - started
    expect(downIn).toBeLessThan(1_000)
    expect(health.isUp()).toBe(false)
    expect(health.reason()).toMatch(/ERR_POSTGRES_CONNECTION_REFUSED|57P01/)
    expect(changes).toEqual([{ up: false, at: expect.any(Number) }])
    // A second failure changes nothing; the probe keeps failing while the server is away.
    health.observe(await caught(() => sql`INSERT INTO t VALUES (2)`))
    await Bun.sleep(2_500)
    expect(health.isUp()).toBe(false)
    expect(changes.length).toBe(1)
    console.log(`database health: down ${downIn.toFixed(0)} ms after the server stopped (the failing write's own time)`)
  } finally {
    await pg.resume()
    back = performance.now()
  }
  await until('up again', () => health.isUp(), 2_500)
  const upIn = changes.at(-1)!.at - back
  console.log(`database health: up ${upIn.toFixed(0)} ms after the server was back`)
  expect(changes.map((c) => c.up)).toEqual([false, true])
  expect(health.reason()).toBeNull()
  await sql`INSERT INTO t VALUES (3)`
}, 30_000)

test('close() stops the probe: a closed health is not marked up by it', async () => {
  const sql = new Bun.SQL(await pg.createDatabase(), { max: 1 })
  open.push(sql)
  const health = postgresHealth(sql, { probeMs: 100 })
  health.observe(Object.assign(new Error('Connection closed'), { code: 'ERR_POSTGRES_CONNECTION_CLOSED' }))
  health.close()
  await Bun.sleep(500) // the server is there: a probe still running would mark it up
  expect(health.isUp()).toBe(false)
  // The same without close(): the probe marks it up.
  const live = postgresHealth(sql, { probeMs: 100 })
  open.push(live)
  live.observe(Object.assign(new Error('Connection closed'), { code: 'ERR_POSTGRES_CONNECTION_CLOSED' }))
  await until('up', () => live.isUp(), 1_000)
})

test('a probe that gets no answer says so after probeTimeoutMs, and stays down until the server answers', async () => {
  // A server that accepts the connection and never says a word (a hung host, a blackholed proxy).
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => void sockets.add(socket))
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  open.push({
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise((resolve) => silent.close(resolve))
    },
  })
  const { port } = silent.address() as AddressInfo
  const sql = new Bun.SQL(`postgres://nobody@127.0.0.1:${port}/db`, { max: 1, connectionTimeout: 2 })
  open.push({ close: () => sql.close().catch(() => {}) })
  const health = postgresHealth(sql, { probeMs: 200, probeTimeoutMs: 300 })
  open.push(health)
  health.observe(Object.assign(new Error('Connection closed'), { code: 'ERR_POSTGRES_CONNECTION_CLOSED' }))
  const started = performance.now()
  await until('the probe timed out', () => /no answer within 300 ms/.test(health.reason() ?? ''), 1_000)
  expect(performance.now() - started).toBeLessThan(800)
  // Later, the pool's own connection timeout ends that probe's query: its error is the reason now.
  await until('the connection timeout', () => /ERR_POSTGRES_CONNECTION_TIMEOUT/.test(health.reason() ?? ''), 4_000)
  expect(health.isUp()).toBe(false)
}, 30_000)
