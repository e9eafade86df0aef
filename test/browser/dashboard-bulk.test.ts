// Bulk actions in the links list (issue 38, item 3) in real Chromium, driven as a person would: a shift-click
// range, "select all on this page" and then every link the filter finds, one confirmation naming the count
// before a bulk delete (reload and back included), a tag added and removed, the selection exported as CSV,
// an admin's disable and enable, the keyboard's way past the rows to "Next", and the same form without
// JavaScript. Each new state is checked with axe in both themes at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import type { Caller } from '../../src/kernel/caller'
import { parseCsv } from '../../src/links/csv'
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
import { CHROME_UA } from '../support/server'

const PW = 'correct horse'
const SHOTS = PHONE_SHOTS
let browser: Browser
let page: Page
let app: RunningApp
let alice: Caller

const callerOf = (name: string, admin = false) => dashboardCaller(app.db, name, { admin })

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: PW })
  await app.accounts.createAccount({ name: 'root', password: PW, admin: true })
  alice = callerOf('alice')
  // 30 links that "batch" finds (two pages of 25), newest last: batch-29 is first in the list.
  for (let i = 0; i < 30; i++)
    await app.links.create(
      { url: `https://example.com/batch/${i}`, alias: `batch-${String(i).padStart(2, '0')}` },
      alice,
    )
  for (const alias of ['keep-one', 'keep-two'])
    await app.links.create({ url: `https://example.org/${alias}`, alias, tags: 'kept' }, alice)
  // alice listens for link events: each link a bulk action changes must send its own event.
  await app.webhooks.createFor(alice.accountId, { url: 'http://127.0.0.1:9/hook' })
  browser = await launchBrowser()
  page = await chromePage(browser, { acceptDownloads: true })
})
afterAll(() => closeAll(browser, app))

async function check(name: string) {
  expect(await checkPage(page, name)).toBeLessThanOrEqual(390)
}
const click = (p: Page, selector: string) => Promise.all([p.waitForNavigation(), p.click(selector)])
const box = (code: string) => `input[type=checkbox][value="${code}"]`
const checkedCodes = (p: Page) =>
  p.$$eval('input[form="bulk-form"]:checked', (bs) => bs.map((b) => (b as HTMLInputElement).value))
const tagsOf = (code: string) =>
  (
    app.db
      .query('SELECT tag FROM link_tags t JOIN links l ON l.id = t.link_id WHERE l.code = ? ORDER BY tag')
      .all(code) as { tag: string }[]
  ).map((r) => r.tag)
const events = (type: string) =>
  (app.db.query('SELECT count(*) AS n FROM webhook_events WHERE type = ?').get(type) as { n: number }).n
const exists = (code: string) => app.db.query('SELECT 1 FROM links WHERE code = ?').get(code) !== null
const notice = (p: Page) => p.textContent('.notice, [role=status], [role=alert]')

