// Account names compare without regard to case (issue 36 item 9), as people meet it: `linkbox account
// create Carol` refused when carol exists, naming carol (the real CLI, on a SQLite file and on a real
// PostgreSQL server), and single sign-on's preferred_username `Carol` making `Carol-2` beside a `carol`
// (the real provider, on sockets). The storage's rule, on both engines and from two nodes at once, is in
// accounts-contract.test.ts ("names compare in any case").
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sharedPostgres, type Postgres } from '../support/postgres'
import type { RunningApp } from '../support/browser'
import { startWithProvider, throughProvider, visit, type TestProvider } from '../support/oidc-provider'
import { removeDir, runCli, tempDir, writeConfig } from '../support/server'

let pg: Postgres
const dirs: string[] = []
beforeAll(async () => {
  pg = await sharedPostgres()
}, 120_000)
afterAll(async () => {
  dirs.forEach(removeDir)
  await pg?.stop()
})

describe.each([
  ['SQLite', async () => ({})],
  ['PostgreSQL', async () => ({ database: { url: await pg.createDatabase({ migrated: true }) } })],
] as const)('linkbox account create on %s', (_name, overrides) => {
  test('Carol is refused when carol exists, and the message names carol; CAROL-2 is a new name', async () => {
    const c = writeConfig(tempDir(), await overrides())
    dirs.push(c.dir)
    const cli = (...args: string[]) => runCli([...args, '--config', c.configPath], { timeoutMs: 30_000 })
    expect((await cli('account', 'create', 'carol')).code).toBe(0)
    const again = await cli('account', 'create', 'Carol')
    expect(again.code).toBe(2)
    expect(again.stderr).toContain(
      'The account "carol" exists already: account names are the same in any case, so "Carol" is taken.',
    )
    const exact = await cli('account', 'create', 'carol')
    expect(exact.code).toBe(2)
    expect(exact.stderr).toContain('The account "carol" exists already.')
    expect((await cli('account', 'create', 'CAROL-2')).code).toBe(0)
    const list = await cli('account', 'list')
    expect(list.code).toBe(0)
    expect(list.stdout).not.toMatch(/\bCarol\b(?!-)/)
  }, 60_000)
})

describe('single sign-on', () => {
  let provider: TestProvider
  let app: RunningApp
  let appUrl: string
  beforeAll(async () => {
    ;({ provider, app, appUrl } = await startWithProvider())
  })
  afterAll(async () => {
    await app?.stop()
    await provider?.stop()
  })

  test('preferred_username Carol beside a password account carol: the new account is Carol-2, carol untouched', async () => {
    await app.accounts.createAccount({ name: 'carol', password: 'carol-password-1' })
    provider.users.set('sub-carol-big', { sub: 'sub-carol-big', preferred_username: 'Carol', groups: [] })
    const c = await throughProvider(appUrl, provider, 'Carol')
    expect((await visit(c.app, c.callback)).status).toBe(303)
    expect(await (await visit(c.app, `${appUrl}/dashboard`)).text()).toContain(
      'Signed in as </span><strong>Carol-2</strong>',
    )
    const names = (
      app.db.query("SELECT name FROM accounts WHERE lower(name) LIKE 'carol%' ORDER BY id").all() as { name: string }[]
    ).map((r) => r.name)
    expect(names).toEqual(['carol', 'Carol-2'])
  })
})
