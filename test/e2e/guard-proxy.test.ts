// The guard proxy that yt-dlp is pointed at, with the real yt-dlp and real sockets: yt-dlp honours
// http_proxy/https_proxy with credentials and does not bypass them for 127.0.0.1 (so a refusal here is the
// proxy's doing), a local fixture is reachable only with allowPrivate, a redirect from an allowed host to a
// private one is refused, and the proxy's own limits hold (credentials, head size, connection cap, CONNECT
// checks, stop()).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startGuardProxy, type GuardProxy } from '../../src/kernel/net/proxy'

// The yt-dlp tests run several yt-dlp processes (~1 s of CPU each to start): 11 s on a quiet machine, 23 s
// beside three busy loops, against the tiers' 30 s.
setDefaultTimeout(90_000)

type Server = ReturnType<typeof Bun.serve>
let dir: string
let mp4: Buffer
let cert: { cert: string; key: string }
let fixture: Server // 127.0.0.1: private
let hits: { path: string; headers: Headers }[] = []

function page(req: Request): Response {
  const url = new URL(req.url)
  hits.push({ path: url.pathname, headers: req.headers })
  if (url.pathname === '/v.mp4') return new Response(new Uint8Array(mp4), { headers: { 'content-type': 'video/mp4' } })
  return new Response('<html><head><title>Fixture</title></head><body><video src="/v.mp4"></video></body></html>', {
    headers: { 'content-type': 'text/html' },
  })
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'linkbox-proxy-'))
  const v = Bun.spawnSync([
    'ffmpeg',
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'testsrc=duration=1:size=160x120:rate=10',
    '-pix_fmt',
    'yuv420p',
    join(dir, 'v.mp4'),
  ])
  expect(v.exitCode).toBe(0)
  mp4 = readFileSync(join(dir, 'v.mp4'))
  const c = Bun.spawnSync(
    [
      'openssl',
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, 'k.pem'),
      '-out',
      join(dir, 'c.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=good.test',
      '-addext',
      'subjectAltName=DNS:good.test',
    ],
    { stderr: 'pipe' },
  )
  expect(c.exitCode).toBe(0)
  cert = { cert: readFileSync(join(dir, 'c.pem'), 'utf8'), key: readFileSync(join(dir, 'k.pem'), 'utf8') }
  fixture = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: page })
})
afterAll(() => {
  fixture.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

/** yt-dlp as the media service will run it: the proxy only in the environment, no_proxy empty. */
async function ytdlp(proxy: string, url: string, extra: string[] = []) {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    http_proxy: proxy,
    https_proxy: proxy,
    no_proxy: '',
  }
  const p = Bun.spawn(
    [
      'yt-dlp',
      '--ignore-config',
      '--no-cache-dir',
      '--no-playlist',
      '--socket-timeout',
      '10',
      ...extra,
      '-J',
      '--',
      url,
    ],
    {
      env,
      stdout: 'pipe',
      stderr: 'pipe',
    },
  )
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()])
  await p.exited
  return { code: p.exitCode, out, err }
}

