// The service's log: the line formats and levels (src/kernel/log.ts), and what a real `serve` writes for real
// requests — one line each, with a request id it also sends back, and never a query string, header value,
// body, key, password or cookie.
import { afterAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createLogger, jsonString, requestIdOf, type LogLevel } from '../../src/kernel/log'
import { closeSync, openSync } from 'node:fs'
import { killAllServers, removeDir, startServer, tempDir, writeConfig } from '../support/server'

afterAll(killAllServers)

function captured(opts: Parameters<typeof createLogger>[0] = {}) {
  const out: { text: string; level: LogLevel }[] = []
  const logger = createLogger({
    now: () => Date.UTC(2026, 0, 2, 12, 1, 2),
    ...opts,
    write: (text, level) => out.push({ text, level }),
  })
  return { logger, out, text: () => out.map((o) => o.text).join('') }
}

const REQUEST = { id: 'r-1', method: 'GET', path: '/abc', status: 302, ms: 0.43, ip: '203.0.113.9', ua: 'curl/8' }

describe('lines', () => {
  test('JSON: one object a line, with time, level and msg; request lines with the documented fields', () => {
    const { logger, text } = captured({ format: 'json' })
    logger.info('hello', { n: 1 })
    logger.request(REQUEST)
    logger.flush()
    const lines = text()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines[0]).toEqual({ time: '2026-01-02T12:01:02.000Z', level: 'info', msg: 'hello', n: 1 })
    expect(lines[1]).toEqual({
      time: '2026-01-02T12:01:02.000Z',
      level: 'info',
      msg: 'request',
      id: 'r-1',
      method: 'GET',
      path: '/abc',
      status: 302,
      ms: 0.4,
      ip: '203.0.113.9',
      ua: 'curl/8',
    })
  })

  test('the hand-built JSON request line is the text JSON.stringify gives, for any strings and times (property)', () => {
    let t = 0
    const { logger, out } = captured({ format: 'json', now: () => t })
    const str = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom('', '"', '\\', '\u2028', '\ud800', '</script>'),
    )
    // Addresses and user agents also from a small pool: the logger reuses the JSON of the last ones, so a
    // value repeated, or one coming back after another, must still give its own text.
    const repeated = fc.oneof(str, fc.constantFrom('198.51.100.7', 'x"y', `agent-${'q'.repeat(130)}`, ''))
    fc.assert(
      fc.property(
        fc.record({
          id: str,
          method: str,
          path: str,
          status: fc.integer({ min: 100, max: 599 }),
          ms: fc.double({ min: 0, max: 1e6, noNaN: true }),
          ip: repeated,
          ua: repeated,
        }),
        fc.integer({ min: 0, max: 4102444800000 }),
        (r, time) => {
          t = time
          out.length = 0
          logger.request(r)
          logger.flush()
          const ua = r.ua.length > 120 ? r.ua.slice(0, 120) : r.ua
          const expected = JSON.stringify({
            time: new Date(time).toISOString(),
            level: 'info',
            msg: 'request',
            id: r.id,
            method: r.method,
            path: r.path,
            status: r.status,
            ms: Math.round(r.ms * 10) / 10,
            ip: r.ip,
            ua,
          })
          expect(out.map((o) => o.text).join('')).toBe(`${expected}\n`)
          expect(jsonString(r.path)).toBe(JSON.stringify(r.path))
        },
      ),
      { numRuns: 2000 },
    )
  })

  test('pretty: the short request line; control characters cannot forge a line', () => {
    const { logger, text } = captured({ format: 'pretty' })
    logger.request(REQUEST)
    logger.request({ ...REQUEST, path: '/a\nFAKE 200' })
    logger.warn('careful\r\nERROR forged')
    expect(text()).toBe(
      '12:01:02 GET /abc 302 0.4ms 203.0.113.9\n12:01:02 GET /a\\x0aFAKE 200 302 0.4ms 203.0.113.9\n12:01:02 WARN careful\\x0d\\x0aERROR forged\n',
    )
  })

  test('auto is pretty on a terminal and JSON otherwise', () => {
    const tty = captured({ format: 'auto', tty: true })
    tty.logger.info('x')
    expect(tty.text()).toBe('12:01:02 x\n')
    const pipe = captured({ format: 'auto', tty: false })
    pipe.logger.info('x')
    expect(JSON.parse(pipe.text()).msg).toBe('x')
  })

  test('levels filter; warn and error are told apart for the writer (stderr); reconfigure applies at once', () => {
    const { logger, out } = captured({ format: 'json', level: 'warn' })
    logger.debug('d')
    logger.info('i')
    logger.request(REQUEST) // request lines are info
    logger.warn('w')
    logger.error('e')
    logger.flush()
    expect(out.map((o) => [JSON.parse(o.text).msg, o.level])).toEqual([
      ['w', 'warn'],
      ['e', 'error'],
    ])
    logger.configure({ level: 'debug' })
    logger.debug('d2')
    expect(JSON.parse(out.at(-1)!.text).msg).toBe('d2')
    logger.configure({ requests: false })
    logger.request(REQUEST)
    logger.flush()
    expect(out).toHaveLength(3)
  })

  test('request lines are buffered until flush() or the next other line, in order; the user agent is cut at 120', () => {
    const { logger, out } = captured({ format: 'json' })
    logger.request({ ...REQUEST, ua: 'u'.repeat(500) })
    logger.request({ ...REQUEST, id: 'r-2' })
    expect(out).toHaveLength(0)
    logger.error('boom')
    expect(out).toHaveLength(2) // the two request lines in one write, then the error
    const [a, b] = out[0]!.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(a.ua).toHaveLength(120)
    expect(b.id).toBe('r-2')
    expect(JSON.parse(out[1]!.text).msg).toBe('boom')
  })

  test('a fault keeps its stack for the operator', () => {
    const { logger, text } = captured({ format: 'json' })
    logger.fault('internal error on GET /x', new Error('disk on fire'))
    const line = JSON.parse(text())
    expect(line).toMatchObject({ level: 'error', msg: 'internal error on GET /x', error: 'disk on fire' })
    expect(line.stack).toContain('log.test.ts')
  })

  test('request ids: a sane incoming one is kept, anything else replaced by a new unique one', () => {
    expect(requestIdOf('abc-DEF_1.2')).toBe('abc-DEF_1.2')
    const made = ['', 'a b', 'x'.repeat(65), 'é', 'a\nb', '../x', null].map((v) => requestIdOf(v))
    for (const id of made) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/)
    expect(new Set(made).size).toBe(made.length)
  })
})

