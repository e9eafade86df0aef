// "Your recent links" on the home page (issue 38, item 9), in real Chromium: links made without signing in are
// listed under the form, newest first, each with a copy button, its public QR image and its statistics; the
// list survives a reload and Back, holds at most 20, ignores entries that are not links, and "Forget these
// links" empties it. Without JavaScript the page is as before. axe in both themes at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import {
  checkPage,
  htmlPage,
  launchBrowser,
  startApp,
  startFixture,
  type Fixture,
  type RunningApp,
} from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

let browser: Browser
let app: RunningApp
let dest: Fixture

beforeAll(async () => {
  dest = startFixture((_req, url) => htmlPage(`Destination ${url.pathname}`))
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: 'correct horse battery' })
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await app?.stop()
  dest?.stop()
})

async function tab(javaScriptEnabled = true): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ userAgent: CHROME_UA, javaScriptEnabled })
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  return { context, page }
}

/** Shortens `path` on the destination with the form (answered in place); returns the short URL. */
async function shorten(page: Page, path: string): Promise<string> {
  const before = (await page.locator('#short').count()) ? await page.inputValue('#short') : ''
  await page.getByLabel('Long URL').fill(`${dest.url}${path}`)
  await page.getByRole('button', { name: 'Shorten' }).click()
  await page.waitForFunction((old) => {
    const short = document.getElementById('short') as HTMLInputElement | null
    return !!short && short.value !== old
  }, before)
  return page.inputValue('#short')
}

const recentShorts = (page: Page) =>
  page.locator('#recent .recent-short').evaluateAll((links) => links.map((a) => a.textContent))

describe('with JavaScript', () => {
  test('made links are listed, newest first, and survive a reload and Back', async () => {
    const { context, page } = await tab()
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url })
    try {
      await page.goto(`${app.url}/`)
      // Nothing made yet: no list, not even its heading.
      expect(await page.getByRole('heading', { name: 'Your recent links' }).count()).toBe(0)
      const first = await shorten(page, '/first')
      const second = await shorten(page, '/second')
      const list = page.getByRole('region', { name: 'Your recent links' })
      await list.waitFor()
      expect(await recentShorts(page)).toEqual([second, first])
      expect(await list.locator('.recent-dest').first().textContent()).toBe(`to ${dest.url}/second`)

      // The QR image is the public address of the link's code, and it loads.
      const code = second.slice(second.lastIndexOf('/') + 1)
      const qr = list.getByRole('link', { name: `Download the QR code of ${second}` })
      expect(await qr.getAttribute('href')).toBe(`/qr/${code}.png`)
      await page.waitForFunction(() => {
        const img = document.querySelector('#recent img') as HTMLImageElement | null
        return !!img && img.complete && img.naturalWidth > 0
      })

      // Copy the older one from the list.
      await list.getByRole('button', { name: `Copy ${first}` }).click()
      await page.waitForFunction(() => document.querySelectorAll('#recent button.copy')[1]?.textContent === 'Copied')
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(first)

      // A reload: the result was shown once, the list stays.
      await page.reload()
      await list.waitFor()
      expect(await page.locator('#short').count()).toBe(0)
      expect(await recentShorts(page)).toEqual([second, first])
      expect(await checkPage(page, 'front-home-recent')).toBeLessThanOrEqual(390)

      // Away to a link's statistics and Back: the list is there again.
      await list.getByRole('link', { name: `Statistics of ${first}` }).click()
      await page.waitForURL(`${app.url}/${first.slice(first.lastIndexOf('/') + 1)}+`)
      await page.goBack()
      await page.waitForURL(`${app.url}/`)
      await list.waitFor()
      expect(await recentShorts(page)).toEqual([second, first])
    } finally {
      await context.close()
    }
  })

  test('at most 20 are kept, and entries that are not links are left out', async () => {
    const { context, page } = await tab()
    try {
      await page.goto(`${app.url}/`)
      await page.evaluate(() => {
        const kept = Array.from({ length: 20 }, (_, i) => ({
          hex: `old${i}`,
          url: `${location.origin}/old${i}`,
          long_url: `https://example.com/${i}`,
          made: i,
        }))
        kept.splice(3, 0, { hex: 'x', url: 'javascript:alert(1)', long_url: 'x', made: 0 })
        localStorage.setItem('linkbox-recent', JSON.stringify(kept))
      })
      await page.reload()
      await page.locator('#recent .recent-short').first().waitFor()
      expect(await page.locator('#recent a[href^="javascript:"]').count()).toBe(0)
      expect(await page.locator('#recent .recent-item').count()).toBe(20)
      const made = await shorten(page, '/twenty-first')
      await page.waitForFunction((m) => document.querySelector('#recent .recent-short')?.textContent === m, made)
      const shorts = await recentShorts(page)
      expect(shorts.length).toBe(20)
      expect(shorts[0]).toBe(made)
      expect(shorts).not.toContain(`${app.url}/old19`) // the oldest went
      expect(shorts[1]).toBe(`${app.url}/old0`)
    } finally {
      await context.close()
    }
  })

  test('"Forget these links" empties the list, for good', async () => {
    const { context, page } = await tab()
    try {
      await page.goto(`${app.url}/`)
      await shorten(page, '/forget-me')
      await page.getByRole('region', { name: 'Your recent links' }).waitFor()
      await page.getByRole('button', { name: 'Forget these links' }).focus()
      await page.keyboard.press('Enter')
      await page.waitForFunction(() => (document.getElementById('recent') as HTMLElement).hidden)
      expect(await page.evaluate(() => localStorage.getItem('linkbox-recent'))).toBeNull()
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('url')
      expect(await page.locator('#recent-status').textContent()).toContain('no longer keeps your links')
      expect(await checkPage(page, null)).toBeLessThanOrEqual(390)
      await page.reload()
      expect(await page.getByRole('heading', { name: 'Your recent links' }).count()).toBe(0)
    } finally {
      await context.close()
    }
  })
})

test('without JavaScript the page is as before: no list', async () => {
  const { context, page } = await tab(false)
  try {
    await page.goto(`${app.url}/`)
    await page.getByLabel('Long URL').fill(`${dest.url}/no-script`)
    await page.getByRole('button', { name: 'Shorten' }).click()
    await page.waitForURL(/\/\?made=/)
    expect(await page.locator('#short').inputValue()).toMatch(/\/[A-Za-z0-9]{6}$/)
    expect(await page.locator('#recent').count()).toBe(0)
  } finally {
    await context.close()
  }
})

test("signed in, a link is the account's (listed in the dashboard): not kept in the browser's list", async () => {
  const { context, page } = await tab()
  try {
    await signInBrowser(page, app.url, 'alice', 'correct horse battery')
    await page.goto(`${app.url}/`)
    await shorten(page, '/owned')
    expect(await page.getByRole('link', { name: 'your dashboard' }).isVisible()).toBe(true)
    expect(await page.locator('#recent').count()).toBe(0)
    expect(await page.evaluate(() => localStorage.getItem('linkbox-recent'))).toBeNull()
  } finally {
    await context.close()
  }
})
