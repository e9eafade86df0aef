// The dashboard's Download page in real Chromium (issue 41, item 5): the real yt-dlp reads the local fixture pages
// (test/support/media-fixtures.ts); paste an address, see its title and formats; pick the DASH page's merged format
// (fetched whole by yt-dlp first): progress events arrive over the format's progress stream, then the download
// starts with the bytes /dl serves. Reload and back stay sane; the recent downloads list it after a reload (its
// link, or "expired"); errors name the field; without JavaScript the format links still download; another
// account's ticket is not recorded. axe in both themes at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { checkPage, chromePage, launchBrowser, startApp, type RunningApp } from '../support/browser'
import { overSocket, signIn, signInBrowser } from '../support/dashboard'
import { startMediaFixtures, type MediaFixtures } from '../support/media-fixtures'
import { CHROME_UA } from '../support/server'

const LONG = 90_000
let fx: MediaFixtures
let app: RunningApp
let browser: Browser
let page: Page

beforeAll(async () => {
  fx = await startMediaFixtures()
  app = startApp()
  await app.accounts.createAccount({ name: 'dora', password: 'dora password' })
  await app.accounts.createAccount({ name: 'eve', password: 'eve password' })
  browser = await launchBrowser()
  page = await chromePage(browser)
  page.setDefaultTimeout(30_000)
  await signInBrowser(page, app.url, 'dora', 'dora password')
}, LONG)
afterAll(async () => {
  await browser?.close()
  await app?.stop()
  await fx?.stop()
})

/** Looks an address up through the form, as a person does (the nav entry, the field, the button). */
async function lookUp(p: Page, url: string) {
  await p.goto(`${app.url}/dashboard`)
  await Promise.all([
    p.waitForURL(/\/dashboard\/download$/),
    p.locator('.dash-nav').getByRole('link', { name: 'Download' }).click(),
  ])
  await search(p, url)
}

/** Looks an address up from the Download page already shown. */
async function search(p: Page, url: string) {
  await p.getByLabel('Address of the page').fill(url)
  await Promise.all([p.waitForURL(/\/dashboard\/download\?url=/), p.getByRole('button', { name: 'Look up' }).click()])
}

const formats = (p: Page, group: string) => p.locator(`.dl-result h3:text-is("${group}") + ul.dl-formats > li`)

