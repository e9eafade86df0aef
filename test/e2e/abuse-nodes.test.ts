// Bans, disabled links and disabled accounts on two nodes (issue 36 item 2, SPEC §11): two `linkbox serve`
// processes on one PostgreSQL database, real sockets, requests alternating between them as a round-robin
// balancer sends them. What an admin decides on node A holds on node B within a second, though B had the link
// cached and its bans in memory: a ban answers 451 on B and B refuses new links to the host; the ban lifted,
// B redirects again; a link disabled on A answers 451 on B, and redirects again once enabled; an account
// disabled from the command line stops its links on both.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { REPORTS } from '../../src/dashboard/admin-tabs'
import { overSocket, postForm, signIn, type SignedIn } from '../support/dashboard'
import { sharedPostgres, type Postgres } from '../support/postgres'
import {
  apiPost,
  CHROME_UA,
  createAccount,
  killAllServers,
  removeDir,
  runCli,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
  type TestConfig,
} from '../support/server'

setDefaultTimeout(60_000)

let pg: Postgres
let dbUrl: string
let configs: TestConfig[] = []
let a: RunningServer
let b: RunningServer
let key: string
let admin: SignedIn

beforeAll(async () => {
  pg = await sharedPostgres()
  dbUrl = await pg.createDatabase({ migrated: true })
  configs = [0, 1].map(() => writeConfig(tempDir('linkbox-abuse-node-'), { database: { url: dbUrl } }))
  const started = await Promise.all(configs.map((config) => startServer({ config, startTimeoutMs: 30_000 })))
  a = started[0]!
  b = started[1]!
  key = await createAccount(configs[0]!.configPath, 'root', { admin: true })
  expect(
    (
      await runCli(['account', 'password', 'root', '--password', '-', '--config', configs[0]!.configPath], {
        stdin: 'correct horse battery\n',
      })
    ).code,
  ).toBe(0)
  admin = await signIn(overSocket(a!.url), 'root', 'correct horse battery')
}, 120_000)

afterAll(async () => {
  await killAllServers()
  configs.forEach((c) => removeDir(c.dir))
  await pg?.stop()
})

const create = (node: RunningServer, url: string, alias: string, k = key) =>
  apiPost(node.url, 'getLink.json', { url, alias }, { 'x-api-key': k })
const visit = async (node: RunningServer, code: string) =>
  (await fetch(`${node.url}/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })).status
/** An admin's dashboard form on A (the 303 that answers it is checked). */
const onA = async (path: string, fields: Record<string, string>) =>
  expect((await postForm(overSocket(a.url), admin, `${REPORTS}${path}`, fields)).status).toBe(303)

/**
 * Visits alternate between B and A (B first: the node that did not make the change) until both answer
 * `status`; the milliseconds that took from `since`, or -1 when they did not within 1 s.
 */
async function bothAnswer(code: string, status: number, since: number): Promise<number> {
  for (let i = 0; Date.now() - since < 1_000; i++) {
    const [first, second] = i % 2 === 0 ? [b, a] : [a, b]
    if ((await visit(first, code)) === status && (await visit(second, code)) === status) return Date.now() - since
  }
  return -1
}

test('a host banned on A answers 451 on B within 1 s (B had it cached) and B refuses new links to it; unbanned on A, B redirects within 1 s', async () => {
  expect((await create(a, 'https://sub.banned-host.example/x', 'banme')).status).toBe(200)
  // B reads the link and keeps it (and its verdict) in memory.
  expect(await visit(b, 'banme')).toBe(302)
  expect(await visit(b, 'banme')).toBe(302)

  const t0 = Date.now()
  await onA('/bans', { host: 'banned-host.example', reason: 'phishing kit' })
  expect(await bothAnswer('banme', 451, t0)).toBeGreaterThanOrEqual(0)
  const refused = await create(b, 'https://banned-host.example/new', 'banme2')
  expect(refused.status).toBe(400)
  expect(refused.body.message).toContain(
    'banned-host.example, which the administrator of this service has banned (phishing kit)',
  )

  const t1 = Date.now()
  await onA('/bans/remove', { host: 'banned-host.example' })
  expect(await bothAnswer('banme', 302, t1)).toBeGreaterThanOrEqual(0)
  expect((await create(b, 'https://banned-host.example/new', 'banme2')).status).toBe(200)
})

test("a report closed on A by banning its link's host: B answers 451 within 1 s", async () => {
  expect((await create(a, 'https://kit.reported.example/login', 'reported')).status).toBe(200)
  expect(await visit(b, 'reported')).toBe(302)
  const filed = await fetch(`${b.url}/reported/report`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ reason: 'phishing', text: 'my bank' }),
  })
  expect(filed.status).toBe(303)
  const sql = new Bun.SQL(dbUrl)
  let id: number
  try {
    id = Number((await sql`SELECT id FROM link_reports WHERE code = 'reported'`)[0].id)
  } finally {
    await sql.close()
  }
  const t0 = Date.now()
  await onA(`/${id}`, { action: 'host_banned' })
  expect(await bothAnswer('reported', 451, t0)).toBeGreaterThanOrEqual(0)
  expect((await create(b, 'https://other.kit.reported.example/', 'reported2')).status).toBe(400)
})

test('a link disabled on A answers 451 on B within 1 s; enabled again, it redirects on B within 1 s', async () => {
  expect((await create(a, 'https://fine.example/page', 'stopme')).status).toBe(200)
  expect(await visit(b, 'stopme')).toBe(302)
  const t0 = Date.now()
  await onA('/link', { code: 'stopme', reason: 'reported' })
  expect(await bothAnswer('stopme', 451, t0)).toBeGreaterThanOrEqual(0)
  const t1 = Date.now()
  await onA('/link', { code: 'stopme', do: 'enable' })
  expect(await bothAnswer('stopme', 302, t1)).toBeGreaterThanOrEqual(0)
})

test('an account disabled from the command line: its links answer 451 on both nodes within 1 s, and work again once it is enabled', async () => {
  const bobKey = await createAccount(configs[0]!.configPath, 'bob')
  expect((await create(b, 'https://bob.example/', 'bobs', bobKey)).status).toBe(200)
  expect(await visit(a, 'bobs')).toBe(302)
  expect(await visit(b, 'bobs')).toBe(302)
  const disable = await runCli(['account', 'disable', 'bob', '--config', configs[1]!.configPath])
  expect(disable.code).toBe(0)
  const t0 = Date.now()
  expect(await bothAnswer('bobs', 451, t0)).toBeGreaterThanOrEqual(0)
  expect((await runCli(['account', 'enable', 'bob', '--config', configs[1]!.configPath])).code).toBe(0)
  const t1 = Date.now()
  expect(await bothAnswer('bobs', 302, t1)).toBeGreaterThanOrEqual(0)
})
