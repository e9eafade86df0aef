// Social previews over a real socket (issue 40, SPEC §2a): og_title, og_description and og_image sent to
// getLink.json and update.json; each link-preview crawler gets the card (its tags read back, the image fetched
// and decoded), browsers and scripts get the redirect, and no crawler fetch is a click.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import encodeWebp, { init as initWebpEncoder } from '@jsquash/webp/encode.js'
import encWasm from '@jsquash/webp/codec/enc/webp_enc.wasm' with { type: 'file' }
import * as jpeg from 'jpeg-js'
import { PNG } from 'pngjs'
import { createLinkbox, type Linkbox } from '../../src/app/app'
import { tempDir, testConfig } from '../support/app'

let dir: string
let box: Linkbox
let base: string
let key: string

beforeAll(async () => {
  dir = tempDir()
  box = createLinkbox(testConfig(dir, { server: { host: '127.0.0.1', port: 0 } }))
  base = `http://127.0.0.1:${box.listen().port}`
  // The records' addresses are the configured base_url's; requests go to the socket.
  key = (await box.accounts.createAccount({ name: 'preview-user' })).key.key
})
afterAll(async () => {
  await box?.close()
  rmSync(dir, { recursive: true, force: true })
})

// ---------------------------------------------------------------------------------------------------------
// Images and requests

function raster(width: number, height: number, alpha = 255) {
  const data = new Uint8Array(width * height * 4)
  for (let i = 0; i < width * height; i++) data.set([(i % width) % 256, 90, 200, alpha], i * 4)
  return { width, height, data }
}
const jpegOf = (w: number, h: number) => new Uint8Array(jpeg.encode(raster(w, h), 90).data)
function pngOf(w: number, h: number, alpha = 255) {
  const png = new PNG({ width: w, height: h })
  png.data = Buffer.from(raster(w, h, alpha).data)
  return new Uint8Array(PNG.sync.write(png))
}
async function webpOf(w: number, h: number) {
  await initWebpEncoder(new WebAssembly.Module(await Bun.file(encWasm).arrayBuffer()))
  const r = raster(w, h)
  const image = { width: w, height: h, data: new Uint8ClampedArray(r.data), colorSpace: 'srgb' }
  return new Uint8Array(await encodeWebp(image as unknown as ImageData, { quality: 80 }))
}

async function call(path: string, fields: Record<string, string | Blob>) {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  const res = await fetch(`${base}${path}`, { method: 'POST', body: form, headers: { 'x-api-key': key } })
  return { status: res.status, body: (await res.json()) as any }
}
const file = (bytes: Uint8Array, type = 'application/octet-stream') =>
  new Blob([bytes as Uint8Array<ArrayBuffer>], { type })
/** The socket's address of a record's absolute URL (the records name base_url). */
const onSocket = (url: string) => `${base}${new URL(url).pathname}${new URL(url).search}`
const visit = (code: string, ua: string) =>
  fetch(`${base}/${code}`, { redirect: 'manual', headers: { 'user-agent': ua } })

const CRAWLERS: Record<string, string> = {
  slack: 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
  discord: 'Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)',
  facebook: 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
  facebot: 'Facebot',
  x: 'Twitterbot/1.0',
  linkedin: 'LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)',
  whatsapp: 'WhatsApp/2.23.20.0 A',
  telegram: 'TelegramBot (like TwitterBot)',
  mastodon: 'http.rb/5.1.1 (Mastodon/4.2.1; +https://mastodon.social/) Bot',
  imessage:
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0',
}
const PEOPLE: Record<string, string> = {
  chrome: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
  firefox: 'Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0',
  safari:
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
}

/** The content of each <meta property|name="key"> of a page. */
function metas(html: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of html.matchAll(/<meta (?:property|name)="([^"]+)" content="([^"]*)">/g)) out[m[1]!] = m[2]!
  return out
}

// ---------------------------------------------------------------------------------------------------------

