// A link's QR code in the dashboard, through the real app and SQLite file: the section of the link's page
// (its GET form's values from the URL, errors at their fields), and /dashboard/links/<code>/qr.png|.svg —
// the same bytes as qr.json for the same settings, read back with jsQR, downloads named as attachments,
// the session's own links only.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import jsQR from 'jsqr'
import { PNG } from 'pngjs'
import { makeBox, type TestBox } from './support/app'
import { signIn, type SignedIn } from './support/dashboard'

let box: TestBox
let alice: SignedIn
let bob: SignedIn
let aliceKey: string
let code: string
let shortUrl: string

beforeAll(async () => {
  box = await makeBox()
  aliceKey = (await box.accounts.createAccount({ name: 'alice', password: 'correct horse' })).key.key
  await box.accounts.createAccount({ name: 'bob', password: 'battery staple' })
  alice = await signIn(box, 'alice', 'correct horse')
  bob = await signIn(box, 'bob', 'battery staple')
  const link = await box.links.create({ url: 'https://example.com/qr-styled', alias: 'styled' }, box.accounts.authenticate(aliceKey)!)
  code = link.hex
  shortUrl = link.url
})
afterAll(() => box.cleanup())

const get = (who: SignedIn | null, path: string) => box.request(path, { headers: who ? { cookie: who.cookie } : {} })
const html = async (who: SignedIn, path: string) => {
  const res = await get(who, path)
  return { status: res.status, text: await res.text() }
}
const attr = (text: string, selector: RegExp) => selector.exec(text)?.[1]?.replaceAll('&amp;', '&')

function decodePng(bytes: Uint8Array) {
  const png = PNG.sync.read(Buffer.from(bytes))
  const found = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.byteLength), png.width, png.height)
  return { png, data: found?.data ?? null }
}

describe("the link's page", () => {
  test('has a QR code section: a GET form with the defaults, a preview and PNG/SVG downloads', async () => {
    const { status, text } = await html(alice, `/dashboard/links/${code}`)
    expect(status).toBe(200)
    expect(text).toContain('<h2 id="qr-style-heading">QR code</h2>')
    expect(text).toContain(`<form method="get" action="/dashboard/links/${code}#qr-style" class="qr-style-form" data-qr-image="/dashboard/links/${code}/qr">`)
    expect(attr(text, /id="qr-fg" name="fg"[^>]* value="([^"]*)"/)).toBe('#000000')
    expect(attr(text, /id="qr-bg" name="bg"[^>]* value="([^"]*)"/)).toBe('#ffffff')
    expect(attr(text, /id="qr-size" name="size"[^>]* value="([^"]*)"/)).toBe('300')
    expect(text).toMatch(/<option value="M" selected>/)
    expect(attr(text, /id="qr-margin" name="margin"[^>]* value="([^"]*)"/)).toBe('4')
    expect(attr(text, /<img id="qr-preview" src="([^"]*)"/)).toBe(`/dashboard/links/${code}/qr.png?fg=000000&bg=ffffff&size=300&ecc=M&margin=4`)
    expect(attr(text, /id="qr-png"[^>]* href="([^"]*)"/)).toBe(`/dashboard/links/${code}/qr.png?fg=000000&bg=ffffff&size=300&ecc=M&margin=4&download=1`)
    expect(attr(text, /id="qr-svg"[^>]* href="([^"]*)"/)).toBe(`/dashboard/links/${code}/qr.svg?fg=000000&bg=ffffff&size=300&ecc=M&margin=4&download=1`)
  })

  test("the URL's settings fill the form and the preview (Preview without JavaScript)", async () => {
    const { text } = await html(alice, `/dashboard/links/${code}?fg=%231d2330&bg=FFE4B5&size=512&ecc=h&margin=2`)
    expect(attr(text, /id="qr-fg" name="fg"[^>]* value="([^"]*)"/)).toBe('#1d2330')
    expect(attr(text, /id="qr-bg" name="bg"[^>]* value="([^"]*)"/)).toBe('#ffe4b5')
    expect(attr(text, /id="qr-size" name="size"[^>]* value="([^"]*)"/)).toBe('512')
    expect(text).toMatch(/<option value="H" selected>/)
    expect(attr(text, /<img id="qr-preview" src="([^"]*)"/)).toBe(`/dashboard/links/${code}/qr.png?fg=1d2330&bg=ffe4b5&size=512&ecc=H&margin=2`)
  })

  test('a value the QR rules refuse is shown at its field; the other settings still apply', async () => {
    const { status, text } = await html(alice, `/dashboard/links/${code}?fg=zzz&size=9000&ecc=H`)
    expect(status).toBe(200)
    expect(text).toMatch(/id="qr-fg" name="fg" aria-describedby="qr-fg-error" aria-invalid="true"/)
    expect(text).toContain('<span class="error" id="qr-fg-error">The foreground colour is invalid: it must be a hex colour')
    expect(text).toContain('<span class="error" id="qr-size-error">The size is invalid: it must be a whole number of pixels from 64 to 2048.</span>')
    expect(attr(text, /<img id="qr-preview" src="([^"]*)"/)).toBe(`/dashboard/links/${code}/qr.png?fg=000000&bg=ffffff&size=300&ecc=H&margin=4`)
    // Markup from the URL never reaches the page as markup.
    const hostile = await html(alice, `/dashboard/links/${code}?fg=%22%3E%3Cscript%3E`)
    expect(hostile.text).not.toContain('"><script>')
  })
})

