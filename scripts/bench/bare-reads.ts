// The floor under the redirect: a bare Bun.serve that reads from each request what linkbox's redirect has to
// read (method, path, X-Request-Id, User-Agent, Referer, the peer's address) and answers 302 with the three
// headers linkbox sends (Location, Cache-Control, a fresh X-Request-Id), doing nothing else. What it loses
// against bare-redirect.ts (which reads nothing) is what the runtime charges for those reads and headers;
// linkbox cannot redirect faster than this.
let n = 0
let sink = 0
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(request, srv) {
    sink += request.method.length + request.url.length
    const h = request.headers
    sink += (h.get('x-request-id') ?? '').length + (h.get('user-agent') ?? '').length + (h.get('referer') ?? '').length
    sink += srv.requestIP(request)?.address.length ?? 0
    return new Response(null, {
      status: 302,
      headers: {
        location: 'https://example.com/bench',
        'cache-control': 'private, no-cache',
        'x-request-id': `bench-${(++n).toString(36)}`,
      },
    })
  },
})
console.log(`listening on http://127.0.0.1:${server.port}`)
if (sink < 0) console.log(sink)
export {}
