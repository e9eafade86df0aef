// Several short domains on two nodes (issue 40, SPEC §11 and §13): two `linkbox serve` on one PostgreSQL, each
// with the same [server] domains, visits alternating between them with Host headers. A code on two domains is two
// links on both nodes; a change or deletion of one domain's link made on one node is what the other serves next,
// and the other domain's link with the same code is left as it was.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { sharedPostgres, type Postgres } from '../support/postgres'
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

setDefaultTimeout(60_000)

let pg: Postgres
let nodes: RunningServer[] = []
let configs: TestConfig[] = []
let key: string

beforeAll(async () => {
  pg = await sharedPostgres()
  const url = await pg.createDatabase({ migrated: true })
  configs = [0, 1].map(() =>
    writeConfig(tempDir('linkbox-domnode-'), {
      database: { url },
      server: { host: '127.0.0.1', port: 0, base_url: 'http://s.test', domains: ['go.test'] },
    }),
  )
  nodes = await Promise.all(configs.map((config) => startServer({ config, startTimeoutMs: 30_000 })))
  key = await createAccount(configs[0]!.configPath, 'alice')
}, 120_000)

afterAll(async () => {
  await killAllServers()
  for (const c of configs) removeDir(c.dir)
})

/** Where node `n` sends a visit of `/code` on `host` (null: not a redirect). */
async function visit(n: number, host: string, code: string): Promise<string | null> {
  const res = await fetch(`${nodes[n]!.url}/${code}`, { redirect: 'manual', headers: { host } })
  await res.arrayBuffer()
  return res.status === 302 ? res.headers.get('location') : null
}
/** Visits on both nodes, alternating, until each answers `want` (a change reaches the other node's caches). */
async function everywhere(host: string, code: string, want: string | null) {
  const end = Date.now() + 5_000
  for (let i = 0; ; i++) {
    const got = [await visit(i % 2, host, code), await visit((i + 1) % 2, host, code)]
    if (got.every((g) => g === want)) return
    if (Date.now() > end) throw new Error(`${host}/${code}: ${JSON.stringify(got)}, not ${want}`)
    await Bun.sleep(20)
  }
}
const api = (n: number, method: string, fields: Record<string, string>) =>
  apiPost(nodes[n]!.url, method, fields, { 'x-api-key': key })

test('one code on two domains, made on A, is two links on both nodes; B changes and deletes one, A serves that next', async () => {
  expect((await api(0, 'getLink.json', { url: 'https://a.example/home', alias: 'both' })).status).toBe(200)
  const away = await api(0, 'getLink.json', { url: 'https://a.example/away', alias: 'both', domain: 'go.test' })
  expect(away.body.return).toMatchObject({ url: 'http://go.test/both', domain: 'go.test' })
  // Twenty visits alternating over the nodes and the domains: each domain its own destination, every time.
  for (let i = 0; i < 20; i++) {
    expect(await visit(i % 2, 'go.test', 'both')).toBe('https://a.example/away')
    expect(await visit((i + 1) % 2, 's.test', 'both')).toBe('https://a.example/home')
  }
  // A change on B of go.test's link: A serves it next (both caches held the row), s.test's untouched.
  expect((await api(1, 'update.json', { code: 'both', domain: 'go.test', url: 'https://a.example/new' })).status).toBe(
    200,
  )
  await everywhere('go.test', 'both', 'https://a.example/new')
  await everywhere('s.test', 'both', 'https://a.example/home')
  // A deletion on A of go.test's link: gone on both nodes, the default domain's stays.
  expect((await api(0, 'delete.json', { code: 'both', domain: 'go.test' })).status).toBe(200)
  await everywhere('go.test', 'both', null)
  await everywhere('s.test', 'both', 'https://a.example/home')
  // The code is free again on go.test alone: made there through B.
  expect(
    (await api(1, 'getLink.json', { url: 'https://a.example/again', alias: 'both', domain: 'go.test' })).status,
  ).toBe(200)
  await everywhere('go.test', 'both', 'https://a.example/again')
})
