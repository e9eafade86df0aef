// QR codes: GET /api/qr.json and the public /qr/<code>.png|.svg images. Every image the service makes
// is read back with real decoders — pngjs + jsQR for PNG, resvg (rasterising) + jsQR for SVG.
import { Resvg } from '@resvg/resvg-js'
import { afterAll, describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import jsQR from 'jsqr'
import { PNG } from 'pngjs'
import { createLinkbox } from '../../src/app/app'
import { BASE, makeBox, testConfig } from '../support/app'

let now = Date.now()
const box = await makeBox({}, { clock: () => now })
const key = await box.account('qr-user')
afterAll(() => box.cleanup())

interface Raster {
  width: number
  height: number
  data: Uint8Array
}

const qrJson = (query: Record<string, string>, headers: Record<string, string> = { 'x-api-key': key }) =>
  box.get('/api/qr.json', query, headers)

const readPng = (bytes: Uint8Array): Raster => PNG.sync.read(Buffer.from(bytes))

/** Rasterises an SVG at its own width/height, over white (jsQR reads RGB and ignores alpha). */
const rasteriseSvg = (svg: string): Raster => {
  const image = new Resvg(svg, { background: 'white', font: { loadSystemFonts: false } }).render()
  return { width: image.width, height: image.height, data: image.pixels }
}

/** Surrounds an image with white: jsQR needs a quiet zone that margin=0 leaves out. */
function padWhite(r: Raster, pad: number): Raster {
  const width = r.width + 2 * pad
  const height = r.height + 2 * pad
  const data = new Uint8Array(width * height * 4).fill(255)
  for (let y = 0; y < r.height; y++)
    data.set(r.data.subarray(y * r.width * 4, (y + 1) * r.width * 4), ((y + pad) * width + pad) * 4)
  return { width, height, data }
}

function decode(r: Raster) {
  const found = jsQR(new Uint8ClampedArray(r.data.buffer, r.data.byteOffset, r.data.byteLength), r.width, r.height)
  if (!found) throw new Error(`jsQR found no QR code in the ${r.width}×${r.height} image`)
  return found
}

function pixel(r: Raster, x: number, y: number): string {
  const at = (y * r.width + x) * 4
  return [...r.data.subarray(at, at + 4)].map((b) => b.toString(16).padStart(2, '0')).join('')
}

const fromDataUri = (uri: string, mime: string) => {
  expect(uri.startsWith(`data:${mime};base64,`)).toBe(true)
  return Buffer.from(uri.slice(uri.indexOf(',') + 1), 'base64')
}

async function pngOf(query: Record<string, string>): Promise<Raster> {
  const r = await qrJson(query)
  expect(r.status).toBe(200)
  return readPng(fromDataUri(r.body.return.data_uri, 'image/png'))
}

async function svgOf(query: Record<string, string>): Promise<string> {
  const r = await qrJson({ ...query, format: 'svg' })
  expect(r.status).toBe(200)
  expect(fromDataUri(r.body.return.data_uri, 'image/svg+xml').toString('utf8')).toBe(r.body.return.svg)
  return r.body.return.svg
}

const svgAttr = (svg: string, name: string) => new RegExp(`<svg[^>]* ${name}="([^"]*)"`).exec(svg)?.[1]

describe('qr.json answers', () => {
  test('the default answer describes a 300 px PNG at ecc M that decodes to the data', async () => {
    const r = await qrJson({ data: 'hello world' })
    expect(r.status).toBe(200)
    expect(r.body.status).toBe('success')
    const { data_uri, ...rest } = r.body.return
    expect(rest).toEqual({
      format: 'png',
      mime: 'image/png',
      size: 300,
      ecc: 'M',
      fg: '000000',
      bg: 'ffffff',
      margin: 4,
    })
    const png = readPng(fromDataUri(data_uri, 'image/png'))
    expect([png.width, png.height]).toEqual([300, 300])
    expect(decode(png).data).toBe('hello world')
  })

  const texts = {
    ascii: 'https://example.com/path?q=1&r=two#frag',
    'non-ASCII': 'Grüße – 日本語 🎉',
  }
  for (const [kind, text] of Object.entries(texts)) {
    test(`${kind} text survives PNG and SVG`, async () => {
      expect(decode(await pngOf({ data: text })).data).toBe(text)
      expect(decode(rasteriseSvg(await svgOf({ data: text }))).data).toBe(text)
    })
  }

  // 100 lower-case letters (byte mode) need version 5 at L, 6 at M, 8 at Q and 10 at H (ISO/IEC 18004
  // capacity table): the version the decoder finds shows which level was used.
  const versionAt = { L: 5, M: 6, Q: 8, H: 10 } as const
  for (const [ecc, version] of Object.entries(versionAt)) {
    test(`ecc ${ecc} is applied (PNG and SVG decode, version ${version})`, async () => {
      const data = 'x'.repeat(100)
      const r = await qrJson({ data, ecc })
      expect(r.body.return.ecc).toBe(ecc)
      const png = decode(readPng(fromDataUri(r.body.return.data_uri, 'image/png')))
      expect([png.data, png.version]).toEqual([data, version])
      const svg = decode(rasteriseSvg(await svgOf({ data, ecc, size: '600' })))
      expect([svg.data, svg.version]).toEqual([data, version])
    })
  }

  test('ecc and format are read case-insensitively and reported in their canonical form', async () => {
    const r = await qrJson({ data: 'x', ecc: 'q', format: 'SVG' })
    expect([r.body.return.ecc, r.body.return.format]).toEqual(['Q', 'svg'])
  })

  test('custom colours: normalised, reported without "#", and drawn', async () => {
    const r = await qrJson({ data: 'colours', fg: '#235', bg: 'FFE4B5', margin: '4', size: '290' })
    expect([r.body.return.fg, r.body.return.bg]).toEqual(['223355', 'ffe4b5'])
    const png = readPng(fromDataUri(r.body.return.data_uri, 'image/png'))
    // Version 1 with margin 4 is 29 modules: 10 px each. The quiet zone is bg, the finder corner fg.
    expect(pixel(png, 5, 5)).toBe('ffe4b5ff')
    expect(pixel(png, 45, 45)).toBe('223355ff')
    expect(decode(png).data).toBe('colours')

    const svg = await svgOf({ data: 'colours', fg: '#235', bg: 'FFE4B5' })
    expect(svg).toContain('fill="#ffe4b5"')
    expect(svg).toContain('stroke="#223355"')
    expect(decode(rasteriseSvg(svg)).data).toBe('colours')
  })

  test('8-digit colours keep their alpha; an opaque one is reported with 6 digits', async () => {
    const r = await qrJson({ data: 'alpha', fg: '000000ff', bg: 'ffffff80', size: '290' })
    expect([r.body.return.fg, r.body.return.bg]).toEqual(['000000', 'ffffff80'])
    const png = readPng(fromDataUri(r.body.return.data_uri, 'image/png'))
    expect(pixel(png, 5, 5)).toBe('ffffff80')
    const svg = (await qrJson({ data: 'alpha', bg: 'ffffff80', format: 'svg' })).body.return.svg
    expect(svg).toContain('fill="#ffffff" fill-opacity=".50"')
  })

  // 97 and 123 are sizes where qrcode's own arithmetic would come out one pixel short.
  for (const size of [64, 97, 123, 300, 1001, 2048]) {
    test(`size ${size}: the PNG is ${size}×${size} and the SVG says so`, async () => {
      const png = await pngOf({ data: 'a', size: String(size), margin: '0' })
      expect([png.width, png.height]).toEqual([size, size])
      expect(decode(padWhite(png, 40)).data).toBe('a')
      const svg = await svgOf({ data: 'a', size: String(size), margin: '0' })
      expect([svgAttr(svg, 'width'), svgAttr(svg, 'height')]).toEqual([String(size), String(size)])
      // The viewBox counts modules (version 1: 21, no margin); width and height scale it to `size`.
      expect(svgAttr(svg, 'viewBox')).toBe('0 0 21 21')
      const raster = rasteriseSvg(svg)
      expect([raster.width, raster.height]).toEqual([size, size])
      expect(decode(padWhite(raster, 40)).data).toBe('a')
    })
  }

  test('margin sets the quiet zone in modules', async () => {
    // Version 1 (21 modules): margin 0 puts the finder pattern in the corner pixel.
    const bare = await pngOf({ data: 'm', margin: '0', size: '210' })
    expect(pixel(bare, 0, 0)).toBe('000000ff')
    // Margin 16: 53 modules in 530 px, so everything left of 160 px is background.
    const wide = await pngOf({ data: 'm', margin: '16', size: '530' })
    expect(pixel(wide, 155, 155)).toBe('ffffffff')
    expect(pixel(wide, 165, 165)).toBe('000000ff')
    expect(decode(wide).data).toBe('m')
    const svg = await svgOf({ data: 'm', margin: '16' })
    expect(svgAttr(svg, 'viewBox')).toBe('0 0 53 53')
  })

  test('empty optional parameters mean their defaults', async () => {
    const r = await qrJson({ data: 'e', format: '', fg: '', bg: '', ecc: '', size: '', margin: '', raw: '' })
    const { data_uri: _, ...rest } = r.body.return
    expect(rest).toEqual({
      format: 'png',
      mime: 'image/png',
      size: 300,
      ecc: 'M',
      fg: '000000',
      bg: 'ffffff',
      margin: 4,
    })
  })

  test('raw=1 answers with the PNG itself', async () => {
    const res = await box.request(`/api/qr.json?data=raw&raw=1&size=200`, { headers: { 'x-api-key': key } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/png')
    expect(res.headers.get('cache-control')).toBe('private, max-age=86400')
    const png = readPng(new Uint8Array(await res.arrayBuffer()))
    expect([png.width, decode(png).data]).toEqual([200, 'raw'])
  })

  test('raw=1 answers with the SVG itself', async () => {
    const res = await box.request(`/api/qr.json?data=raw&raw=1&format=svg`, { headers: { 'x-api-key': key } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/svg+xml')
    expect(res.headers.get('cache-control')).toBe('private, max-age=86400')
    const svg = await res.text()
    expect(svg.startsWith('<svg')).toBe(true)
    expect(decode(rasteriseSvg(svg)).data).toBe('raw')
  })

  test('raw=0 gives the JSON answer', async () => {
    const r = await qrJson({ data: 'x', raw: '0' })
    expect(r.headers.get('content-type')).toContain('application/json')
    expect(r.body.return.format).toBe('png')
  })
})

describe('qr.json refuses', () => {
  const invalid: [string, Record<string, string>, string, RegExp][] = [
    ['fg zzz', { fg: 'zzz' }, 'fg', /hex colour of 3, 6 or 8 digits/],
    ['fg #12', { fg: '#12' }, 'fg', /hex colour/],
    ['bg 12345', { bg: '12345' }, 'bg', /hex colour/],
    ['bg 4 digits', { bg: 'fff8' }, 'bg', /hex colour/],
    ['bg ##fff', { bg: '##fff' }, 'bg', /hex colour/],
    ['ecc X', { ecc: 'X' }, 'ecc', /one of L, M, Q, H/],
    ['size 63', { size: '63' }, 'size', /from 64 to 2048/],
    ['size 2049', { size: '2049' }, 'size', /from 64 to 2048/],
    ['size abc', { size: 'abc' }, 'size', /whole number of pixels/],
    ['size 1.5', { size: '1.5' }, 'size', /whole number of pixels/],
    ['size -300', { size: '-300' }, 'size', /whole number of pixels/],
    ['margin 17', { margin: '17' }, 'margin', /from 0 to 16/],
    ['margin -1', { margin: '-1' }, 'margin', /whole number of modules from 0 to 16/],
    ['format gif', { format: 'gif' }, 'format', /one of png, svg/],
    ['raw yes', { raw: 'yes' }, 'raw', /1 .* or 0/],
  ]
  for (const [label, query, name, rule] of invalid) {
    test(`${label} → 400 naming "${name}"`, async () => {
      const r = await qrJson({ data: 'x', ...query })
      expect(r.status).toBe(400)
      expect(r.body.status).toBe('error')
      expect(r.body.code).toBe('invalid_parameter')
      expect(r.body.message).toContain(`"${name}"`)
      expect(r.body.message).toMatch(rule)
    })
  }

  test('missing or empty data → 400 missing_parameter', async () => {
    for (const query of [{}, { data: '' }] as Record<string, string>[]) {
      const r = await qrJson(query)
      expect([r.status, r.body.code]).toEqual([400, 'missing_parameter'])
      expect(r.body.message).toContain('"data"')
    }
  })

  test('data over the capacity at H but within it at L: 400 stating the limit, then 200', async () => {
    const data = 'a'.repeat(1500)
    const r = await qrJson({ data, ecc: 'H' })
    expect([r.status, r.body.code]).toEqual([400, 'invalid_parameter'])
    expect(r.body.message).toContain('"data"')
    expect(r.body.message).toContain('1500 bytes')
    expect(r.body.message).toContain('at ecc H: at most 1273 bytes')
    // Version 28 at L: 129 modules + 2×4 margin; 10 px per module keeps jsQR reliable.
    const ok = await qrJson({ data, ecc: 'L', size: '1370' })
    expect(ok.status).toBe(200)
    expect(decode(readPng(fromDataUri(ok.body.return.data_uri, 'image/png'))).data).toBe(data)
  })

  test('the capacity boundary: 1273 bytes fit at H, 1274 do not', async () => {
    expect((await qrJson({ data: 'a'.repeat(1273), ecc: 'H', size: '2048' })).status).toBe(200)
    const r = await qrJson({ data: 'a'.repeat(1274), ecc: 'H', size: '2048' })
    expect([r.status, r.body.code]).toEqual([400, 'invalid_parameter'])
    expect(r.body.message).toContain('1274 bytes')
  })

  test('data far beyond any capacity is refused with the same message', async () => {
    const r = await qrJson({ data: '1'.repeat(8000), ecc: 'L' })
    expect(r.status).toBe(400)
    expect(r.body.message).toContain('at ecc L: at most 2953 bytes (7089 if only digits')
  })

  test('a size below two pixels per module → 400 naming "size" and the minimum', async () => {
    // 1500 bytes at L is version 28: 129 modules + 2×4 margin = 137, so 274 pixels.
    const r = await qrJson({ data: 'a'.repeat(1500), ecc: 'L', size: '273' })
    expect([r.status, r.body.code]).toEqual([400, 'invalid_parameter'])
    expect(r.body.message).toContain('"size"')
    expect(r.body.message).toContain('at least 274 pixels')
    expect((await qrJson({ data: 'a'.repeat(1500), ecc: 'L', size: '273', format: 'svg' })).status).toBe(400)
    const png = await pngOf({ data: 'a'.repeat(1500), ecc: 'L', size: '274' })
    expect([png.width, png.height]).toEqual([274, 274])
  })

  // Issue 36: 35 bytes at ecc Q are version 4 (33 modules, 41 with the margin): at 64 px a module is
  // 1.56 px, which no reader decoded. Refused naming the smallest size that works, which decodes.
  test('35 characters at ecc=Q size=64 margin=4 (modules under 2 px) → 400 naming size and 82, the smallest that works', async () => {
    const data = 'https://example.com/abcdefghijklmno'
    expect(data).toHaveLength(35)
    for (const format of ['png', 'svg']) {
      const r = await qrJson({ data, ecc: 'Q', size: '64', margin: '4', format })
      expect([r.status, r.body.code]).toEqual([400, 'invalid_parameter'])
      expect(r.body.message).toContain('"size"')
      expect(r.body.message).toContain('at least 82 pixels')
      expect((await qrJson({ data, ecc: 'Q', size: '81', margin: '4', format })).status).toBe(400)
    }
    const png = await pngOf({ data, ecc: 'Q', size: '82', margin: '4' })
    expect([png.width, png.height]).toEqual([82, 82])
    expect(decode(padWhite(png, 40)).data).toBe(data)
  })

  test('no key → 401 missing_key; unknown key → 401 invalid_key', async () => {
    const none = await qrJson({ data: 'x' }, {})
    expect([none.status, none.body.code]).toEqual([401, 'missing_key'])
    const bad = await qrJson({ data: 'x' }, { 'x-api-key': 'not-a-key' })
    expect([bad.status, bad.body.code]).toEqual([401, 'invalid_key'])
  })

  test('a key without the qr scope → 403 scope_denied', async () => {
    await box.account('links-only')
    const { key: linksKey } = await box.accounts.createKey({ account: 'links-only', scopes: ['links'] })
    const r = await qrJson({ data: 'x' }, { 'x-api-key': linksKey })
    expect([r.status, r.body.code]).toEqual([403, 'scope_denied'])
    expect(r.body.message).toContain('"qr"')
  })

  // POST takes the same fields (and a logo: qr-logo.test.ts); other verbs are still refused.
  test('a verb other than GET or POST: 405 naming both', async () => {
    const r = await box.request('/api/qr.json?data=x', { method: 'PUT', headers: { 'x-api-key': key } })
    expect(r.status).toBe(405)
    expect(r.headers.get('allow')).toBe('GET, POST')
    expect((await r.json()).code).toBe('method_not_allowed')
  })
})

test('qr.json is reachable through the marketplace proxy without a key', async () => {
  const mp = await makeBox({ marketplace: { proxy_secret: 'proxy-secret' } })
  try {
    const r = await mp.get(
      '/api/qr.json',
      { data: 'mp' },
      {
        'X-RapidAPI-Proxy-Secret': 'proxy-secret',
        'X-RapidAPI-User': 'someone',
      },
    )
    expect(r.status).toBe(200)
    expect(decode(readPng(fromDataUri(r.body.return.data_uri, 'image/png'))).data).toBe('mp')
  } finally {
    await mp.cleanup()
  }
})

describe('public /qr/<code> images', () => {
  const cacheDir = join(box.dir, 'cache', 'qr')
  const createLink = async (fields: Record<string, string> = {}) => {
    const r = await box.post('/api/getLink.json', { url: 'https://example.com/x', ...fields }, { 'x-api-key': key })
    expect(r.status).toBe(200)
    return r.body.return.hex as string
  }

  test('the PNG and the SVG encode the short link', async () => {
    const hex = await createLink()
    const png = await box.request(`/qr/${hex}.png`)
    expect(png.status).toBe(200)
    expect(png.headers.get('content-type')).toBe('image/png')
    expect(png.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(decode(readPng(new Uint8Array(await png.arrayBuffer()))).data).toBe(`${BASE}/${hex}`)

    const svg = await box.request(`/qr/${hex}.svg`)
    expect(svg.status).toBe(200)
    expect(svg.headers.get('content-type')).toBe('image/svg+xml')
    expect(decode(rasteriseSvg(await svg.text())).data).toBe(`${BASE}/${hex}`)
  })

  test('the record of a link points at its PNG', async () => {
    const r = await box.post('/api/getLink.json', { url: 'https://example.com/y' })
    const path = new URL(r.body.return.qr).pathname
    const res = await box.request(path)
    expect(res.status).toBe(200)
    expect(decode(readPng(new Uint8Array(await res.arrayBuffer()))).data).toBe(r.body.return.url)
  })

  test('a strong ETag; If-None-Match with it (plain, weak, in a list, or *) → 304 without a body', async () => {
    const hex = await createLink()
    const first = await box.request(`/qr/${hex}.png`)
    const etag = first.headers.get('etag')!
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/)
    const second = await box.request(`/qr/${hex}.png`)
    expect(second.headers.get('etag')).toBe(etag)
    expect(Buffer.from(await second.arrayBuffer())).toEqual(Buffer.from(await first.arrayBuffer()))

    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await box.request(`/qr/${hex}.png`, { headers: { 'if-none-match': inm } })
      expect(res.status).toBe(304)
      expect(res.headers.get('etag')).toBe(etag)
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      expect(await res.text()).toBe('')
    }
    const stale = await box.request(`/qr/${hex}.png`, { headers: { 'if-none-match': '"other"' } })
    expect(stale.status).toBe(200)
  })

  test('the PNG and the SVG of one code have different ETags', async () => {
    const hex = await createLink()
    const png = await box.request(`/qr/${hex}.png`)
    const svg = await box.request(`/qr/${hex}.svg`)
    expect(png.headers.get('etag')).not.toBe(svg.headers.get('etag'))
  })

  test('unknown codes and malformed names → 404 page, and nothing is written', async () => {
    const before = existsSync(cacheDir) ? readdirSync(cacheDir).length : 0
    for (const path of [
      '/qr/nope42.png',
      '/qr/nope42.svg',
      '/qr/abc.gif',
      '/qr/abc',
      '/qr/a.b.png',
      '/qr/.png',
      '/qr/%2E%2E%2Flinkbox.png',
      `/qr/${'a'.repeat(65)}.png`,
    ]) {
      const res = await box.request(path)
      expect(res.status).toBe(404)
      expect(res.headers.get('content-type')).toContain('text/html')
    }
    expect(existsSync(cacheDir) ? readdirSync(cacheDir).length : 0).toBe(before)
  })

  test('the image is cached as a file under the data dir', async () => {
    const hex = await createLink()
    const res = await box.request(`/qr/${hex}.svg`)
    const body = Buffer.from(await res.arrayBuffer())
    const files = readdirSync(cacheDir).filter((f) => f.endsWith('.svg'))
    const match = files.filter((f) => readFileSync(join(cacheDir, f)).equals(body))
    expect(match).toHaveLength(1)
    expect(match[0]).toMatch(/^[0-9a-f]{64}\.svg$/)
    expect(readdirSync(cacheDir).filter((f) => f.endsWith('.tmp'))).toEqual([])
  })

  test('after a restart the image comes from the file, not a new rendering', async () => {
    const hex = await createLink()
    const original = Buffer.from(await (await box.request(`/qr/${hex}.png`)).arrayBuffer())
    const file = readdirSync(cacheDir).find((f) => readFileSync(join(cacheDir, f)).equals(original))!
    // Put another (valid) image in its place: a second app on the same data dir must serve that one.
    const other = Buffer.from(
      await (await box.request(`/api/qr.json?data=other&raw=1`, { headers: { 'x-api-key': key } })).arrayBuffer(),
    )
    const backup = join(box.dir, 'backup.png')
    copyFileSync(join(cacheDir, file), backup)
    writeFileSync(join(cacheDir, file), other)
    const second = createLinkbox(testConfig(box.dir))
    try {
      const res = await second.app.handle(new Request(`${BASE}/qr/${hex}.png`))
      expect(Buffer.from(await res.arrayBuffer())).toEqual(other)
    } finally {
      await second.close()
      copyFileSync(backup, join(cacheDir, file))
    }
  })

  test('an expired link still has its image', async () => {
    const hex = await createLink({ expire: '60' })
    now += 120_000
    expect((await box.request(`/${hex}`)).status).toBe(410)
    const res = await box.request(`/qr/${hex}.png`)
    expect(res.status).toBe(200)
    expect(decode(readPng(new Uint8Array(await res.arrayBuffer()))).data).toBe(`${BASE}/${hex}`)
  })

  test('a deleted code → 404; the same code for a new link gets the same image', async () => {
    const alias = 'qr-reused'
    await createLink({ alias })
    const etag = (await box.request(`/qr/${alias}.png`)).headers.get('etag')
    expect((await box.post('/api/delete.json', { code: alias }, { 'x-api-key': key })).status).toBe(200)
    expect((await box.request(`/qr/${alias}.png`)).status).toBe(404)
    await createLink({ alias, url: 'https://example.org/elsewhere' })
    const again = await box.request(`/qr/${alias}.png`)
    expect(again.status).toBe(200)
    expect(again.headers.get('etag')).toBe(etag)
  })

  test('codes differing only in case get their own images', async () => {
    await createLink({ alias: 'CaseQR' })
    await createLink({ alias: 'caseqr' })
    const upper = await box.request('/qr/CaseQR.png')
    const lower = await box.request('/qr/caseqr.png')
    expect(decode(readPng(new Uint8Array(await upper.arrayBuffer()))).data).toBe(`${BASE}/CaseQR`)
    expect(decode(readPng(new Uint8Array(await lower.arrayBuffer()))).data).toBe(`${BASE}/caseqr`)
  })
})
