// Forms that help (issue 38, item 6) in real Chromium: an address typed without its scheme gets https:// (said
// under the field when it is left, and in the notice after saving without JavaScript); tags are shown as they
// will be kept while typing and kept so ("Summer Sale" → summer-sale); every field's problem comes back at once,
// each beside its field, in plain words. axe on each new state; screenshots at 390 px in both themes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import {
  checkPage,
  launchBrowser,
  startApp,
  type RunningApp,
  phoneShots,
  chromePage,
  closeAll,
} from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

let browser: Browser
let page: Page
let app: RunningApp

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'fay', password: 'correct horse' })
  browser = await launchBrowser()
  page = await chromePage(browser)
})
afterAll(() => closeAll(browser, app))

const click = (p: Page, selector: string) => Promise.all([p.waitForNavigation(), p.click(selector)])
const link = (code: string) =>
  app.db.query('SELECT long_url FROM links WHERE code = ?').get(code) as { long_url: string } | null
const tagsOf = (code: string) =>
  (
    app.db
      .query('SELECT tag FROM link_tags JOIN links ON links.id = link_id WHERE code = ? ORDER BY tag')
      .all(code) as { tag: string }[]
  ).map((r) => r.tag)

describe('forms that help', () => {
  test('an address without its scheme gets https:// when the field is left; tags are previewed and kept as shown', async () => {
    await signInBrowser(page, app.url, 'fay', 'correct horse')
    expect(await page.textContent('#url-scheme')).toBe('Typed without https://, it is added.')
    await page.fill('#url', 'www.example.com/page')
    await page.keyboard.press('Tab')
    expect(await page.inputValue('#url')).toBe('https://www.example.com/page')
    expect(await page.textContent('#url-scheme')).toBe('https:// was added in front.')
    await page.click('details.more summary')
    await page.fill('#alias', 'helped')
    await page.fill('#tags', 'Summer Sale, #News,  Café ,news')
    expect(await page.textContent('#tags-preview')).toBe('Saved as: summer-sale, news, cafe')
    await checkPage(page, 'forms-help-preview')
    await click(page, 'button:has-text("Shorten")')
    expect(page.url()).toBe(`${app.url}/dashboard?new=helped`)
    expect(link('helped')).toEqual({ long_url: 'https://www.example.com/page' })
    expect(tagsOf('helped')).toEqual(['cafe', 'news', 'summer-sale'])
    // The edit form normalises too.
    await page.goto(`${app.url}/dashboard/links/helped`)
    expect(await page.inputValue('#tags')).toBe('cafe, news, summer-sale')
    await page.fill('#tags', 'Back To School')
    await click(page, 'button:has-text("Save changes")')
    expect(tagsOf('helped')).toEqual(['back-to-school'])
    await page.reload()
    expect(await page.inputValue('#tags')).toBe('back-to-school')
    await page.goBack()
    expect(tagsOf('helped')).toEqual(['back-to-school'])
  })

  test('every field’s problem comes back at once, each beside its field, in plain words', async () => {
    await page.goto(`${app.url}/dashboard`)
    await page.fill('#url', 'ftp://example.com/file')
    await page.click('details.more summary')
    await page.fill('#alias', 'x')
    await page.fill('#tags', 'fine, 50%off')
    await page.$eval('#title', (el) => el.removeAttribute('maxlength'))
    await page.fill('#title', 't'.repeat(201))
    await page.fill('#max_visits', '-3')
    await page.fill('#split_0_url', 'https://example.com/a')
    await page.fill('#split_0_weight', '50')
    await click(page, 'button:has-text("Shorten")')
    expect(page.url()).toMatch(/\/dashboard\?form=/)
    const errors = await page.$$eval('.error[id$="-error"]', (els) =>
      Object.fromEntries(els.map((el) => [el.id, el.textContent])),
    )
    expect(errors).toEqual({
      'url-error': 'The URL must be an absolute URL with the scheme http or https.',
      'alias-error': 'The alias must be 2 to 32 characters: letters, digits, _ and -.',
      'title-error': 'The title: at most 200 characters (it has 201).',
      'tags-error': 'Tags can hold letters, digits, _ and -: “50%off” has other characters.',
      'max_visits-error':
        'The visit limit must be a whole number of visits from 1 to 1000000000 (0 or empty: no limit).',
      'split-error':
        'A split shares visitors between 2 and 10 destinations; there is 1. Leave every row empty for no split.',
    })
    for (const id of ['url', 'alias', 'title', 'tags', 'max_visits'])
      expect(await page.getAttribute(`#${id}`, 'aria-invalid')).toBe('true')
    expect(await page.textContent('main')).not.toContain('is invalid')
    expect(link('x')).toBeNull()
    await checkPage(page, 'forms-help-errors')
    await phoneShots(page, 'rules-forms-errors', { height: 900, bare: true })
  })
})

describe('without JavaScript', () => {
  test('the server adds https:// and says so in the notice, and keeps the tags as people type them', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, userAgent: CHROME_UA })
    const p = await context.newPage()
    p.setDefaultTimeout(10_000)
    try {
      await signInBrowser(p, app.url, 'fay', 'correct horse')
      await p.fill('#url', 'www.example.com/nojs')
      await p.click('details.more summary')
      await p.fill('#alias', 'plain')
      await p.fill('#tags', 'Summer Sale')
      await click(p, 'button:has-text("Shorten")')
      expect(await p.textContent('.notice.ok')).toContain('https:// was added in front of www.example.com/nojs.')
      expect(link('plain')).toEqual({ long_url: 'https://www.example.com/nojs' })
      expect(tagsOf('plain')).toEqual(['summer-sale'])
      await p.goto(`${app.url}/dashboard/links/plain`)
      await p.fill('#url', 'example.org/moved')
      await click(p, 'button:has-text("Save changes")')
      expect(await p.textContent('.notice.ok')).toContain('https:// was added in front of example.org/moved.')
      expect(link('plain')).toEqual({ long_url: 'https://example.org/moved' })
      await phoneShots(p, 'rules-forms-nojs-saved', { height: 900, bare: true })
    } finally {
      await context.close()
    }
  })
})
