// The appliance (SPEC §10): `bun run build` makes dist/linkbox; a copy of it, run from elsewhere, serves,
// answers the CLI, refuses a bad config by naming the key, and exits 0 on SIGTERM. It carries a yt-dlp, which
// it extracts into data_dir/bin and uses.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { chmodSync, copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pkg from '../../package.json' with { type: 'json' }
import {
  CHROME_UA,
  REPO_ROOT,
  apiPost,
  createAccount,
  killAllServers,
  removeDir,
  runCli,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
} from '../support/server'
import { startMediaFixtures } from '../support/media-fixtures'
import encodeWebp, { init as initWebpEncoder } from '@jsquash/webp/encode.js'
import webpEncoderWasm from '@jsquash/webp/codec/enc/webp_enc.wasm' with { type: 'file' }
import * as jpeg from 'jpeg-js'
import jsQR from 'jsqr'
import { PNG } from 'pngjs'
import { rawRequest } from '../support/raw-http'

const PNG_MAGIC = Buffer.from('\x89PNG', 'latin1')

// These tests start real processes; bun's default of 5 s per test or hook is tight on a slow machine.
setDefaultTimeout(30_000)

const root = tempDir('linkbox-binary-')
const binDir = join(root, 'bin')
const cwd = join(root, 'elsewhere') // neither the repository nor the binary's directory
let linkbox: string[]

beforeAll(async () => {
  const build = Bun.spawnSync([process.execPath, 'run', 'build'], { cwd: REPO_ROOT, stdout: 'pipe', stderr: 'pipe' })
  const out = build.stdout.toString() + build.stderr.toString()
  if (build.exitCode !== 0) throw new Error(`bun run build failed (${build.exitCode}):\n${out}`)
  expect(out).toMatch(/dist\/linkbox: [\d.]+ MiB/)

  mkdirSync(binDir, { recursive: true })
  mkdirSync(cwd, { recursive: true })
  copyFileSync(join(REPO_ROOT, 'dist/linkbox'), join(binDir, 'linkbox'))
  chmodSync(join(binDir, 'linkbox'), 0o755)
  linkbox = [join(binDir, 'linkbox')]
  // Traps for a binary that still auto-loads files from its working directory: a bunfig.toml that
  // preloads a missing module, and a .env that points LINKBOX_CONFIG at a file that does not exist.
  writeFileSync(join(cwd, 'bunfig.toml'), 'preload = ["./missing-preload.ts"]\n')
  writeFileSync(join(cwd, '.env'), 'LINKBOX_CONFIG=/nonexistent/linkbox.toml\n')
}, 60_000)

afterAll(async () => {
  await killAllServers()
  removeDir(root)
})

test('the build writes an executable', () => {
  const st = statSync(join(binDir, 'linkbox'))
  expect(st.size).toBeGreaterThan(1024 * 1024)
  expect(st.mode & 0o111).not.toBe(0)
})

test('version prints the package version', async () => {
  const r = await runCli(['version'], { command: linkbox, cwd })
  expect(r.stderr).toBe('')
  expect(r.code).toBe(0)
  expect(r.stdout.trim()).toBe(pkg.version)
})

test('ignores .env and bunfig.toml in its working directory', async () => {
  // With .env loaded, LINKBOX_CONFIG would name a missing file and the command would fail.
  const r = await runCli(['key', 'list'], { command: linkbox, cwd })
  expect(r.stderr).toBe('')
  expect(r.code).toBe(0)
  expect(r.stdout).toStartWith('id\tprefix\taccount')
})

