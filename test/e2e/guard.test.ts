// The SSRF guard against real sockets: every spelling of a loopback, private, link-local, CGNAT, metadata,
// unspecified, ULA, multicast and IPv4-in-IPv6 address is refused by checkUrl and by guardedFetch (and the
// local server never sees a request), while allowPrivate lets the reachable ones through to a live server.
// Then what the guard adds on top: one private address among public ones, a redirect to a private host,
// connecting to the address that was checked (plain and TLS, certificate checked against the name),
// headers across origins, credentials in URLs, and a deadline that covers the headers but not the body.
// test/pages.test.ts keeps the frame check's own cases (loop of redirects, basic classification).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkUrl, GuardError, guardedFetch, isPublicAddress } from '../../src/kernel/net/guard'

type Server = ReturnType<typeof Bun.serve>
let v4: Server
let v6: Server
let seen: { url: string; headers: Headers }[] = []
const record = (req: Request) => {
  seen.push({ url: req.url, headers: req.headers })
  return new Response(`hello from ${new URL(req.url).pathname}`)
}

beforeAll(() => {
  v4 = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: record })
  v6 = Bun.serve({ hostname: '::1', port: 0, fetch: record })
})
afterAll(() => {
  v4.stop(true)
  v6.stop(true)
})

// [URL (host part; the live server's port is added where the address is reachable), address checkUrl finds,
//  reachable here: 4 = the 127.0.0.1 server, 6 = the ::1 server, 0 = not routable]
const TABLE: [string, string, 0 | 4 | 6][] = [
  // loopback, every numeric spelling WHATWG URL accepts, and names
  ['127.0.0.1', '127.0.0.1', 4],
  ['2130706433', '127.0.0.1', 4],
  ['0x7f000001', '127.0.0.1', 4],
  ['0x7f.0.0.1', '127.0.0.1', 4],
  ['0177.0.0.1', '127.0.0.1', 4],
  ['017700000001', '127.0.0.1', 4],
  ['127.1', '127.0.0.1', 4],
  ['0x7f.1', '127.0.0.1', 4],
  ['127.0.0.1.', '127.0.0.1', 4],
  ['%31%32%37.0.0.1', '127.0.0.1', 4],
  ['127.255.255.254', '127.255.255.254', 0],
  ['localhost', '127.0.0.1', 4],
  ['localhost.', '127.0.0.1', 4],
  ['LOCALHOST', '127.0.0.1', 4],
  ['[::1]', '::1', 6],
  ['[0:0:0:0:0:0:0:1]', '::1', 6],
  ['[::ffff:127.0.0.1]', '::ffff:7f00:1', 4],
  ['[::ffff:7f00:1]', '::ffff:7f00:1', 4],
  ['[::127.0.0.1]', '::7f00:1', 0], // IPv4-compatible
  ['[::ffff:0:127.0.0.1]', '::ffff:0:7f00:1', 0], // IPv4-translated (SIIT)
  ['[::1:0:7f00:1]', '::1:0:7f00:1', 0], // elsewhere in the reserved ::/8
  ['[64:ff9b::127.0.0.1]', '64:ff9b::7f00:1', 0], // NAT64
  ['[2002:7f00:1::]', '2002:7f00:1::', 0], // 6to4
  // unspecified (Linux connects it to the machine itself)
  ['0.0.0.0', '0.0.0.0', 4],
  ['0', '0.0.0.0', 4],
  ['[::]', '::', 6],
  // private
  ['10.0.0.1', '10.0.0.1', 0],
  ['10.1', '10.0.0.1', 0],
  ['167772161', '10.0.0.1', 0],
  ['0xa.0.0.1', '10.0.0.1', 0],
  ['012.0.0.1', '10.0.0.1', 0],
  ['172.16.0.1', '172.16.0.1', 0],
  ['172.31.255.255', '172.31.255.255', 0],
  ['2886729729', '172.16.0.1', 0],
  ['0xac100001', '172.16.0.1', 0],
  ['192.168.1.1', '192.168.1.1', 0],
  ['3232235777', '192.168.1.1', 0],
  ['0300.0250.1.1', '192.168.1.1', 0],
  ['[::ffff:192.168.1.1]', '::ffff:c0a8:101', 0],
  ['[::ffff:a00:1]', '::ffff:a00:1', 0],
  ['[64:ff9b::10.0.0.1]', '64:ff9b::a00:1', 0],
  // link-local
  ['169.254.1.1', '169.254.1.1', 0],
  ['[fe80::1]', 'fe80::1', 0],
  ['[febf::1]', 'febf::1', 0],
  // CGNAT
  ['100.64.0.1', '100.64.0.1', 0],
  ['100.127.255.254', '100.127.255.254', 0],
  ['1681915905', '100.64.0.1', 0],
  // cloud metadata
  ['169.254.169.254', '169.254.169.254', 0],
  ['2852039166', '169.254.169.254', 0],
  ['0xa9fea9fe', '169.254.169.254', 0],
  ['0251.0376.0251.0376', '169.254.169.254', 0],
  ['[::ffff:169.254.169.254]', '::ffff:a9fe:a9fe', 0],
  ['[fd00:ec2::254]', 'fd00:ec2::254', 0],
  // ULA, multicast, broadcast
  ['[fc00::1]', 'fc00::1', 0],
  ['[fd12:3456::1]', 'fd12:3456::1', 0],
  ['224.0.0.1', '224.0.0.1', 0],
  ['239.255.255.250', '239.255.255.250', 0],
  ['[ff02::1]', 'ff02::1', 0],
  ['255.255.255.255', '255.255.255.255', 0],
]
const port = (reach: 0 | 4 | 6) => (reach === 4 ? v4.port : reach === 6 ? v6.port : 9)
const urlOf = ([host, , reach]: (typeof TABLE)[number]) => `http://${host}:${port(reach)}/table`

