// Tags as things (issue 38, item 7) in real Chromium, driven as a person would: the tags page with each tag's
// links and clicks, a filter by several tags (AND) from the page's checkboxes and from the rows' chips, every
// sort of the list both ways kept in the URL (reload and back), and rename, merge and delete with its
// confirmation. Each new state is checked with axe in both themes at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import {
  checkPage,
  launchBrowser,
  startApp,
  type RunningApp,
  PHONE_SHOTS,
  shoot,
  chromePage,
  closeAll,
} from '../support/browser'
import { signInBrowser, dashboardCaller } from '../support/dashboard'

const PW = 'correct horse'
const SHOTS = PHONE_SHOTS
let browser: Browser
let page: Page
let app: RunningApp

// Made in this order (oldest first), with these clicks, destinations and tags.
const LINKS = [
  { code: 'delta', clicks: 5, dest: 'c', tags: 'news,world' },
  { code: 'alpha', clicks: 9, dest: 'e', tags: 'news,sport' },
  { code: 'echo', clicks: 1, dest: 'a', tags: 'sport,old' },
  { code: 'charlie', clicks: 7, dest: 'd', tags: 'old' },
  { code: 'bravo', clicks: 3, dest: 'b', tags: '' },
]

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: PW })
  const alice = dashboardCaller(app.db, 'alice')
  for (const l of LINKS) {
    await app.links.create({ url: `https://example.com/${l.dest}`, alias: l.code, tags: l.tags }, alice)
    app.db.query('UPDATE links SET clicks = ? WHERE code = ?').run(l.clicks, l.code)
  }
  // Another account's tag of the same name is never counted, renamed or deleted.
  await app.accounts.createAccount({ name: 'bob', password: PW })
  const bob = {
    ...alice,
    accountId: (app.db.query("SELECT id FROM accounts WHERE name = 'bob'").get() as { id: number }).id,
  }
  await app.links.create({ url: 'https://example.com/bob', alias: 'bobs', tags: 'old' }, bob)
  await app.webhooks.createFor(alice.accountId, { url: 'http://127.0.0.1:9/hook' })
  browser = await launchBrowser()
  page = await chromePage(browser)
})
afterAll(() => closeAll(browser, app))

async function check(name: string) {
  expect(await checkPage(page, name)).toBeLessThanOrEqual(390)
}
const click = (selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)])
const rowCodes = () => page.$$eval('a.short', (as) => as.map((a) => a.id.replace(/^short-/, '')))
const tagRows = () =>
  page.$$eval('.tags-table tbody tr', (trs) =>
    trs.map((tr) =>
      Array.from(tr.querySelectorAll('td'))
        .slice(1, 4)
        .map((td) => td.textContent!.replace('Links tagged ', '').trim()),
    ),
  )
const tagsOf = (code: string) =>
  (
    app.db
      .query('SELECT tag FROM link_tags t JOIN links l ON l.id = t.link_id WHERE l.code = ? ORDER BY tag')
      .all(code) as { tag: string }[]
  ).map((r) => r.tag)
const updates = () =>
  (app.db.query("SELECT count(*) AS n FROM webhook_events WHERE type = 'link.updated'").get() as { n: number }).n

