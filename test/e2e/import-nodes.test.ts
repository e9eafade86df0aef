// One import at a time per account across nodes (issue 36 item 4, SPEC §2a, §11): two `linkbox serve` processes
// on one PostgreSQL database, on real sockets. While an import of alice's runs on A, one sent to B is answered
// 429 rate_limited with Retry-After (the lock is a row in the database, not a node's memory); another account
// imports on B meanwhile; once A's import ends B takes alice's; and the webhook receiver gets one links.imported
// event per import, delivered once.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { sharedPostgres, type Postgres } from '../support/postgres'
import { readAnswer } from '../support/app'
import {
  apiPost,
  createAccount,
  killAllServers,
  removeDir,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
  type TestConfig,
} from '../support/server'
import { startReceiver, until, type Receiver } from '../support/webhooks'

setDefaultTimeout(120_000)

let pg: Postgres
let url: string
let a: RunningServer
let b: RunningServer
let alice: string
let bob: string
let receiver: Receiver
const dirs: string[] = []

function nodeConfig(): TestConfig {
  const c = writeConfig(tempDir('linkbox-import-node-'), { database: { url }, media: { allow_private_networks: true } })
  dirs.push(c.dir)
  return c
}

beforeAll(async () => {
  pg = await sharedPostgres()
  url = await pg.createDatabase({ migrated: true })
  const configs = [nodeConfig(), nodeConfig()]
  const started = await Promise.all(configs.map((config) => startServer({ config, startTimeoutMs: 30_000 })))
  a = started[0]!
  b = started[1]!
  alice = await createAccount(configs[0]!.configPath, 'alice')
  bob = await createAccount(configs[0]!.configPath, 'bob')
  receiver = startReceiver()
}, 120_000)

afterAll(async () => {
  receiver?.stop()
  await killAllServers()
  dirs.forEach(removeDir)
  await pg?.stop()
})

async function importOn(node: RunningServer, key: string, text: string) {
  const form = new FormData()
  form.set('file', new Blob([text], { type: 'text/csv' }), 'links.csv')
  return readAnswer(
    await fetch(`${node.url}/api/import.json`, { method: 'POST', headers: { 'x-api-key': key }, body: form }),
  )
}
const rows = (prefix: string, n: number) =>
  `code,long_url\r\n${Array.from({ length: n }, (_, i) => `${prefix}-${i},https://example.com/${prefix}/${i}\r\n`).join('')}`

test("an import of alice's on A holds her imports on B (429 with Retry-After); bob imports on B meanwhile; one links.imported event each", async () => {
  const hook = await apiPost(a.url, 'webhooks.json', { action: 'create', url: receiver.url }, { 'x-api-key': alice })
  expect(hook.status, JSON.stringify(hook.body)).toBe(200)
  receiver.secret = hook.body.return.secret
  const sql = new Bun.SQL(url)
  try {
    const first = importOn(a, alice, rows('na', 20_000))
    for (let i = 0; i < 1000 && (await sql`SELECT 1 FROM import_locks`).length === 0; i++) await Bun.sleep(5)
    const [onB, bobs] = await Promise.all([importOn(b, alice, rows('nb', 5)), importOn(b, bob, rows('bob', 5))])
    expect([onB.status, onB.body.code]).toEqual([429, 'rate_limited'])
    expect(Number(onB.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect([bobs.status, bobs.body.return?.created]).toEqual([200, 5])
    expect((await first).body.return).toMatchObject({ created: 20_000, skipped_total: 0 })
    expect((await importOn(b, alice, rows('nb', 5))).body.return.created).toBe(5)
    await until(() => receiver.got.length >= 2, 'two links.imported events')
    await Bun.sleep(1000)
    const events = receiver.got.map((g) => JSON.parse(g.body))
    expect(events.map((e) => [e.type, e.data.created])).toEqual([
      ['links.imported', 20_000],
      ['links.imported', 5],
    ])
    expect(new Set(receiver.got.map((g) => g.id)).size).toBe(2)
  } finally {
    await sql.close()
  }
})
