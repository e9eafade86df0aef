// `linkbox doctor` as an operator runs it: findings on stdout, exit 1 only when something fails.
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { defaultConfig } from '../../src/kernel/config'
import { checkGeo } from '../../src/app/doctor-services'
import { removeDir, runCli, tempDir, writeConfig } from '../support/server'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))
const config = (overrides = {}) => {
  const c = writeConfig(tempDir(), overrides)
  dirs.push(c.dir)
  return c
}

test('a good setup: every check ok or warn, exit 0, the database created', async () => {
  const c = config()
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.code).toBe(0)
  expect(r.stdout).toMatch(/^ok\s+config\s+.*linkbox\.toml$/m)
  expect(r.stdout).toMatch(/^ok\s+data_dir\s+.* is writable$/m)
  expect(r.stdout).toMatch(/^ok\s+database\s+.*schema \d+\/\d+, quick_check ok$/m)
  expect(r.stdout).toMatch(/^ok\s+server\.port\s+port 0/m)
  // Run from source nothing is bundled; Debian's yt-dlp on PATH (installed here and by .ci/run) is used.
  expect(r.stdout).toMatch(/^ok\s+yt-dlp bundled\s+none: run from source/m)
  expect(r.stdout).toMatch(/^ok\s+yt-dlp\s+path: \/\S+\/yt-dlp, version \d{4}\.\d{2}\.\d{2}$/m)
  expect(r.stdout).toMatch(/^ok\s+python3\s+\S+: Python 3\./m)
  expect(r.stdout).toMatch(/^(ok|warn)\s+ffmpeg\s/m)
  expect(r.stdout).toMatch(/^ok\s+geo\.database\s+the embedded database, built \d{4}-\d\d-\d\d$/m)
  expect(r.stdout).not.toContain('FAIL')
})

test('geo.database: a missing file fails naming it, an old one is a warning', async () => {
  const c = config({ geo: { database: 'nowhere.mmdb' } })
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(/^FAIL\s+geo\.database\s+cannot be read: \S*nowhere\.mmdb: ENOENT$/m)
  const base = { ...defaultConfig(), geo: { database: '' } }
  expect(checkGeo(base, Date.parse('2031-01-01')).verdict).toBe('warn')
  expect(checkGeo(base, Date.parse('2031-01-01')).detail).toMatch(/built \d{4}-\d\d-\d\d, \d+ years ago/)
  expect(checkGeo(base).verdict).toBe('ok')
})

test('an update installed with `ytdlp update` is reported as the one used', async () => {
  const c = config()
  const release = join(c.dir, 'release')
  mkdirSync(join(release, 'app'), { recursive: true })
  writeFileSync(join(release, 'app', '__main__.py'), "print('2099.01.01')\n")
  expect(Bun.spawnSync(['python3', '-m', 'zipapp', join(release, 'app'), '-o', join(release, 'yt-dlp')]).exitCode).toBe(
    0,
  )
  expect((await runCli(['ytdlp', 'update', '--from', join(release, 'yt-dlp'), '--config', c.configPath])).code).toBe(0)
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.stdout).toContain(
    `ok    yt-dlp           updated: ${join(c.dataDir, 'bin', 'yt-dlp-updated')}, version 2099.01.01\n`,
  )
})

test('a data_dir that is a file fails, exit 1, naming it', async () => {
  const dir = tempDir()
  dirs.push(dir)
  const file = join(dir, 'not-a-dir')
  writeFileSync(file, 'x')
  const c = config({ data_dir: file })
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(/^FAIL\s+data_dir\s+.*not-a-dir is not a directory$/m)
})

test('a port in use is a warning that suggests linkbox is already running', async () => {
  const holder = createServer().listen(0, '127.0.0.1')
  await new Promise((r) => holder.once('listening', r))
  const port = (holder.address() as { port: number }).port
  try {
    const c = config({ server: { host: '127.0.0.1', port } })
    const r = await runCli(['doctor', '--config', c.configPath])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(
      new RegExp(
        `^warn\\s+server\\.port\\s+127\\.0\\.0\\.1:${port} cannot be bound \\(EADDRINUSE\\): is linkbox already running\\?$`,
        'm',
      ),
    )
  } finally {
    holder.close()
  }
})

