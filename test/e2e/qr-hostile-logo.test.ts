// Issue 36 item 1: SVG logos that made resvg read /dev/zero or a FIFO, draw the server's own files, grow
// nested patterns to 2 GB or spin on feTurbulence. Each goes to a real `linkbox serve` process over a real
// socket: the call answers within 5 s (a QR, or a 400 naming logo), the process lives (a later request
// answers), and a public QR image of another link answers within 1 s while the logo's call is under way.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import jsQR from 'jsqr'
import { PNG } from 'pngjs'
import { createLinkbox } from '../../src/app/app'
import { createQrRenderer } from '../../src/qr/renderer'
import { testConfig } from '../support/app'
import {
  apiPost,
  createAccount,
  killAllServers,
  removeDir,
  startServer,
  tempDir,
  type RunningServer,
} from '../support/server'

let server: RunningServer
let key: string
let files: string

beforeAll(async () => {
  server = await startServer()
  key = await createAccount(server.configPath, 'logos')
  files = tempDir('linkbox-logo-files-')
  // Both workers started once (a thread and its modules), so that the 1 s below measures a rendering.
  expect((await publicQr()).status).toBe(200)
  expect((await postLogo(svg(''))).status).toBe(200)
}, 30_000)
afterAll(async () => {
  await killAllServers()
  removeDir(server.dir)
  removeDir(files)
})

const XLINK = 'http://www.w3.org/1999/xlink'
/** A blue square the logo draws of its own, so the answer shows what of the logo was kept. */
const OWN = '<rect width="100" height="100" fill="#1e5ac8"/>'
const svg = (inner: string, ns = '') =>
  `<svg xmlns="http://www.w3.org/2000/svg"${ns} width="100" height="100" viewBox="0 0 100 100">${OWN}${inner}</svg>`

function blackPng(): Uint8Array {
  const png = new PNG({ width: 16, height: 16 })
  for (let i = 0; i < 256; i++) png.data.set([0, 0, 0, 255], i * 4)
  return new Uint8Array(PNG.sync.write(png))
}

async function postLogo(logo: string, fields: Record<string, string> = {}) {
  const form = new FormData()
  for (const [k, v] of Object.entries({ data: 'hostile logo', raw: '1', ...fields })) form.set(k, v)
  form.set('logo', new File([logo], 'logo.svg', { type: 'image/svg+xml' }))
  const started = performance.now()
  const res = await fetch(`${server.url}/api/qr.json`, {
    method: 'POST',
    body: form,
    headers: { 'x-api-key': key },
    signal: AbortSignal.timeout(5000),
  })
  const bytes = new Uint8Array(await res.arrayBuffer())
  return { status: res.status, bytes, ms: performance.now() - started }
}

/** A new link's public QR image (never rendered before, so it is drawn now): status and time. */
async function publicQr(): Promise<{ status: number; ms: number }> {
  const link = await apiPost(
    server.url,
    'getLink.json',
    { url: `https://example.org/${crypto.randomUUID()}` },
    { 'x-api-key': key },
  )
  const started = performance.now()
  const res = await fetch(`${server.url}/qr/${link.body.return.hex}.png`, { signal: AbortSignal.timeout(5000) })
  await res.arrayBuffer()
  return { status: res.status, ms: performance.now() - started }
}

const centre = (png: PNG) => [
  ...png.data.subarray(
    ((png.height >> 1) * png.width + (png.width >> 1)) * 4,
    ((png.height >> 1) * png.width + (png.width >> 1)) * 4 + 4,
  ),
]

/**
 * Sends the logo and, while its call is under way, asks for a public QR image of another link. Checks the
 * three promises of the issue; returns the answer (a decoded QR or a 400 naming logo).
 */
async function survives(logo: string) {
  const call = postLogo(logo)
  await Bun.sleep(100)
  const image = await publicQr()
  expect(image.status).toBe(200)
  expect(image.ms).toBeLessThan(1000)
  const r = await call
  expect(r.ms).toBeLessThan(5000)
  if (r.status === 200) {
    const png = PNG.sync.read(Buffer.from(r.bytes))
    expect(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data).toBe('hostile logo')
  } else {
    expect(r.status).toBe(400)
    expect(new TextDecoder().decode(r.bytes)).toContain('"logo"')
  }
  // The process lives: another QR (and another public image) answers.
  const after = await fetch(`${server.url}/api/qr.json?data=after`, { headers: { 'x-api-key': key } })
  expect(after.status).toBe(200)
  expect((await publicQr()).status).toBe(200)
  expect(server.proc.exitCode).toBeNull()
  return r
}