describe('the Download page', () => {
  test(
    'the video page: its title and its one format, grouped under Video; axe in both themes at 1280 and 390 px',
    async () => {
      await lookUp(page, fx.url('video-page'))
      expect(await page.locator('h1').textContent()).toBe('Download')
      expect(await page.locator('#dl-title').textContent()).toMatch(/^Fixture video page/)
      expect(await page.title()).toMatch(/^Fixture video page.* · Download/)
      const video = formats(page, 'Video')
      expect(await video.count()).toBe(1)
      const link = video.first().getByRole('link', { name: /^Download / })
      expect(await link.getAttribute('href')).toMatch(
        /^\/dashboard\/download\/start\/[0-9]+\?exp=[0-9]+&sig=[\w-]{43}$/,
      )
      // The field keeps what was looked up; the nav says where we are.
      expect(await page.getByLabel('Address of the page').inputValue()).toBe(fx.url('video-page'))
      expect(await page.locator('.dash-nav a[aria-current=page]').textContent()).toBe('Download')
      expect(await page.locator('#dl-progress').isHidden()).toBe(true)
      expect(await checkPage(page, 'dashboard-download-result')).toBeLessThanOrEqual(390)
      // From the keyboard: Enter on the link; a straight format is ready at once and downloads.
      await link.focus()
      const [download] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')])
      expect(new Uint8Array(readFileSync((await download.path())!))).toEqual(fx.bytes('clip.mp4'))
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('dl-progress')
      expect(await page.locator('#dl-progress').getAttribute('data-state')).toBe('ready')
    },
    LONG,
  )

  test(
    'the DASH page’s merged format: progress events, then the download starts with the bytes /dl serves; reload and back stay sane; the recent list has it',
    async () => {
      // From the video page's result, so that Back leads to it.
      await lookUp(page, fx.url('video-page'))
      await search(page, fx.url('dash-page'))
      const video = formats(page, 'Video')
      expect(await video.count()).toBe(2) // the merge (best, first) and the video alone
      expect(await formats(page, 'Audio').count()).toBeGreaterThanOrEqual(1) // DASH's own, and extracted ones
      const merged = video.first()
      expect(await merged.textContent()).toContain('+')
      const [download] = await Promise.all([
        page.waitForEvent('download', { timeout: 60_000 }),
        merged.getByRole('link', { name: /^Download / }).click(),
      ])
      // Focus went to the progress region, which heard at least one progress event before "ready".
      const box = page.locator('#dl-progress')
      expect(await box.isVisible()).toBe(true)
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('dl-progress')
      await page.waitForFunction(() => document.getElementById('dl-progress')?.getAttribute('data-state') === 'ready')
      expect(Number(await box.getAttribute('data-events'))).toBeGreaterThanOrEqual(1)
      expect(await page.locator('#dl-live').textContent()).toMatch(/is ready: the download starts\.$/)
      expect(await page.locator('#dl-failed').textContent()).toBe('')
      // The file is what /dl serves for that link, byte for byte.
      const path = new URL(download.url()).pathname + new URL(download.url()).search
      expect(path).toMatch(/^\/dl\/[0-9]+\?exp=[0-9]+&sig=[\w-]{43}$/)
      const got = readFileSync((await download.path())!)
      const served = new Uint8Array(await (await fetch(`${app.url}${path}`)).arrayBuffer())
      expect(got.length).toBeGreaterThan(1000)
      expect(new Uint8Array(got)).toEqual(served)
      expect(download.suggestedFilename()).toMatch(/\.mp4$/)
      await checkPage(page, 'dashboard-download-ready')

      // Reload: the same lookup, the progress gone, the download listed with its link.
      await page.reload()
      expect(await page.locator('#dl-title').textContent()).toMatch(/dash|Fixture/i)
      expect(await page.locator('#dl-progress').isHidden()).toBe(true)
      const row = page.locator('table.dl-recent tbody tr').first()
      expect(await row.locator('td[data-label=Format]').textContent()).toContain('0+1')
      expect(await row.getByRole('link', { name: /^Download / }).getAttribute('href')).toBe(path)
      // Back: the video page's lookup as it was.
      await page.goBack()
      expect(await page.locator('#dl-title').textContent()).toMatch(/^Fixture video page/)
      expect(await page.getByLabel('Address of the page').inputValue()).toBe(fx.url('video-page'))
      await page.goForward()
      expect(await page.locator(`table.dl-recent a[href="${path}"]`).count()).toBe(1)
    },
    LONG,
  )

  test(
    'an audio format: its progress is shown step by step (an extracted one: while ffmpeg converts), then it downloads',
    async () => {
      await lookUp(page, fx.url('dash-page'))
      const audio = formats(page, 'Audio')
      // Extracted audio (mp3, m4a, opus) where the service offers it (issue 41's audio slice), else DASH's own.
      const extracted = audio.filter({ hasText: 'extracted (mp3)' })
      const pick = (await extracted.count()) > 0 ? extracted.first() : audio.first()
      // What the progress line said, each time it changed.
      await page.evaluate(() => {
        const seen: string[] = ((window as any).__said = [])
        const text = document.getElementById('dl-progress-text')!
        new MutationObserver(() => seen.push(text.textContent ?? '')).observe(text, { childList: true, subtree: true })
      })
      const [download] = await Promise.all([
        page.waitForEvent('download', { timeout: 60_000 }),
        pick.getByRole('link', { name: /^Download / }).click(),
      ])
      await page.waitForFunction(() => document.getElementById('dl-progress')?.getAttribute('data-state') === 'ready')
      const said = (await page.evaluate(() => (window as any).__said)) as string[]
      expect(said.length).toBeGreaterThanOrEqual(2)
      if ((await extracted.count()) > 0) {
        expect(said.some((t) => t.startsWith('Converting'))).toBe(true)
        expect(download.suggestedFilename()).toMatch(/\.mp3$/)
      }
      const path = new URL(download.url()).pathname + new URL(download.url()).search
      const served = new Uint8Array(await (await fetch(`${app.url}${path}`)).arrayBuffer())
      expect(new Uint8Array(readFileSync((await download.path())!))).toEqual(served)
    },
    LONG,
  )

  test(
    'the recent list is in the database: an expired link says so; the same format again moves up, not twice',
    async () => {
      app.db.run('UPDATE media_downloads SET link_expires = 1000')
      await page.goto(`${app.url}/dashboard/download`)
      const row = page.locator('table.dl-recent tbody tr').first()
      expect(await row.locator('td[data-label=Link]').textContent()).toMatch(/^Expired .*: look the address up again$/)
      expect(await row.getByRole('link').count()).toBe(0)
      await checkPage(page, null)
      // The merged format again (the same ticket: the lookup is cached): one row, its link back.
      const rows = await page.locator('table.dl-recent tbody tr').count()
      await search(page, fx.url('dash-page'))
      await Promise.all([
        page.waitForEvent('download', { timeout: 60_000 }),
        formats(page, 'Video')
          .first()
          .getByRole('link', { name: /^Download / })
          .click(),
      ])
      await page.reload()
      expect(await page.locator('table.dl-recent tbody tr').count()).toBe(rows)
      expect(await row.getByRole('link', { name: /^Download / }).count()).toBe(1)
    },
    LONG,
  )

  test(
    'a preparation that fails says why in an alert; a progress stream that is refused says so; the page stays usable',
    async () => {
      await lookUp(page, fx.url('video-page'))
      const link = formats(page, 'Video')
        .first()
        .getByRole('link', { name: /^Download / })
      // The stream's answer as the progress contract words a failure (the route stands in for a failing run).
      await page.route('**/dl/*/progress?*', (route) =>
        route.fulfill({
          status: 200,
          headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' },
          body:
            'event: progress\ndata: {"step":"converting","bytes":1048576,"total":4194304,"speed":524288,"percent":25}\n\n' +
            'event: failed\ndata: {"code":"upstream_failed","message":"The page could not be read: <b>gone</b>."}\n\n',
        }),
      )
      await link.click()
      await page.waitForFunction(() => document.getElementById('dl-progress')?.getAttribute('data-state') === 'failed')
      expect(await page.locator('#dl-failed').textContent()).toBe('The page could not be read: <b>gone</b>.')
      expect(await page.locator('#dl-failed').getAttribute('role')).toBe('alert')
      expect(await page.locator('#dl-bar').getAttribute('value')).toBe('25')
      expect(await page.locator('#dl-progress').getAttribute('data-events')).toBe('1')
      await checkPage(page, 'dashboard-download-failed')
      await page.unroute('**/dl/*/progress?*')
      // A stream refused (a 403 before any event): said, not retried for ever.
      await page.route('**/dl/*/progress?*', (route) =>
        route.fulfill({ status: 403, contentType: 'application/json', body: '{"status":"error"}' }),
      )
      await link.click()
      await page.waitForFunction(() => document.getElementById('dl-progress')?.getAttribute('data-state') === 'failed')
      expect(await page.locator('#dl-failed').textContent()).toMatch(/^The progress could not be followed/)
      await page.unroute('**/dl/*/progress?*')
    },
    LONG,
  )

  test(
    'errors name the field: a page without media, an address that is not http(s)',
    async () => {
      await lookUp(page, fx.url('empty-page'))
      const field = page.getByLabel('Address of the page')
      expect(await field.getAttribute('aria-invalid')).toBe('true')
      expect(await page.locator('#dl-url-error').textContent()).toBe(
        'The address names a page with no video, audio or photo that could be found.',
      )
      expect(await field.getAttribute('aria-describedby')).toContain('dl-url-error')
      expect(await page.locator('.dl-result').count()).toBe(0)
      await checkPage(page, 'dashboard-download-error')
      await page.goto(`${app.url}/dashboard/download?url=${encodeURIComponent('ftp://example.com/a.mp4')}`)
      expect(await page.locator('#dl-url-error').textContent()).toBe('The address must start with http:// or https://.')
    },
    LONG,
  )

  test(
    'without JavaScript a format link downloads the file (recorded, then the signed /dl link)',
    async () => {
      const context = await browser.newContext({ userAgent: CHROME_UA, javaScriptEnabled: false })
      const p = await context.newPage()
      p.setDefaultTimeout(30_000)
      try {
        await signInBrowser(p, app.url, 'dora', 'dora password')
        await lookUp(p, fx.url('mp4'))
        const [download] = await Promise.all([
          p.waitForEvent('download'),
          formats(p, 'Video')
            .first()
            .getByRole('link', { name: /^Download / })
            .click(),
        ])
        expect(new Uint8Array(readFileSync((await download.path())!))).toEqual(fx.bytes('clip.mp4'))
        await p.goto(`${app.url}/dashboard/download`)
        const first = p.locator('table.dl-recent tbody tr').first()
        expect(await first.locator('td[data-label=Title]').textContent()).toBe('clip')
        expect(await first.getByRole('link').getAttribute('href')).toBe(
          new URL(download.url()).pathname + new URL(download.url()).search,
        )
      } finally {
        await context.close()
      }
    },
    LONG,
  )

  test(
    'another account’s ticket is neither recorded nor followed; a tampered link is refused',
    async () => {
      await lookUp(page, fx.url('video-page'))
      const start = (await formats(page, 'Video').first().getByRole('link').getAttribute('href'))!
      const eve = await signIn(overSocket(app.url), 'eve', 'eve password')
      const asEve = (path: string, accept = 'text/html') =>
        fetch(`${app.url}${path}`, { headers: { cookie: eve.cookie, accept }, redirect: 'manual' })
      const json = await asEve(start, 'application/json')
      expect(json.status).toBe(404)
      expect(await json.json()).toMatchObject({ status: 'error', code: 'not_found' })
      const html = await asEve(start)
      expect(html.status).toBe(303)
      expect(html.headers.get('location')).toBe('/dashboard/download')
      const tampered = await asEve(start.replace(/sig=./, 'sig=A'), 'application/json')
      expect(tampered.status).toBe(403)
      const rows = app.db.query(
        'SELECT count(*) AS n FROM media_downloads WHERE account_id = (SELECT id FROM accounts WHERE name = ?)',
      )
      expect(rows.get('eve')).toEqual({ n: 0 })
    },
    LONG,
  )
})
