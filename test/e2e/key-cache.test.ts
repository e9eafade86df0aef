// The key lookup cache (issue 7): a request with a key no longer queries the database each time, yet a
// revoked key stops working at once — revoked in this process, or by `linkbox key revoke` in another
// process against the same file, which the running service sees through PRAGMA data_version.
import { Database } from 'bun:sqlite'
import { afterAll, afterEach, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { makeBox, type TestBox } from '../support/app'
import {
  apiPost,
  createAccount,
  killAllServers,
  removeDir,
  runCli,
  startServer,
  tempDir,
  writeConfig,
} from '../support/server'

setDefaultTimeout(30_000)

const boxes: TestBox[] = []
const dirs: string[] = []
afterEach(async () => {
  for (const b of boxes.splice(0)) await b.cleanup()
})
afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
})

test("a key is looked up once per few seconds: a change made on the service's own connection shows after that", async () => {
  let now = Date.parse('2025-03-01T00:00:00Z')
  const box = await makeBox({}, { clock: () => now })
  boxes.push(box)
  const key = await box.account('alice')
  expect([...(await box.accounts.authenticate(key))!.scopes]).toContain('links')
  // Behind the service's back, on its own connection (so data_version does not change): only the
  // cache's lifetime bounds how long the old scopes are used.
  box.db.exec("UPDATE api_keys SET scopes = 'qr'")
  now += 1_000
  expect([...(await box.accounts.authenticate(key))!.scopes]).toContain('links')
  now += 5_000
  expect([...(await box.accounts.authenticate(key))!.scopes]).toEqual(['qr'])
})

test('revoked in this process: the next request with the key is refused', async () => {
  const box = await makeBox()
  boxes.push(box)
  const key = await box.account('bob')
  expect((await box.post('/api/links.json', {}, { 'x-api-key': key })).status).toBe(200)
  await box.accounts.revokeKey(key.slice(0, 11))
  const r = await box.post('/api/links.json', {}, { 'x-api-key': key })
  expect(r.status).toBe(401)
  expect(r.body.code).toBe('invalid_key')
})

test('revoked through another connection to the same file: refused at the next request', async () => {
  const box = await makeBox()
  boxes.push(box)
  const key = await box.account('carol')
  expect(await box.accounts.authenticate(key)).not.toBeNull()
  const other = new Database(join(box.dir, 'linkbox.db'))
  try {
    other.exec('UPDATE api_keys SET revoked = 1')
  } finally {
    other.close()
  }
  expect(await box.accounts.authenticate(key)).toBeNull()
})

test('`linkbox key revoke` from the CLI while the server runs: the key stops working', async () => {
  const config = writeConfig(tempDir('linkbox-keycache-'))
  dirs.push(config.dir)
  const key = await createAccount(config.configPath, 'dave')
  const server = await startServer({ config })
  try {
    // Used (and so cached) before the revoke.
    for (let i = 0; i < 3; i++)
      expect((await apiPost(server.url, 'links.json', {}, { 'x-api-key': key })).status).toBe(200)
    const revoked = await runCli(['key', 'revoke', key.slice(0, 11), '--config', config.configPath])
    expect(revoked.code).toBe(0)
    // The CLI has committed and exited: the very next request is refused, not one after the cache expires.
    const first = await apiPost(server.url, 'links.json', {}, { 'x-api-key': key })
    expect(first.status).toBe(401)
    expect(first.body.code).toBe('invalid_key')
    // And it stays refused (polled for a while; no timing is asserted).
    const deadline = Date.now() + 2_000
    while (Date.now() < deadline) {
      expect((await apiPost(server.url, 'links.json', {}, { 'x-api-key': key })).status).toBe(401)
      await Bun.sleep(100)
    }
  } finally {
    expect(await server.stop()).toBe(0)
  }
})