describe('serving from the binary', () => {
  let key: string
  let server: RunningServer

  beforeAll(async () => {
    mkdirSync(join(root, 'svc'))
    // Private networks allowed: the media fixture pages are on 127.0.0.1.
    const config = writeConfig(join(root, 'svc'), { media: { allow_private_networks: true } })
    key = await createAccount(config.configPath, 'alice', { command: linkbox, cwd })
    // NODE_ENV=development must not bring back Bun's development error page (stack trace and source).
    server = await startServer({ config, command: linkbox, cwd, env: { NODE_ENV: 'development' } })
  })

  test('account create prints the key alone on the last line', () => {
    expect(key).toMatch(/^\S{20,}$/)
  })

  test('serve listens on the port it reports, with the package version', async () => {
    expect(server.port).toBeGreaterThan(0)
    expect(server.stdout()).toContain(`linkbox ${pkg.version} listening on http://127.0.0.1:${server.port}`)
    const r = await fetch(`${server.url}/healthz`)
    expect(r.status).toBe(200)
    expect(await r.json()).toMatchObject({ status: 'ok', version: pkg.version })
  })

  test('a link created with the key redirects to its URL', async () => {
    const url = 'https://example.com/from-the-binary?x=1'
    const created = await apiPost(server.url, 'getLink.json', { url }, { 'x-api-key': key })
    expect(created.status).toBe(200)
    expect(created.body.status).toBe('success')
    const code = created.body.return.hex as string
    expect(code).toMatch(/^[A-Za-z0-9]{6}$/)

    const visit = await fetch(`${server.url}/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })
    expect(visit.status).toBe(302)
    expect(visit.headers.get('location')).toBe(url)

    const listed = await apiPost(server.url, 'links.json', {}, { 'x-api-key': key })
    expect(listed.status).toBe(200)
    expect(listed.body.return.links.map((l: { hex: string }) => l.hex)).toEqual([code])

    // The click is written by the writer thread, an entrypoint of its own in the executable too: had it
    // not started, the main thread would write instead, and say so.
    const stats = await apiPost(server.url, 'stats.json', { code })
    expect(stats.body.return.clicks).toBe(1)
    expect(server.stderr()).not.toContain('click writer thread stopped')
  })

  // The renderer runs in a worker, an entrypoint of its own in the executable: a wrong path to it breaks
  // only these two.
  test('qr.json renders a PNG (on the bundled worker)', async () => {
    const r = await fetch(`${server.url}/api/qr.json?data=hi&raw=1`, { headers: { 'x-api-key': key } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('image/png')
    expect(Buffer.from(await r.arrayBuffer()).subarray(0, 4)).toEqual(PNG_MAGIC)
  })

  // A logo is decoded by pngjs, or drawn by resvg (a native module the executable must carry), on the worker.
  test('qr.json draws a PNG and an SVG logo (on the bundled worker)', async () => {
    const png = new PNG({ width: 16, height: 16 })
    png.data.fill(200)
    const logos = [
      new File([new Uint8Array(PNG.sync.write(png))], 'logo.png', { type: 'image/png' }),
      new File(
        ['<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 2 2"><circle cx="1" cy="1" r="1" fill="#c00"/></svg>'],
        'logo.svg',
      ),
    ]
    for (const logo of logos) {
      const form = new FormData()
      form.set('data', 'logo in a binary')
      form.set('logo', logo)
      const r = await fetch(`${server.url}/api/qr.json`, { method: 'POST', body: form, headers: { 'x-api-key': key } })
      const body = await r.json()
      expect([r.status, body.return?.ecc], JSON.stringify(body)).toEqual([200, 'H'])
      const image = PNG.sync.read(Buffer.from(body.return.data_uri.split(',')[1], 'base64'))
      expect(jsQR(new Uint8ClampedArray(image.data), image.width, image.height)?.data).toBe('logo in a binary')
    }
  })

  // A social preview's image is decoded on a worker of its own (an entrypoint of the executable), WebP by libwebp
  // as WebAssembly (a file embedded in the executable): each kind sent comes back re-encoded and served.
  test('preview images, PNG, JPEG and WebP, are re-encoded on the bundled worker', async () => {
    const raster = { width: 32, height: 24, data: new Uint8Array(32 * 24 * 4).map((_, i) => (i % 4 === 3 ? 255 : 180)) }
    const png = new PNG({ width: 32, height: 24 })
    png.data = Buffer.from(raster.data)
    await initWebpEncoder(new WebAssembly.Module(await Bun.file(webpEncoderWasm).arrayBuffer()))
    const webp = await encodeWebp({ ...raster, data: new Uint8ClampedArray(raster.data) } as unknown as ImageData)
    const images = [PNG.sync.write(png), jpeg.encode(raster, 90).data, new Uint8Array(webp)]
    for (const bytes of images) {
      const form = new FormData()
      form.set('url', 'https://example.com/previewed')
      form.set('og_title', 'From the binary')
      form.set('og_image', new File([new Uint8Array(bytes)], 'image'))
      const r = await fetch(`${server.url}/api/getLink.json`, {
        method: 'POST',
        body: form,
        headers: { 'x-api-key': key },
      })
      const body = await r.json()
      expect([r.status, typeof body.return?.og_image], JSON.stringify(body)).toEqual([200, 'string'])
      const image = await fetch(`${server.url}${new URL(body.return.og_image).pathname}`)
      expect(image.headers.get('content-type')).toBe('image/jpeg')
      const decoded = jpeg.decode(new Uint8Array(await image.arrayBuffer()), { useTArray: true })
      expect([decoded.width, decoded.height]).toEqual([32, 24])
    }
  })

  test('the public image of a link is a PNG', async () => {
    const created = await apiPost(server.url, 'getLink.json', { url: 'https://example.com/qr' }, { 'x-api-key': key })
    const r = await fetch(`${server.url}/qr/${created.body.return.hex}.png`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('image/png')
    expect(Buffer.from(await r.arrayBuffer()).subarray(0, 4)).toEqual(PNG_MAGIC)
  })

  test('an unknown code gets the embedded HTML page with a CSP', async () => {
    const r = await fetch(`${server.url}/NoSuchCode`, { redirect: 'manual' })
    expect(r.status).toBe(404)
    expect(r.headers.get('content-type')).toStartWith('text/html')
    expect(r.headers.get('content-security-policy')).toContain("default-src 'none'")
    const html = await r.text()
    expect(html).toStartWith('<!doctype html>')
    expect(html).toContain('Link not found')
    expect(html).toContain('/assets/style.css')
  })

  test('the stylesheet is served from the binary', async () => {
    const r = await fetch(`${server.url}/assets/style.css`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/css')
    expect(await r.text()).toBe(await Bun.file(join(REPO_ROOT, 'assets/style.css')).text())
  })

  test('a malformed Host header gets a clean answer, never internals', async () => {
    const port = server.port
    for (const host of ['a b', 'x@y', 'localhost:99999', 'nas'])
      for (const [path, type] of [
        ['/api/nope', 'application/json'],
        ['/api/getLink.json', 'application/json'],
        ['/a/b/c', 'text/html'],
      ]) {
        const a = await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
        expect(a.status).toBeGreaterThanOrEqual(400)
        expect(a.status).toBeLessThan(500)
        expect(a.head.toLowerCase()).toContain(`content-type: ${type}`)
        expect(a.head + a.body).not.toMatch(/\n\s+at [\w.<>]+ \(|\.ts:\d+|node_modules|TypeError/)
        expect(a.body).not.toContain(REPO_ROOT)
      }
  })

  test('serve has extracted the bundled yt-dlp into data_dir/bin, executable, the bytes the build put in vendor/', () => {
    const vendored = JSON.parse(readFileSync(join(REPO_ROOT, 'vendor/yt-dlp.json'), 'utf8'))
    const file = join(server.dataDir, 'bin', 'yt-dlp-bundled')
    expect(statSync(file).mode & 0o777).toBe(0o755)
    expect(createHash('sha256').update(readFileSync(file)).digest('hex')).toBe(vendored.sha256)
  })

  test('download.json runs the bundled yt-dlp (through the guard proxy) and its signed link gives the file', async () => {
    const fx = await startMediaFixtures()
    try {
      const r = await fetch(`${server.url}/api/download.json?url=${encodeURIComponent(fx.url('video-page'))}`, {
        headers: { 'x-api-key': key },
      })
      const body = (await r.json()) as any
      expect(r.status, JSON.stringify(body)).toBe(200)
      expect(body.return).toMatchObject({ kind: 'video', extractor: 'HTML5MediaEmbed' })
      const link = new URL(body.return.formats[0].url)
      const file = await fetch(`${server.url}${link.pathname}${link.search}`)
      expect(file.status).toBe(200)
      expect(new Uint8Array(await file.arrayBuffer())).toEqual(fx.bytes('clip.mp4'))
    } finally {
      await fx.stop()
    }
  }, 60_000)

  test('SIGTERM exits 0 after saying so', async () => {
    expect(await server.stop('SIGTERM')).toBe(0)
    expect(server.stdout()).toContain('SIGTERM')
    expect(server.stderr()).toBe('')
  })

  // A start knows the bundled yt-dlp from its sidecar without reading the embedded file (media/ytdlp.ts
  // embeddedMeta): the one there is kept as it is, and one that is not this build's is extracted again.
  test("a later start keeps the extracted yt-dlp; one changed behind its sidecar, or another build's, is extracted again", async () => {
    const vendored = JSON.parse(readFileSync(join(REPO_ROOT, 'vendor/yt-dlp.json'), 'utf8'))
    const file = join(server.dataDir, 'bin', 'yt-dlp-bundled')
    const sha = () => createHash('sha256').update(readFileSync(file)).digest('hex')
    const restart = async () => {
      const again = await startServer({
        config: { dir: server.dir, dataDir: server.dataDir, configPath: server.configPath },
        command: linkbox,
        cwd,
      })
      expect(await again.stop('SIGTERM')).toBe(0)
      expect(again.stderr()).toBe('')
      expect(again.stdout()).not.toContain('yt-dlp could not be put')
    }
    const before = statSync(file)
    await restart()
    expect(statSync(file)).toMatchObject({ ino: before.ino, mtimeMs: before.mtimeMs, size: before.size })

    writeFileSync(file, 'not the bundled one')
    await restart()
    expect(sha()).toBe(vendored.sha256)
    expect(statSync(file).mode & 0o777).toBe(0o755)

    const sidecar = `${file}.json`
    const kept = statSync(file)
    writeFileSync(sidecar, JSON.stringify({ ...JSON.parse(readFileSync(sidecar, 'utf8')), sha256: '0'.repeat(64) }))
    await restart()
    expect(statSync(file).ino).not.toBe(kept.ino)
    expect(sha()).toBe(vendored.sha256)
    expect(JSON.parse(readFileSync(sidecar, 'utf8')).sha256).toBe(vendored.sha256)
  })
})

test('doctor extracts the bundled yt-dlp and reports it as the one used, with its version', async () => {
  const vendored = JSON.parse(readFileSync(join(REPO_ROOT, 'vendor/yt-dlp.json'), 'utf8'))
  // On this machine (no internet) the build bundles a zipapp of Debian's yt_dlp package.
  if (vendored.source.startsWith('zipapp'))
    expect(vendored.version).toBe(Bun.spawnSync(['yt-dlp', '--version']).stdout.toString().trim())
  const config = writeConfig(tempDir('linkbox-bin-doctor-'))
  try {
    const r = await runCli(['doctor', '--config', config.configPath], { command: linkbox, cwd })
    const file = join(config.dataDir, 'bin', 'yt-dlp-bundled')
    expect(r.stdout).toMatch(new RegExp(`^ok\\s+yt-dlp bundled\\s+${vendored.version.replace(/\./g, '\\.')} \\(`, 'm'))
    expect(r.stdout).toContain(`ok    yt-dlp           bundled: ${file}, version ${vendored.version}\n`)
    expect(r.stdout).toMatch(/^ok\s+python3\s+.*Python 3\./m)
    expect(statSync(file).mode & 0o777).toBe(0o755)
  } finally {
    removeDir(config.dir)
  }
})

/** Whether this machine can listen on the IPv6 loopback (some containers have no IPv6). */
function hasIpv6Loopback(): boolean {
  try {
    Bun.serve({ hostname: '::1', port: 0, fetch: () => new Response() }).stop(true)
    return true
  } catch {
    return false
  }
}

test.skipIf(!hasIpv6Loopback())('on an IPv6 host the listening line carries a usable URL ([::1]:PORT)', async () => {
  const config = writeConfig(tempDir('linkbox-v6-'), { server: { host: '::1' } })
  try {
    const server = await startServer({ config, command: linkbox, cwd, startTimeoutMs: 5_000 })
    expect(server.url).toBe(`http://[::1]:${server.port}`)
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    expect(await server.stop()).toBe(0)
  } finally {
    removeDir(config.dir)
  }
})

describe('a bad config stops serve with a message naming the key', () => {
  const cases: [string, Record<string, Record<string, string | number>>, string][] = [
    ['an unknown key', { server: { prot: 1 } }, 'server.prot'],
    ['a value of the wrong type', { server: { port: 'x' } }, 'server.port'],
    ['a value out of range', { links: { redirect_status: 200 } }, 'links.redirect_status'],
  ]
  for (const [what, overrides, key] of cases) {
    test(what, async () => {
      const config = writeConfig(tempDir('linkbox-badconf-'), overrides)
      try {
        const r = await runCli(['serve', '--config', config.configPath], { command: linkbox, cwd, timeoutMs: 10_000 })
        expect(r.code).not.toBe(0)
        expect(r.stdout).not.toContain('listening')
        expect(r.stderr).toContain(key)
      } finally {
        removeDir(config.dir)
      }
    })
  }
})
