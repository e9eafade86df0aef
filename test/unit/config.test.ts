// Config (SPEC §10–11): defaults, validation naming the key, relative data_dir.
import { afterAll, describe, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildConfig, defaultConfig, loadConfig } from '../../src/kernel/config'
import { redactDatabaseUrl } from '../../src/kernel/config-database'
import { tempDir as makeTempDir } from '../support/app'

const dirs: string[] = []
const tempDir = () => {
  const d = makeTempDir()
  dirs.push(d)
  return d
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

describe('config', () => {
  test('no file: the documented defaults', () => {
    const c = loadConfig()
    expect(c.server).toEqual({
      host: '0.0.0.0',
      port: 8080,
      base_url: 'http://localhost:8080',
      trusted_proxies: [],
      metrics_token: '',
      domains: [],
    })
    expect(c.mail.smtp_port).toBe(2525)
    expect(c.mail.domains).toEqual(['localhost'])
    expect(c.rate).toEqual({ anon_per_minute: 60, anon_per_day: 200, key_per_minute: 600 })
    expect(c.links).toEqual({
      redirect_status: 302,
      blocked_domains: [],
      anonymous: true,
      blocklist_files: [],
      import_max_rows: 50_000,
      fetch_metadata: true,
    })
    expect(c.data_dir).toBe(join(process.cwd(), 'data'))
    expect(c.links.redirect_status).toBe(302)
    expect(c.media.link_ttl).toBe(3600)
  })

  test('a file overrides what it names; data_dir is relative to the file', () => {
    const dir = tempDir()
    const path = join(dir, 'linkbox.toml')
    writeFileSync(
      path,
      'data_dir = "state"\n[server]\nport = 9090\nbase_url = "https://s.example/"\ntrusted_proxies = ["10.0.0.0/8", "::1"]\n[rate]\nanon_per_minute = 0\n',
    )
    const c = loadConfig(path)
    expect(c.data_dir).toBe(join(dir, 'state'))
    expect(c.server.port).toBe(9090)
    expect(c.server.base_url).toBe('https://s.example')
    expect(c.server.host).toBe('0.0.0.0')
    expect(c.rate.anon_per_minute).toBe(0)
    expect(c.rate.key_per_minute).toBe(600)
  })

  test.each([
    [{ server: { prot: 1 } }, 'unknown key "server.prot"'],
    [{ colour: 'blue' }, 'unknown key "colour"'],
    [{ server: { port: 'x' } }, '"server.port" must be a whole number'],
    [{ server: { port: 70000 } }, '"server.port" must be between 0 and 65535'],
    [{ server: { base_url: 'ftp://x' } }, '"server.base_url"'],
    [{ server: { trusted_proxies: ['10.0.0.0/33'] } }, '"server.trusted_proxies[0]"'],
    [{ links: { redirect_status: 303 } }, '"links.redirect_status" must be one of 301, 302, 307, 308'],
    [{ mail: { domains: [] } }, '"mail.domains" must not be empty'],
    [{ media: { allow_private_networks: 'yes' } }, '"media.allow_private_networks" must be true or false'],
    [{ rate: 5 }, '"rate" must be a table'],
  ])('bad config %j is refused naming the key', (doc, message) => {
    expect(() => buildConfig(doc as Record<string, unknown>)).toThrow(message)
  })

  test('a file that is not TOML is refused with its name', () => {
    const path = join(tempDir(), 'bad.toml')
    writeFileSync(path, '[server\nport = 1')
    expect(() => loadConfig(path)).toThrow(/not valid TOML/)
    expect(() => loadConfig(join(tempDir(), 'missing.toml'))).toThrow(/cannot read/)
  })

  test('every key of the documented example is known', () => {
    expect(() => buildConfig(JSON.parse(JSON.stringify(defaultConfig())))).not.toThrow()
  })
})

test('linkbox.example.toml is valid and states the defaults', () => {
  const c = loadConfig(join(import.meta.dir, '../..', 'linkbox.example.toml'))
  expect({ ...c, data_dir: '' }).toEqual({ ...defaultConfig(), data_dir: '' })
  expect(c.data_dir).toBe(join(import.meta.dir, '../..', 'data'))
})

test('server.metrics_token: empty, or 16 to 256 visible characters; a refused one is not repeated in the message', () => {
  const token = 'Zq8-metrics.token_0123456789'
  expect(buildConfig({ server: { metrics_token: token } }).server.metrics_token).toBe(token)
  for (const bad of ['short-secret', 'has a space in it 1234', 'x'.repeat(257), 'tab\there-0123456789']) {
    let message = ''
    try {
      buildConfig({ server: { metrics_token: bad } })
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toBe(
      `config: "server.metrics_token" must be empty or 16 to 256 visible ASCII characters, no spaces (got ${bad.length} characters; the value is not shown)`,
    )
  }
  expect(() => buildConfig({ server: { metrics_token: 12345678901234567 } })).toThrow(
    '"server.metrics_token" must be a string',
  )
})

test('mail.tls_cert and tls_key: both or neither; relative paths are relative to the config file', () => {
  expect(() => buildConfig({ mail: { tls_cert: 'mx.crt' } })).toThrow('"mail.tls_key" must be set too')
  expect(() => buildConfig({ mail: { tls_key: 'mx.key' } })).toThrow('"mail.tls_cert" must be set too')
  const dir = tempDir()
  const file = join(dir, 'linkbox.toml')
  writeFileSync(file, '[mail]\ntls_cert = "tls/mx.crt"\ntls_key = "/etc/mx.key"\n')
  const c = loadConfig(file)
  expect(c.mail.tls_cert).toBe(join(dir, 'tls/mx.crt'))
  expect(c.mail.tls_key).toBe('/etc/mx.key')
  expect(defaultConfig().mail).toMatchObject({ tls_cert: '', tls_key: '', max_connections_per_ip: 10 })
})

test('database.url: empty is SQLite (the default); a postgres:// or postgresql:// URL with host and database is kept as written', () => {
  expect(defaultConfig().database).toEqual({ url: '' })
  expect(loadConfig().database.url).toBe('')
  for (const url of [
    'postgres://linkbox:s3cret@db.example:5432/linkbox',
    'postgresql://linkbox@10.0.0.5/links?sslmode=require',
    'postgres://db.example/linkbox',
    'postgres://linkbox:p%40ss%2Fw%3Ard@[::1]:6432/lb?sslmode=verify-full',
  ])
    expect(buildConfig({ database: { url } }).database.url).toBe(url)
  const dir = tempDir()
  const file = join(dir, 'linkbox.toml')
  writeFileSync(file, '[database]\nurl = "postgres://lb:pw@127.0.0.1:5432/lb"\n')
  expect(loadConfig(file).database.url).toBe('postgres://lb:pw@127.0.0.1:5432/lb')
})

test('database.url: anything else is refused naming database.url and what is wrong, never repeating the value (it may hold a password)', () => {
  const password = 'Tr0ub4dor-and-3'
  const cases: [string, string][] = [
    [`mysql://lb:${password}@db/lb`, 'must start with postgres:// or postgresql://'],
    [`sqlite://lb:${password}@db/lb`, 'must start with postgres:// or postgresql://'],
    [`postgres://lb:${password}@db.example:5432`, 'must name one database'],
    [`postgres://lb:${password}@db.example/`, 'must name one database'],
    [`postgres://lb:${password}@db.example/a/b`, 'must name one database'],
    [`postgres://lb:${password}@/lb`, 'must be a URL'], // no host at all
    [
      `postgres://lb:${password}@db.example/lb?sslmode=sometimes`,
      'sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full',
    ],
    [`postgres://lb@db.example/lb?password=${password}`, 'takes no query parameter but sslmode (got "password")'],
    [`postgres://lb:${password}@db.example/lb#x`, 'must not have a #fragment'],
    [`postgres://lb:${password}@db.example:99999/lb`, 'must be a URL'],
    // A password of digits and a slash not encoded: it parses as a port and a path; still not shown.
    [`postgres://lb:1234/${password}@db.example/lb`, 'must name one database'],
    [password, 'must be a URL'],
  ]
  for (const [url, problem] of cases) {
    let message = ''
    try {
      buildConfig({ database: { url } })
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toStartWith(`config: "database.url" ${problem}`)
    expect(message).toEndWith('(the value is not shown: it may hold a password)')
    expect(message).not.toContain(password)
    expect(message).not.toContain('1234')
  }
  expect(() => buildConfig({ database: { url: 5432 } })).toThrow('"database.url" must be a string')
  expect(() => buildConfig({ database: { host: 'db' } })).toThrow('unknown key "database.host"')
})

test('redactDatabaseUrl: the password becomes ***, the rest as written; null for what is not a URL', () => {
  expect(redactDatabaseUrl('postgres://linkbox:s3cr%40t@db.example:5432/linkbox?sslmode=require')).toBe(
    'postgres://linkbox:***@db.example:5432/linkbox?sslmode=require',
  )
  expect(redactDatabaseUrl('postgresql://linkbox@[::1]/lb')).toBe('postgresql://linkbox@[::1]/lb')
  expect(redactDatabaseUrl('postgres://:only-a-password@db/lb')).toBe('postgres://:***@db/lb')
  expect(redactDatabaseUrl('postgres://u:p@db/lb?password=p2&sslmode=disable#p3')).toBe(
    'postgres://u:***@db/lb?password=***&sslmode=disable',
  )
  expect(redactDatabaseUrl('not a url')).toBeNull()
})

test('server.domains and [domains."host"] (SPEC §13): lower case, without base_url\'s own host; every refusal names its key', () => {
  const c = buildConfig({
    server: { base_url: 'https://S.example.org', domains: ['Go.Example.com', 's.example.org', 'go.example.com'] },
    domains: {
      'go.example.com': { root_redirect: 'https://www.example.com/', not_found_redirect: '' },
      's.example.org': { not_found_redirect: 'https://www.example.com/404' },
    },
  })
  expect(c.server.domains).toEqual(['go.example.com'])
  expect(c.domains).toEqual({
    'go.example.com': { root_redirect: 'https://www.example.com/', not_found_redirect: '' },
    's.example.org': { root_redirect: '', not_found_redirect: 'https://www.example.com/404' },
  })
  const refused = (doc: Record<string, unknown>) => {
    try {
      buildConfig(doc)
    } catch (err) {
      return (err as Error).message
    }
    return 'accepted'
  }
  expect(refused({ server: { domains: ['bad host'] } })).toContain('"server.domains[0]" must be a host name')
  expect(refused({ domains: { 'other.example': { root_redirect: '' } } })).toContain(
    'names a host that is neither base_url\'s (localhost) nor in "server.domains"',
  )
  expect(refused({ domains: { localhost: { root: '' } } })).toContain('unknown key "domains."localhost".root"')
  expect(refused({ domains: { localhost: { root_redirect: 'javascript:alert(1)' } } })).toContain(
    '"domains."localhost".root_redirect" must be an absolute http or https URL',
  )
  expect(refused({ domains: { localhost: { not_found_redirect: 'https://a.example/<x>' } } })).toContain(
    'not_found_redirect',
  )
})
