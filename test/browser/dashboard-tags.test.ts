// Tags in the dashboard (issue 23) in real Chromium: tags set in the create and edit forms, shown as chips,
// a chip filters the list, the search box (id "search") searches code, destination and tags, reload and
// back keep each list, and "Export CSV" downloads every link. Each list page is checked with axe in both
// themes and at 390 px, and screenshotted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import type { Caller } from '../../src/kernel/caller'
import { parseCsv } from '../../src/links/csv'
import { checkPage, launchBrowser, startApp, type RunningApp, chromePage, closeAll } from '../support/browser'
import { signInBrowser, dashboardCaller } from '../support/dashboard'

let browser: Browser
let page: Page
let app: RunningApp
let alice: Caller
const requests: string[] = []

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: 'correct horse' })
  alice = dashboardCaller(app.db, 'alice')
  await app.links.create({ url: 'https://example.com/news/one', alias: 'news-one', tags: 'news,world' }, alice)
  await app.links.create({ url: 'https://example.com/sport/two', alias: 'sport-two', tags: 'sport' }, alice)
  await app.links.create({ url: 'https://example.com/news/three', alias: 'news-three', tags: 'news' }, alice)
  await app.links.create({ url: 'https://example.com/untagged', alias: 'untagged' }, alice)
  browser = await launchBrowser()
  page = await chromePage(browser, { acceptDownloads: true })
  page.on('request', (r) => void requests.push(r.url()))
})
afterAll(() => closeAll(browser, app))

async function check(name: string) {
  expect(await checkPage(page, name)).toBeLessThanOrEqual(390)
}
const rowCodes = () => page.$$eval('a.short', (as) => as.map((a) => a.id.replace(/^short-/, '')))
const chipsOf = (code: string) =>
  page.$$eval(`tr:has(#short-${code}) .tag-chip`, (as) => as.map((a) => a.textContent!.replace('Links tagged ', '')))
const click = (selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)])
const tagsOf = (code: string) =>
  (
    app.db
      .query('SELECT tag FROM link_tags t JOIN links l ON l.id = t.link_id WHERE l.code = ? ORDER BY tag')
      .all(code) as { tag: string }[]
  ).map((r) => r.tag)

