// The account and key commands (SPEC §7, §10) as a script would run them, against the real SQLite file.
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { createLinkbox } from '../src/app'
import { loadConfig } from '../src/config'
import { createAccount, removeDir, runCli, writeConfig } from './support/server'

const config = writeConfig()
const db = () => new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
const cli = (...args: string[]) => runCli([...args, '--config', config.configPath])
afterAll(() => removeDir(config.dir))

test('account create prints the key alone on the last line; the key works; only its hash is stored', async () => {
  const key = await createAccount(config.configPath, 'dora', { admin: true })
  expect(key).toMatch(/^lbk_[A-Za-z0-9]{40}$/)
  const d = db()
  const row = d.query("SELECT a.admin, k.prefix, k.hash, k.scopes FROM accounts a JOIN api_keys k ON k.account_id = a.id WHERE a.name = 'dora'").get() as any
  d.close()
  expect(row.admin).toBe(1)
  expect(key.startsWith(row.prefix)).toBe(true)
  expect(row.hash).toBe(new Bun.CryptoHasher('sha256').update(key).digest('hex'))
  expect(row.scopes).toBe('links,qr,media,mail,webhooks')
  const box = createLinkbox(loadConfig(config.configPath))
  try {
    expect(box.accounts.authenticate(key)?.accountName).toBe('dora')
  } finally {
    await box.close()
  }
})

test('a second account with the same name is refused; bad names are refused', async () => {
  const again = await cli('account', 'create', 'dora')
  expect(again.code).toBe(2)
  expect(again.stderr).toContain('exists already')
  const bad = await cli('account', 'create', 'no spaces please')
  expect(bad.code).toBe(2)
  expect(bad.stderr).toContain('Account names')
})

test('--password - reads the dashboard password from stdin and stores an argon2id hash', async () => {
  const r = await runCli(['account', 'create', 'erin', '--password', '-', '--config', config.configPath], { stdin: 'correct horse battery\n' })
  expect(r.code).toBe(0)
  const d = db()
  const { password_hash } = d.query("SELECT password_hash FROM accounts WHERE name = 'erin'").get() as any
  d.close()
  expect(password_hash).toStartWith('$argon2id$')
  expect(await Bun.password.verify('correct horse battery', password_hash)).toBe(true)
})

test('key create with scopes, key list, key revoke by prefix', async () => {
  const created = await cli('key', 'create', 'erin', '--scopes', 'qr,links', '--label', 'ci')
  expect(created.code).toBe(0)
  const key = created.stdout.trimEnd().split('\n').at(-1)!
  expect(key).toMatch(/^lbk_/)
  const list = await cli('key', 'list', 'erin')
  const line = list.stdout.split('\n').find((l) => l.includes(key.slice(0, 11)))!
  expect(line).toContain('qr,links')
  expect(line).toContain('ci')
  expect(line).not.toContain(key) // the key itself is never shown again
  const revoked = await cli('key', 'revoke', key.slice(0, 11))
  expect(revoked.code).toBe(0)
  const box = createLinkbox(loadConfig(config.configPath))
  try {
    expect(box.accounts.authenticate(key)).toBeNull()
  } finally {
    await box.close()
  }
  const unknownScope = await cli('key', 'create', 'erin', '--scopes', 'everything')
  expect(unknownScope.code).toBe(2)
  expect(unknownScope.stderr).toContain('Unknown scope "everything"')
  const unknownAccount = await cli('key', 'create', 'nobody')
  expect(unknownAccount.code).toBe(2)
})

test('last_used is recorded when a key is used', async () => {
  const key = await createAccount(config.configPath, 'fay')
  const box = createLinkbox(loadConfig(config.configPath))
  try {
    box.accounts.authenticate(key)
  } finally {
    await box.close()
  }
  const d = db()
  const { last_used } = d.query("SELECT k.last_used FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE a.name = 'fay'").get() as any
  d.close()
  expect(last_used).toBeGreaterThan(Date.now() - 60_000)
})

test('an unknown command or option is a usage error (exit 2)', async () => {
  expect((await cli('frobnicate')).code).toBe(2)
  expect((await runCli(['serve', '--no-such-option'])).code).toBe(2)
})
