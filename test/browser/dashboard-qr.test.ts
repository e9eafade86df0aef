// A link's QR code section in real Chromium: the preview follows the colour and size fields (its src and
// its bytes change), PNG and SVG download as files that decode to the short link, the settings survive a
// reload and Back, a refused size is said under the preview, and without JavaScript the Preview button
// does the same through the GET form. axe in both themes and at 390 px; no request leaves the origin.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { Resvg } from '@resvg/resvg-js'
import jsQR from 'jsqr'
import { PNG } from 'pngjs'
import type { Browser, Page } from 'playwright-core'
import {
  checkPage,
  launchBrowser,
  screenshots,
  startApp,
  type RunningApp,
  chromePage,
  closeAll,
} from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

let browser: Browser
let page: Page
let app: RunningApp
let code: string
let shortUrl: string
const requests: string[] = []

beforeAll(async () => {
  app = startApp()
  const { key } = await app.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  const link = await app.links.create(
    { url: 'https://example.com/a/page/to/share', alias: 'share-me' },
    (await app.accounts.authenticate(key.key))!,
  )
  code = link.hex
  shortUrl = link.url
  browser = await launchBrowser()
  page = await chromePage(browser, { acceptDownloads: true })
  page.on('request', (r) => void requests.push(r.url()))
  await signInBrowser(page, app.url, 'alice', 'correct horse')
})
afterAll(() => closeAll(browser, app))

const pagePath = () => `${app.url}/dashboard/links/${code}`
const previewSrc = () => page.getAttribute('#qr-preview', 'src')
/** The preview's bytes as the browser gets them (same session). */
const previewBytes = () =>
  page.evaluate(async () => {
    const src = (document.getElementById('qr-preview') as HTMLImageElement).src
    return [...new Uint8Array(await (await fetch(src)).arrayBuffer())]
  })
/** Waits until the preview has loaded an image other than `before`. */
async function previewChanged(before: string | null) {
  await page.waitForFunction((b) => {
    const img = document.getElementById('qr-preview') as HTMLImageElement
    return img.getAttribute('src') !== b && img.complete && img.naturalWidth > 0
  }, before)
}

const GREEN = [20, 160, 70, 255]
const GREEN_LOGO = (() => {
  const png = new PNG({ width: 40, height: 40 })
  for (let i = 0; i < 40 * 40; i++) png.data.set(GREEN, i * 4)
  return PNG.sync.write(png)
})()

function decodeRaster(width: number, height: number, data: Uint8Array) {
  return jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength), width, height)?.data ?? null
}

