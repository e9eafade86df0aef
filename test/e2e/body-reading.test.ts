// Request bodies over a real socket (issue 7): a body with a Content-Length is read in one piece and a
// stalled one is ended by the server's idle timeout; a chunked body has no length to check first, so it is
// read piece by piece and refused (413) as soon as it passes the limit, before the client has finished.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { tempDir, testConfig, sqliteLinkbox, type SqliteLinkbox } from '../support/app'
import { rawRequest } from '../support/raw-http'

setDefaultTimeout(30_000)

let box: SqliteLinkbox
let port: number
let dir: string
beforeAll(() => {
  dir = tempDir()
  // A short idle timeout, so that the stalled body below is ended within seconds (Bun checks every few).
  box = sqliteLinkbox(testConfig(dir, { server: { host: '127.0.0.1', port: 0 } }), { idleTimeoutSeconds: 1 })
  port = box.listen().port!
})
afterAll(async () => {
  await box.close()
  rmSync(dir, { recursive: true, force: true })
})

const FORM_HEAD =
  'POST /api/getLink.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n'

/** A socket whose received text and closing can be watched. */
async function open() {
  let received = ''
  let closed = false
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      data: (_s, d) => void (received += Buffer.from(d).toString('latin1')),
      close: () => void (closed = true),
      error: () => void (closed = true),
    },
  })
  return { socket, received: () => received, closed: () => closed }
}

async function until(what: string, ready: () => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`)
    await Bun.sleep(20)
  }
}

test('a form body with a Content-Length is read; one of exactly 64 KiB too, one byte more is 413', async () => {
  const body = 'url=https%3A%2F%2Fexample.com%2Fsocket'
  const ok = await rawRequest(port, `${FORM_HEAD}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
  expect(ok.status).toBe(200)
  expect(JSON.parse(ok.body).return.long_url).toBe('https://example.com/socket')

  const pad = (n: number) => `${body}&pad=${'a'.repeat(n - body.length - 5)}`
  const full = await rawRequest(
    port,
    `${FORM_HEAD}Content-Length: ${64 * 1024}\r\nConnection: close\r\n\r\n${pad(64 * 1024)}`,
  )
  expect(full.status).toBe(200)
  const over = await rawRequest(
    port,
    `${FORM_HEAD}Content-Length: ${64 * 1024 + 1}\r\nConnection: close\r\n\r\n${pad(64 * 1024 + 1)}`,
  )
  expect(over.status).toBe(413)
  expect(JSON.parse(over.body)).toMatchObject({ status: 'error', code: 'too_large' })
})

test('a chunked body is refused with 413 once it passes 64 KiB, while the client is still sending', async () => {
  const c = await open()
  try {
    c.socket.write(`${FORM_HEAD}Transfer-Encoding: chunked\r\n\r\n`)
    const chunk = 'a'.repeat(8192)
    for (let i = 0; i < 9; i++) c.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
    // No last chunk: the body never ends, yet the answer comes.
    await until('the 413 answer', () => /\r\n\r\n.*too_large/s.test(c.received()))
    expect(c.received()).toMatch(/^HTTP\/1\.1 413 /)
  } finally {
    c.socket.end()
  }
})

test('a body that stalls is ended by the idle timeout; the server answers others meanwhile and after', async () => {
  const c = await open()
  try {
    // The headers promise 100 bytes; 9 arrive, the rest never does.
    c.socket.write(`${FORM_HEAD}Content-Length: 100\r\n\r\nurl=https`)
    const other = await fetch(`http://127.0.0.1:${port}/healthz`)
    expect(other.status).toBe(200)
    // Eventually, well before Bun's default of 10 s would: the box was given 1 s (ended within ~4 s).
    await until('the server to close the stalled connection', c.closed, 9_000)
    // Nothing was created from the partial body, and the service goes on.
    expect(
      box.db
        .query(
          "SELECT count(*) AS n FROM links WHERE long_url LIKE 'https%' AND long_url NOT LIKE 'https://example.com/socket%'",
        )
        .get(),
    ).toEqual({ n: 0 })
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
  } finally {
    c.socket.end()
  }
})