describe('the SSRF table', () => {
  test('checkUrl refuses every form with "private"', async () => {
    for (const row of TABLE) {
      const err = await checkUrl(urlOf(row), { allowPrivate: false }).then(
        () => null,
        (e) => e,
      )
      expect({ url: urlOf(row), err: err instanceof GuardError ? err.reason : String(err) }).toEqual({
        url: urlOf(row),
        err: 'private',
      })
    }
  })

  test('guardedFetch refuses every form, and the local servers never see a request', async () => {
    seen = []
    for (const row of TABLE) {
      const err = await guardedFetch(urlOf(row), { allowPrivate: false, method: 'GET' }).then(
        () => null,
        (e) => e,
      )
      expect({ url: urlOf(row), err: err instanceof GuardError ? err.reason : String(err) }).toEqual({
        url: urlOf(row),
        err: 'private',
      })
    }
    expect(seen).toEqual([])
  })

  test('allowPrivate lets each through: checkUrl gives the address, and the reachable ones get an answer', async () => {
    for (const row of TABLE) {
      const checked = await checkUrl(urlOf(row), { allowPrivate: true })
      expect({ url: urlOf(row), addresses: checked.addresses }).toEqual({ url: urlOf(row), addresses: [row[1]] })
    }
    for (const row of TABLE.filter(([, , reach]) => reach !== 0)) {
      seen = []
      const { response, address } = await guardedFetch(urlOf(row), { allowPrivate: true, method: 'GET' })
      expect({ url: urlOf(row), status: response.status, body: await response.text() }).toEqual({
        url: urlOf(row),
        status: 200,
        body: 'hello from /table',
      })
      expect(address).toBe(row[1])
      expect(seen).toHaveLength(1)
    }
  })

  test('public addresses, including IPv4 carried in IPv6 ways that reach the internet, pass', async () => {
    for (const ip of ['8.8.8.8', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2606:4700::1111'])
      expect(isPublicAddress(ip)).toBe(true)
    expect((await checkUrl('http://134744072/', { allowPrivate: false })).addresses).toEqual(['8.8.8.8'])
    await expect(checkUrl('ftp://8.8.8.8/', { allowPrivate: false })).rejects.toMatchObject({ reason: 'scheme' })
    await expect(checkUrl('not a url', { allowPrivate: false })).rejects.toMatchObject({ reason: 'scheme' })
  })
})

describe('names and redirects', () => {
  test('a public-looking name with one private address among its answers is refused', async () => {
    const resolve = async () => ['93.184.216.34', '10.0.0.7', '2606:4700::1111']
    await expect(checkUrl('http://mixed.test/', { allowPrivate: false, resolve })).rejects.toMatchObject({
      reason: 'private',
    })
    await expect(guardedFetch('http://mixed.test/', { allowPrivate: false, resolve })).rejects.toMatchObject({
      reason: 'private',
    })
    const all = async () => ['93.184.216.34', '2606:4700::1111']
    expect((await checkUrl('http://public.test/', { allowPrivate: false, resolve: all })).addresses).toEqual([
      '93.184.216.34',
      '2606:4700::1111',
    ])
    await expect(
      checkUrl('http://nowhere.test/', { allowPrivate: false, resolve: async () => [] }),
    ).rejects.toMatchObject({ reason: 'dns' })
  })

  test('a redirect from a public host to a private one is refused at the hop', async () => {
    // 127.0.0.2 stands for the internet here (isAllowed), 127.0.0.1 stays private.
    const publicSide = Bun.serve({
      hostname: '127.0.0.2',
      port: 0,
      fetch: (req) =>
        new URL(req.url).pathname === '/go'
          ? Response.redirect(`http://127.0.0.1:${v4.port}/inside`, 302)
          : new Response('public'),
    })
    try {
      const opts = {
        allowPrivate: false,
        resolve: async () => ['127.0.0.2'],
        isAllowed: (a: string) => a === '127.0.0.2',
      }
      const direct = await guardedFetch(`http://public.test:${publicSide.port}/`, { ...opts, method: 'GET' })
      expect(await direct.response.text()).toBe('public')
      expect(direct.address).toBe('127.0.0.2')
      seen = []
      await expect(guardedFetch(`http://public.test:${publicSide.port}/go`, opts)).rejects.toMatchObject({
        reason: 'private',
      })
      expect(seen).toEqual([])
    } finally {
      publicSide.stop(true)
    }
  })

  test('pinned: a name only the injected resolver knows reaches the address it gave (no second lookup)', async () => {
    seen = []
    const resolve = async (host: string) => (host === 'pinned.test' ? ['127.0.0.1'] : [])
    const { response, url, address } = await guardedFetch(`http://pinned.test:${v4.port}/p?q=1`, {
      allowPrivate: true,
      resolve,
      method: 'GET',
    })
    expect(await response.text()).toBe('hello from /p')
    expect(url).toBe(`http://pinned.test:${v4.port}/p?q=1`)
    expect(address).toBe('127.0.0.1')
    expect(seen[0]!.headers.get('host')).toBe(`pinned.test:${v4.port}`)
  })

  test('a name with an unreachable first address is tried at the next one', async () => {
    // Port of v4 on ::1 has nothing listening (the v6 server has another port): refused, then 127.0.0.1 answers.
    const resolve = async () => ['::1', '127.0.0.1']
    const { address } = await guardedFetch(`http://two.test:${v4.port}/`, { allowPrivate: true, resolve })
    expect(address).toBe('127.0.0.1')
  })
})

describe('TLS to the checked address', () => {
  let dir: string
  let tlsServer: Server
  let ca: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'linkbox-guard-'))
    const made = Bun.spawnSync(
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
    expect(made.exitCode).toBe(0)
    ca = readFileSync(join(dir, 'c.pem'), 'utf8')
    tlsServer = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      tls: { cert: ca, key: readFileSync(join(dir, 'k.pem'), 'utf8') },
      fetch: record,
    })
  })
  afterAll(() => {
    tlsServer.stop(true)
    rmSync(dir, { recursive: true, force: true })
  })

  test('the certificate is checked against the name, not the address: the right name passes, another is refused', async () => {
    const resolve = async () => ['127.0.0.1']
    const ok = await guardedFetch(`https://good.test:${tlsServer.port}/tls`, {
      allowPrivate: true,
      resolve,
      ca,
      method: 'GET',
    })
    expect(await ok.response.text()).toBe('hello from /tls')
    await expect(
      guardedFetch(`https://wrong.test:${tlsServer.port}/tls`, { allowPrivate: true, resolve, ca }),
    ).rejects.toMatchObject({ reason: 'network' })
    // Without our CA the self-signed certificate is not trusted at all: verification is on.
    await expect(
      guardedFetch(`https://good.test:${tlsServer.port}/tls`, { allowPrivate: true, resolve }),
    ).rejects.toMatchObject({ reason: 'network' })
  })
})

