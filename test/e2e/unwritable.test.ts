// When the database cannot be written (issue 6, attacker finding 3): writes are made to fail for real —
// `PRAGMA max_page_count` pinned to the file's size on the app's own connection (SQLITE_FULL), `PRAGMA
// query_only` (SQLITE_READONLY), and for the real server a file size limit (`ulimit -f`: the WAL cannot
// grow, SQLITE_IOERR_WRITE). Reads keep working, changes get 503, the log says it once, nothing is lost
// once writes work again, and SIGTERM says what could not be written.
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { isStorageFailure } from '../../src/db/sqlite'
import { capturedLog, makeBox } from '../support/app'
import {
  CHROME_UA,
  apiPost,
  createAccount,
  killAllServers,
  removeDir,
  REPO_ROOT,
  runCli,
  startServer,
  tempDir,
  writeConfig,
} from '../support/server'

setDefaultTimeout(30_000)

const DAY = 86_400_000
const LONG_URL = `https://example.com/${'a'.repeat(4070)}` // a row larger than a page: it needs a new one

/** Polls `ready` (no timing assertion: the deadline is only there to end a hung test with a message). */
async function until(what: string, ready: () => boolean | Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`)
    await Bun.sleep(10)
  }
}

describe('a full database (max_page_count at the file size), in process', () => {
  test('reads work, changes get 503, one log line per state change, the kept clicks are written on recovery', async () => {
    let now = Date.parse('2025-01-01T12:00:00Z')
    // No periodic timer: every write attempt here is one the test causes (stats, the retry). max_page_count
    // limits one connection, so the clicks are written on the main one here (writeOn 'main', the writer
    // thread's fallback); the real server below fails on its writer thread.
    // The recorder's lines go to the app's log: this one keeps what is written at level error.
    const { logger, errors: log } = capturedLog()
    const box = await makeBox(
      {},
      { logger, clock: () => now, clicks: { intervalMs: 3_600_000, retryMs: 20, maxRetryMs: 40, writeOn: 'main' } },
    )
    try {
      const key = await box.account('owner')
      const made = await box.post('/api/getLink.json', { url: 'https://example.com/full' }, { 'x-api-key': key })
      expect(made.status).toBe(200)
      const code = made.body.return.hex as string
      const visit = () =>
        box.request(`/${code}`, {
          redirect: 'manual',
          headers: { 'user-agent': CHROME_UA, referer: `https://r${now % 97}.example/` },
        })

      // From here on the file cannot grow: every write that needs a new page fails with SQLITE_FULL.
      box.db.exec('VACUUM') // no free pages left behind (migration 2 rebuilds tables) for writes to reuse
      const pages = (box.db.query('PRAGMA page_count').get() as { page_count: number }).page_count
      expect(box.db.query('PRAGMA freelist_count').get()).toEqual({ freelist_count: 0 })
      box.db.exec(`PRAGMA max_page_count = ${pages}`)

      // 300 clicks on 300 different days: 300 day rows and their breakdowns, far more than the free room.
      for (let i = 0; i < 300; i++) {
        now += DAY
        expect((await visit()).status).toBe(302)
      }
      expect(box.recorder.failing).toBe(false)

      // stats.json flushes first: the flush fails, the answer is read all the same.
      const stats = await box.post('/api/stats.json', { code }, { 'x-api-key': key })
      expect(stats.status).toBe(200)
      expect(stats.body.return.clicks).toBe(0)
      expect(box.recorder.failing).toBe(true)
      expect(box.recorder.lastError).toContain('SQLITE_FULL')
      expect(box.recorder.pending).toBe(300)
      expect(log).toEqual([
        expect.stringMatching(
          /^click writes failing: database or disk is full \(SQLITE_FULL\); 300 clicks kept in memory/,
        ),
      ])

      // More than a batch (1000) while failing: no write attempt per click or per batch.
      const failuresBefore = box.recorder.failures
      for (let i = 0; i < 2500; i++) expect((await visit()).status).toBe(302)
      await Bun.sleep(0)
      expect(box.recorder.failures).toBe(failuresBefore)
      expect(box.recorder.pending).toBe(2800)

      // Reads: the public page and stats.json answer 200.
      expect((await box.request(`/${code}+`)).status).toBe(200)
      expect((await box.post('/api/stats.json', { code })).status).toBe(200)
      expect((await box.post('/api/links.json', {}, { 'x-api-key': key })).status).toBe(200)

      // Changes that cannot be stored: 503 storage_unavailable, no internals.
      const create = await box.post('/api/getLink.json', { url: LONG_URL }, { 'x-api-key': key })
      expect(create.status).toBe(503)
      expect(create.body).toEqual({
        status: 'error',
        code: 'storage_unavailable',
        message: expect.stringContaining('could not be stored'),
      })
      expect(create.body.message).not.toContain('SQLITE')

      // Not ready for writes (/readyz 503), alive and serving (/healthz 200), both naming the state and why.
      const full = {
        version: expect.any(String),
        database: 'unwritable',
        reason: expect.stringMatching(/^database or disk is full/),
      }
      const ready = await box.get('/readyz')
      expect([ready.status, ready.body]).toEqual([503, { status: 'degraded', ...full }])
      const live = await box.get('/healthz')
      expect([live.status, live.body]).toEqual([200, { status: 'ok', ...full }])

      // The retries back off; each failure stays silent.
      await until('three more failed retries', async () => {
        await box.recorder.flushIfWritable()
        return box.recorder.failures >= failuresBefore + 3
      })
      expect(log).toHaveLength(1)

      // Room again: the next retry writes every kept click and says so, once.
      box.db.exec('PRAGMA max_page_count = 1073741823')
      await until('the writes to work again', async () => {
        await box.recorder.flushIfWritable()
        return !box.recorder.failing
      })
      expect(box.recorder.pending).toBe(0)
      expect(log).toHaveLength(2)
      expect(log[1]).toBe('click writes work again; 2800 clicks written')
      expect((box.db.query('SELECT clicks FROM links WHERE code = ?').get(code) as { clicks: number }).clicks).toBe(
        2800,
      )
      expect((box.db.query('SELECT count(*) AS n FROM click_days').get() as { n: number }).n).toBe(300)

      expect((await box.get('/healthz')).body).toEqual({ status: 'ok', version: expect.any(String), database: 'ok' })
      expect((await box.get('/readyz')).status).toBe(200)
      expect((await box.post('/api/getLink.json', { url: LONG_URL }, { 'x-api-key': key })).status).toBe(200)
    } finally {
      await box.cleanup()
    }
  })

  test('a change that could not be stored keeps /readyz 503 until a write succeeds', async () => {
    const box = await makeBox({}, { clicks: { intervalMs: 3_600_000 } })
    try {
      box.db.exec('VACUUM') // no free pages left behind (migration 2 rebuilds tables) for writes to reuse
      const pages = (box.db.query('PRAGMA page_count').get() as { page_count: number }).page_count
      box.db.exec(`PRAGMA max_page_count = ${pages}`)
      expect((await box.post('/api/getLink.json', { url: LONG_URL })).status).toBe(503)
      expect((await box.get('/readyz')).status).toBe(503)
      expect((await box.get('/healthz')).body.database).toBe('unwritable')
      box.db.exec('PRAGMA max_page_count = 1073741823')
      expect((await box.post('/api/getLink.json', { url: LONG_URL })).status).toBe(200)
      expect((await box.get('/readyz')).status).toBe(200)
      expect((await box.get('/healthz')).body.database).toBe('ok')
    } finally {
      await box.cleanup()
    }
  })
})

