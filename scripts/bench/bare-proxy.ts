// The baseline for signed downloads beside the file straight from its server: the least a Bun server can do
// to pass a file on, one fetch of a fixed upstream URL (LINKBOX_BENCH_UPSTREAM) answered with its body as it
// comes. No ticket, no signature, no guard: what is left between it and /dl is linkbox's own.
const upstream = process.env.LINKBOX_BENCH_UPSTREAM
if (!upstream || !/^http:\/\/127\.0\.0\.1:\d+\//.test(upstream))
  throw new Error('bare-proxy: LINKBOX_BENCH_UPSTREAM must be an http://127.0.0.1:<port>/ URL')
const PASSED = ['content-type', 'content-length']
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const res = await fetch(upstream, { headers: { 'accept-encoding': 'identity' }, signal: req.signal })
    const headers: Record<string, string> = {}
    for (const name of PASSED) {
      const value = res.headers.get(name)
      if (value) headers[name] = value
    }
    return new Response(res.body, { status: res.status, headers })
  },
})
console.log(`listening on http://127.0.0.1:${server.port}`)
export {}
