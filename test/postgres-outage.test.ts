// A node that loses its PostgreSQL database (issue 22, SPEC §11): it answers 503 storage_unavailable on writes
// (not a 500, no stack), keeps redirecting the links it has in memory, says so on /healthz, and recovers by
// itself once the server is back — no restart of the node.
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openLinkbox } from '../src/app'
import { METRICS_TOKEN, capturedLog, readAnswer, tempDir, testConfig } from './support/app'
import { postgresForFile, type Postgres } from './support/postgres'
import { removeDir } from './support/server'

setDefaultTimeout(60_000)
let pg: Postgres
const unhandled = postgresForFile((started) => (pg = started))
const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

test('the database gone: writes 503 with Retry-After, visited links still redirect, /healthz 503; back: it recovers by itself', async () => {
  const dir = tempDir()
  dirs.push(dir)
  const config = testConfig(dir, { database: { url: await pg.createDatabase() } })
  config.server.metrics_token = METRICS_TOKEN
  const { logger, errors } = capturedLog()
  const box = await openLinkbox(config, { logger })
  const request = (path: string, init?: RequestInit) => box.app.handle(new Request(`http://localhost:8080${path}`, init))
  const create = async (alias: string) =>
    readAnswer(
      await request('/api/getLink.json', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key },
        body: new URLSearchParams({ url: `https://example.com/${alias}`, alias }).toString(),
      }),
    )
  let key = ''
  try {
    key = (await box.accounts.createAccount({ name: 'alice' })).key.key
    expect((await create('before')).status).toBe(200)
    expect((await request('/before')).status).toBe(302) // now in the node's memory
    expect((await request('/healthz')).status).toBe(200)

    await pg.halt('fast')
    const refused = await create('during')
    expect(refused.status).toBe(503)
    expect(refused.body).toMatchObject({ status: 'error', code: 'storage_unavailable' })
    expect(refused.headers.get('retry-after')).toBe('5')
    expect(JSON.stringify(refused.body)).not.toContain('at ') // no stack
    const visit = await request('/before')
    expect([visit.status, visit.headers.get('location')]).toEqual([302, 'https://example.com/before'])
    expect(box.health.isUp()).toBe(false)
    expect((await request('/healthz')).status).toBe(503)

    await pg.resume()
    const end = Date.now() + 10_000
    let again = await create('after')
    while (again.status !== 200 && Date.now() < end) {
      await Bun.sleep(200)
      again = await create('after')
    }
    expect(again.status).toBe(200)
    // The health's probe (once a second while down) marks it up: /healthz follows.
    for (let i = 0; i < 30 && !box.health.isUp(); i++) await Bun.sleep(100)
    expect(box.health.isUp()).toBe(true)
    expect((await request('/after')).status).toBe(302)
    expect((await request('/healthz')).status).toBe(200)
    // What the lost database caused was told as the 503s, not as faults with stacks, nor left unhandled.
    expect(errors.filter((e) => e.startsWith('internal error'))).toEqual([])
    expect(unhandled).toEqual([])
  } finally {
    await box.close()
  }
})