describe('a read-only database (query_only), in process', () => {
  test('update and delete get 503 storage_unavailable; /readyz 503 by its write probe; reads work', async () => {
    const box = await makeBox({}, { clicks: { intervalMs: 3_600_000 } })
    try {
      const key = await box.account('ro')
      const code = (await box.post('/api/getLink.json', { url: 'https://example.com/ro' }, { 'x-api-key': key })).body
        .return.hex
      box.db.exec('PRAGMA query_only = ON')
      // Before any change fails, only the probe can tell.
      const health = await box.get('/readyz')
      expect(health.status).toBe(503)
      expect(health.body).toMatchObject({
        database: 'unwritable',
        reason: expect.stringMatching(/^attempt to write a readonly database/),
      })
      expect((await box.get('/healthz')).status).toBe(200)
      const update = await box.post('/api/update.json', { code, mode: 'preview' }, { 'x-api-key': key })
      expect(update.status).toBe(503)
      expect(update.body.code).toBe('storage_unavailable')
      const del = await box.post('/api/delete.json', { code }, { 'x-api-key': key })
      expect(del.status).toBe(503)
      expect(del.body.code).toBe('storage_unavailable')
      expect((await box.post('/api/stats.json', { code }, { 'x-api-key': key })).status).toBe(200)
      expect((await box.request(`/${code}`, { redirect: 'manual' })).headers.get('location')).toBe(
        'https://example.com/ro',
      )
      box.db.exec('PRAGMA query_only = OFF')
      expect((await box.post('/api/update.json', { code, mode: 'preview' }, { 'x-api-key': key })).status).toBe(200)
    } finally {
      await box.cleanup()
    }
  })

  test('only storage failures are 503: a constraint or a missing table stays a fault (500)', () => {
    const db = new Database(':memory:')
    const failure = (sql: string) => {
      try {
        db.exec(sql)
      } catch (err) {
        return err
      }
      throw new Error(`no error from ${sql}`)
    }
    db.exec('CREATE TABLE t (x INTEGER UNIQUE)')
    db.exec('INSERT INTO t VALUES (1)')
    expect(isStorageFailure(failure('INSERT INTO t VALUES (1)'))).toBe(false)
    expect(isStorageFailure(failure('INSERT INTO nowhere VALUES (1)'))).toBe(false)
    db.exec('PRAGMA query_only = ON')
    expect(isStorageFailure(failure('INSERT INTO t VALUES (2)'))).toBe(true)
    db.close()
  })
})