test('a yt-dlp path that does not exist is a warning naming what it is for', async () => {
  const c = config({ media: { ytdlp_path: '/nonexistent/yt-dlp' } })
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.stdout).toMatch(/^warn\s+yt-dlp\s+\/nonexistent\/yt-dlp not found: needed for media download$/m)
})

// Root ignores file modes, so a read-only database is made with the immutable attribute (chattr +i),
// where the file system and the capabilities allow it.
function canMakeImmutable(): boolean {
  const probe = join(tempDir(), 'probe')
  writeFileSync(probe, 'x')
  try {
    if (Bun.spawnSync(['chattr', '+i', probe]).exitCode !== 0) return false
    Bun.spawnSync(['chattr', '-i', probe])
    return true
  } catch {
    return false
  } finally {
    removeDir(join(probe, '..'))
  }
}

test.skipIf(!canMakeImmutable())(
  'a database file that cannot be written is a FAIL of "database write", exit 1',
  async () => {
    const c = config()
    const first = await runCli(['doctor', '--config', c.configPath])
    expect(first.stdout).toMatch(/^ok\s+database write\s+writable, [\d.]+ [GM]iB free$/m)
    const file = join(c.dataDir, 'linkbox.db')
    expect(Bun.spawnSync(['chattr', '+i', file]).exitCode).toBe(0)
    try {
      const r = await runCli(['doctor', '--config', c.configPath])
      expect(r.code).toBe(1)
      expect(r.stdout).toMatch(/^ok\s+database\s+.* opens, /m)
      expect(r.stdout).toMatch(
        /^FAIL\s+database write\s+not writable: attempt to write a readonly database \(SQLITE_READONLY\)$/m,
      )
    } finally {
      Bun.spawnSync(['chattr', '-i', file])
    }
  },
)

test('a database file of random bytes: doctor and serve name the file, exit 1, no stack trace', async () => {
  const c = config()
  mkdirSync(c.dataDir)
  const file = join(c.dataDir, 'linkbox.db')
  writeFileSync(file, crypto.getRandomValues(new Uint8Array(8192)))
  const doctor = await runCli(['doctor', '--config', c.configPath])
  expect(doctor.code).toBe(1)
  expect(doctor.stdout).toContain(`FAIL  database         ${file} is not a linkbox database (file is not a database)`)
  expect(doctor.stdout).toMatch(/^skip\s+database write\s/m)
  const serve = await runCli(['serve', '--config', c.configPath])
  expect(serve.code).toBe(1)
  expect(serve.stderr).toStartWith(`linkbox: ${file} is not a linkbox database (file is not a database)`)
  expect(serve.stderr.trim().split('\n')).toHaveLength(1)
  expect(serve.stderr).not.toContain('    at ')
})

test('a config that does not load is one FAIL line naming the file and the problem; the rest skipped; exit 1', async () => {
  const dir = tempDir()
  dirs.push(dir)
  const cases: [string, string, RegExp][] = [
    ['bad-value.toml', 'data_dir = 5\n', /"data_dir" must be a string \(got 5\)/],
    ['bad-syntax.toml', 'data_dir = [\n', /is not valid TOML/],
    ['unknown-key.toml', '[server]\nprot = 8080\n', /server\.prot/],
  ]
  for (const [name, text, problem] of cases) {
    const path = join(dir, name)
    writeFileSync(path, text)
    const r = await runCli(['doctor', '--config', path])
    expect(r.code).toBe(1)
    expect(r.stderr).toBe('')
    const fails = r.stdout.split('\n').filter((l) => l.startsWith('FAIL'))
    expect(fails).toHaveLength(1)
    expect(fails[0]).toMatch(/^FAIL\s+config\s+/)
    expect(fails[0]).toContain(path)
    expect(fails[0]).toMatch(problem)
    expect(r.stdout).toMatch(/^skip\s+data_dir\s+needs a config that loads$/m)
    expect(r.stdout).toMatch(/^(ok|warn)\s+ffmpeg\s/m)
  }
  const missing = await runCli(['doctor', '--config', join(dir, 'nope.toml')])
  expect(missing.code).toBe(1)
  expect(missing.stdout).toMatch(/^FAIL\s+config\s+.*nope\.toml/m)
})

