// `linkbox media cookies add|list|remove` (issue 41 item 4) as an operator runs it, on SQLite and on a real
// PostgreSQL server: what each prints, the errors naming the argument, and that no output and no stored byte
// holds a cookie's value. The service finding them is media-cookies.test.ts's.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openPostgres } from '../../src/db/postgres'
import { postgresSigningSecret } from '../../src/db/postgres/signing'
import { loadSigningSecret } from '../../src/kernel/signing'
import { cookieKey, unseal } from '../../src/media/cookies'
import { sharedPostgres, type Postgres } from '../support/postgres'
import { removeDir, runCli, tempDir, writeConfig } from '../support/server'

const VALUE = 'cli-cookie-value-41'
const FUTURE = 2_000_000_000 // 2033-05-18T03:33:20Z
const FILE = [
  '# Netscape HTTP Cookie File',
  ['.example.com', 'TRUE', '/', 'TRUE', String(FUTURE), 'sid', VALUE].join('\t'),
  ['#HttpOnly_www.example.com', 'FALSE', '/', 'FALSE', '0', 'h', VALUE].join('\t'),
  ['.tracker.net', 'TRUE', '/', 'FALSE', '0', 't', 'x'].join('\t'),
  ['.example.com', 'TRUE', '/', 'FALSE', '1000', 'old', 'x'].join('\t'),
  '',
].join('\n')

let pg: Postgres
const dirs: string[] = []
beforeAll(async () => {
  pg = await sharedPostgres()
}, 120_000)
afterAll(async () => {
  dirs.forEach(removeDir)
  await pg?.stop()
})

async function roundTrip(configPath: string, dir: string, readSealed: () => Promise<Uint8Array[]>) {
  const cli = (args: string[], stdin?: string) =>
    runCli(['media', 'cookies', ...args, '--config', configPath], { timeoutMs: 30_000, stdin })
  const file = join(dir, 'cookies.txt')
  writeFileSync(file, FILE)

  const added = await cli(['add', 'Example.COM', file])
  expect(added).toMatchObject({ code: 0, stderr: '' })
  expect(added.stdout).toBe(
    'cookies for example.com: 2 kept (left out: 1 for other domains, 1 expired); earliest expiry 2033-05-18T03:33:20Z\n',
  )
  const fromStdin = await cli(['add', '192.0.2.7', '-'], FILE.replaceAll('.example.com', '192.0.2.7'))
  expect(fromStdin.stdout).toStartWith('cookies for 192.0.2.7: 1 kept')

  const list = await cli(['list'])
  expect(list.code).toBe(0)
  expect(list.stdout.split('\n')[0]).toBe('site\tcookies\tearliest expiry\tlast used\tadded')
  expect(list.stdout).toMatch(/^192\.0\.2\.7\t1\t2033-05-18T03:33:20Z\t-\t\d{4}-/m)
  expect(list.stdout).toMatch(/^example\.com\t2\t2033-05-18T03:33:20Z\t-\t\d{4}-/m)
  const json = JSON.parse((await cli(['list', '--json'])).stdout)
  expect(json.map((r: { site: string }) => r.site)).toEqual(['192.0.2.7', 'example.com'])
  expect(json[1]).toMatchObject({ site: 'example.com', cookies: 2, expires: FUTURE * 1000, last_used: null })
  for (const out of [added.stdout, list.stdout, JSON.stringify(json)]) expect(out).not.toContain(VALUE)
  for (const sealed of await readSealed()) expect(Buffer.from(sealed).toString('latin1')).not.toContain(VALUE)

  // Errors name the argument (the site, the file's line, FILE), exit 1; a usage error exits 2.
  const badSite = await cli(['add', 'https://example.com/', file])
  expect([badSite.code, badSite.stderr]).toEqual([
    1,
    'linkbox: media cookies add refused: the site "https://example.com/" is not a domain or an IP address (no scheme, port or path)\n',
  ])
  writeFileSync(file, `${FILE}example.com\tTRUE\t/\n`)
  expect((await cli(['add', 'example.com', file])).stderr).toBe(
    'linkbox: media cookies add refused: line 6 of the cookies file has 3 fields separated by tabs, not 7 (domain, subdomains, path, secure, expiry, name, value): is it a Netscape cookies file?\n',
  )
  writeFileSync(file, FILE)
  const other = await cli(['add', 'example.org', file])
  expect(other.stderr).toContain('the cookies file holds no cookie for example.org (4 for other domains, 0 expired)')
  const missing = await cli(['add', 'example.com', join(dir, 'nope.txt')])
  expect([missing.code, missing.stderr]).toEqual([
    2,
    `linkbox: FILE: ${join(dir, 'nope.txt')} cannot be read (ENOENT)\n`,
  ])
  expect((await cli(['add', 'example.com'])).code).toBe(2)
  expect((await cli(['frob'])).stderr).toStartWith('linkbox: usage: linkbox media cookies add SITE FILE|-')

  expect((await cli(['remove', 'EXAMPLE.com'])).stdout).toBe('cookies for EXAMPLE.com removed\n')
  const again = await cli(['remove', 'example.com'])
  expect([again.code, again.stderr]).toEqual([
    1,
    'linkbox: media cookies remove refused: no cookies are stored for the site "example.com"\n',
  ])
  expect(JSON.parse((await cli(['list', '--json'])).stdout).map((r: { site: string }) => r.site)).toEqual(['192.0.2.7'])
  // Each change is in the audit log as the CLI's, without a value.
  const audit = await runCli(['audit', '--json', '--config', configPath], { timeoutMs: 30_000 })
  const rows = audit.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r.action.startsWith('cookies.'))
  expect(rows.map((r) => [r.action, r.target])).toEqual([
    ['cookies.add', 'site example.com'],
    ['cookies.add', 'site 192.0.2.7'],
    ['cookies.remove', 'site example.com'],
  ])
  expect(rows[0].detail).toBe('2 cookies kept, 1 for other domains and 1 expired left out')
  expect(audit.stdout).not.toContain(VALUE)
}