describe('a link with a social preview', () => {
  let code: string
  let record: any
  beforeAll(async () => {
    const made = await call('/api/getLink.json', {
      url: 'https://example.com/sale?x=1',
      og_title: 'Spring "sale" <b>& more</b>',
      og_description: 'Half price until Sunday.',
      og_image: file(jpegOf(2000, 1000), 'image/jpeg'),
    })
    expect(made.status).toBe(200)
    record = made.body.return
    code = record.hex
  })

  test('the record carries the preview, its image at a versioned address on the short domain', () => {
    expect(record.og_title).toBe('Spring "sale" <b>& more</b>')
    expect(record.og_description).toBe('Half price until Sunday.')
    expect(record.og_image).toMatch(new RegExp(`^http://localhost:8080/_og/${code}/[0-9a-f]{12}\\.jpg$`))
  })

  for (const [name, ua] of Object.entries(CRAWLERS))
    test(`${name}'s crawler gets the card, and its image decodes`, async () => {
      const res = await visit(code, ua)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
      const html = await res.text()
      expect(html).not.toContain('<b>')
      const tags = metas(html)
      expect(tags['og:title']).toBe('Spring &quot;sale&quot; &lt;b&gt;&amp; more&lt;/b&gt;')
      expect(tags['og:description']).toBe('Half price until Sunday.')
      expect(tags['og:url']).toBe(`http://localhost:8080/${code}`)
      expect(tags['og:image']).toBe(record.og_image)
      expect(tags['twitter:card']).toBe('summary_large_image')
      const image = await fetch(onSocket(tags['og:image']!), { headers: { 'user-agent': ua } })
      expect(image.status).toBe(200)
      expect(image.headers.get('content-type')).toBe('image/jpeg')
      expect(image.headers.get('cache-control')).toContain('immutable')
      expect(image.headers.get('x-content-type-options')).toBe('nosniff')
      expect(image.headers.get('set-cookie')).toBeNull()
      const decoded = jpeg.decode(new Uint8Array(await image.arrayBuffer()), { useTArray: true })
      expect([decoded.width, decoded.height]).toEqual([1200, 600])
    })

  test('people and scripts get the redirect; only people are clicks', async () => {
    for (const ua of [...Object.values(PEOPLE), 'curl/8.5.0']) {
      const res = await visit(code, ua)
      expect(res.status).toBe(302)
      expect(res.headers.get('location')).toBe('https://example.com/sale?x=1')
    }
    await box.recorder.flush()
    const listed = await fetch(`${base}/api/links.json`, { headers: { 'x-api-key': key } })
    const mine = ((await listed.json()) as any).return.links.find((l: any) => l.hex === code)
    // Chrome, Firefox and Safari: three clicks; the ten crawlers and curl are bots.
    expect(mine.clicks).toBe(3)
  })

  test('an old or made-up image address is 404', async () => {
    expect((await fetch(`${base}/_og/${code}/000000000000.jpg`)).status).toBe(404)
    expect((await fetch(`${base}/_og/nosuchcode/000000000000.jpg`)).status).toBe(404)
  })

  test('a new image is a new address; og_image= removes it, and the card then has no image', async () => {
    const changed = await call('/api/update.json', { code, og_image: file(pngOf(300, 200, 128)) })
    expect(changed.status).toBe(200)
    const url = changed.body.return.og_image as string
    expect(url).toMatch(/\.png$/)
    expect((await fetch(onSocket(record.og_image))).status).toBe(404)
    const png = await fetch(onSocket(url))
    expect(png.headers.get('content-type')).toBe('image/png')
    const decoded = PNG.sync.read(Buffer.from(await png.arrayBuffer()))
    expect([decoded.width, decoded.height]).toEqual([300, 200])

    const removed = await call('/api/update.json', { code, og_image: '' })
    expect(removed.status).toBe(200)
    expect(removed.body.return.og_image).toBeNull()
    expect(removed.body.return.og_title).toBe('Spring "sale" <b>& more</b>')
    expect((await fetch(onSocket(url))).status).toBe(404)
    const tags = metas(await (await visit(code, CRAWLERS.slack!)).text())
    expect(tags['og:image']).toBeUndefined()
    expect(tags['twitter:card']).toBe('summary')
  })
})

