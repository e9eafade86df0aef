// A load of its own process for bench/import.ts: CONCURRENCY fetch loops on one URL (a redirect), each request
// timed alone, until SIGTERM; then every sample as [start (unix ms, fractional), latency ms, status] on stdout.
// In the bench's own process the loops would also time the bench building and sending a 20 MiB upload.
const [url, concurrency = '16'] = Bun.argv.slice(2)
const samples: [number, number, number][] = []
let running = true
process.on('SIGTERM', () => (running = false))
const loop = async () => {
  while (running) {
    const t = performance.now()
    let status = 0
    try {
      const res = await fetch(url!, { redirect: 'manual' })
      await res.arrayBuffer()
      status = res.status
    } catch {}
    samples.push([performance.timeOrigin + t, performance.now() - t, status])
  }
}
console.log('ready')
await Promise.all(Array.from({ length: Number(concurrency) }, loop))
process.stdout.write(JSON.stringify(samples) + '\n')
export {}