// auto decides by what stdout is, found out without process.stdout (log.ts stdoutIsTty): the logger's lines go
// to stderr here, so that each kind of stdout can be tried, a terminal (a pty from script(1)) among them.
describe('auto: what stdout is', () => {
  const LOG_SRC = `${import.meta.dir}/../../src/kernel/log.ts`
  const program = `import { createLogger } from ${JSON.stringify(LOG_SRC)}; createLogger({ now: () => Date.UTC(2026, 0, 2, 12, 1, 2), write: (t) => process.stderr.write(t) }).info('x')`
  const run = (stdout: 'pipe' | 'ignore' | number) => {
    const r = Bun.spawnSync([process.execPath, '-e', program], { stdout, stderr: 'pipe' })
    expect(r.exitCode).toBe(0)
    return r.stderr.toString()
  }
  const json = (text: string) => expect(JSON.parse(text)).toMatchObject({ level: 'info', msg: 'x' })

  test('a pipe, /dev/null and a file: JSON lines', () => {
    json(run('pipe'))
    json(run('ignore')) // /dev/null
    const dir = tempDir('linkbox-log-')
    const fd = openSync(`${dir}/out`, 'w')
    try {
      json(run(fd))
    } finally {
      closeSync(fd)
      removeDir(dir)
    }
  })

  test.skipIf(!Bun.which('script'))('a terminal: pretty', () => {
    const command = [process.execPath, '-e', program].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
    const r = Bun.spawnSync(['script', '-qec', command, '/dev/null'], { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' })
    expect(r.exitCode).toBe(0)
    expect(r.stdout.toString().replace(/\r/g, '')).toBe('12:01:02 x\n')
  })
})

describe('serve', () => {
  test('one JSON line per request with its id, sent back as X-Request-Id; no query, headers, bodies, keys or passwords', async () => {
    const server = await startServer({ config: writeConfig(undefined, { log: { format: 'auto' } }) })
    try {
      const created = await fetch(`${server.url}/api/getLink.json`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-request-id': 'from-proxy.1',
          cookie: 'session=COOKIE-SECRET',
        },
        body: new URLSearchParams({ url: 'https://example.com/target', password: 'PASSWORD-SECRET' }),
      })
      expect(created.headers.get('x-request-id')).toBe('from-proxy.1')
      const code = (await created.json()).return.hex
      const visit = await fetch(`${server.url}/${code}?sig=QUERY-SECRET`, {
        redirect: 'manual',
        headers: { 'x-api-key': 'lbk_KEY-SECRET', 'x-request-id': 'bad id!', 'user-agent': `agent-${'z'.repeat(300)}` },
      })
      expect(visit.status).toBe(200) // a password-protected link: its form
      const generated = visit.headers.get('x-request-id')!
      expect(generated).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/)
      // Answers made before any route (an unknown /api path, onRequest's dispatch) carry it too.
      const unknown = await fetch(`${server.url}/api/nope.json?key=QUERY-SECRET2`)
      expect(unknown.status).toBe(404)
      expect(unknown.headers.get('x-request-id')).toBeTruthy()
      // A redirect too (a plain link's 302).
      const plain = (
        await (
          await fetch(`${server.url}/api/getLink.json`, {
            method: 'POST',
            body: new URLSearchParams({ url: 'https://example.com/plain' }),
          })
        ).json()
      ).return.hex
      const redirect = await fetch(`${server.url}/${plain}`, { redirect: 'manual' })
      expect(redirect.status).toBe(302)
      expect(redirect.headers.get('x-request-id')).toBeTruthy()
      expect(await server.stop()).toBe(0)

      const out = server.stdout()
      const lines = out
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l)) // every line is JSON (stdout is a pipe)
      const requests = lines.filter((l) => l.msg === 'request')
      expect(requests).toHaveLength(5)
      expect(requests[0]).toMatchObject({
        level: 'info',
        id: 'from-proxy.1',
        method: 'POST',
        path: '/api/getLink.json',
        status: 200,
        ip: '127.0.0.1',
      })
      expect(requests[1]).toMatchObject({
        id: generated,
        method: 'GET',
        path: `/${code}`,
        status: 200,
        ip: '127.0.0.1',
      })
      expect(requests[1].ua).toBe(`agent-${'z'.repeat(114)}`)
      expect(requests[2]).toMatchObject({ path: '/api/nope.json', status: 404 })
      expect(requests[4]).toMatchObject({
        path: `/${plain}`,
        status: 302,
        id: redirect.headers.get('x-request-id'),
        ip: '127.0.0.1',
      })
      for (const r of requests) {
        expect(typeof r.ms).toBe('number')
        expect(Date.parse(r.time)).not.toBeNaN()
      }
      for (const secret of ['SECRET', 'sig=', 'lbk_', 'cookie', 'session=']) {
        expect(out).not.toContain(secret)
        expect(server.stderr()).not.toContain(secret)
      }
    } finally {
      await server.kill().catch(() => {})
    }
  })

  test('requests = false: no request lines; pretty format: the short line', async () => {
    const quiet = await startServer({ config: writeConfig(undefined, { log: { requests: false } }) })
    try {
      expect((await fetch(`${quiet.url}/healthz`)).status).toBe(200)
      expect(await quiet.stop()).toBe(0)
      expect(quiet.stdout()).toContain('listening on')
      expect(quiet.stdout()).not.toContain('"request"')
      expect(quiet.stdout()).not.toContain('/healthz')
    } finally {
      await quiet.kill().catch(() => {})
    }
    const pretty = await startServer({ config: writeConfig(undefined, { log: { format: 'pretty' } }) })
    try {
      expect((await fetch(`${pretty.url}/healthz?x=1`)).status).toBe(200)
      expect(await pretty.stop()).toBe(0)
      expect(pretty.stdout()).toMatch(/^\d\d:\d\d:\d\d GET \/healthz 200 \d+\.\dms 127\.0\.0\.1$/m)
      expect(pretty.stdout()).toMatch(/^\d\d:\d\d:\d\d linkbox \S+ listening on http/m)
    } finally {
      await pretty.kill().catch(() => {})
    }
  })

  test('a bad [log] value stops start-up naming the key', async () => {
    const config = writeConfig(undefined, { log: { level: 'loud' } })
    const proc = Bun.spawn([process.execPath, 'src/main.ts', 'serve', '--config', config.configPath], {
      cwd: `${import.meta.dir}/../..`,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    expect(await proc.exited).toBe(2)
    expect(await new Response(proc.stderr).text()).toBe(
      'linkbox: config: "log.level" must be one of debug, info, warn, error (got "loud")\n',
    )
  })
})