describe('headers, credentials, deadlines', () => {
  test('headers go on every hop; cookie and authorization stop when a redirect changes the origin; URL credentials are never sent', async () => {
    const hop: Server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (req): Response => {
        seen.push({ url: req.url, headers: req.headers })
        const path = new URL(req.url).pathname
        if (path === '/same') return Response.redirect(`http://127.0.0.1:${hop.port}/away`, 302)
        if (path === '/away') return Response.redirect(`http://127.0.0.1:${v4.port}/landed`, 302)
        return new Response('hop')
      },
    })
    try {
      seen = []
      const headers = { cookie: 'sid=1', Authorization: 'Bearer x', 'x-ticket': 'abc', host: 'evil.test' }
      const { url } = await guardedFetch(`http://user:pass@127.0.0.1:${hop.port}/same`, { allowPrivate: true, headers })
      expect(url).toBe(`http://127.0.0.1:${v4.port}/landed`)
      expect(seen.map((s) => new URL(s.url).pathname)).toEqual(['/same', '/away', '/landed'])
      for (const s of seen.slice(0, 2)) {
        expect(s.headers.get('cookie')).toBe('sid=1')
        expect(s.headers.get('authorization')).toBe('Bearer x') // ours, not user:pass from the URL
        expect(s.headers.get('host')).toBe(`127.0.0.1:${hop.port}`)
      }
      expect(seen[2]!.headers.get('cookie')).toBeNull()
      expect(seen[2]!.headers.get('authorization')).toBeNull()
      expect(seen[2]!.headers.get('x-ticket')).toBe('abc')
      seen = []
      await guardedFetch(`http://user:pass@127.0.0.1:${v4.port}/creds`, { allowPrivate: true })
      expect(seen[0]!.headers.get('authorization')).toBeNull()
    } finally {
      hop.stop(true)
    }
  })

  test('the deadline covers the headers, not the body; GET streams; the caller can abort the body', async () => {
    let release!: () => void
    const released = new Promise<void>((r) => (release = r))
    let neverAnswer!: () => void
    const hang = new Promise<void>((r) => (neverAnswer = r))
    const slow = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: async (req) => {
        if (new URL(req.url).pathname === '/hang') {
          await hang
          return new Response('late')
        }
        const body = new ReadableStream({
          async start(c) {
            c.enqueue(new TextEncoder().encode('first;'))
            await (new URL(req.url).pathname === '/drip' ? hang : released) // the rest only after the caller has read the first part and the deadline has passed
            c.enqueue(new TextEncoder().encode('second'))
            c.close()
          },
        })
        return new Response(body)
      },
    })
    try {
      const { response } = await guardedFetch(`http://127.0.0.1:${slow.port}/body`, {
        allowPrivate: true,
        method: 'GET',
        timeoutMs: 200,
      })
      const reader = response.body!.getReader()
      const first = await reader.read()
      expect(new TextDecoder().decode(first.value)).toBe('first;')
      await Bun.sleep(400) // past timeoutMs: a deadline on the body would cut it now
      release()
      let rest = ''
      for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value)
      expect(rest).toBe('second')

      await expect(
        guardedFetch(`http://127.0.0.1:${slow.port}/hang`, { allowPrivate: true, timeoutMs: 200 }),
      ).rejects.toMatchObject({ reason: 'timeout' })

      const caller = new AbortController()
      const pending = guardedFetch(`http://127.0.0.1:${slow.port}/hang`, {
        allowPrivate: true,
        timeoutMs: 60_000,
        signal: caller.signal,
      })
      caller.abort()
      await expect(pending).rejects.toMatchObject({ reason: 'aborted' })

      // After the headers the caller's signal still reaches the body (the client went away mid-download).
      const leaving = new AbortController()
      const drip = await guardedFetch(`http://127.0.0.1:${slow.port}/drip`, {
        allowPrivate: true,
        method: 'GET',
        signal: leaving.signal,
      })
      const dripReader = drip.response.body!.getReader()
      await dripReader.read()
      leaving.abort()
      await expect(dripReader.read()).rejects.toBeDefined()
    } finally {
      neverAnswer()
      slow.stop(true)
    }
  })
})

