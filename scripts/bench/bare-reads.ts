// The floor under the redirect: a bare Bun.serve that reads from each request what linkbox's redirect has to
// read (method, path, X-Request-Id, User-Agent, Referer, the peer's address) and answers 302 with the three
// headers linkbox sends (Location, Cache-Control, a fresh X-Request-Id), doing nothing else. What it loses
// against bare-redirect.ts (which reads nothing) is what the runtime charges for those reads and headers;
// linkbox cannot redirect faster than this.
// With LINKBOX_BENCH_FLOOR_CODES (a file of codes, one a line), the floor of the spread redirects (issue 39):
// the same reads, and the code looked up in a Map of code → destination (404 when absent).
import { readFileSync } from 'node:fs'

const codesFile = process.env.LINKBOX_BENCH_FLOOR_CODES
const links: Map<string, string> | null = codesFile
  ? new Map(
      readFileSync(codesFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((code, i) => [code, `https://example.com/articles/${i}?utm_source=bench&utm_medium=short`]),
    )
  : null
let n = 0
let sink = 0
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(request, srv) {
    const url = request.url
    sink += request.method.length + url.length
    const h = request.headers
    sink += (h.get('x-request-id') ?? '').length + (h.get('user-agent') ?? '').length + (h.get('referer') ?? '').length
    sink += srv.requestIP(request)?.address.length ?? 0
    let location = 'https://example.com/bench'
    if (links) {
      const query = url.indexOf('?', 8)
      const found = links.get(url.slice(url.indexOf('/', 8) + 1, query < 0 ? undefined : query))
      if (found === undefined) return new Response('not found', { status: 404 })
      location = found
    }
    return new Response(null, {
      status: 302,
      headers: {
        location,
        'cache-control': 'private, no-cache',
        'x-request-id': `bench-${(++n).toString(36)}`,
      },
    })
  },
})
console.log(`listening on http://127.0.0.1:${server.port}${links ? ` (${links.size} codes)` : ''}`)
if (sink < 0) console.log(sink)