describe('hostile SVG logos (issue 36)', () => {
  test('XLink under a non-ASCII prefix pointing at /dev/zero: answered, the process lives', async () => {
    await survives(svg('<image ñ:href="/dev/zero" width="100" height="100"/>', ` xmlns:ñ="${XLINK}"`))
  }, 20_000)

  test("XLink under a non-ASCII prefix pointing at one of the server's image files: the file is not drawn", async () => {
    const file = join(files, 'black.png')
    writeFileSync(file, blackPng())
    for (const [prefix, href] of [
      ['ñ', file],
      ['ñ', `file://${file}`],
      ['日本', file],
      ['x', `FILE:${file}`],
    ]) {
      const r = await survives(
        svg(`<image ${prefix}:href="${href}" width="100" height="100"/>`, ` xmlns:${prefix}="${XLINK}"`),
      )
      expect(r.status).toBe(200)
      // The logo's own blue square, not the server's black file over it.
      const [red, green, blue] = centre(PNG.sync.read(Buffer.from(r.bytes)))
      expect([red, green, blue].map((c) => Math.round(c! / 16))).toEqual([2, 6, 13])
    }
  }, 30_000)

  test('eight patterns that fill each other by #id: answered, the process lives', async () => {
    // Each tile 8 times its inner one: resvg's tile images grow past 3 GB (measured), then it aborts.
    let defs =
      '<pattern id="p0" width="10" height="10" patternUnits="userSpaceOnUse"><rect width="5" height="5" fill="#000"/></pattern>'
    for (let i = 1; i < 8; i++)
      defs += `<pattern id="p${i}" width="10" height="10" patternUnits="userSpaceOnUse" patternTransform="scale(8)"><rect width="10" height="10" fill="url(#p${i - 1})"/></pattern>`
    await survives(svg(`<defs>${defs}</defs><rect width="100" height="100" fill="url(#p7)"/>`))
  }, 20_000)

  test('feTurbulence with numOctaves 1000000: answered, public images keep coming, the process lives', async () => {
    const logo = svg(
      '<filter id="t"><feTurbulence baseFrequency="0.05" numOctaves="1000000"/></filter><rect width="100" height="100" filter="url(#t)"/>',
    )
    await survives(logo)
    // And once more: a worker it had stuck would have stalled this one.
    await survives(logo)
  }, 30_000)

  test('an image naming a FIFO (open() would block): answered, the process lives', async () => {
    const fifo = join(files, 'fifo.png')
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0)
    await survives(svg(`<image href="${fifo}" width="100" height="100"/>`))
    await survives(svg(`<image ñ:href="${fifo}" width="100" height="100"/>`, ` xmlns:ñ="${XLINK}"`))
  }, 30_000)
})

// The layer under the allow-list: a rendering that never ends (resvg stuck in native code, here a worker
// in a synchronous sleep, which terminate() cannot cut short either), over a real socket.
describe('a rendering stuck where its worker cannot be interrupted', () => {
  test('is refused at the deadline naming logo; public images are answered meanwhile; the next logo is drawn', async () => {
    const dir = tempDir()
    const real = new URL('../../src/qr/render-worker.ts', import.meta.url).href
    let spawned = 0
    const qrRenderer = createQrRenderer({
      deadlineMs: 1500,
      // The first worker started is the shared one (the logo's call comes first): it never answers.
      spawn: () =>
        new Worker(
          spawned++ === 0 ? URL.createObjectURL(new Blob(['self.onmessage = () => Bun.sleepSync(4000)'])) : real,
        ),
    })
    const box = createLinkbox(testConfig(dir, { server: { host: '127.0.0.1', port: 0 } }), { qrRenderer })
    const base = `http://127.0.0.1:${box.listen().port}`
    try {
      const owner = (await box.accounts.createAccount({ name: 'stuck' })).key.key
      const form = () => {
        const f = new FormData()
        f.set('data', 'stuck logo')
        f.set('logo', new File([svg('')], 'logo.svg', { type: 'image/svg+xml' }))
        return f
      }
      const started = performance.now()
      const call = fetch(`${base}/api/qr.json`, { method: 'POST', body: form(), headers: { 'x-api-key': owner } })
      await Bun.sleep(100)
      for (let i = 0; i < 3; i++) {
        const link = await box.links.create({ url: `https://example.org/stuck/${i}` }, null)
        const sent = performance.now()
        const image = await fetch(`${base}/qr/${link.hex}.png`, { signal: AbortSignal.timeout(5000) })
        expect(image.status).toBe(200)
        expect(performance.now() - sent).toBeLessThan(1000)
      }
      const r = await call
      expect(r.status).toBe(400)
      expect((await r.json()).message).toContain('"logo" is invalid: it took longer than 1.5 s')
      expect(performance.now() - started).toBeLessThan(5000)
      const again = await fetch(`${base}/api/qr.json`, {
        method: 'POST',
        body: form(),
        headers: { 'x-api-key': owner },
      })
      expect(again.status).toBe(200)
    } finally {
      await box.close()
      removeDir(dir)
    }
  }, 30_000)
})