describe('the image', () => {
  test('PNG: the same bytes as qr.json for the same settings, decoding to the short link', async () => {
    const settings = { fg: '1d2330', bg: 'ffe4b5', size: '320', ecc: 'Q', margin: '3' }
    const res = await get(alice, `/dashboard/links/${code}/qr.png?${new URLSearchParams(settings)}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/png')
    expect(res.headers.get('cache-control')).toBe('private, max-age=300')
    expect(res.headers.get('content-disposition')).toBeNull()
    const bytes = new Uint8Array(await res.arrayBuffer())
    const api = await box.request(`/api/qr.json?${new URLSearchParams({ ...settings, data: shortUrl, raw: '1' })}`, { headers: { 'x-api-key': aliceKey } })
    expect(Buffer.from(bytes).equals(Buffer.from(await api.arrayBuffer()))).toBe(true)
    const { png, data } = decodePng(bytes)
    expect([png.width, data]).toEqual([320, shortUrl])
    expect([...png.data.subarray(0, 4)]).toEqual([0xff, 0xe4, 0xb5, 0xff])
  })

  test('downloads: PNG and SVG as attachments named after the code; an SVG that runs and loads nothing', async () => {
    const png = await get(alice, `/dashboard/links/${code}/qr.png?size=256&download=1`)
    expect(png.headers.get('content-disposition')).toBe(`attachment; filename="${code}-qr.png"; filename*=UTF-8''${code}-qr.png`)
    expect(decodePng(new Uint8Array(await png.arrayBuffer())).data).toBe(shortUrl)
    const svg = await get(alice, `/dashboard/links/${code}/qr.svg?fg=aa0000&download=1`)
    expect(svg.status).toBe(200)
    expect(svg.headers.get('content-type')).toBe('image/svg+xml')
    expect(svg.headers.get('content-disposition')).toBe(`attachment; filename="${code}-qr.svg"; filename*=UTF-8''${code}-qr.svg`)
    expect(svg.headers.get('content-security-policy')).toContain('sandbox')
    expect(svg.headers.get('x-content-type-options')).toBe('nosniff')
    const text = await svg.text()
    expect(text).toStartWith('<svg')
    expect(text).toContain('stroke="#aa0000"')
  })

  test('a refused value is a 400 whose text names the field as people read it', async () => {
    const res = await get(alice, `/dashboard/links/${code}/qr.png?size=64&margin=16&ecc=H`)
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(await res.text()).toMatch(/^The size is invalid: it must be at least \d+ pixels/)
    const colour = await get(alice, `/dashboard/links/${code}/qr.svg?bg=nope`)
    expect([colour.status, await colour.text()]).toEqual([400, 'The background colour is invalid: it must be a hex colour of 3, 6 or 8 digits (RGB, RRGGBB or RRGGBBAA), "#" optional.'])
  })

  test("another account's link, an unknown code: 404; without a session: to the sign-in page", async () => {
    expect((await get(bob, `/dashboard/links/${code}/qr.png`)).status).toBe(404)
    expect((await get(alice, '/dashboard/links/no-such-code/qr.svg')).status).toBe(404)
    expect((await get(alice, '/dashboard/links/bad%20code!/qr.png')).status).toBe(404)
    const anonymous = await get(null, `/dashboard/links/${code}/qr.png`)
    expect(anonymous.status).toBe(303)
    expect(anonymous.headers.get('location')).toStartWith('/login?next=')
  })
})