describe('linkbox media cookies', () => {
  test('on SQLite', async () => {
    const dir = tempDir('linkbox-cookies-cli-')
    dirs.push(dir)
    const c = writeConfig(dir)
    await roundTrip(c.configPath, dir, async () => {
      const db = new Database(join(c.dataDir, 'linkbox.db'), { readonly: true })
      try {
        return (db.query('SELECT sealed FROM media_cookies').all() as { sealed: Uint8Array }[]).map((r) => r.sealed)
      } finally {
        db.close()
      }
    })
  }, 120_000)

  test('on PostgreSQL', async () => {
    const dir = tempDir('linkbox-cookies-cli-pg-')
    dirs.push(dir)
    const url = await pg.createDatabase()
    const c = writeConfig(dir, { database: { url } })
    await roundTrip(c.configPath, dir, async () => {
      const db = await openPostgres(url)
      try {
        return (await db.sql`SELECT sealed FROM media_cookies`).map((r: { sealed: Uint8Array }) => r.sealed)
      } finally {
        await db.close()
      }
    })
  }, 120_000)

  test('cookies go with linkbox migrate into PostgreSQL, and with backup and restore back into a data_dir, still opening', async () => {
    const dir = tempDir('linkbox-cookies-copy-')
    dirs.push(dir)
    for (const d of ['lite', 'pg', 'back']) mkdirSync(join(dir, d))
    const lite = writeConfig(join(dir, 'lite'))
    const file = join(dir, 'cookies.txt')
    writeFileSync(file, FILE)
    const cli = (args: string[], configPath: string) => runCli([...args, '--config', configPath], { timeoutMs: 60_000 })
    expect((await cli(['media', 'cookies', 'add', 'example.com', file], lite.configPath)).code).toBe(0)

    const url = await pg.createDatabase()
    const migrated = await cli(['migrate', '--to', url], lite.configPath)
    expect([migrated.code, migrated.stderr]).toEqual([0, ''])
    expect(migrated.stdout).toMatch(/^media_cookies +1$/m)
    const onPg = writeConfig(join(dir, 'pg'), { database: { url } })
    const db = await openPostgres(url)
    try {
      const [row] = await db.sql`SELECT site, sealed FROM media_cookies`
      const cookies = unseal(cookieKey(await postgresSigningSecret(db.sql)()), row.site, row.sealed)
      expect(cookies?.map((c) => c.name)).toEqual(['sid', 'h'])
    } finally {
      await db.close()
    }

    const archive = join(dir, 'backup.tar')
    expect((await cli(['backup', archive], onPg.configPath)).code).toBe(0)
    const back = writeConfig(join(dir, 'back'))
    const restored = await cli(['restore', archive], back.configPath)
    expect([restored.code, restored.stderr]).toEqual([0, ''])
    expect((await cli(['media', 'cookies', 'list'], back.configPath)).stdout).toMatch(/^example\.com\t2\t/m)
    const sqlite = new Database(join(back.dataDir, 'linkbox.db'), { readonly: true })
    try {
      const row = sqlite.query('SELECT site, sealed FROM media_cookies').get() as { site: string; sealed: Uint8Array }
      const cookies = unseal(cookieKey(loadSigningSecret(back.dataDir)), row.site, row.sealed)
      expect(cookies?.map((c) => c.value)).toEqual([VALUE, VALUE])
    } finally {
      sqlite.close()
    }
  }, 180_000)
})