// STARTTLS: doctor reads the pair as the SMTP receiver will, so a wrong file is found before mail bounces.
function selfSigned(dir: string, name: string) {
  const cert = join(dir, `${name}.crt`)
  const key = join(dir, `${name}.key`)
  const r = Bun.spawnSync(
    [
      'openssl',
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=mx.example',
      '-days',
      '2',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stderr: 'pipe' },
  )
  if (r.exitCode !== 0) throw new Error(`openssl failed: ${r.stderr.toString()}`)
  return { cert, key }
}

test('mail.tls: a matching pair is ok; a key of another certificate is a FAIL naming both files', async () => {
  const dir = tempDir()
  dirs.push(dir)
  const a = selfSigned(dir, 'a')
  const b = selfSigned(dir, 'b')
  const good = await runCli(['doctor', '--config', config({ mail: { tls_cert: a.cert, tls_key: a.key } }).configPath])
  expect(good.stdout).toMatch(/^ok\s+mail\.tls\s+STARTTLS with CN=mx\.example, valid until /m)
  const bad = await runCli(['doctor', '--config', config({ mail: { tls_cert: a.cert, tls_key: b.key } }).configPath])
  expect(bad.code).toBe(1)
  expect(bad.stdout).toContain(`mail.tls_key ${b.key} is not the key of the certificate ${a.cert}`)
  const none = await runCli(['doctor', '--config', config().configPath])
  expect(none.stdout).toMatch(/^ok\s+mail\.tls\s+no mail\.tls_cert\/tls_key: STARTTLS is not offered/m)
})

test('mail store: the bytes under data_dir/mail and what a crash left in incoming/', async () => {
  const c = config()
  mkdirSync(join(c.dataDir, 'mail', 'incoming'), { recursive: true })
  mkdirSync(join(c.dataDir, 'mail', 'ab', 'ab'.padEnd(32, '0')), { recursive: true })
  writeFileSync(join(c.dataDir, 'mail', 'ab', 'ab'.padEnd(32, '0'), 'raw.eml'), 'x'.repeat(3000))
  writeFileSync(join(c.dataDir, 'mail', 'incoming', 'half.eml'), 'x'.repeat(1000))
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.stdout).toMatch(
    /^ok\s+mail store\s+.*mail: 3\.9 KiB in 2 files \(small messages are in the database\); 1 unfinished in incoming\/ \(removed by the hourly sweep\)$/m,
  )
})

test('blocklists: each file with its hosts and age; a missing one FAILs, an old one warns', async () => {
  const c = writeConfig()
  const fresh = join(c.dir, 'phishing.txt')
  const old = join(c.dir, 'old.txt')
  writeFileSync(fresh, '0.0.0.0 a.example\nb.example\n')
  writeFileSync(old, 'c.example\n')
  const { utimesSync } = await import('node:fs')
  const longAgo = new Date(Date.now() - 40 * 86_400_000)
  utimesSync(old, longAgo, longAgo)
  const missing = join(c.dir, 'missing.txt')
  writeFileSync(
    c.configPath,
    `${Bun.file(c.configPath).size ? await Bun.file(c.configPath).text() : ''}\n[links]\nblocklist_files = [${[fresh, old, missing].map((p) => JSON.stringify(p)).join(', ')}]\n`,
  )
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.stdout).toMatch(new RegExp(`ok +blocklist +${fresh.replace(/[.]/g, '\\.')}: 2 hosts, changed today`))
  expect(r.stdout).toMatch(/warn +blocklist +.*old\.txt: 1 hosts, changed 40 days ago: older than 30 days/)
  expect(r.stdout).toMatch(/FAIL +blocklist +.*missing\.txt: cannot be read \(ENOENT\)/)
  expect(r.code).toBe(1)
  removeDir(c.dir)
})
