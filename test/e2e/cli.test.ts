// The account and key commands (SPEC §7, §10) as a script would run them, against the real SQLite file.
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { createLinkbox } from '../../src/app/app'
import { loadConfig } from '../../src/kernel/config'
import { createAccount, removeDir, runCli, writeConfig } from '../support/server'

const config = writeConfig()
const db = () => new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
const cli = (...args: string[]) => runCli([...args, '--config', config.configPath])
afterAll(() => removeDir(config.dir))

test('account create prints the key alone on the last line; the key works; only its hash is stored', async () => {
  const key = await createAccount(config.configPath, 'dora', { admin: true })
  expect(key).toMatch(/^lbk_[A-Za-z0-9]{40}$/)
  const d = db()
  const row = d
    .query(
      "SELECT a.admin, k.prefix, k.hash, k.scopes FROM accounts a JOIN api_keys k ON k.account_id = a.id WHERE a.name = 'dora'",
    )
    .get() as any
  d.close()
  expect(row.admin).toBe(1)
  expect(key.startsWith(row.prefix)).toBe(true)
  expect(row.hash).toBe(new Bun.CryptoHasher('sha256').update(key).digest('hex'))
  expect(row.scopes).toBe('links,qr,media,mail,webhooks')
  const box = createLinkbox(loadConfig(config.configPath))
  try {
    expect((await box.accounts.authenticate(key))?.accountName).toBe('dora')
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
  const r = await runCli(['account', 'create', 'erin', '--password', '-', '--config', config.configPath], {
    stdin: 'correct horse battery\n',
  })
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
    expect(await box.accounts.authenticate(key)).toBeNull()
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
    await box.accounts.authenticate(key)
  } finally {
    await box.close()
  }
  const d = db()
  const { last_used } = d
    .query("SELECT k.last_used FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE a.name = 'fay'")
    .get() as any
  d.close()
  expect(last_used).toBeGreaterThan(Date.now() - 60_000)
})

test('an unknown command or option is a usage error (exit 2)', async () => {
  expect((await cli('frobnicate')).code).toBe(2)
  expect((await runCli(['serve', '--no-such-option'])).code).toBe(2)
})

// Issue 20, item 10: help for one command, option errors in plain words, and no table header before an error.
const COMMANDS = ['serve', 'account', 'key', 'doctor', 'backup', 'restore', 'ytdlp', 'webhook', 'audit', 'version']

test("linkbox COMMAND --help, -h and linkbox help COMMAND print that command's usage, not the global one", async () => {
  const global = await runCli(['--help'])
  expect(global.code).toBe(0)
  expect(global.stdout).toContain('linkbox COMMAND --help (or linkbox help COMMAND) tells more about one command.')
  const helps: Record<string, string> = {}
  for (const command of COMMANDS) {
    const long = await runCli([command, '--help'])
    expect({ command, code: long.code, stderr: long.stderr }).toEqual({ command, code: 0, stderr: '' })
    expect(long.stdout).not.toContain('short links, QR codes') // the global help's first line
    // Its own synopsis first, and no other command's.
    expect(long.stdout).toMatch(new RegExp(`^Usage:\\n? +linkbox ${command}\\b`))
    for (const other of COMMANDS)
      if (other !== command)
        expect({ command, other, shown: new RegExp(`linkbox ${other}\\b`).test(long.stdout) }).toEqual({
          command,
          other,
          shown: false,
        })
    expect((await runCli([command, '-h'])).stdout).toBe(long.stdout)
    expect((await runCli(['help', command])).stdout).toBe(long.stdout)
    helps[command] = long.stdout
  }
  // Each names its own options.
  expect(helps.account).toContain('--password PASS')
  expect(helps.account).toContain('--admin')
  expect(helps.key).toContain('--scopes a,b')
  expect(helps.key).toContain('--label TEXT')
  expect(helps.restore).toContain('--force')
  expect(helps.ytdlp).toContain('--from URL|FILE')
  expect(helps.webhook).toContain('--events a,b')
  expect(helps.account).toContain('--with-links')
  expect(helps.audit).toContain('--since DATE')
  expect(helps.audit).toContain('--json')
  for (const command of COMMANDS.filter((c) => c !== 'version')) expect(helps[command]).toContain('--config FILE')
  // After a subcommand too; and before any config is read (this one does not exist), nothing is run.
  expect((await runCli(['webhook', 'log', '1', '--help'])).stdout).toBe(helps.webhook!)
  const serve = await runCli(['serve', '--help', '--config', join(config.dir, 'no-such.toml')])
  expect([serve.code, serve.stdout, serve.stderr]).toEqual([0, helps.serve!, ''])
  const unknown = await runCli(['frobnicate', '--help'])
  expect(unknown.code).toBe(2)
  expect(unknown.stderr).toStartWith('linkbox: unknown command "frobnicate"\n')
})

test('an option without its value, an unknown option or a value for a switch: one line in plain words, exit 2', async () => {
  const run = async (...args: string[]) => {
    const r = await runCli(args)
    return { code: r.code, stdout: r.stdout, stderr: r.stderr }
  }
  const refused = (line: string) => ({ code: 2, stdout: '', stderr: `linkbox: ${line}\n` })
  expect(await run('ytdlp', 'update', '--from')).toEqual(
    refused('--from needs a URL or a file; linkbox ytdlp --help lists the options'),
  )
  expect(await run('ytdlp', 'update', '--from', '--config', config.configPath)).toEqual(
    refused(
      '--from needs a URL or a file (one that starts with - is written --from=-…); linkbox ytdlp --help lists the options',
    ),
  )
  expect(await run('key', 'list', '-c')).toEqual(
    refused('--config needs a config file; linkbox key --help lists the options'),
  )
  expect(await run('webhook', 'create', 'a', 'http://x.example/', '--events')).toEqual(
    refused('--events needs a comma-separated list of event types; linkbox webhook --help lists the options'),
  )
  expect(await run('serve', '--no-such-option')).toEqual(
    refused('unknown option --no-such-option; linkbox serve --help lists the options'),
  )
  expect(await run('account', 'create', 'x', '--admin=yes')).toEqual(
    refused('--admin takes no value; linkbox account --help lists the options'),
  )
  expect(await run('--bogus')).toEqual(refused('unknown option --bogus; linkbox --help lists the options'))
})

test('webhook log of an unknown endpoint prints its error alone: no table header on stdout', async () => {
  const r = await cli('webhook', 'log', '999')
  expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
    code: 2,
    stdout: '',
    stderr: 'linkbox: There is no webhook 999.\n',
  })
})
