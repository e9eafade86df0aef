// The baseline for creations: the least a Bun server can do for an API call — answer 200 with a small JSON
// envelope like getLink.json's, without reading the body or touching a database.
const answer = JSON.stringify({
  status: 'success',
  return: {
    hex: 'abcDEF',
    url: 'http://127.0.0.1/abcDEF',
    qr: 'http://127.0.0.1/qr/abcDEF.png',
    stats: 'http://127.0.0.1/abcDEF+',
    mode: 'redirect',
  },
})
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch: () => new Response(answer, { headers: { 'content-type': 'application/json; charset=utf-8' } }),
})
console.log(`listening on http://127.0.0.1:${server.port}`)
export {}
