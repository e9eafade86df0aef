// The baseline: the least a Bun server can do for a short link — answer 302 with a fixed Location.
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch: () =>
    new Response(null, {
      status: 302,
      headers: { location: 'https://example.com/bench', 'cache-control': 'private, no-cache' },
    }),
})
console.log(`listening on http://127.0.0.1:${server.port}`)
