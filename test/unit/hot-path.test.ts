// The redirect's per-request shortcuts (issue 39): each must answer what the long way answered. Request ids
// from a table of digits, a request line's time from the pipeline's own clock stamp, the request line from
// reused parts, the client address kept per request without a WeakMap entry, the classifier's last answer.
import { expect, test } from 'bun:test'
import { createClassifier } from '../../src/clicks/classify'
import { wallOf } from '../../src/kernel/clock'
import { createLogger, requestIdOf } from '../../src/kernel/log'
import { createClientIp } from '../../src/web/client-ip'
import { createPipeline, type PeerSource } from '../../src/web/pipeline'

test('new request ids count in base 36 after the process prefix, across the table of the last two digits', () => {
  const first = requestIdOf(null)
  const [prefix, digits] = first.split('-') as [string, string]
  let n = Number.parseInt(digits, 36)
  // Past 36³ ids: the prefix changes every 36² of them.
  for (let i = 0; i < 36 ** 3 + 100; i++) expect(requestIdOf(null)).toBe(`${prefix}-${(++n).toString(36)}`)
})

test('wallOf: a performance.now() stamp as Date.now() would have read it then (within a millisecond)', async () => {
  for (let i = 0; i < 5; i++) {
    const before = Date.now()
    const t = wallOf(performance.now())
    const after = Date.now()
    expect(t).toBeGreaterThanOrEqual(before - 1)
    expect(t).toBeLessThanOrEqual(after)
    expect(Number.isInteger(t)).toBe(true)
    await Bun.sleep(3)
  }
})

test('request lines from reused parts are the JSON of their fields, whichever field changes', () => {
  const out: string[] = []
  const logger = createLogger({ format: 'json', requests: true, write: (t) => void out.push(t) })
  type Fields = [string, string, string, number, number, string, string]
  const fields: Fields[] = [
    ['a-1', 'GET', '/abc', 302, 0.04, '192.0.2.1', 'curl/8'],
    ['a-2', 'GET', '/abc', 302, 0.04, '192.0.2.1', 'curl/8'],
    ['a-3', 'HEAD', '/abc', 302, 0.04, '192.0.2.1', 'curl/8'],
    ['a-4', 'HEAD', '/x"y', 302, 0.04, '192.0.2.1', 'curl/8'],
    ['a-5', 'HEAD', '/x"y', 404, 0.04, '192.0.2.1', 'curl/8'],
    ['a-6', 'HEAD', '/x"y', 404, 12.36, '192.0.2.1', 'curl/8'],
    ['a-7', 'HEAD', '/x"y', 404, 12.36, '2001:db8::1', 'curl/8'],
    ['a-8', 'HEAD', '/x"y', 404, 12.36, '2001:db8::1', `é\n${'u'.repeat(200)}`],
    ['b "odd"', 'GET', '/abc', 302, 0.04, '192.0.2.1', 'curl/8'],
  ]
  const stamp = performance.now()
  for (const f of fields) logger.requestLine(...f, stamp)
  logger.request({ id: 'c-1', method: 'GET', path: '/abc', status: 302, ms: 0.04, ip: '192.0.2.1', ua: 'curl/8' })
  logger.flush()
  const lines = out.join('').trimEnd().split('\n')
  expect(lines).toHaveLength(fields.length + 1)
  const all: Fields[] = [...fields, ['c-1', 'GET', '/abc', 302, 0.04, '192.0.2.1', 'curl/8']]
  all.forEach(([id, method, path, status, ms, ip, ua], i) => {
    const time = JSON.parse(lines[i]!).time as string
    const expected = {
      time,
      level: 'info',
      msg: 'request',
      id,
      method,
      path,
      status,
      ms: Math.round(ms * 10) / 10,
      ip,
      ua: ua.slice(0, 120),
    }
    expect(lines[i]).toBe(JSON.stringify(expected))
    expect(Math.abs(Date.parse(time) - Date.now())).toBeLessThan(5_000)
  })
})

test('X-Forwarded-For is not even read without trusted proxies; the address is asked once per request', async () => {
  expect(createClientIp([]).readsForwarded).toBe(false)
  expect(createClientIp(['10.0.0.0/8']).readsForwarded).toBe(true)
  const read: string[] = []
  let asked = 0
  const peers: PeerSource = { requestIP: () => (asked++, { address: '10.1.2.3' }) }
  for (const trusted of [[], ['10.0.0.0/8']]) {
    const logger = createLogger({ format: 'json', requests: true, write: () => {} })
    const clientIpOf = createClientIp(trusted)
    const seen: string[] = []
    const pipeline = createPipeline({
      logger,
      hot: [
        (request) => {
          seen.push(pipeline.clientIp(request), pipeline.clientIp(request))
          return new Response(null, { status: 302, headers: { location: 'https://example.com/' } })
        },
      ],
      route: () => new Response('routed'),
      fault: () => new Response('fault', { status: 500 }),
      clientIpOf,
    })
    const request = new Request('http://x/abc', { headers: { 'x-forwarded-for': '198.51.100.7' } })
    const headers = request.headers
    const get = headers.get.bind(headers)
    headers.get = (name: string) => (read.push(name), get(name))
    asked = 0
    await pipeline.fetch(request, peers)
    expect(asked).toBe(1)
    expect(seen).toEqual(trusted.length ? ['198.51.100.7', '198.51.100.7'] : ['10.1.2.3', '10.1.2.3'])
    expect(read.includes('x-forwarded-for')).toBe(trusted.length > 0)
    read.length = 0
  }
})

test('the classifier answers a repeated user agent as it did the first time', () => {
  const classify = createClassifier({ capacity: 2 })
  const ua = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36'
  const first = classify(ua, 0)
  expect(classify(`${ua} `.trimEnd(), 0)).toBe(first)
  expect(classify('curl/8.0', 0).bot).toBe(true)
  expect(classify(ua, 0)).toEqual(first)
})
