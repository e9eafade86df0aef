// The yt-dlp guard bypass (CVE-2023-46121, issue 20 item 1) and the layers that keep it shut. A page on a
// "public" host (127.0.0.2, the only address the guard lets through here) sends yt-dlp on, by a meta refresh or
// a Refresh header, to a private address (::1) with a smuggled `Ytdl-request-proxy: __noproxy__` header: yt-dlp
// 2023.03.04 obeys and connects straight to ::1, where the guard proxy never sees it. Shown here:
// - the real yt-dlp the tests run (≥ 2024.07.01) goes through the proxy, which refuses: ::1 sees no request;
// - a yt-dlp older than 2024.07.01 is never run: download.json and /dl answer 503 naming its version, doctor FAILs;
// - whatever the version, an answer that carries smuggled data or proxy headers is not used, and every URL yt-dlp
//   reports (formats, thumbnail) is checked by the guard before anything is handed out (a stand-in yt-dlp that
//   prints a hostile answer plays the part of a yt-dlp that was fooled).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeBox, tempDir, type TestBox } from '../support/app'
import { runCli, writeConfig } from '../support/server'

const LONG = 60_000
const PUBLIC = '127.0.0.2'
const guardOpts = {
  resolve: async (host: string) => (host === 'public.test' ? [PUBLIC] : []),
  isAllowed: (a: string) => a === PUBLIC,
}

type Server = ReturnType<typeof Bun.serve>
let secret: Server // ::1: private
let site: Server // 127.0.0.2: "public"
const secretHits: string[] = []
const dir = tempDir('linkbox-bypass-')

/** yt-dlp's smuggle_url(): the data rides in the fragment, urlencoded JSON. */
const smuggled = (url: string) =>
  `${url}#${new URLSearchParams({ __youtubedl_smuggle: JSON.stringify({ http_headers: { 'Ytdl-request-proxy': '__noproxy__' } }) })}`

