// Reloaded blocklists on two nodes (issue 36 item 2, SPEC §11): each node reads its own files, and a SIGHUP on
// one node has the other read its files again within a second, so that one signal stops a listed host
// everywhere. Two `linkbox serve` processes on one PostgreSQL, requests alternating between them.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { appendFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sharedPostgres, type Postgres } from '../support/postgres'
import {
  CHROME_UA,
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
let configs: TestConfig[] = []
let nodes: RunningServer[] = []
const lists: string[] = []

beforeAll(async () => {
  pg = await sharedPostgres()
  const url = await pg.createDatabase({ migrated: true })
  configs = [0, 1].map(() => {
    const dir = tempDir('linkbox-list-node-')
    const list = join(dir, 'list.txt')
    writeFileSync(list, 'known-bad.example\n')
    lists.push(list)
    return writeConfig(dir, { database: { url }, links: { blocklist_files: [list] } })
  })
  nodes = await Promise.all(configs.map((config) => startServer({ config, startTimeoutMs: 30_000 })))
}, 120_000)

afterAll(async () => {
  await killAllServers()
  configs.forEach((c) => removeDir(c.dir))
  await pg?.stop()
})

const visit = async (node: RunningServer, code: string) =>
  (await fetch(`${node.url}/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })).status

test('a SIGHUP on A has B read its own blocklist again within 1 s: a newly listed host answers 451 on both', async () => {
  const [a, b] = nodes as [RunningServer, RunningServer]
  const made = await fetch(`${a.url}/api/getLink.json`, {
    method: 'POST',
    body: new URLSearchParams({ url: 'https://later-bad.example/x' }),
  })
  expect(made.status).toBe(200)
  const code = (await made.json()).return.hex as string
  expect([await visit(b, code), await visit(a, code)]).toEqual([302, 302])

  // The operator adds the host to every node's file, and signals one node.
  for (const list of lists) appendFileSync(list, 'later-bad.example\n')
  const t0 = Date.now()
  a.proc.kill('SIGHUP')
  let both = false
  for (let i = 0; !both && Date.now() - t0 < 1_000; i++) {
    const [first, second] = i % 2 === 0 ? [b, a] : [a, b]
    both = (await visit(first, code)) === 451 && (await visit(second, code)) === 451
  }
  expect(both).toBe(true)
  // Log lines are written a moment later than the answers.
  for (let i = 0; i < 200 && !b.stdout().includes('another node reloaded'); i++) await Bun.sleep(25)
  expect(b.stdout()).toContain('another node reloaded its blocklists: blocklists: 2 hosts from 1 of 1 files')
  // B did not announce a reload of its own, so A read its files once (its own SIGHUP), not twice.
  expect(a.stdout().split('blocklists: 2 hosts').length - 1).toBe(1)
})
