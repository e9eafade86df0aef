// Requests meant to break the service: whatever arrives, the answer is the envelope or a page, never a
// stack trace, the working directory or source text; and the log cannot be flooded by them.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { createLinkbox, type Linkbox } from '../../src/app/app'
import { createFaultLog } from '../../src/web/fault-log'
import { createLogger } from '../../src/kernel/log'
import { pathOf } from '../../src/web/path'
import { tempDir, testConfig } from '../support/app'
import { rawRequest } from '../support/raw-http'

let box: Linkbox
let port: number
let dir: string
beforeAll(async () => {
  dir = tempDir()
  box = createLinkbox(testConfig(dir, { server: { host: '127.0.0.1', port: 0 } }))
  port = box.listen().port!
  await box.links.create({ url: 'https://example.com/target', alias: 'known' }, null)
})
afterAll(async () => {
  await box.close()
  rmSync(dir, { recursive: true, force: true })
})

/** What must never be in an answer: a stack frame, a source excerpt, this checkout's path. */
function expectNoInternals(text: string) {
  expect(text).not.toMatch(/\n\s+at [\w.<>]+ \(|\.ts:\d+|node_modules|ERR_INVALID_URL|TypeError/)
  expect(text).not.toContain(process.cwd())
}

const BAD_HOSTS = ['a b', 'x@y', 'localhost:99999', 'exa mple.com:80', '[::1', '%00', 'nas', 'pi']
const cases: [string, string, RegExp][] = [
  // method, path, the content type the answer must have
  ['GET', '/api/nope', /application\/json/],
  ['GET', '/api/getLink.json', /application\/json/], // 405
  ['GET', '/api/a/b/c', /application\/json/],
  ['GET', '/a/b/c', /text\/html/], // multi-segment 404 page
  ['GET', '/known', /./], // the redirect still works (302)
  ['GET', '/nope', /text\/html/],
  ['GET', '/qr/nope.png', /text\/html/],
]

for (const host of BAD_HOSTS)
  for (const [method, path, type] of cases)
    test(`${method} ${path} with Host ${JSON.stringify(host)}: a clean answer, no internals`, async () => {
      const a = await rawRequest(port, `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
      expect(a.status).toBeGreaterThanOrEqual(200)
      expect(a.status).toBeLessThan(500)
      if (a.status !== 302) expect(a.head.toLowerCase()).toMatch(new RegExp(`content-type: ${type.source}`))
      if (type.source.includes('json')) expect(JSON.parse(a.body)).toMatchObject({ status: 'error' })
      expectNoInternals(a.head + a.body)
    })

test('a short Host (a home server called "nas") reaches the same /api methods', async () => {
  for (const host of ['nas', 'pi', 'a:1']) {
    const a = await rawRequest(
      port,
      `POST /api/getLink.json HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 32\r\nConnection: close\r\n\r\nurl=https%3A%2F%2Fexample.com%2F`,
    )
    expect(a.status).toBe(200)
    expect(JSON.parse(a.body)).toMatchObject({ status: 'success' })
    const o = await rawRequest(port, `OPTIONS /api/getLink.json HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
    expect(o.status).toBe(204)
  }
})

test('a body over 1 MiB gets the envelope 413, not a bare one', async () => {
  for (const size of [2 * 1024 * 1024, 80 * 1024 * 1024]) {
    const res = await fetch(`http://127.0.0.1:${port}/api/getLink.json`, {
      method: 'POST',
      body: new Uint8Array(size),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(res.status).toBe(413)
    expect(await res.json()).toMatchObject({ status: 'error', code: 'too_large' })
  }
})

test('a second service cannot bind the same port (it would silently share the traffic)', () => {
  const other = createLinkbox(testConfig(tempDir(), { server: { host: '127.0.0.1', port } }))
  try {
    expect(() => other.listen()).toThrow()
  } finally {
    void other.close()
  }
})

test('faults are logged at most N a minute, and the next line says how many were left out', () => {
  let now = 0
  const lines: string[] = []
  const into = createLogger({ format: 'json', tty: false, write: (text) => lines.push(text) })
  const log = createFaultLog(into, { perMinute: 3, clock: () => now })
  for (let i = 0; i < 1000; i++) log.fault('internal error', new Error(`boom ${i}`))
  expect(lines.length).toBe(3)
  now += 60_000
  log.fault('internal error', new Error('later'))
  expect(lines).toHaveLength(5)
  expect(JSON.parse(lines[3]!)).toMatchObject({
    level: 'error',
    msg: '(997 more faults were not logged in the last minute)',
  })
  expect(JSON.parse(lines[4]!)).toMatchObject({ level: 'error', msg: 'internal error', error: 'later' })
})

test('pathOf reads the path from any URL text Bun hands over', () => {
  expect(pathOf('http://localhost:8080/api/x?y=1')).toBe('/api/x')
  expect(pathOf('/api/nope')).toBe('/api/nope')
  expect(pathOf('http://localhost:99999/a/b#c')).toBe('/a/b')
  expect(pathOf('http://a b/known?x')).toBe('/known')
  expect(pathOf('http://host')).toBe('/')
  expect(pathOf('')).toBe('/')
})