describe('POST (webhook deliveries)', () => {
  test('the body arrives once, to the checked address; a 3xx is the answer, never followed; private stays refused', async () => {
    const got: { path: string; method: string; body: string; type: string | null }[] = []
    const receiver: Server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: async (req): Promise<Response> => {
        got.push({
          path: new URL(req.url).pathname,
          method: req.method,
          body: await req.text(),
          type: req.headers.get('content-type'),
        })
        if (new URL(req.url).pathname === '/moved')
          return Response.redirect(`http://127.0.0.1:${receiver.port}/elsewhere`, 307)
        return new Response('thanks', { status: 202 })
      },
    })
    try {
      const resolve = async (host: string) => (host === 'hooks.test' ? ['127.0.0.1'] : [])
      const opts = {
        allowPrivate: true,
        resolve,
        method: 'POST' as const,
        headers: { 'content-type': 'application/json' },
      }
      const body = '{"type":"link.created","data":{"é":1}}'
      const ok = await guardedFetch(`http://hooks.test:${receiver.port}/in`, { ...opts, body })
      expect(ok.response.status).toBe(202)
      expect(await ok.response.text()).toBe('thanks')
      expect(got).toEqual([{ path: '/in', method: 'POST', body, type: 'application/json' }])

      got.length = 0
      const moved = await guardedFetch(`http://hooks.test:${receiver.port}/moved`, { ...opts, body })
      expect(moved.response.status).toBe(307)
      expect(moved.response.headers.get('location')).toContain('/elsewhere')
      void moved.response.body?.cancel()
      await Bun.sleep(50) // a followed redirect would have reached the receiver by now
      expect(got.map((g) => g.path)).toEqual(['/moved'])

      got.length = 0
      await expect(
        guardedFetch(`http://hooks.test:${receiver.port}/in`, { ...opts, body, allowPrivate: false }),
      ).rejects.toMatchObject({ reason: 'private' })
      expect(got).toEqual([])
    } finally {
      receiver.stop(true)
    }
  })
})
