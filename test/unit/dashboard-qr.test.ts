// A link's QR code in the dashboard, through the real app and SQLite file: the section of the link's page
// (its GET form's values from the URL, errors at their fields), and /dashboard/links/<code>/qr.png|.svg —
// the same bytes as qr.json for the same settings, read back with jsQR, downloads named as attachments,
// the session's own links only; and the logo form, whose answer is the download (nothing is stored).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import jsQR from 'jsqr'
import { PNG } from 'pngjs'
import { makeBox, type TestBox } from '../support/app'
import { signIn, type SignedIn } from '../support/dashboard'

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
  const link = await box.links.create(
    { url: 'https://example.com/qr-styled', alias: 'styled' },
    (await box.accounts.authenticate(aliceKey))!,
  )
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
  const found = jsQR(
    new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.byteLength),
    png.width,
    png.height,
  )
  return { png, data: found?.data ?? null }
}

describe("the link's page", () => {
  test('has a QR code section: a GET form with the defaults, a preview and PNG/SVG downloads', async () => {
    const { status, text } = await html(alice, `/dashboard/links/${code}`)
    expect(status).toBe(200)
    expect(text).toContain('<h2 id="qr-style-heading">QR code</h2>')
    expect(text).toContain(
      `<form method="get" action="/dashboard/links/${code}#qr-style" class="qr-style-form" data-qr-image="/dashboard/links/${code}/qr" autocomplete="off">`,
    )
    expect(attr(text, /id="qr-fg" name="fg"[^>]* value="([^"]*)"/)).toBe('#000000')
    expect(attr(text, /id="qr-bg" name="bg"[^>]* value="([^"]*)"/)).toBe('#ffffff')
    expect(attr(text, /id="qr-size" name="size"[^>]* value="([^"]*)"/)).toBe('300')
    expect(text).toMatch(/<option value="M" selected>/)
    expect(attr(text, /id="qr-margin" name="margin"[^>]* value="([^"]*)"/)).toBe('4')
    expect(attr(text, /<img id="qr-preview" src="([^"]*)"/)).toBe(
      `/dashboard/links/${code}/qr.png?fg=000000&bg=ffffff&size=300&ecc=M&margin=4`,
    )
    expect(attr(text, /id="qr-png"[^>]* href="([^"]*)"/)).toBe(
      `/dashboard/links/${code}/qr.png?fg=000000&bg=ffffff&size=300&ecc=M&margin=4&download=1`,
    )
    expect(attr(text, /id="qr-svg"[^>]* href="([^"]*)"/)).toBe(
      `/dashboard/links/${code}/qr.svg?fg=000000&bg=ffffff&size=300&ecc=M&margin=4&download=1`,
    )
  })

  test("the URL's settings fill the form and the preview (Preview without JavaScript)", async () => {
    const { text } = await html(alice, `/dashboard/links/${code}?fg=%231d2330&bg=FFE4B5&size=512&ecc=h&margin=2`)
    expect(attr(text, /id="qr-fg" name="fg"[^>]* value="([^"]*)"/)).toBe('#1d2330')
    expect(attr(text, /id="qr-bg" name="bg"[^>]* value="([^"]*)"/)).toBe('#ffe4b5')
    expect(attr(text, /id="qr-size" name="size"[^>]* value="([^"]*)"/)).toBe('512')
    expect(text).toMatch(/<option value="H" selected>/)
    expect(attr(text, /<img id="qr-preview" src="([^"]*)"/)).toBe(
      `/dashboard/links/${code}/qr.png?fg=1d2330&bg=ffe4b5&size=512&ecc=H&margin=2`,
    )
  })

  test('a value the QR rules refuse is shown at its field; the other settings still apply', async () => {
    const { status, text } = await html(alice, `/dashboard/links/${code}?fg=zzz&size=9000&ecc=H`)
    expect(status).toBe(200)
    expect(text).toMatch(/id="qr-fg" name="fg" aria-describedby="qr-fg-error" aria-invalid="true"/)
    expect(text).toContain(
      '<span class="error" id="qr-fg-error">The foreground colour is invalid: it must be a hex colour',
    )
    expect(text).toContain(
      '<span class="error" id="qr-size-error">The size is invalid: it must be a whole number of pixels from 64 to 2048.</span>',
    )
    expect(attr(text, /<img id="qr-preview" src="([^"]*)"/)).toBe(
      `/dashboard/links/${code}/qr.png?fg=000000&bg=ffffff&size=300&ecc=H&margin=4`,
    )
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
    const api = await box.request(`/api/qr.json?${new URLSearchParams({ ...settings, data: shortUrl, raw: '1' })}`, {
      headers: { 'x-api-key': aliceKey },
    })
    expect(Buffer.from(bytes).equals(Buffer.from(await api.arrayBuffer()))).toBe(true)
    const { png, data } = decodePng(bytes)
    expect([png.width, data]).toEqual([320, shortUrl])
    expect([...png.data.subarray(0, 4)]).toEqual([0xff, 0xe4, 0xb5, 0xff])
  })

  test('downloads: PNG and SVG as attachments named after the code; an SVG that runs and loads nothing', async () => {
    const png = await get(alice, `/dashboard/links/${code}/qr.png?size=256&download=1`)
    expect(png.headers.get('content-disposition')).toBe(
      `attachment; filename="${code}-qr.png"; filename*=UTF-8''${code}-qr.png`,
    )
    expect(decodePng(new Uint8Array(await png.arrayBuffer())).data).toBe(shortUrl)
    const svg = await get(alice, `/dashboard/links/${code}/qr.svg?fg=aa0000&download=1`)
    expect(svg.status).toBe(200)
    expect(svg.headers.get('content-type')).toBe('image/svg+xml')
    expect(svg.headers.get('content-disposition')).toBe(
      `attachment; filename="${code}-qr.svg"; filename*=UTF-8''${code}-qr.svg`,
    )
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
    expect([colour.status, await colour.text()]).toEqual([
      400,
      'The background colour is invalid: it must be a hex colour of 3, 6 or 8 digits (RGB, RRGGBB or RRGGBBAA), "#" optional.',
    ])
  })

  // Issue 36: modules under 2 px decode nowhere. The short URL (~28 bytes) at ecc Q is 29 modules, 37 with the
  // margin: 64 px is 1.7 px a module. The smallest size that works is named, and it decodes.
  test('a size whose modules would be under 2 pixels is a 400 naming size and the smallest that works', async () => {
    const res = await get(alice, `/dashboard/links/${code}/qr.png?size=64&margin=4&ecc=Q`)
    expect(res.status).toBe(400)
    const text = await res.text()
    const smallest = Number(/^The size is invalid: it must be at least (\d+) pixels .*2 pixels/.exec(text)?.[1])
    expect(smallest).toBeGreaterThan(64)
    expect(smallest % 2).toBe(0)
    expect((await get(alice, `/dashboard/links/${code}/qr.png?size=${smallest - 1}&margin=4&ecc=Q`)).status).toBe(400)
    const ok = await get(alice, `/dashboard/links/${code}/qr.png?size=${smallest}&margin=4&ecc=Q`)
    expect(ok.status).toBe(200)
    expect(decodePng(new Uint8Array(await ok.arrayBuffer())).data).toBe(shortUrl)
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

describe('the logo form', () => {
  const RED = [200, 30, 40, 255]
  const redPng = () => {
    const png = new PNG({ width: 48, height: 48 })
    for (let i = 0; i < 48 * 48; i++) png.data.set(RED, i * 4)
    return new Uint8Array(PNG.sync.write(png))
  }
  const send = (
    who: SignedIn,
    fields: Record<string, string | Blob>,
    headers: Record<string, string> = {},
    target = code,
  ) => {
    const form = new FormData()
    for (const [k, v] of Object.entries(fields)) form.set(k, v as string)
    return box.request(`/dashboard/links/${target}/qr`, {
      method: 'POST',
      body: form,
      headers: { cookie: who.cookie, ...headers },
    })
  }
  const noticeOf = (res: Response) => {
    const m = /lb_notice=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')
    return m ? JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) : null
  }

  test("is on the link's page: multipart, with the session's token and the settings in hidden fields", async () => {
    const { text } = await html(alice, `/dashboard/links/${code}?fg=112233&size=400`)
    expect(text).toContain(
      `<form method="post" action="/dashboard/links/${code}/qr" enctype="multipart/form-data" class="qr-logo-form"`,
    )
    expect(text).toContain(`<input type="hidden" name="_csrf" value="${alice.csrf}">`)
    expect(text).toContain('<input type="hidden" name="fg" value="112233" data-qr-copy="fg">')
    expect(text).toContain('<input type="hidden" name="size" value="400" data-qr-copy="size">')
    expect(text).toMatch(
      /<input id="qr-logo" name="logo" type="file" accept="image\/png,image\/svg\+xml,.png,.svg" required/,
    )
  })

  test('answers with the code and its logo as a download: ecc H, decodes to the short link, the logo in the middle', async () => {
    const before = box.db.query('SELECT COUNT(*) AS n FROM links').get()
    const res = await send(alice, {
      _csrf: alice.csrf,
      fg: '1d2330',
      bg: 'ffffff',
      size: '400',
      ecc: 'L',
      margin: '4',
      format: 'png',
      logo: new File([redPng()], 'logo.png', { type: 'image/png' }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/png')
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="${code}-qr-logo.png"; filename*=UTF-8''${code}-qr-logo.png`,
    )
    expect(res.headers.get('cache-control')).toBe('no-store')
    const { png, data } = decodePng(new Uint8Array(await res.arrayBuffer()))
    expect([png.width, data]).toEqual([400, shortUrl])
    const mid = (200 * 400 + 200) * 4
    expect([...png.data.subarray(mid, mid + 4)]).toEqual(RED)
    expect(box.db.query('SELECT COUNT(*) AS n FROM links').get()).toEqual(before)

    const svg = await send(alice, { _csrf: alice.csrf, format: 'svg', logo: new File([redPng()], 'logo.png') })
    expect(svg.headers.get('content-type')).toBe('image/svg+xml')
    expect(svg.headers.get('content-disposition')).toContain(`filename="${code}-qr-logo.svg"`)
    expect(await svg.text()).toContain('<image ')
  })

  test('a refused logo or setting: 303 back to the page, its settings in the URL, the reason as the notice', async () => {
    const text = await send(alice, {
      _csrf: alice.csrf,
      fg: '123456',
      size: '300',
      logo: new File(['not an image'], 'logo.png', { type: 'image/png' }),
    })
    expect(text.status).toBe(303)
    expect(text.headers.get('location')).toBe(`/dashboard/links/${code}?fg=123456&bg=&size=300&ecc=&margin=#qr-style`)
    expect(noticeOf(text)).toEqual({
      kind: 'error',
      text: 'The logo is invalid: it must be a PNG or SVG image; these bytes are neither.',
    })

    const none = await send(alice, { _csrf: alice.csrf, logo: new File([], '') })
    expect(none.status).toBe(303)
    expect(noticeOf(none).text).toBe('Choose a logo file (PNG or SVG) to draw in the middle of the code.')

    const size = await send(alice, { _csrf: alice.csrf, size: '1', logo: new File([redPng()], 'l.png') })
    expect(noticeOf(size).text).toBe('The size is invalid: it must be a whole number of pixels from 64 to 2048.')

    const big = await send(alice, { _csrf: alice.csrf, logo: new File([new Uint8Array(400 * 1024)], 'big.png') })
    expect(big.status).toBe(303)
    expect(big.headers.get('location')).toBe(`/dashboard/links/${code}#qr-style`)
    expect(noticeOf(big).text).toBe('The logo is larger than 256 KiB: choose a smaller file.')
    // The page it goes back to shows the notice.
    const page = await box.request(text.headers.get('location')!.split('#')[0]!, {
      headers: { cookie: `${alice.cookie}; ${/lb_notice=[^;]+/.exec(text.headers.get('set-cookie')!)![0]}` },
    })
    expect(await page.text()).toContain(
      '<p class="notice error" role="alert">The logo is invalid: it must be a PNG or SVG image; these bytes are neither.</p>',
    )
  })

  test("without the session's token, from another site, for another account's link, or signed out: refused", async () => {
    const logo = () => new File([redPng()], 'l.png')
    expect((await send(alice, { logo: logo() })).status).toBe(403)
    expect((await send(alice, { _csrf: bob.csrf, logo: logo() })).status).toBe(403)
    expect((await send(alice, { _csrf: alice.csrf, logo: logo() }, { 'sec-fetch-site': 'cross-site' })).status).toBe(
      403,
    )
    expect((await send(bob, { _csrf: bob.csrf, logo: logo() })).status).toBe(404)
    const out = await box.request(`/dashboard/links/${code}/qr`, {
      method: 'POST',
      body: (() => {
        const f = new FormData()
        f.set('logo', logo())
        return f
      })(),
    })
    expect(out.status).toBe(303)
    expect(out.headers.get('location')).toStartWith('/login?next=')
  })
})
