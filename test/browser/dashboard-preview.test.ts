// A link's social preview in real Chromium (issue 40): the card follows the title and description as they are
// typed and shows a chosen image before it is sent; saved (multipart, Post/Redirect/Get) the image is the stored
// one, served from the short domain; a reload and Back keep it; removing it works; axe in both themes at 390 px.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { PNG } from 'pngjs'
import type { Browser, Page } from 'playwright-core'
import { checkPage, chromePage, closeAll, launchBrowser, type RunningApp, startApp } from '../support/browser'
import { signInBrowser } from '../support/dashboard'

let browser: Browser
let page: Page
let app: RunningApp
let code: string
let caller: Parameters<RunningApp['links']['get']>[1]
const outside: string[] = []

beforeAll(async () => {
  app = startApp()
  const { key } = await app.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  caller = (await app.accounts.authenticate(key.key))!
  const link = await app.links.create(
    { url: 'https://example.com/a/page/to/share', alias: 'share-me', title: 'A page to share' },
    caller,
  )
  code = link.hex
  browser = await launchBrowser()
  page = await chromePage(browser)
  page.on('request', (r) => {
    if (!r.url().startsWith(app.url) && !r.url().startsWith('data:')) outside.push(r.url())
  })
  await signInBrowser(page, app.url, 'alice', 'correct horse')
})
afterAll(() => closeAll(browser, app))

const ORANGE = (() => {
  const png = new PNG({ width: 600, height: 315 })
  for (let i = 0; i < 600 * 315; i++) png.data.set([240, 120, 20, 255], i * 4)
  return PNG.sync.write(png)
})()
const cardTitle = () => page.textContent('[data-og-card-title]')
const cardDescription = () => page.textContent('[data-og-card-description]')
const imageShown = () =>
  page.evaluate(() => {
    const img = document.querySelector('[data-og-card-image]') as HTMLImageElement
    return (img.parentNode as HTMLElement).hidden ? null : img.getAttribute('src')
  })

test('the card follows what is typed, before anything is saved', async () => {
  await page.goto(`${app.url}/dashboard/links/${code}`)
  expect(await page.textContent('#og-heading')).toBe('Social preview')
  expect(await cardTitle()).toBe('A page to share')
  expect(await imageShown()).toBeNull()
  await page.fill('#og_title', 'Spring <sale>')
  await page.fill('#og_description', 'Half price until Sunday.')
  expect(await cardTitle()).toBe('Spring <sale>')
  expect(await cardDescription()).toBe('Half price until Sunday.')
  await page.fill('#og_title', '')
  expect(await cardTitle()).toBe('A page to share')
  await page.fill('#og_title', 'Spring <sale>')
  await page.setInputFiles('#og_image', { name: 'card.png', mimeType: 'image/png', buffer: Buffer.from(ORANGE) })
  await page.waitForFunction(() => {
    const img = document.querySelector('[data-og-card-image]') as HTMLImageElement
    return img.getAttribute('src')?.startsWith('data:image/png') && img.complete && img.naturalWidth === 600
  })
  expect(await checkPage(page, 'dash-link-preview')).toBeLessThanOrEqual(390)
})

test('saved: the page comes back with the stored image, served from the short domain; reload and Back keep it', async () => {
  await Promise.all([page.waitForNavigation(), page.click('button:has-text("Save card")')])
  expect(page.url()).toBe(`${app.url}/dashboard/links/${code}#social-preview`)
  expect(await page.textContent('body')).toContain('Saved the social preview.')
  const src = await imageShown()
  expect(src).toMatch(new RegExp(`^/_og/${code}/[0-9a-f]{12}\\.jpg$`))
  expect(await page.inputValue('#og_title')).toBe('Spring <sale>')
  // The card shows the stored image, loaded from the page's own origin.
  await page.waitForFunction(() => {
    const img = document.querySelector('[data-og-card-image]') as HTMLImageElement
    return img.complete && img.naturalWidth === 600 && img.naturalHeight === 315
  })
  // The stored image, as a crawler would fetch it: a JPEG of the size sent (smaller than the box).
  const image = await fetch(`${app.url}${src}`)
  expect(image.headers.get('content-type')).toBe('image/jpeg')
  const record = await app.links.get({ code }, caller)
  expect(record.og_image).toBe(`http://localhost:8080${src}`)
  await page.reload()
  expect(await cardTitle()).toBe('Spring <sale>')
  expect(await imageShown()).toBe(src)
  await page.goto(`${app.url}/dashboard`)
  await page.goBack()
  expect(await page.inputValue('#og_description')).toBe('Half price until Sunday.')
  expect(await imageShown()).toBe(src)
  await checkPage(page, 'dash-link-preview-saved')
})

test('a file that is not an image is refused, naming the image; removing the image works', async () => {
  await page.setInputFiles('#og_image', { name: 'x.png', mimeType: 'image/png', buffer: Buffer.from('not an image') })
  await Promise.all([page.waitForNavigation(), page.click('button:has-text("Save card")')])
  expect(await page.textContent('body')).toContain('The image is invalid: it must be a PNG, JPEG or WebP image')
  await page.check('#og_remove')
  expect(await imageShown()).toBeNull()
  await Promise.all([page.waitForNavigation(), page.click('button:has-text("Save card")')])
  expect(await page.textContent('body')).toContain('Saved the social preview.')
  expect(await imageShown()).toBeNull()
  expect(await cardTitle()).toBe('Spring <sale>')
  expect(outside).toEqual([])
})
