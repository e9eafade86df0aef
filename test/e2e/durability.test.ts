// What survives a crash, a shutdown and a backup (SPEC §3, §10): the real server as a child process
// (`bun src/main.ts serve`), real sockets, the real SQLite file, restarted on the same data directory.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  CHROME_UA,
  apiPost,
  createAccount,
  killAllServers,
  removeDir,
  runCli,
  SOURCE_COMMAND,
  startServer,
  tempDir,
  writeConfig,
  type TestConfig,
} from '../support/server'

// These tests start real processes; bun's default of 5 s per test or hook is tight on a slow machine.
setDefaultTimeout(30_000)

const dirs: string[] = []
afterAll(async () => {
  await killAllServers()
  for (const d of dirs) removeDir(d)
})

function freshConfig(): TestConfig {
  const config = writeConfig(tempDir('linkbox-durability-'))
  dirs.push(config.dir)
  return config
}

/** Reads the database file directly, beside the running server (WAL lets a reader in). */
function readDb<T>(config: TestConfig, fn: (db: Database) => T): T {
  const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
  try {
    return fn(db)
  } finally {
    db.close()
  }
}

const visit = (base: string, code: string) =>
  fetch(`${base}/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })

describe('links answered with 200 survive a SIGKILL', () => {
  const N = 50
  const config = freshConfig()
  const created = new Map<string, string>() // code → long URL
  let key: string

  beforeAll(async () => {
    key = await createAccount(config.configPath, 'alice')
    const server = await startServer({ config })
    const answers = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        apiPost(server.url, 'getLink.json', { url: `https://example.com/page/${i}?n=${i}` }, { 'x-api-key': key }),
      ),
    )
    // Kill the moment the last answer is in: no shutdown handler, no flush, no checkpoint.
    await server.kill()
    expect(server.proc.signalCode).toBe('SIGKILL')
    for (const [i, a] of answers.entries()) {
      expect(a.status).toBe(200)
      created.set(a.body.return.hex, `https://example.com/page/${i}?n=${i}`)
    }
    expect(created.size).toBe(N)
  })

  test('after a restart on the same data directory every code redirects to its URL', async () => {
    const server = await startServer({ config })
    try {
      const visits = await Promise.all(
        [...created].map(async ([code, url]) => {
          const r = await visit(server.url, code)
          return { code, status: r.status, location: r.headers.get('location'), url }
        }),
      )
      for (const v of visits) expect(v).toEqual({ code: v.code, status: 302, location: v.url, url: v.url })

      const listed = await apiPost(server.url, 'links.json', { limit: '500' }, { 'x-api-key': key })
      expect(listed.status).toBe(200)
      expect(listed.body.return.count).toBe(N)
      const listedMap = new Map(
        listed.body.return.links.map((l: { hex: string; long_url: string }) => [l.hex, l.long_url]),
      )
      expect(listedMap).toEqual(created)
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})

describe('clicks still in the buffer are written on SIGTERM', () => {
  const config = freshConfig()
  const ROUND = 300
  let code: string
  let sent = 0
  let flushedAtSigterm = -1

  beforeAll(async () => {
    const server = await startServer({ config })
    const made = await apiPost(server.url, 'getLink.json', { url: 'https://example.com/burst' })
    expect(made.status).toBe(200)
    code = made.body.return.hex

    // Fire a burst and look at the file straight after the last answer. The recorder writes every
    // second, so normally part of the burst is still only in memory; in the unlikely case that a flush
    // landed right after the burst, fire another one so SIGTERM really has something to flush.
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(Array.from({ length: ROUND }, () => visit(server.url, code)))
      sent += ROUND
      for (const r of answers) {
        expect(r.status).toBe(302)
        expect(r.headers.get('location')).toBe('https://example.com/burst')
      }
      flushedAtSigterm = readDb(
        config,
        (db) => (db.query('SELECT clicks + bots AS n FROM links WHERE code = ?').get(code) as { n: number }).n,
      )
      if (flushedAtSigterm < sent) break
    }
    expect(await server.stop('SIGTERM')).toBe(0)
    expect(server.stdout()).toContain('SIGTERM')
  })

  test('part of the burst was still pending when SIGTERM arrived', () => {
    expect(flushedAtSigterm).toBeGreaterThanOrEqual(0)
    expect(flushedAtSigterm).toBeLessThan(sent)
  })

  test('after a restart stats.json counts every click of the burst, none as a bot', async () => {
    const server = await startServer({ config })
    try {
      const s = await apiPost(server.url, 'stats.json', { code })
      expect(s.status).toBe(200)
      expect(s.body.return.clicks).toBe(sent)
      expect(s.body.return.bots).toBe(0)
      const today = new Date().toISOString().slice(0, 10)
      const days = s.body.return.days as { date: string; clicks: number }[]
      // The burst happened today (UTC), unless the test straddled midnight.
      expect(days.reduce((n, d) => n + d.clicks, 0)).toBe(sent)
      if (days.at(-1)!.date === today) expect(days.at(-1)!.clicks).toBeGreaterThan(0)
      expect(s.body.return.browsers).toEqual([{ name: 'Chrome', clicks: sent }])
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})

test('a SIGTERM in the middle of a burst: exit 0, and every answered visit is counted', async () => {
  const config = freshConfig()
  let server = await startServer({ config })
  const made = await apiPost(server.url, 'getLink.json', { url: 'https://example.com/mid-burst' })
  expect(made.status).toBe(200)
  const code = made.body.return.hex as string

  let firstAnswer!: () => void
  const answered = new Promise<void>((r) => (firstAnswer = r))
  // Requests the server has not accepted when it stops fail on the client side (refused / reset): fine.
  const burst = Array.from({ length: 400 }, () =>
    visit(server.url, code).then(
      (r) => {
        firstAnswer()
        return r.status
      },
      () => 0,
    ),
  )
  await answered
  expect(await server.stop('SIGTERM')).toBe(0)
  const statuses = await Promise.all(burst)
  const redirects = statuses.filter((s) => s === 302).length
  expect(statuses.filter((s) => s !== 302 && s !== 0)).toEqual([])
  expect(redirects).toBeGreaterThan(0)

  server = await startServer({ config })
  try {
    const s = await apiPost(server.url, 'stats.json', { code })
    expect(s.status).toBe(200)
    expect(s.body.return.clicks).toBe(redirects)
  } finally {
    expect(await server.stop()).toBe(0)
  }
})

test('a client that never finishes its request does not hold SIGTERM forever', async () => {
  const config = freshConfig()
  let server = await startServer({ config })
  const made = await apiPost(server.url, 'getLink.json', { url: 'https://example.com/stalled' })
  const code = made.body.return.hex as string
  for (let i = 0; i < 10; i++) expect((await visit(server.url, code)).status).toBe(302)

  // Headers promise 100 bytes of body; 9 arrive, the rest never does.
  const socket = await Bun.connect({ hostname: '127.0.0.1', port: server.port, socket: { data() {} } })
  socket.write(
    'POST /api/getLink.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n' +
      'Content-Length: 100\r\n\r\nurl=https',
  )
  await Bun.sleep(100)
  const started = performance.now()
  try {
    expect(await server.stop('SIGTERM', 15_000)).toBe(0)
  } finally {
    socket.end()
  }
  expect(performance.now() - started).toBeLessThan(9_000) // the grace period is 5 s
  expect(server.stderr()).toContain('requests still open')

  server = await startServer({ config })
  try {
    expect((await apiPost(server.url, 'stats.json', { code })).body.return.clicks).toBe(10)
  } finally {
    expect(await server.stop()).toBe(0)
  }
})

/** The linkbox.db inside a backup archive, taken out by the system's tar (the archive is a plain POSIX tar). */
function databaseIn(archive: string): string {
  const out = mkdtempSync(join(tmpdir(), 'linkbox-untar-'))
  const r = Bun.spawnSync(['tar', '-xf', archive, '-C', out, 'linkbox.db'])
  if (r.exitCode !== 0) throw new Error(`tar -xf ${archive}: ${r.stderr.toString()}`)
  return join(out, 'linkbox.db')
}

describe('backup while the server runs', () => {
  test('produces a consistent SQLite file holding the links', async () => {
    const config = freshConfig()
    const key = await createAccount(config.configPath, 'bob')
    const server = await startServer({ config })
    try {
      const codes: string[] = []
      for (let i = 0; i < 20; i++) {
        const r = await apiPost(server.url, 'getLink.json', { url: `https://example.org/${i}` }, { 'x-api-key': key })
        expect(r.status).toBe(200)
        codes.push(r.body.return.hex)
      }
      // Keep the server writing (new links, clicks) while the backup runs.
      let writing = true
      const writer = (async () => {
        let i = 0
        while (writing) {
          await apiPost(server.url, 'getLink.json', { url: `https://example.net/${i++}` }, { 'x-api-key': key })
          await visit(server.url, codes[0]!)
        }
      })()
      const file = join(config.dir, 'backup.db')
      const r = await runCli(['backup', file, '--config', config.configPath])
      writing = false
      await writer
      expect(r.stderr).toBe('')
      expect(r.code).toBe(0)
      expect(r.stdout).toContain(file)

      const copy = new Database(databaseIn(file), { readonly: true })
      try {
        expect(copy.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' })
        const inCopy = new Set(
          (copy.query('SELECT code FROM links').all() as { code: string }[]).map((row) => row.code),
        )
        for (const c of codes) expect(inCopy.has(c)).toBe(true)
        expect(copy.query('SELECT name FROM accounts').all()).toEqual([{ name: 'bob' }])
      } finally {
        copy.close()
      }

      // A second backup to the same file is refused rather than overwriting it.
      const again = await runCli(['backup', file, '--config', config.configPath])
      expect(again.code).not.toBe(0)
      expect(again.stderr).toContain('exists')
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('the backup file is readable by its owner only (0600), whatever the umask', async () => {
    const config = freshConfig()
    await createAccount(config.configPath, 'carol')
    const file = join(config.dir, 'private.db')
    const r = await runCli(
      ['sh', '-c', 'umask 000; exec "$0" "$@"', ...SOURCE_COMMAND, 'backup', file, '--config', config.configPath],
      { command: [] },
    )
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const copy = new Database(databaseIn(file), { readonly: true })
    expect(copy.query('SELECT name FROM accounts').all()).toEqual([{ name: 'carol' }])
    copy.close()
  })

  test('a target folder that does not exist: one line naming the folder, exit 1, nothing created', async () => {
    const config = freshConfig()
    await createAccount(config.configPath, 'dave')
    const folder = join(config.dir, 'no', 'such', 'folder')
    const r = await runCli(['backup', join(folder, 'b.db'), '--config', config.configPath])
    expect(r.code).toBe(1)
    expect(r.stderr).toBe(`linkbox: backup: the folder ${folder} does not exist; create it first\n`)
    expect(existsSync(join(config.dir, 'no'))).toBe(false)
  })

  test('with no database where the config points, backup refuses instead of copying an empty one', async () => {
    for (const makeDataDir of [false, true]) {
      const config = freshConfig()
      if (makeDataDir) mkdirSync(config.dataDir)
      const file = join(config.dir, 'backup.db')
      const r = await runCli(['backup', file, '--config', config.configPath])
      expect(r.code).toBe(1)
      expect(r.stderr).toContain(`no database at ${join(config.dataDir, 'linkbox.db')}`)
      expect(r.stderr).not.toContain('    at ') // a message, not a stack trace
      expect(existsSync(file)).toBe(false)
      expect(existsSync(join(config.dataDir, 'linkbox.db'))).toBe(false)
    }
  })
})
