// The request pipeline (src/web/pipeline.ts): the client address is asked of the socket once a request,
// whether a hot route, a synchronous or an async router answer asks for it, and the request line carries it.
import { expect, test } from 'bun:test'
import { COLLECT_MS, createPipeline, type PeerSource } from '../../src/web/pipeline'
import { createLogger } from '../../src/kernel/log'

const ADDRESS: Record<string, string> = {
  '/hot': '198.51.100.1',
  '/sync': '198.51.100.2',
  '/a': '198.51.100.3',
  '/b': '198.51.100.4',
}

function setup() {
  const lines: string[] = []
  const logger = createLogger({ requests: true, format: 'json', write: (text) => void lines.push(text) })
  let asked = 0
  const peers: PeerSource = {
    // Each request's own address, from its path: a mix-up between requests in flight shows.
    requestIP: (request) => {
      asked++
      return { address: ADDRESS[new URL(request.url).pathname]! }
    },
  }
  const seen: [string, string][] = []
  const note = (request: Request) => seen.push([new URL(request.url).pathname, pipeline.clientIp(request)])
  const pipeline = createPipeline({
    logger,
    hot: [
      (request) => {
        if (!request.url.endsWith('/hot')) return undefined
        note(request)
        note(request)
        return new Response(null, { status: 302, headers: { location: 'https://example.com/' } })
      },
    ],
    route: (request) => {
      note(request)
      if (request.url.endsWith('/sync')) return new Response('sync')
      return (async () => {
        await Bun.sleep(request.url.endsWith('/a') ? 20 : 5) // /b finishes first
        note(request) // after an await, other requests may have been handled meanwhile
        return new Response('async')
      })()
    },
    fault: () => new Response('fault', { status: 500 }),
    clientIpOf: (peer) => peer ?? 'unknown',
  })
  const requestLines = async () => {
    logger.flush()
    return lines
      .flatMap((t) => t.trimEnd().split('\n'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request')
  }
  return { pipeline, peers, seen, askedCount: () => asked, requestLines, logger }
}

test('a hot route, a synchronous answer and an async one each ask the socket once; every line names the address', async () => {
  const t = setup()
  const hot = await t.pipeline.fetch(new Request('http://x/hot'), t.peers)
  expect(hot.status).toBe(302)
  expect(t.askedCount()).toBe(1)
  await t.pipeline.fetch(new Request('http://x/sync'), t.peers)
  expect(t.askedCount()).toBe(2)
  // Two async answers in flight at once: each keeps its own address past its await.
  const [a, b] = await Promise.all([
    t.pipeline.fetch(new Request('http://x/a'), t.peers),
    t.pipeline.fetch(new Request('http://x/b'), t.peers),
  ])
  expect(await a.text()).toBe('async')
  expect(await b.text()).toBe('async')
  expect(t.askedCount()).toBe(4)
  for (const [path, ip] of t.seen) expect(ip).toBe(ADDRESS[path]!)
  expect(t.seen).toHaveLength(2 + 1 + 2 * 2)
  const lines = await t.requestLines()
  // /b answered first (its await is shorter): lines come in the order answers do, each with its own address.
  expect(lines.map((l) => [l.path, l.ip])).toEqual(['/hot', '/sync', '/b', '/a'].map((p) => [p, ADDRESS[p]]))
})

test('a hot route that reads first answers after its read, or passes the request on to the next hot route and the router', async () => {
  const lines: string[] = []
  const logger = createLogger({ requests: true, format: 'json', write: (text) => void lines.push(text) })
  const asked: string[] = []
  const pipeline = createPipeline({
    logger,
    hot: [
      // As the redirect of a code not in the link cache on PostgreSQL: known only once read.
      async (request, id) => {
        asked.push('reads')
        await Bun.sleep(2)
        if (request.url.endsWith('/known'))
          return new Response(null, { status: 302, headers: { location: 'https://example.com/', 'x-request-id': id } })
        if (request.url.endsWith('/broken')) throw new Error('the read failed')
        return undefined
      },
      (request) => {
        asked.push('second')
        return request.url.endsWith('/second') ? new Response('second') : undefined
      },
    ],
    route: () => {
      asked.push('router')
      return new Response('routed')
    },
    fault: () => new Response('fault', { status: 500 }),
    clientIpOf: (peer) => peer ?? 'unknown',
  })
  const known = await pipeline.handle(new Request('http://x/known', { headers: { 'x-request-id': 'abc-1' } }))
  expect([known.status, known.headers.get('location'), known.headers.get('x-request-id')]).toEqual([
    302,
    'https://example.com/',
    'abc-1',
  ])
  expect(asked.splice(0)).toEqual(['reads'])
  expect(await (await pipeline.handle(new Request('http://x/second'))).text()).toBe('second')
  expect(asked.splice(0)).toEqual(['reads', 'second'])
  const routed = await pipeline.handle(new Request('http://x/other', { headers: { 'x-request-id': 'abc-2' } }))
  expect([await routed.text(), routed.headers.get('x-request-id')]).toEqual(['routed', 'abc-2'])
  expect(asked.splice(0)).toEqual(['reads', 'second', 'router'])
  const broken = await pipeline.handle(new Request('http://x/broken'))
  expect(broken.status).toBe(500)
  expect(asked.splice(0)).toEqual(['reads'])
  logger.flush()
  const logged = lines
    .flatMap((t) => t.trimEnd().split('\n'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'request')
  expect(logged.map((l) => [l.path, l.status])).toEqual([
    ['/known', 302],
    ['/second', 200],
    ['/other', 200],
    ['/broken', 500],
  ])
})

test('under traffic the young generation is collected every COLLECT_MS, and nothing runs while idle', async () => {
  let collected = 0
  const pipeline = createPipeline({
    logger: createLogger({ requests: false }),
    hot: [],
    route: () => new Response('ok'),
    fault: () => new Response('fault', { status: 500 }),
    clientIpOf: () => 'unknown',
    collect: () => void collected++,
  })
  const server: PeerSource = { requestIP: () => null }
  for (let i = 0; i < 50; i++) await pipeline.fetch(new Request('http://x/'), server)
  await Bun.sleep(COLLECT_MS + 50)
  // One collection for the burst (two if a slow machine stretched it past COLLECT_MS), not one a request.
  const afterBurst = collected
  expect(afterBurst).toBeGreaterThanOrEqual(1)
  expect(afterBurst).toBeLessThanOrEqual(2)
  for (let round = 0; round < 3; round++) {
    await pipeline.fetch(new Request('http://x/'), server)
    await Bun.sleep(COLLECT_MS + 50)
  }
  expect(collected).toBe(afterBurst + 3)
  await Bun.sleep(3 * COLLECT_MS)
  expect(collected).toBe(afterBurst + 3) // idle: none more
})