describe('with JavaScript', () => {
  test('the section is there and passes axe in both themes and at 390 px', async () => {
    await page.goto(pagePath())
    expect(await page.textContent('#qr-style-heading')).toBe('QR code')
    expect(await page.evaluate(() => (document.getElementById('qr-preview') as HTMLImageElement).naturalWidth)).toBe(
      300,
    )
    expect(await checkPage(page, 'dash-link-qr')).toBeLessThanOrEqual(390)
  })

  test('changing the colours and the size changes the preview (its src and its bytes), the downloads and the URL', async () => {
    await page.goto(pagePath())
    const before = await previewSrc()
    const bytesBefore = await previewBytes()
    await page.fill('#qr-fg', '#1d4ed8')
    await previewChanged(before)
    const afterColour = await previewSrc()
    expect(afterColour).toContain('fg=1d4ed8')
    expect(await previewBytes()).not.toEqual(bytesBefore)

    await page.fill('#qr-bg', '#fff5e0')
    await page.fill('#qr-size', '480')
    await page.selectOption('#qr-ecc', 'H')
    await previewChanged(afterColour)
    await page.waitForFunction(() => (document.getElementById('qr-preview') as HTMLImageElement).naturalWidth === 480)
    const src = (await previewSrc())!
    expect(new URL(src, app.url).searchParams.toString()).toBe('fg=1d4ed8&bg=fff5e0&size=480&ecc=H&margin=4')
    expect(await page.textContent('#qr-status')).toBe('480 × 480 pixels, error correction H')
    expect(await page.getAttribute('#qr-png', 'href')).toBe(`${src}&download=1`)
    expect(await page.getAttribute('#qr-svg', 'href')).toBe(`${src.replace('qr.png', 'qr.svg')}&download=1`)
    // The page's own URL carries the settings (replaceState: no new history entry).
    expect(new URL(page.url()).search).toBe('?fg=1d4ed8&bg=fff5e0&size=480&ecc=H&margin=4')
    expect(new URL(page.url()).hash).toBe('#qr-style')
    await checkPage(page, 'dash-link-qr-styled')
  })

  test('PNG and SVG download as files named after the code that decode to the short link', async () => {
    const [pngDownload] = await Promise.all([page.waitForEvent('download'), page.click('#qr-png')])
    expect(pngDownload.suggestedFilename()).toBe(`${code}-qr.png`)
    const png = PNG.sync.read(readFileSync((await pngDownload.path())!))
    expect(png.width).toBe(480)
    expect([...png.data.subarray(0, 3)]).toEqual([0xff, 0xf5, 0xe0])
    expect(decodeRaster(png.width, png.height, png.data)).toBe(shortUrl)

    const [svgDownload] = await Promise.all([page.waitForEvent('download'), page.click('#qr-svg')])
    expect(svgDownload.suggestedFilename()).toBe(`${code}-qr.svg`)
    const svg = readFileSync((await svgDownload.path())!, 'utf8')
    expect(svg).toContain('stroke="#1d4ed8"')
    const raster = new Resvg(svg, { background: 'white', font: { loadSystemFonts: false } }).render()
    expect(decodeRaster(raster.width, raster.height, raster.pixels)).toBe(shortUrl)
    // The downloads did not leave the page.
    expect(new URL(page.url()).pathname).toBe(`/dashboard/links/${code}`)
  })

  test('a reload shows the same settings; Back from another page comes back to them', async () => {
    const src = await previewSrc()
    await page.reload()
    expect(await previewSrc()).toBe(src)
    expect(await page.inputValue('#qr-size')).toBe('480')
    expect(await page.inputValue('#qr-fg')).toBe('#1d4ed8')
    expect(await page.inputValue('#qr-ecc')).toBe('H')
    await Promise.all([page.waitForNavigation(), page.click('a:has-text("← All links")')])
    expect(new URL(page.url()).pathname).toBe('/dashboard')
    await page.goBack()
    expect(await previewSrc()).toBe(src)
    expect(await page.inputValue('#qr-bg')).toBe('#fff5e0')
    // Back once more leaves the link's page (the changes made no history entries of their own).
    await page.goBack()
    expect(new URL(page.url()).pathname).not.toBe(`/dashboard/links/${code}`)
  })

  test('a size the code does not fit in is said under the preview, with the reason from the server', async () => {
    await page.goto(pagePath())
    await page.fill('#qr-margin', '16')
    await page.fill('#qr-size', '64')
    await page.selectOption('#qr-ecc', 'H')
    await page.waitForFunction(() => document.getElementById('qr-status')?.classList.contains('error'))
    expect(await page.textContent('#qr-status')).toMatch(/^The size is invalid: it must be at least \d+ pixels/)
    await checkPage(page, 'dash-link-qr-refused')
    // A value out of the field's range: said at once, nothing asked of the server.
    await page.fill('#qr-size', '9000')
    await page.waitForFunction(() => document.getElementById('qr-status')?.textContent?.startsWith('Size must be'))
  })

  test('the logo form downloads the code with the logo, in the settings the fields show (copied by the script)', async () => {
    await page.goto(pagePath())
    await page.fill('#qr-fg', '#7a1f5c')
    await page.fill('#qr-size', '420')
    await page.waitForFunction(
      () => (document.querySelector('input[data-qr-copy="size"]') as HTMLInputElement).value === '420',
    )
    await page.setInputFiles('#qr-logo', { name: 'logo.png', mimeType: 'image/png', buffer: Buffer.from(GREEN_LOGO) })
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('button:has-text("Download with logo")'),
    ])
    expect(download.suggestedFilename()).toBe(`${code}-qr-logo.png`)
    const png = PNG.sync.read(readFileSync((await download.path())!))
    expect(png.width).toBe(420)
    expect(decodeRaster(png.width, png.height, png.data)).toBe(shortUrl)
    const mid = (210 * 420 + 210) * 4
    expect([...png.data.subarray(mid, mid + 4)]).toEqual(GREEN)
    // A module of the code has the foreground colour: the finder pattern's corner module, past the margin of
    // 4 (a logo makes the code at least version 5: 37 modules, 45 with the margins).
    const corner = Math.floor((4.5 * 420) / 45)
    expect([...png.data.subarray((corner * 420 + corner) * 4, (corner * 420 + corner) * 4 + 3)]).toEqual([
      0x7a, 0x1f, 0x5c,
    ])
    // The page stayed where it was: the answer was a file.
    expect(new URL(page.url()).pathname).toBe(`/dashboard/links/${code}`)
    await checkPage(page, 'dash-link-qr-logo')
  })

  test('a file that is not an image: back to the page with the reason', async () => {
    await page.goto(pagePath())
    await page.setInputFiles('#qr-logo', {
      name: 'notes.png',
      mimeType: 'image/png',
      buffer: Buffer.from('these are notes'),
    })
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Download with logo")')])
    expect(await page.textContent('.notice.error')).toBe(
      'The logo is invalid: it must be a PNG or SVG image; these bytes are neither.',
    )
    expect(new URL(page.url()).hash).toBe('#qr-style')
    // A reload does not send the form again (the answer was a redirect).
    await page.reload()
    expect(await page.$('.notice.error')).toBeNull()
  })
})