test('link.updated (the event webhooks are made from) carries og_title, og_description and the image address', async () => {
  const seen: any[] = []
  box.events.on('link.updated', (e: any) => seen.push(e.link))
  const made = await call('/api/getLink.json', { url: 'https://example.com/evt' })
  const changed = await call('/api/update.json', {
    code: made.body.return.hex,
    og_title: 'Event',
    og_description: 'Described',
    og_image: file(pngOf(20, 10)),
  })
  expect(seen.at(-1)).toMatchObject({
    hex: made.body.return.hex,
    og_title: 'Event',
    og_description: 'Described',
    og_image: changed.body.return.og_image,
  })
  expect(seen.at(-1).og_image).toMatch(/^http:\/\/localhost:8080\/_og\//)
})

describe('uploads', () => {
  test('a WebP is read and stored anew', async () => {
    const made = await call('/api/getLink.json', {
      url: 'https://example.com/webp',
      og_image: file(await webpOf(64, 48), 'image/webp'),
    })
    expect(made.status).toBe(200)
    const image = await fetch(onSocket(made.body.return.og_image))
    expect(image.headers.get('content-type')).toBe('image/jpeg')
    const decoded = jpeg.decode(new Uint8Array(await image.arrayBuffer()), { useTArray: true })
    expect([decoded.width, decoded.height]).toEqual([64, 48])
  })

  test('without a key no preview is taken (a card on a link nobody owns would be a phishing kit): 401 naming the field', async () => {
    for (const [field, value] of [
      ['og_title', 'Your bank'],
      ['og_description', 'Sign in to keep your account'],
      ['og_image', file(jpegOf(8, 8))],
    ] as const) {
      const form = new FormData()
      form.append('url', 'https://example.com/anon')
      form.append(field, value)
      const res = await fetch(`${base}/api/getLink.json`, { method: 'POST', body: form })
      const body = (await res.json()) as { code: string; message: string }
      expect({ field, status: res.status, code: body.code }).toEqual({ field, status: 401, code: 'missing_key' })
      expect(body.message).toContain(`"${field}"`)
    }
  })

  test('over 1 MiB is 413 naming og_image', async () => {
    const big = new Uint8Array(1024 * 1024 + 1)
    big.set(jpegOf(8, 8))
    const res = await call('/api/getLink.json', { url: 'https://example.com/big', og_image: file(big) })
    expect(res.status).toBe(413)
    expect(res.body.message).toContain('og_image')
  })

  test('bytes that are no image, a text value and a broken image are 400 naming og_image', async () => {
    for (const og_image of [
      file(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>')),
      'not a file',
    ]) {
      const res = await call('/api/getLink.json', { url: 'https://example.com/no', og_image })
      expect(res.status).toBe(400)
      expect(res.body.message).toContain('"og_image"')
    }
    const broken = jpegOf(64, 64).slice(0, 400)
    const res = await call('/api/getLink.json', { url: 'https://example.com/broken', og_image: file(broken) })
    expect(res.status).toBe(400)
    expect(res.body.message).toContain('"og_image"')
  })

  test('a header declaring more than 4096 pixels a side is refused before decoding', async () => {
    const png = pngOf(8, 8)
    new DataView(png.buffer).setUint32(16, 100_000)
    const res = await call('/api/getLink.json', { url: 'https://example.com/huge', og_image: file(png) })
    expect(res.status).toBe(400)
    expect(res.body.message).toContain('100000×8')
  })

  test('og_title of 200 and og_description of 500 characters are taken; one more is refused, naming each', async () => {
    const full = await call('/api/getLink.json', {
      url: 'https://example.com/full',
      og_title: 'é'.repeat(200),
      og_description: 'd'.repeat(500),
    })
    expect(full.status).toBe(200)
    expect([...full.body.return.og_title].length).toBe(200)
    expect(full.body.return.og_description.length).toBe(500)
    for (const [name, n] of [
      ['og_title', 201],
      ['og_description', 501],
    ] as const) {
      const res = await call('/api/getLink.json', { url: 'https://example.com/long', [name]: 'x'.repeat(n) })
      expect(res.status).toBe(400)
      expect(res.body.message).toContain(`"${name}"`)
    }
  })
})

describe('links a crawler gets no card for', () => {
  test('a link without a preview redirects crawlers as before', async () => {
    const made = await call('/api/getLink.json', { url: 'https://example.com/plain' })
    const res = await visit(made.body.return.hex, CRAWLERS.facebook!)
    expect(res.status).toBe(302)
  })

  test('a password link shows its form, never its preview', async () => {
    const made = await call('/api/getLink.json', {
      url: 'https://example.com/secret',
      password: 'hunter22',
      og_title: 'Secret title',
      og_image: file(pngOf(16, 16)),
    })
    const res = await visit(made.body.return.hex, CRAWLERS.slack!)
    const html = await res.text()
    expect(html).not.toContain('Secret title')
    expect(html).not.toContain('og:')
    expect((await fetch(onSocket(made.body.return.og_image))).status).toBe(404)
  })

  test('an expired link answers 410 to crawlers too', async () => {
    const made = await call('/api/getLink.json', { url: 'https://example.com/old', og_title: 'Old', expire: '1' })
    await Bun.sleep(1100)
    const res = await visit(made.body.return.hex, CRAWLERS.discord!)
    expect(res.status).toBe(410)
    expect(await res.text()).not.toContain('og:title')
  })
})