describe('the real server with a file size limit (the WAL cannot grow)', () => {
  const dirs: string[] = []
  afterAll(async () => {
    await killAllServers()
    dirs.forEach(removeDir)
  })

  test('changes get 503, stats and the page 200, readyz 503 (healthz 200); SIGTERM says which clicks are lost, exit 1, no stack', async () => {
    const config = writeConfig(tempDir('linkbox-unwritable-'))
    dirs.push(config.dir)
    const key = await createAccount(config.configPath, 'alice') // the database exists before the limit
    // 64 KiB per file (ulimit -f counts 512-byte blocks); SIGXFSZ ignored, so a write past it fails (EFBIG).
    const limited = [
      'sh',
      '-c',
      'trap "" XFSZ; ulimit -f 128; exec "$0" "$@"',
      process.execPath,
      join(REPO_ROOT, 'src/main.ts'),
    ]
    const server = await startServer({ config, command: limited })
    try {
      const made = await apiPost(
        server.url,
        'getLink.json',
        { url: 'https://example.com/limited' },
        { 'x-api-key': key },
      )
      expect(made.status).toBe(200)
      const code = made.body.return.hex as string

      // Creates fill the WAL until one cannot be stored.
      let refused: Awaited<ReturnType<typeof apiPost>> | null = null
      for (let i = 0; i < 200 && !refused; i++) {
        const r = await apiPost(
          server.url,
          'getLink.json',
          { url: `https://example.com/${i}/${'x'.repeat(2000)}` },
          { 'x-api-key': key },
        )
        if (r.status !== 200) refused = r
      }
      expect(refused?.status).toBe(503)
      expect(refused?.body.code).toBe('storage_unavailable')

      // Visits until a click flush fails (the first ones may still fit where the refused create did not).
      const visit = () => fetch(`${server.url}/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })
      await until('the click flush to fail', async () => {
        for (let i = 0; i < 10; i++) expect((await visit()).status).toBe(302)
        return server.stderr().includes('click writes failing')
      })
      expect(server.stderr()).toMatch(
        /click writes failing: disk I\/O error \(SQLITE_IOERR_WRITE\); \d+ clicks kept in memory/,
      )
      for (let i = 0; i < 10; i++) expect((await visit()).status).toBe(302)

      const ready = await fetch(`${server.url}/readyz`)
      expect(ready.status).toBe(503)
      expect(await ready.json()).toMatchObject({ status: 'degraded', database: 'unwritable' })
      const live = await fetch(`${server.url}/healthz`)
      expect([live.status, (await live.json()).database]).toEqual([200, 'unwritable'])
      expect((await apiPost(server.url, 'stats.json', { code })).status).toBe(200)
      expect((await fetch(`${server.url}/${code}+`)).status).toBe(200)
      expect((await apiPost(server.url, 'links.json', {}, { 'x-api-key': key })).status).toBe(200)

      const metrics = await (await fetch(`${server.url}/metrics`)).text()
      const pending = Number(metrics.match(/^linkbox_click_buffer (\d+)$/m)?.[1])
      expect(pending).toBeGreaterThanOrEqual(10)
      expect(await server.stop('SIGTERM')).toBe(1)
      const stderr = server.stderr()
      expect(stderr).toMatch(
        new RegExp(`^linkbox: ${pending} clicks could not be written: disk I/O error \\(SQLITE_IOERR_WRITE\\)$`, 'm'),
      )
      expect(stderr).not.toContain('    at ')
      expect(stderr.match(/click writes failing/g)).toHaveLength(1)
      expect(stderr.length).toBeLessThan(1000)
    } finally {
      await server.stop('SIGKILL').catch(() => {})
    }
    // Without the limit, the same data directory serves again (nothing half-written).
    const again = await startServer({ config })
    expect((await runCli(['doctor', '--config', config.configPath])).stdout).toMatch(/^ok\s+database write\s+writable/m)
    expect(await again.stop()).toBe(0)
  })
})