describe('the tags page', () => {
  test('lists each tag with its links and clicks (only this account’s), reached from the list', async () => {
    await signInBrowser(page, app.url, 'alice', PW)
    await click('a.manage-tags')
    expect(page.url()).toBe(`${app.url}/dashboard/tags`)
    expect(await tagRows()).toEqual([
      ['news', '2', '14'],
      ['old', '2', '8'],
      ['sport', '2', '10'],
      ['world', '1', '5'],
    ])
    await check('dash-tag-page')
    await page.setViewportSize({ width: 390, height: 844 })
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      await shoot(page, { path: `${SHOTS}/bulk-tags-page-390-${scheme}.png`, fullPage: true })
    }
    await page.emulateMedia({ colorScheme: 'light' })
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  test('tick two tags: the list shows the links with both, and says so', async () => {
    await page.check('input[form="tag-filter"][value="news"]')
    await page.check('input[form="tag-filter"][value="sport"]')
    await click('#tag-filter button')
    expect(page.url()).toBe(`${app.url}/dashboard?tag=news&tag=sport`)
    expect(await rowCodes()).toEqual(['alpha'])
    expect(await page.textContent('.tag-filter')).toContain('links with all of these tags')
    await check('dash-tags-two')
    // A chip of the filter takes its tag off: news alone.
    await click('.tag-filter a.tag-chip:has-text("sport")')
    expect(page.url()).toBe(`${app.url}/dashboard?tag=news`)
    expect(await rowCodes()).toEqual(['alpha', 'delta'])
    // A row's chip adds its tag to the filter.
    await click('tr:has(#short-delta) a.tag-chip:has-text("world")')
    expect(page.url()).toBe(`${app.url}/dashboard?tag=news&tag=world`)
    expect(await rowCodes()).toEqual(['delta'])
    await page.reload()
    expect(await rowCodes()).toEqual(['delta'])
    await page.goBack()
    expect(page.url()).toBe(`${app.url}/dashboard?tag=news`)
    expect(await rowCodes()).toEqual(['alpha', 'delta'])
  })

  test('every sort both ways, kept in the URL through reload and back', async () => {
    await page.goto(`${app.url}/dashboard`)
    const sorts: [string, string, string[]][] = [
      ['Oldest', 'oldest', ['delta', 'alpha', 'echo', 'charlie', 'bravo']],
      ['Most clicks', 'clicks', ['alpha', 'charlie', 'delta', 'bravo', 'echo']],
      ['Fewest clicks', 'fewest-clicks', ['echo', 'bravo', 'delta', 'charlie', 'alpha']],
      ['Code A–Z', 'code', ['alpha', 'bravo', 'charlie', 'delta', 'echo']],
      ['Code Z–A', 'code-desc', ['echo', 'delta', 'charlie', 'bravo', 'alpha']],
      ['Destination A–Z', 'destination', ['echo', 'bravo', 'delta', 'charlie', 'alpha']],
      ['Destination Z–A', 'destination-desc', ['alpha', 'charlie', 'delta', 'bravo', 'echo']],
      ['Newest', '', ['bravo', 'charlie', 'echo', 'alpha', 'delta']],
    ]
    let before = `${app.url}/dashboard`
    for (const [text, param, codes] of sorts) {
      await click(`nav.sort a:text-is("${text}")`)
      const url = `${app.url}/dashboard${param ? `?sort=${param}` : ''}`
      expect({ text, url: page.url() }).toEqual({ text, url })
      expect({ text, codes: await rowCodes() }).toEqual({ text, codes })
      expect(await page.getAttribute(`nav.sort a:text-is("${text}")`, 'aria-current')).toBe('true')
      await page.reload()
      expect({ text, reloaded: await rowCodes() }).toEqual({ text, reloaded: codes })
      await page.goBack()
      expect(page.url()).toBe(before)
      await page.goForward()
      expect(page.url()).toBe(url)
      before = url
    }
    // The sort stays with a tag filter and a search.
    await page.goto(`${app.url}/dashboard?tag=old&sort=code`)
    expect(await rowCodes()).toEqual(['charlie', 'echo'])
    await check('dash-sorted-tagged')
  })

  test('rename: a refused name is shown at its field; a good one renames on every link', async () => {
    await page.goto(`${app.url}/dashboard/tags`)
    await page.fill('#rename-sport', 'two words')
    await click('form:has(#rename-sport) button')
    expect(await page.textContent('#rename-sport-error')).toBe(
      'A tag holds letters, digits, _ and - (at most 32), without spaces.',
    )
    expect(await page.inputValue('#rename-sport')).toBe('two words')
    expect(await page.getAttribute('#rename-sport', 'aria-invalid')).toBe('true')
    await check('dash-tag-rename-error')
    const events = updates()
    await page.fill('#rename-sport', 'Sports')
    await click('form:has(#rename-sport) button')
    expect(page.url()).toBe(`${app.url}/dashboard/tags`)
    expect(await page.textContent('.notice')).toBe('Renamed “sport” to “sports” on 2 links.')
    expect(tagsOf('alpha')).toEqual(['news', 'sports'])
    expect(tagsOf('echo')).toEqual(['old', 'sports'])
    expect(updates()).toBe(events + 2)
    await page.reload()
    expect((await tagRows()).map((r) => r[0])).toEqual(['news', 'old', 'sports', 'world'])
  })

  test('rename onto a tag in use merges the two', async () => {
    await page.fill('#rename-old', 'news')
    await click('form:has(#rename-old) button')
    expect(await page.textContent('.notice')).toBe('Merged “old” into “news” on 2 links.')
    expect(await tagRows()).toEqual([
      ['news', '4', '22'],
      ['sports', '2', '10'],
      ['world', '1', '5'],
    ])
    expect(tagsOf('charlie')).toEqual(['news'])
    expect(tagsOf('bobs')).toEqual(['old']) // bob's tag of that name
    await check('dash-tag-merged')
  })

  test('delete asks first, then takes the tag off its links; the links stay', async () => {
    await click('a.danger-link:has-text("world")')
    expect(await page.textContent('h1')).toBe('Delete the tag “world”?')
    expect(await page.textContent('.confirm')).toContain('It is taken off 1 link')
    expect(tagsOf('delta')).toEqual(['news', 'world']) // nothing yet
    await check('dash-tag-delete')
    await click('button.danger')
    expect(page.url()).toBe(`${app.url}/dashboard/tags`)
    expect(await page.textContent('.notice')).toBe('Deleted the tag “world” from 1 link.')
    expect(tagsOf('delta')).toEqual(['news'])
    expect(app.db.query("SELECT 1 FROM links WHERE code = 'delta'").get()).not.toBeNull()
    // Back to the confirmation: read again, it has nothing left to delete.
    await page.goBack()
    expect(await page.textContent('.confirm')).toContain('None of your links has this tag.')
    expect(await page.isVisible('button.danger')).toBe(false)
  })
})