beforeAll(() => {
  secret = Bun.serve({
    hostname: '::1',
    port: 0,
    fetch(req) {
      secretHits.push(new URL(req.url).pathname)
      return new Response(
        '<html><head><title>Router admin</title><meta property="og:image" content="/admin.png"></head><body><video src="/cam.mp4"></video></body></html>',
        {
          headers: { 'content-type': 'text/html' },
        },
      )
    },
  })
  const target = (path: string) => smuggled(`http://[::1]:${secret.port}${path}`)
  site = Bun.serve({
    hostname: PUBLIC,
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname
      if (path === '/refresh-header')
        return new Response('<html><head><title>Moved</title></head><body>moved</body></html>', {
          headers: { 'content-type': 'text/html', refresh: `0; url=${target('/secret-header')}` },
        })
      return new Response(
        `<html><head><title>Moved</title><meta http-equiv="refresh" content="0; url=${target('/secret-meta')}"></head><body>moved</body></html>`,
        {
          headers: { 'content-type': 'text/html' },
        },
      )
    },
  })
})
afterAll(() => {
  secret?.stop(true)
  site?.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

const download = (box: TestBox, key: string, url: string) =>
  box.get('/api/download.json', { url }, { 'x-api-key': key })

describe('the real yt-dlp', () => {
  let box: TestBox
  let key: string
  beforeAll(async () => {
    box = await makeBox({}, guardOpts)
    key = await box.account('media')
  })
  afterAll(() => box?.cleanup())

  test('is recent enough to be run at all (≥ 2024.07.01)', async () => {
    const r = Bun.spawnSync(['yt-dlp', '--version'], { stdout: 'pipe' })
    const version = r.stdout.toString().trim()
    expect(version).toMatch(/^\d{4}\.\d{2}\.\d{2}/)
    expect(version >= '2024.07.01').toBe(true)
  })

  for (const [how, path] of [
    ['a meta refresh', '/meta'],
    ['a Refresh header', '/refresh-header'],
  ] as const) {
    test(
      `${how} to a private address with a smuggled "no proxy" header: refused, the private host never asked`,
      async () => {
        const before = secretHits.length
        const r = await download(box, key, `http://public.test:${site.port}${path}`)
        expect(r.status, JSON.stringify(r.body)).toBe(400)
        expect(r.body.code).toBe('private_address')
        expect(JSON.stringify(r.body)).not.toContain('Router admin')
        expect(secretHits.slice(before)).toEqual([])
      },
      LONG,
    )
  }

  test('a url that carries smuggled data itself is refused before yt-dlp runs', async () => {
    const r = await download(box, key, smuggled(`http://public.test:${site.port}/meta`))
    expect([r.status, r.body.code]).toEqual([400, 'private_address'])
  })
})

/** A stand-in yt-dlp: prints `version` for --version; otherwise notes that it ran and prints `answer`. */
function standIn(name: string, version: string, answer: unknown): { path: string; ran: string } {
  const folder = join(dir, name)
  mkdirSync(folder, { recursive: true })
  const path = join(folder, 'yt-dlp')
  const ran = join(folder, 'ran')
  writeFileSync(join(folder, 'answer.json'), JSON.stringify(answer))
  writeFileSync(
    path,
    `#!/bin/sh\nif [ "$1" = --version ]; then echo ${version}; exit 0; fi\ntouch '${ran}'\ncat '${join(folder, 'answer.json')}'\n`,
  )
  chmodSync(path, 0o755)
  return { path, ran }
}

const pageUrl = () => `http://public.test:${site.port}/watch`
const format = (id: string, url: string, extra: Record<string, unknown> = {}) => ({
  format_id: id,
  url,
  ext: 'mp4',
  protocol: 'http',
  vcodec: 'avc1',
  acodec: 'mp4a',
  ...extra,
})
const info = (formats: unknown[], extra: Record<string, unknown> = {}) => ({
  id: 'x',
  title: 'A page',
  extractor_key: 'Generic',
  webpage_url: pageUrl(),
  formats,
  ...extra,
})

describe('a yt-dlp older than 2024.07.01 is never run', () => {
  test('download.json answers 503 unavailable naming its version; it was asked its version only', async () => {
    const old = standIn('old', '2023.03.04', info([format('0', `http://public.test:${site.port}/v.mp4`)]))
    const box = await makeBox({ media: { ytdlp_path: old.path } }, guardOpts)
    try {
      const r = await download(box, await box.account('u'), pageUrl())
      expect([r.status, r.body.code]).toEqual([503, 'unavailable'])
      expect(r.body.message).toContain('2023.03.04')
      expect(r.body.message).toContain('older than 2024.07.01')
      expect(existsSync(old.ran)).toBe(false)
    } finally {
      await box.cleanup()
    }
  })

  test('a segmented format whose yt-dlp was replaced by an old one: /dl answers 503 and does not run it', async () => {
    const good = standIn(
      'swap',
      '2025.01.01',
      info([format('hls', `http://public.test:${site.port}/v.m3u8`, { protocol: 'm3u8_native', ext: 'mp4' })]),
    )
    const box = await makeBox({ media: { ytdlp_path: good.path } }, guardOpts)
    try {
      const r = await download(box, await box.account('u'), pageUrl())
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const link = new URL(r.body.return.formats[0].url)
      rmSync(good.ran)
      const old = standIn('swap', '2023.03.04', {})
      expect(old.path).toBe(good.path)
      const dl = await box.request(link.pathname + link.search)
      expect(dl.status).toBe(503)
      expect(await dl.text()).toContain('2023.03.04')
      expect(existsSync(old.ran)).toBe(false)
    } finally {
      await box.cleanup()
    }
  })

  test(
    'doctor FAILs it, naming the version and the fix',
    async () => {
      const old = standIn('doctor', '2023.03.04', {})
      const c = writeConfig(tempDir('linkbox-bypass-doctor-'), { media: { ytdlp_path: old.path } })
      try {
        const r = await runCli(['doctor', '--config', c.configPath], { timeoutMs: 30_000 })
        expect(r.stdout).toMatch(/FAIL\s+yt-dlp\s.*version 2023\.03\.04 is older than 2024\.07\.01/)
        expect(r.stdout).toContain('linkbox ytdlp update')
        expect(r.code).not.toBe(0)
      } finally {
        rmSync(c.dir, { recursive: true, force: true })
      }
    },
    LONG,
  )
})

describe('whatever the version: what yt-dlp reports is checked before it is used', () => {
  const publicFile = () => `http://public.test:${site.port}/v.mp4`
  async function ask(name: string, answer: unknown) {
    const y = standIn(name, '2025.01.01', answer)
    const box = await makeBox({ media: { ytdlp_path: y.path } }, guardOpts)
    try {
      const r = await download(box, await box.account('u'), pageUrl())
      return { r, tickets: (box.db.query('SELECT count(*) AS n FROM media_tickets').get() as { n: number }).n }
    } finally {
      await box.cleanup()
    }
  }

  test('an answer with a proxy header in a format: refused, no ticket made', async () => {
    const { r, tickets } = await ask(
      'hdr',
      info([format('0', publicFile(), { http_headers: { 'Ytdl-request-proxy': '__noproxy__' } })]),
    )
    expect([r.status, r.body.code]).toEqual([400, 'private_address'])
    expect(tickets).toBe(0)
  })

  test('an answer with smuggled data in a format URL: refused', async () => {
    const { r, tickets } = await ask('frag', info([format('0', smuggled(publicFile()))]))
    expect([r.status, r.body.code]).toEqual([400, 'private_address'])
    expect(tickets).toBe(0)
  })

  test('formats and a thumbnail on private addresses are left out; the public format stays', async () => {
    const { r, tickets } = await ask(
      'mixed',
      info(
        [
          format('lan', `http://192.168.1.1/cam.mp4`),
          format('loop', `http://[::1]:${secret.port}/x.mp4`),
          format('pub', publicFile()),
        ],
        {
          thumbnail: `http://127.0.0.1/thumb.jpg`,
        },
      ),
    )
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    // The public format, and the audio extracted from it (issue 41): one ticket each.
    expect(r.body.return.formats.map((f: { id: string }) => f.id)).toEqual(['pub', 'pub/mp3', 'pub/m4a', 'pub/opus'])
    expect(r.body.return.thumbnail).toBeNull()
    expect(tickets).toBe(4)
  })

  test('every format on a private address: 400 private_address', async () => {
    const { r, tickets } = await ask(
      'allpriv',
      info([format('lan', 'http://10.0.0.1/a.mp4'), format('meta', 'http://169.254.169.254/latest/meta-data/')]),
    )
    expect([r.status, r.body.code]).toEqual([400, 'private_address'])
    expect(tickets).toBe(0)
  })
})