describe('tags in the dashboard', () => {
  test("create a link with tags from the form; the list shows every link's tags as chips", async () => {
    await signInBrowser(page, app.url, 'alice', 'correct horse')
    await page.fill('#url', 'https://example.com/promo/spring')
    await page.click('details.more summary')
    await page.fill('#alias', 'promo')
    await page.fill('#tags', 'Promo, news,')
    await click('button:has-text("Shorten")')
    expect(page.url()).toBe(`${app.url}/dashboard?new=promo`)
    expect(tagsOf('promo')).toEqual(['news', 'promo'])
    expect(await chipsOf('promo')).toEqual(['news', 'promo'])
    expect(await chipsOf('news-one')).toEqual(['news', 'world'])
    expect(await chipsOf('untagged')).toEqual([])
    await check('dash-tags-list')
  })

  test('a refused tags field is shown at the field, with what was typed', async () => {
    await page.fill('#url', 'https://example.com/bad-tags')
    await page.click('details.more summary')
    // Spaces become "-" (issue 38); a "%" is no letter, digit, _ or -.
    await page.fill('#tags', 'no spaces inside, 50%off')
    await click('button:has-text("Shorten")')
    expect(await page.getAttribute('#tags', 'aria-invalid')).toBe('true')
    expect(await page.textContent('#tags-error')).toBe(
      'Tags can hold letters, digits, _ and -: “50%off” has other characters.',
    )
    expect(await page.inputValue('#tags')).toBe('no spaces inside, 50%off')
    expect(
      app.db.query("SELECT count(*) AS n FROM links WHERE long_url = 'https://example.com/bad-tags'").get(),
    ).toEqual({ n: 0 })
  })

  test('a chip filters the list by its tag; the search box searches within it; reload and back keep each list', async () => {
    await page.goto(`${app.url}/dashboard`)
    await click('tr:has(#short-news-one) a.tag-chip:has-text("news")')
    expect(page.url()).toBe(`${app.url}/dashboard?tag=news`)
    expect((await rowCodes()).sort()).toEqual(['news-one', 'news-three', 'promo'])
    expect(await page.textContent('.tag-filter')).toContain('Tagged news')
    expect(await page.getAttribute('tr:has(#short-news-one) a.tag-chip:has-text("news")', 'aria-current')).toBe('true')
    await check('dash-tags-filter')

    // The "/" shortcut's target: the search input is #search, named q.
    expect(await page.getAttribute('#search', 'name')).toBe('q')
    await page.fill('#search', 'THREE')
    await click('.link-search button')
    expect(page.url()).toBe(`${app.url}/dashboard?q=THREE&tag=news`)
    expect(await rowCodes()).toEqual(['news-three'])

    await page.reload()
    expect(await rowCodes()).toEqual(['news-three'])
    await page.goBack()
    expect(page.url()).toBe(`${app.url}/dashboard?tag=news`)
    expect((await rowCodes()).sort()).toEqual(['news-one', 'news-three', 'promo'])

    // Search without a tag: by tag text, by destination.
    await page.goto(`${app.url}/dashboard`)
    await page.fill('#search', 'world')
    await click('.link-search button')
    expect(await rowCodes()).toEqual(['news-one'])
    await page.goto(`${app.url}/dashboard?tag=nothing-like-it`)
    expect(await page.textContent('.empty')).toContain('No link is tagged “nothing-like-it”.')
    await check('dash-tags-empty')
    await click('.tag-filter a')
    expect(page.url()).toBe(`${app.url}/dashboard`)
    expect((await rowCodes()).length).toBe(5)
  })

  test('the edit form changes the tags; "" removes them', async () => {
    await page.goto(`${app.url}/dashboard/links/sport-two`)
    expect(await page.inputValue('#tags')).toBe('sport')
    await page.fill('#tags', 'sport, Football')
    await click('button:has-text("Save changes")')
    expect(page.url()).toBe(`${app.url}/dashboard/links/sport-two`)
    expect(tagsOf('sport-two')).toEqual(['football', 'sport'])
    expect(await page.inputValue('#tags')).toBe('football, sport')
    await check('dash-tags-edit')
    // Reloading the page after the save sends nothing again (Post/Redirect/Get).
    await page.reload()
    expect(tagsOf('sport-two')).toEqual(['football', 'sport'])
    await page.fill('#tags', '')
    await click('button:has-text("Save changes")')
    expect(tagsOf('sport-two')).toEqual([])
  })

  test('"Export CSV" downloads every link of the account', async () => {
    await page.goto(`${app.url}/dashboard?tag=news`)
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('a.export-link')])
    expect(download.suggestedFilename()).toMatch(/^links-\d{4}-\d{2}-\d{2}\.csv$/)
    const rows = parseCsv(readFileSync((await download.path())!, 'utf8'))
    expect(rows[0]!.fields).toEqual([
      'code',
      'short_url',
      'long_url',
      'mode',
      'created',
      'expires',
      'clicks',
      'tags',
      'max_visits',
      'title',
      'rules',
      'split',
      'has_password',
      'domain',
      'expired_url',
    ])
    expect(rows.slice(1).map((r) => [r.fields[0], r.fields[7]])).toEqual([
      ['news-one', 'news,world'],
      ['sport-two', ''],
      ['news-three', 'news'],
      ['untagged', ''],
      ['promo', 'news,promo'],
    ])
    // Signed out, the file is not given.
    const anonymous = await fetch(`${app.url}/dashboard/links.csv`, { redirect: 'manual' })
    expect(anonymous.status).toBe(303)
    expect(requests.every((u) => u.startsWith(app.url))).toBe(true)
  })
})
