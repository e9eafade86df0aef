// A node that loses its PostgreSQL database (issue 22, SPEC §11): it answers 503 storage_unavailable on writes
// (not a 500, no stack), keeps redirecting the links it has in memory, and recovers by itself once the server is
// back — no restart of the node. /healthz (liveness) stays 200 meanwhile, naming the database down, so a balancer
// that checks it keeps routing visits to the node; /readyz (readiness) answers 503 (issue 36).
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openLinkbox } from '../../src/app/app'
import { METRICS_TOKEN, capturedLog, readAnswer, tempDir, testConfig } from '../support/app'
import { postgresForFile, type Postgres } from '../support/postgres'
import { removeDir } from '../support/server'
import { VERSION } from '../../src/kernel/version'

setDefaultTimeout(60_000)
let pg: Postgres
const unhandled = postgresForFile((started) => (pg = started))
const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

test('the database gone: writes 503 with Retry-After, visited links still redirect, /healthz 200 naming it down, /readyz 503; back: it recovers by itself', async () => {
  const dir = tempDir()
  dirs.push(dir)
  const config = testConfig(dir, { database: { url: await pg.createDatabase() } })
  config.server.metrics_token = METRICS_TOKEN
  const { logger, errors } = capturedLog()
  const box = await openLinkbox(config, { logger })
  const request = (path: string, init?: RequestInit) =>
    box.app.handle(new Request(`http://localhost:8080${path}`, init))
  const create = async (alias: string) =>
    readAnswer(
      await request('/api/getLink.json', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key },
        body: new URLSearchParams({ url: `https://example.com/${alias}`, alias }).toString(),
      }),
    )
  const health = async (path: string) => {
    const r = await request(path)
    return [r.status, await r.json()]
  }
  let key = ''
  try {
    key = (await box.accounts.createAccount({ name: 'alice' })).key.key
    expect((await create('before')).status).toBe(200)
    expect((await request('/before')).status).toBe(302) // now in the node's memory
    expect(await health('/healthz')).toEqual([200, { status: 'ok', version: VERSION, database: 'ok' }])
    expect(await health('/readyz')).toEqual([200, { status: 'ok', version: VERSION, database: 'ok' }])

    await pg.halt('fast')
    const refused = await create('during')
    expect(refused.status).toBe(503)
    expect(refused.body).toMatchObject({ status: 'error', code: 'storage_unavailable' })
    expect(refused.headers.get('retry-after')).toBe('5')
    expect(JSON.stringify(refused.body)).not.toContain('at ') // no stack
    const visit = await request('/before')
    expect([visit.status, visit.headers.get('location')]).toEqual([302, 'https://example.com/before'])
    expect(box.health.isUp()).toBe(false)
    const down = {
      version: VERSION,
      database: 'down',
      reason: expect.stringMatching(/^the database cannot be reached \(.*ERR_POSTGRES_CONNECTION/),
    }
    expect(await health('/healthz')).toEqual([200, { status: 'ok', ...down }])
    expect(await health('/readyz')).toEqual([503, { status: 'degraded', ...down }])
    expect((await request('/before')).status).toBe(302) // still, after the health checks

    await pg.resume()
    const end = Date.now() + 10_000
    let again = await create('after')
    while (again.status !== 200 && Date.now() < end) {
      await Bun.sleep(200)
      again = await create('after')
    }
    expect(again.status).toBe(200)
    // The health's probe (once a second while down) marks it up: /healthz follows.
    for (const until = Date.now() + 10_000; Date.now() < until && !box.health.isUp(); ) await Bun.sleep(100)
    expect(box.health.isUp()).toBe(true)
    expect((await request('/after')).status).toBe(302)
    expect(await health('/healthz')).toEqual([200, { status: 'ok', version: VERSION, database: 'ok' }])
    expect(await health('/readyz')).toEqual([200, { status: 'ok', version: VERSION, database: 'ok' }])
    // What the lost database caused was told as the 503s, not as faults with stacks, nor left unhandled.
    expect(errors.filter((e) => e.startsWith('internal error'))).toEqual([])
    expect(unhandled).toEqual([])
  } finally {
    await pg.resume() // after a failed assertion: the next test needs the server, and close() flushes to it
    await box.close()
  }
})

