// QR throughput of the real app (in this process, listening on loopback) under wrk: the cached public
// image /qr/<code>.png against the redirect /<code> as the baseline, then qr.json renderings per second.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLinkbox } from '../../src/app/app'
import { buildConfig } from '../../src/kernel/config'
import { wrk, type WrkResult } from './wrk'

const SECONDS = 5
const CONNECTIONS = 32
// A browser's user agent, so that the redirect counts a human click as real traffic would.
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36'

const fmt = (label: string, r: WrkResult) =>
  `${label.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50ms.toFixed(2)} ms  p99 ${r.p99ms.toFixed(2)} ms` +
  (r.errors ? `  ERRORS ${r.errors}` : '')

export async function benchQr(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'linkbox-bench-qr-'))
  const box = createLinkbox(
    buildConfig({
      data_dir: dir,
      server: { host: '127.0.0.1', port: 0 },
      rate: { anon_per_minute: 0, key_per_minute: 0 },
    }),
  )
  try {
    const server = box.listen()
    const origin = `http://127.0.0.1:${server.port}`
    const key = (await box.accounts.createAccount({ name: 'bench' })).key.key
    const created = await fetch(`${origin}/api/getLink.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key },
      body: new URLSearchParams({ url: 'https://example.com/bench' }),
    })
    const code = ((await created.json()) as { return: { hex: string } }).return.hex
    const run = (path: string, headers: Record<string, string> = {}) =>
      wrk(`${origin}${path}`, { seconds: SECONDS, connections: CONNECTIONS, headers: { 'user-agent': UA, ...headers } })

    // The first request renders and caches the image; a short run warms the JIT and statement cache.
    await fetch(`${origin}/qr/${code}.png`)
    await wrk(`${origin}/${code}`, { seconds: 1, connections: CONNECTIONS })
    const redirect = await run(`/${code}`)
    const image = await run(`/qr/${code}.png`)
    const auth = { 'x-api-key': key }
    const png = await run(`/api/qr.json?data=${encodeURIComponent('https://example.com/some/page?id=42')}`, auth)
    const svg = await run(
      `/api/qr.json?format=svg&data=${encodeURIComponent('https://example.com/some/page?id=42')}`,
      auth,
    )
    // Both at once: what a client hammering qr.json costs everyone else's redirects.
    const [mixedRedirect, mixedPng] = await Promise.all([
      run(`/${code}`),
      run(`/api/qr.json?size=1024&data=${encodeURIComponent('https://example.com/some/page?id=43')}`, auth),
    ])
    return [
      `wrk -t2 -c${CONNECTIONS} -d${SECONDS}s against 127.0.0.1 (server and wrk share ${navigator.hardwareConcurrency} CPUs)`,
      fmt('(a) /<code> redirect (baseline)', redirect),
      fmt('(b) /qr/<code>.png, cached', image),
      fmt('(c) qr.json png 300 px, rendered', png),
      fmt('(d) qr.json svg, rendered', svg),
      `cached image / redirect: ${(image.rps / redirect.rps).toFixed(2)}`,
      'mixed load: (e) and (f) run at the same time, two wrk processes',
      fmt('(e) /<code> redirect, under (f)', mixedRedirect),
      fmt('(f) qr.json png 1024 px, rendered', mixedPng),
      `redirect under qr.json load / alone: ${(mixedRedirect.rps / redirect.rps).toFixed(2)}`,
    ]
  } finally {
    await box.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main) console.log((await benchQr()).join('\n'))