describe('without JavaScript', () => {
  test('the Preview button sends the GET form: the page comes back with the settings and their preview', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, userAgent: CHROME_UA })
    const plain = await context.newPage()
    plain.on('request', (r) => void requests.push(r.url()))
    plain.setDefaultTimeout(10_000)
    try {
      await signInBrowser(plain, app.url, 'alice', 'correct horse')
      await plain.goto(pagePath())
      const before = await plain.getAttribute('#qr-preview', 'src')
      await plain.fill('#qr-size', '360')
      await plain.fill('#qr-margin', '2')
      await plain.selectOption('#qr-ecc', 'Q')
      await Promise.all([plain.waitForNavigation(), plain.click('button:has-text("Preview")')])
      const url = new URL(plain.url())
      expect(url.pathname).toBe(`/dashboard/links/${code}`)
      expect(url.searchParams.get('size')).toBe('360')
      expect(url.searchParams.get('ecc')).toBe('Q')
      const src = await plain.getAttribute('#qr-preview', 'src')
      expect(src).not.toBe(before)
      expect(src).toBe(`/dashboard/links/${code}/qr.png?fg=000000&bg=ffffff&size=360&ecc=Q&margin=2`)
      await plain.waitForFunction(
        () => (document.getElementById('qr-preview') as HTMLImageElement).naturalWidth === 360,
      )
      expect(await plain.inputValue('#qr-size')).toBe('360')
      expect(await plain.getAttribute('#qr-png', 'href')).toBe(`${src}&download=1`)
      // axe needs script in the page: the same markup was checked above with JavaScript on. The screenshots.
      expect((await screenshots(plain, 'dash-link-qr-nojs'))[390]).toBeLessThanOrEqual(390)
      // A reload of a GET asks nothing to be sent again, and shows the same.
      await plain.reload()
      expect(await plain.getAttribute('#qr-preview', 'src')).toBe(src)
      // Back: the page before Preview, its fields as its preview (not what was typed, restored).
      await plain.goBack()
      expect(await plain.getAttribute('#qr-preview', 'src')).toBe(before)
      expect([
        await plain.inputValue('#qr-size'),
        await plain.inputValue('#qr-ecc'),
        await plain.inputValue('#qr-margin'),
      ]).toEqual(['300', 'M', '4'])
      // The logo form works without the script: its hidden fields carry the page's settings.
      await plain.goForward()
      await plain.setInputFiles('#qr-logo', {
        name: 'logo.png',
        mimeType: 'image/png',
        buffer: Buffer.from(GREEN_LOGO),
      })
      const [download] = await Promise.all([
        plain.waitForEvent('download'),
        plain.click('button:has-text("Download with logo")'),
      ])
      const png = PNG.sync.read(readFileSync((await download.path())!))
      expect(png.width).toBe(360)
      expect(decodeRaster(png.width, png.height, png.data)).toBe(shortUrl)
    } finally {
      await context.close()
    }
  })
})

test('no request left the origin, with or without JavaScript', () => {
  expect(requests.length).toBeGreaterThan(10)
  for (const url of requests)
    expect(url.startsWith(app.url) || url.startsWith('data:') || url.startsWith('blob:'), url).toBe(true)
})