describe('bulk actions in the links list', () => {
  test('shift-click ticks the range between two rows; the bar counts them (screenshots of the bar)', async () => {
    await signInBrowser(page, app.url, 'alice', PW)
    await page.goto(`${app.url}/dashboard?q=batch`)
    await page.click(box('batch-28'))
    await page.click(box('batch-24'), { modifiers: ['Shift'] })
    expect(await checkedCodes(page)).toEqual(['batch-28', 'batch-27', 'batch-26', 'batch-25', 'batch-24'])
    expect(await page.textContent('#bulk-count')).toBe('5 links selected.')
    // Shift-click on a ticked row unticks the range from the last click.
    await page.click(box('batch-26'), { modifiers: ['Shift'] })
    expect(await checkedCodes(page)).toEqual(['batch-28', 'batch-27'])
    await page.click(box('batch-25'), { modifiers: ['Shift'] })
    expect(await checkedCodes(page)).toEqual(['batch-28', 'batch-27', 'batch-26', 'batch-25'])
    await check('dash-bulk-selected')
    await page.setViewportSize({ width: 390, height: 844 })
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      await shoot(page.locator('#bulk-form'), { path: `${SHOTS}/bulk-bar-390-${scheme}.png` })
      await shoot(page, { path: `${SHOTS}/bulk-list-390-${scheme}.png` })
    }
    await page.emulateMedia({ colorScheme: 'light' })
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  test('add a tag to the ticked links, then remove it from them', async () => {
    const updated = events('link.updated')
    await page.selectOption('#bulk-action', 'add-tag')
    await page.fill('#bulk-tag', 'Promo')
    await check('dash-bulk-add-tag')
    await page.setViewportSize({ width: 390, height: 844 })
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      await shoot(page.locator('#bulk-form'), { path: `${SHOTS}/bulk-bar-tag-390-${scheme}.png` })
    }
    await page.emulateMedia({ colorScheme: 'light' })
    await page.setViewportSize({ width: 1280, height: 800 })
    await click(page, '#bulk-form button[type=submit]')
    expect(page.url()).toBe(`${app.url}/dashboard?q=batch`)
    expect(await notice(page)).toContain('Tagged 4 links with “promo”')
    for (const c of ['batch-28', 'batch-27', 'batch-26', 'batch-25']) expect(tagsOf(c)).toEqual(['promo'])
    expect(tagsOf('batch-29')).toEqual([])
    expect(events('link.updated')).toBe(updated + 4)
    await page.goto(`${app.url}/dashboard?tag=promo`)
    await page.check('#pick-all')
    expect((await checkedCodes(page)).length).toBe(4)
    // Every row of the page is ticked and the filter finds no more: no offer of more.
    expect(await page.isHidden('#bulk-all')).toBe(true)
    await page.selectOption('#bulk-action', 'remove-tag')
    await page.fill('#bulk-tag', 'promo')
    await click(page, '#bulk-form button[type=submit]')
    expect(await notice(page)).toContain('Removed the tag from 4 links')
    for (const c of ['batch-28', 'batch-27', 'batch-26', 'batch-25']) expect(tagsOf(c)).toEqual([])
    expect(events('link.updated')).toBe(updated + 8)
  })

  test('export the ticked links: the CSV holds exactly those rows', async () => {
    await page.goto(`${app.url}/dashboard?q=batch`)
    for (const c of ['batch-29', 'batch-20', 'batch-07']) await page.click(box(c))
    await page.selectOption('#bulk-action', 'export')
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#bulk-form button[type=submit]')])
    expect(download.suggestedFilename()).toMatch(/^links-selected-\d{4}-\d{2}-\d{2}\.csv$/)
    const rows = parseCsv(readFileSync((await download.path())!, 'utf8'))
    const code = rows[0]!.fields.indexOf('code')
    expect(code).toBeGreaterThanOrEqual(0)
    expect(rows.slice(1).map((r) => r.fields[code])).toEqual(['batch-29', 'batch-20', 'batch-07'])
  })

  test('select all that match the filter, delete: one confirmation naming the count; reload and back', async () => {
    const deleted = events('link.deleted')
    await page.goto(`${app.url}/dashboard?q=batch`)
    await page.check('#pick-all')
    expect(await page.textContent('#bulk-all-text')).toBe('All 25 links on this page are selected.')
    await page.click('#bulk-all-button')
    expect(await page.textContent('#bulk-count')).toBe('All 30 links that match are selected.')
    await check('dash-bulk-all-matching')
    await page.selectOption('#bulk-action', 'delete')
    await click(page, '#bulk-form button[type=submit]')
    expect(await page.textContent('h1')).toBe('Delete 30 links?')
    expect(exists('batch-00')).toBe(true) // nothing is deleted before the confirmation
    await check('dash-bulk-confirm')
    await page.reload()
    expect(await page.textContent('h1')).toBe('Delete 30 links?')
    await click(page, 'button:has-text("Delete 30 links")')
    expect(page.url()).toBe(`${app.url}/dashboard?q=batch`)
    expect(await notice(page)).toContain('Deleted 30 links.')
    expect(exists('batch-00') || exists('batch-29')).toBe(false)
    expect(exists('keep-one')).toBe(true)
    expect(events('link.deleted')).toBe(deleted + 30)
    // Back to the confirmation: it is read again, and now names nothing to delete.
    await page.goBack()
    expect(await page.textContent('h1')).toBe('Delete 0 links?')
    expect(await page.isVisible('button.danger')).toBe(false)
  })

  test("another account's code in the confirmation's address is neither counted nor deleted", async () => {
    await app.links.create({ url: 'https://example.net/root', alias: 'root-own' }, callerOf('root', true))
    await page.goto(`${app.url}/dashboard/links-bulk/delete?code=root-own&code=keep-one`)
    expect(await page.textContent('h1')).toBe('Delete 1 link?')
    expect(await page.textContent('.bulk-codes')).toBe('keep-one')
  })

  test('the keyboard reaches "Next" past the rows in a few tab stops (the skip link)', async () => {
    for (let i = 0; i < 30; i++)
      await app.links.create({ url: `https://example.com/more/${i}`, alias: `more-${i}` }, alice)
    await page.goto(`${app.url}/dashboard`)
    // From the top of the page, as a keyboard user arrives: the header, the create form, then the skip link.
    let stops = 0
    while (stops < 40) {
      await page.keyboard.press('Tab')
      stops++
      if ((await page.evaluate(() => document.activeElement?.textContent)) === 'Skip to pages') break
    }
    await page.keyboard.press('Enter')
    await page.keyboard.press('Tab')
    stops++
    expect(await page.evaluate(() => document.activeElement?.getAttribute('rel'))).toBe('next')
    // Without it: the list's tools, the bulk bar and about 7 stops in each of the 25 rows.
    expect(stops).toBeLessThanOrEqual(20)
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')])
    expect(page.url()).toBe(`${app.url}/dashboard?page=2`)
  })

  test('without JavaScript: tick rows, choose the action, confirm, done', async () => {
    const ctx = await browser.newContext({ javaScriptEnabled: false, userAgent: CHROME_UA })
    const p = await ctx.newPage()
    await signInBrowser(p, app.url, 'alice', PW)
    await p.goto(`${app.url}/dashboard?tag=kept`)
    expect(await p.isHidden('#pick-all')).toBe(true)
    await p.check(box('keep-one'))
    await p.check(box('keep-two'))
    await p.selectOption('#bulk-action', 'add-tag')
    await p.fill('#bulk-tag', 'nojs')
    await click(p, '#bulk-form button[type=submit]')
    expect(tagsOf('keep-one')).toEqual(['kept', 'nojs'])
    expect(tagsOf('keep-two')).toEqual(['kept', 'nojs'])
    await p.check(box('keep-one'))
    await p.check(box('keep-two'))
    await p.selectOption('#bulk-action', 'delete')
    await click(p, '#bulk-form button[type=submit]')
    expect(await p.textContent('h1')).toBe('Delete 2 links?')
    await click(p, 'button:has-text("Delete 2 links")')
    expect(p.url()).toBe(`${app.url}/dashboard?tag=kept`)
    expect(await notice(p)).toContain('Deleted 2 links.')
    expect(exists('keep-one') || exists('keep-two')).toBe(false)
    await ctx.close()
  })

  test('an admin disables and enables ticked links; each change has its audit row', async () => {
    const root = callerOf('root', true)
    await app.links.create({ url: 'https://example.net/r2', alias: 'root-two' }, root)
    const ctx = await browser.newContext({ userAgent: CHROME_UA })
    const p = await ctx.newPage()
    await signInBrowser(p, app.url, 'root', PW)
    const disabled = (c: string) =>
      (app.db.query('SELECT disabled FROM links WHERE code = ?').get(c) as { disabled: string | null }).disabled
    const audits = (action: string) =>
      (app.db.query('SELECT count(*) AS n FROM audit_log WHERE action = ?').get(action) as { n: number }).n
    const before = audits('link.disable')
    await p.check(box('root-own'))
    await p.check(box('root-two'))
    await p.selectOption('#bulk-action', 'disable')
    await click(p, '#bulk-form button[type=submit]')
    expect(await notice(p)).toContain('Disabled 2 links')
    expect(disabled('root-own')).not.toBeNull()
    expect(audits('link.disable')).toBe(before + 2)
    await p.check(box('root-own'))
    await p.selectOption('#bulk-action', 'enable')
    await click(p, '#bulk-form button[type=submit]')
    expect(disabled('root-own')).toBeNull()
    expect(disabled('root-two')).not.toBeNull()
    // An account that is not an admin is not offered these.
    expect(await page.$$eval('#bulk-action option', (os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual([
      'delete',
      'add-tag',
      'remove-tag',
      'export',
    ])
    await ctx.close()
  })
})