/** Sends raw bytes to the proxy and returns everything it answers until it closes. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port })
    let got = ''
    s.on('data', (d) => (got += d.toString('latin1')))
    s.on('close', () => resolve(got))
    s.on('error', reject)
    s.write(text)
  })
}
const authHeader = (p: GuardProxy) => {
  const u = new URL(p.url)
  return `Proxy-Authorization: Basic ${Buffer.from(`${u.username}:${u.password}`).toString('base64')}\r\n`
}

describe('yt-dlp through the guard proxy', () => {
  test('reaches a local fixture with allowPrivate; refused without it, and the fixture never sees a request', async () => {
    const open = await startGuardProxy({ allowPrivate: true })
    try {
      hits = []
      const r = await ytdlp(open.url, `http://127.0.0.1:${fixture.port}/page`)
      expect(r.code).toBe(0)
      expect(JSON.parse(r.out).formats[0].url).toBe(`http://127.0.0.1:${fixture.port}/v.mp4`)
      expect(hits.map((h) => h.path)).toEqual(['/page'])
      // The proxy's own headers stay with the proxy; upstream is told to close.
      expect(hits[0]!.headers.get('proxy-authorization')).toBeNull()
      expect(hits[0]!.headers.get('connection')).toBe('close')
    } finally {
      await open.stop()
    }
    const guarded = await startGuardProxy({ allowPrivate: false })
    try {
      hits = []
      for (const url of [`http://127.0.0.1:${fixture.port}/page`, `http://localhost:${fixture.port}/page`]) {
        const r = await ytdlp(guarded.url, url)
        expect(r.code).not.toBe(0)
        expect(r.err).toContain('403')
      }
      expect(hits).toEqual([])
    } finally {
      await guarded.stop()
    }
  })

  test('https through CONNECT, with the credentials, allowed and refused', async () => {
    const tlsFixture = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: cert, fetch: page })
    const open = await startGuardProxy({ allowPrivate: true })
    const guarded = await startGuardProxy({ allowPrivate: false })
    try {
      hits = []
      const ok = await ytdlp(open.url, `https://127.0.0.1:${tlsFixture.port}/page`, ['--no-check-certificates'])
      expect(ok.code).toBe(0)
      expect(hits.map((h) => h.path)).toEqual(['/page'])
      hits = []
      const refused = await ytdlp(guarded.url, `https://127.0.0.1:${tlsFixture.port}/page`, ['--no-check-certificates'])
      expect(refused.code).not.toBe(0)
      expect(refused.err).toContain('403')
      expect(hits).toEqual([])
    } finally {
      await open.stop()
      await guarded.stop()
      tlsFixture.stop(true)
    }
  })

  test('wrong credentials: 407, nothing fetched', async () => {
    const proxy = await startGuardProxy({ allowPrivate: true })
    try {
      hits = []
      const r = await ytdlp(proxy.url.replace(/:[0-9a-f]+@/, ':0000@'), `http://127.0.0.1:${fixture.port}/page`)
      expect(r.code).not.toBe(0)
      expect(r.err).toContain('407')
      expect(hits).toEqual([])
    } finally {
      await proxy.stop()
    }
  })

  test('a redirect from an allowed host to 127.0.0.1 is refused at the proxy', async () => {
    // 127.0.0.2 stands for the internet (isAllowed); public.test resolves to it. 127.0.0.1 stays private.
    const publicSide = Bun.serve({
      hostname: '127.0.0.2',
      port: 0,
      fetch: (req) => {
        const url = new URL(req.url)
        if (url.pathname === '/go')
          return (
            hits.push({ path: '/go', headers: req.headers }),
            Response.redirect(`http://127.0.0.1:${fixture.port}/page`, 302)
          )
        return page(req)
      },
    })
    const proxy = await startGuardProxy({
      allowPrivate: false,
      resolve: async () => ['127.0.0.2'],
      isAllowed: (a) => a === '127.0.0.2',
    })
    try {
      hits = []
      const direct = await ytdlp(proxy.url, `http://public.test:${publicSide.port}/page`)
      expect(direct.code).toBe(0)
      expect(JSON.parse(direct.out).formats[0].url).toBe(`http://public.test:${publicSide.port}/v.mp4`)
      hits = []
      const redirected = await ytdlp(proxy.url, `http://public.test:${publicSide.port}/go`)
      expect(redirected.code).not.toBe(0)
      expect(redirected.err).toContain('403')
      expect(hits.map((h) => h.path)).toEqual(['/go']) // the private /page was never asked
    } finally {
      await proxy.stop()
      publicSide.stop(true)
    }
  })
})

describe('the proxy itself', () => {
  let proxy: GuardProxy
  beforeAll(async () => {
    proxy = await startGuardProxy({ allowPrivate: false, maxConnections: 3 })
  })
  afterAll(() => proxy.stop())

  test('no credentials, wrong ones: 407 with a challenge', async () => {
    const none = await raw(proxy.port, `GET http://8.8.8.8/ HTTP/1.1\r\nHost: 8.8.8.8\r\n\r\n`)
    expect(none).toStartWith('HTTP/1.1 407 ')
    expect(none).toContain('Proxy-Authenticate: Basic realm="linkbox"')
    const wrong = await raw(
      proxy.port,
      `CONNECT 8.8.8.8:443 HTTP/1.1\r\nProxy-Authorization: Basic ${Buffer.from('a:b').toString('base64')}\r\n\r\n`,
    )
    expect(wrong).toStartWith('HTTP/1.1 407 ')
  })

  test('CONNECT to a private address, by number or by name, is refused with the reason', async () => {
    for (const target of [
      `127.0.0.1:${fixture.port}`,
      `0x7f000001:${fixture.port}`,
      `[::ffff:127.0.0.1]:${fixture.port}`,
      `localhost:${fixture.port}`,
      '169.254.169.254:80',
    ]) {
      const r = await raw(proxy.port, `CONNECT ${target} HTTP/1.1\r\n${authHeader(proxy)}\r\n`)
      expect({ target, head: r.split('\r\n')[0] }).toEqual({
        target,
        head: 'HTTP/1.1 403 Forbidden by linkbox-guard (private)',
      })
      expect(r).toContain('X-Linkbox-Guard: private')
    }
  })

  test('malformed and unsupported requests: 400; a head past 16 KiB: 431', async () => {
    expect(await raw(proxy.port, `GET /relative HTTP/1.1\r\n${authHeader(proxy)}\r\n`)).toStartWith('HTTP/1.1 400 ')
    expect(await raw(proxy.port, `GET ftp://8.8.8.8/ HTTP/1.1\r\n${authHeader(proxy)}\r\n`)).toStartWith(
      'HTTP/1.1 400 ',
    )
    expect(await raw(proxy.port, `CONNECT 8.8.8.8 HTTP/1.1\r\n${authHeader(proxy)}\r\n`)).toStartWith('HTTP/1.1 400 ')
    expect(
      await raw(proxy.port, `GET http://8.8.8.8/ HTTP/1.1\r\nBad Header: x\r\n${authHeader(proxy)}\r\n`),
    ).toStartWith('HTTP/1.1 400 ')
    const big = await raw(
      proxy.port,
      `GET http://8.8.8.8/ HTTP/1.1\r\n${authHeader(proxy)}X-Pad: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
    )
    expect(big).toStartWith('HTTP/1.1 431 ')
  })

  test('at most maxConnections at once, then 503; a freed slot is usable again', async () => {
    const held = Array.from({ length: 3 }, () => connect({ host: '127.0.0.1', port: proxy.port }))
    await Promise.all(held.map((s) => new Promise((r) => s.once('connect', r))))
    while (proxy.connections() < 3) await Bun.sleep(10)
    expect(await raw(proxy.port, `CONNECT 127.0.0.1:1 HTTP/1.1\r\n${authHeader(proxy)}\r\n`)).toStartWith(
      'HTTP/1.1 503 ',
    )
    held[0]!.destroy()
    while (proxy.connections() > 2) await Bun.sleep(10)
    expect(await raw(proxy.port, `CONNECT 127.0.0.1:1 HTTP/1.1\r\n${authHeader(proxy)}\r\n`)).toStartWith(
      'HTTP/1.1 403 ',
    )
    for (const s of held) s.destroy()
  })
})

describe('tunnels and plain requests from fetch', () => {
  test('CONNECT through to a local TLS server works when allowed (certificate checked end to end)', async () => {
    const tlsFixture = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: cert, fetch: page })
    const proxy = await startGuardProxy({ allowPrivate: true, resolve: async () => ['127.0.0.1'] })
    try {
      hits = []
      const r = await fetch(`https://good.test:${tlsFixture.port}/v.mp4`, {
        proxy: proxy.url,
        tls: { ca: cert.cert },
      } as RequestInit)
      expect(r.status).toBe(200)
      expect(Buffer.from(await r.arrayBuffer()).equals(mp4)).toBe(true)
      const plain = await fetch(`http://good.test:${fixture.port}/v.mp4`, { proxy: proxy.url } as RequestInit)
      expect(Buffer.from(await plain.arrayBuffer()).equals(mp4)).toBe(true)
      expect(hits.map((h) => h.headers.get('host'))).toEqual([
        `good.test:${tlsFixture.port}`,
        `good.test:${fixture.port}`,
      ])
    } finally {
      await proxy.stop()
      tlsFixture.stop(true)
    }
  })

  test('stop() closes open tunnels', async () => {
    const proxy = await startGuardProxy({ allowPrivate: true })
    const s = connect({ host: '127.0.0.1', port: proxy.port })
    let got = ''
    s.on('data', (d) => (got += d.toString('latin1')))
    const closed = new Promise((r) => s.once('close', r))
    s.write(`CONNECT 127.0.0.1:${fixture.port} HTTP/1.1\r\n${authHeader(proxy)}\r\n`)
    while (!got.includes('\r\n\r\n')) await Bun.sleep(10)
    expect(got).toStartWith('HTTP/1.1 200 Connection Established')
    await proxy.stop()
    await closed
    expect(proxy.connections()).toBe(0)
  })
})