// No change is made through the node while the server is away: /readyz finds out by itself (a write it tries and
// rolls back, at most every 5 s), and says so on /healthz too; the cached link keeps redirecting.
test('the database gone while no change is made: /readyz 503 from its own write probe, /healthz 200 naming it down (real socket)', async () => {
  const dir = tempDir()
  dirs.push(dir)
  const config = testConfig(dir, {
    database: { url: await pg.createDatabase() },
    server: { host: '127.0.0.1', port: 0 },
  })
  const box = await openLinkbox(config, { logger: capturedLog().logger })
  const base = `http://127.0.0.1:${box.listen().port}`
  const request = (path: string) => fetch(`${base}${path}`, { redirect: 'manual' })
  try {
    const key = (await box.accounts.createAccount({ name: 'bob' })).key.key
    const made = await fetch(`${base}/api/getLink.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key },
      body: 'url=https%3A%2F%2Fexample.com%2Fquiet&alias=quiet',
    })
    expect(made.status).toBe(200)
    expect((await request('/quiet')).status).toBe(302)
    expect((await request('/readyz')).status).toBe(200)

    await pg.halt('fast')
    expect(box.health.isUp()).toBe(true) // nothing has failed yet
    // The probe made by the first /readyz above is at most 5 s old: wait until a new one is due.
    // By the clock, not a count of tries: under a loaded machine (bun test --parallel) each request is slower.
    // The visit's click may fail to be written first: 'unwritable' for the moment until the sooner probe that
    // starts (db/postgres/health.ts) names it 'down'.
    const readyz = async () => {
      const r = await request('/readyz')
      return { status: r.status, body: (await r.json()) as { status: string; database: string } }
    }
    let ready = await readyz()
    for (const until = Date.now() + 15_000; Date.now() < until && ready.body.database !== 'down'; ) {
      await Bun.sleep(100)
      ready = await readyz()
    }
    expect(ready.status).toBe(503)
    expect(ready.body).toMatchObject({ status: 'degraded', database: 'down' })
    const live = await request('/healthz')
    expect([live.status, (await live.json()).database]).toEqual([200, 'down'])
    expect((await request('/quiet')).headers.get('location')).toBe('https://example.com/quiet')

    await pg.resume()
    for (const until = Date.now() + 20_000; Date.now() < until && (await request('/readyz')).status !== 200; )
      await Bun.sleep(200)
    expect((await request('/readyz')).status).toBe(200)
    expect(unhandled).toEqual([])
  } finally {
    await pg.resume() // after a failed assertion: the next test needs the server, and close() flushes to it
    await box.close()
  }
})

// A server that answers but takes no writes (here the database set read-only, as a failed-over standby would
// be): not 'down' but 'unwritable', found by /readyz's write probe before any change fails.
test('a read-only database: /readyz 503 naming it unwritable, /healthz 200', async () => {
  const dir = tempDir()
  dirs.push(dir)
  const url = await pg.createDatabase()
  const first = await openLinkbox(testConfig(dir, { database: { url } }), { logger: capturedLog().logger })
  await first.close() // the schema and the signing secret exist now
  const admin = new Bun.SQL(url)
  const name = new URL(url).pathname.slice(1)
  await admin.unsafe(`ALTER DATABASE "${name}" SET default_transaction_read_only = on`)
  await admin.close()
  const box = await openLinkbox(testConfig(dir, { database: { url } }), { logger: capturedLog().logger })
  const request = (path: string) => box.app.handle(new Request(`http://localhost:8080${path}`))
  try {
    const ready = await request('/readyz')
    expect(ready.status).toBe(503)
    expect(await ready.json()).toMatchObject({
      status: 'degraded',
      database: 'unwritable',
      reason: expect.stringContaining('read-only transaction'),
    })
    const live = await request('/healthz')
    expect([live.status, (await live.json()).database]).toEqual([200, 'unwritable'])
    expect(box.health.isUp()).toBe(true)
  } finally {
    await pg.resume() // after a failed assertion: the next test needs the server, and close() flushes to it
    await box.close()
  }
})
