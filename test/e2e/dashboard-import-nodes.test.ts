// The dashboard's import page on two nodes (issue 38 item 2, SPEC §11): two `linkbox serve` processes on one
// PostgreSQL database, as behind a balancer without sticky sessions. A file uploaded through A is previewed
// through B (it waits in the database, not in A's memory); confirmations sent to both at the same moment
// import it once; the summary and its skipped rows are served by either node.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { parseCsv } from '../../src/links/csv'
import { overSocket, signIn, type SignedIn } from '../support/dashboard'
import { sharedPostgres, type Postgres } from '../support/postgres'
import {
  createAccount,
  killAllServers,
  removeDir,
  runCli,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
} from '../support/server'

setDefaultTimeout(120_000)

const PW = 'correct horse battery'
let pg: Postgres
let a: RunningServer
let b: RunningServer
let alice: SignedIn
let key: string
const dirs: string[] = []

beforeAll(async () => {
  pg = await sharedPostgres()
  const url = await pg.createDatabase({ migrated: true })
  const config = () => {
    const c = writeConfig(tempDir('linkbox-import-page-'), {
      database: { url },
      media: { allow_private_networks: true },
    })
    dirs.push(c.dir)
    return c
  }
  const configs = [config(), config()]
  const started = await Promise.all(configs.map((c) => startServer({ config: c, startTimeoutMs: 30_000 })))
  a = started[0]!
  b = started[1]!
  key = await createAccount(configs[0]!.configPath, 'alice')
  const set = await runCli(['account', 'password', 'alice', '--password', '-', '--config', configs[0]!.configPath], {
    stdin: `${PW}\n`,
  })
  expect(set.code).toBe(0)
  alice = await signIn(overSocket(a.url), 'alice', PW)
}, 120_000)

afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
  await pg?.stop()
})

const on = (node: RunningServer) => overSocket(node.url)
const linkCount = async () => {
  const res = await fetch(`${a.url}/api/links.json?format=csv`, { headers: { 'x-api-key': key } })
  return parseCsv(await res.text()).length - 1
}

test('uploaded on A, previewed on B; confirmed on both at once, imported once; the summary and skipped rows on either', async () => {
  const csv =
    'code,long_url\r\n' +
    'n-1,https://example.com/1\r\n' +
    'n-2,https://example.com/2\r\n' +
    'n-bad,ftp://example.com/3\r\n'
  const form = new FormData()
  form.set('_csrf', alice.csrf)
  form.set('format', 'auto')
  form.set('file', new Blob([csv], { type: 'text/csv' }), 'links.csv')
  const up = await on(a).request('/dashboard/import', { method: 'POST', headers: { cookie: alice.cookie }, body: form })
  expect(up.status).toBe(303)
  const page = up.headers.get('location')!
  expect(page).toMatch(/^\/dashboard\/import\/[A-Za-z0-9_-]{22}$/)

  const preview = await (await on(b).request(page, { headers: { cookie: alice.cookie } })).text()
  expect(preview).toContain('Preview of links.csv')
  expect(preview).toContain('All 3 rows: <strong>2</strong> will be created, <strong>1</strong> skipped.')
  expect(await linkCount()).toBe(0)

  // A double click that the balancer spreads over both nodes, several times over.
  const confirm = (node: RunningServer) =>
    on(node).request(page, {
      method: 'POST',
      headers: { cookie: alice.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: alice.csrf }).toString(),
    })
  const answers = await Promise.all([a, b, a, b, a, b].map(confirm))
  expect(answers.map((r) => [r.status, r.headers.get('location')])).toEqual(answers.map(() => [303, page]))
  expect(await linkCount()).toBe(2)

  for (const node of [a, b]) {
    const summary = await (await on(node).request(page, { headers: { cookie: alice.cookie } })).text()
    expect(summary).toContain('<strong>2</strong> links created, <strong>1</strong> row skipped.')
    const skipped = await on(node).request(`${page}/skipped.csv`, { headers: { cookie: alice.cookie } })
    expect(skipped.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(parseCsv(await skipped.text()).map((r) => r.fields.slice(0, 4))).toEqual([
      ['code', 'long_url', 'skipped_line', 'skipped_reason'],
      ['n-bad', 'ftp://example.com/3', '4', 'invalid_url'],
    ])
  }
  expect(await linkCount()).toBe(2)
})
