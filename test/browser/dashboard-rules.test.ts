// Visit limits, redirect rules and A/B splits in the dashboard (issue 23; the editor's rows since issue 38, whose
// own test is dashboard-rules-editor.test.ts) in real Chromium: set in the create form (a refused one comes back
// with the error at its field, through reload and back), shown in the list
// ("3 of 3 visits left", badges), changed and removed on the edit page. Each page is checked with axe in
// both themes and at 390 px, and screenshotted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp, chromePage, closeAll } from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

let browser: Browser
let page: Page
let app: RunningApp

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'rita', password: 'correct horse' })
  browser = await launchBrowser()
  page = await chromePage(browser)
})
afterAll(() => closeAll(browser, app))

const click = (selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)])
const stored = (code: string) =>
  app.db.query('SELECT max_visits, visits_used, rules, split FROM links WHERE code = ?').get(code) as {
    max_visits: number | null
    visits_used: number
    rules: string | null
    split: string | null
  }
const rowText = (code: string) => page.textContent(`tr:has(#short-${code}) td.link-cell`)

describe('limits, rules and splits in the dashboard', () => {
  test('a refused rule comes back with its error at its row, the typed values kept through reload and back', async () => {
    await signInBrowser(page, app.url, 'rita', 'correct horse')
    await page.fill('#url', 'https://example.com/launch')
    await page.click('details.more summary')
    await page.fill('#alias', 'launch')
    await page.fill('#max_visits', '3')
    // A country chosen, no destination typed.
    await page.selectOption('#rule_0_country', ['DE'])
    await click('button:has-text("Shorten")')
    // Post/Redirect/Get: the refused form is a page of its own.
    expect(page.url()).toMatch(/\/dashboard\?form=/)
    expect(await page.getAttribute('#rule_0_url', 'aria-invalid')).toBe('true')
    expect(await page.getAttribute('#rule_0_url', 'aria-describedby')).toBe('rule_0_url-scheme rule_0_url-error')
    expect(await page.textContent('#rule_0_url-error')).toBe('Rule 1: type the address to send these visitors to.')
    expect(await page.inputValue('#max_visits')).toBe('3')
    expect(await page.$$eval('#rule_0_country option:checked', (os) => os.map((o) => o.getAttribute('value')))).toEqual(
      ['DE'],
    )
    expect(app.db.query("SELECT 1 FROM links WHERE code = 'launch'").get()).toBeNull()
    await checkPage(page, 'dashboard-rules-refused')
    // A reload is a GET: nothing is sent again (the refused form is shown once, as every form's is).
    await page.reload()
    expect(await page.locator('#rule_0_url-error').count()).toBe(0)
    await page.goBack()
    expect(page.url()).toBe(`${app.url}/dashboard`)
    await page.goForward()
    expect(app.db.query("SELECT 1 FROM links WHERE code = 'launch'").get()).toBeNull()
  })

  const fillForm = async (ruleUrl: string) => {
    await page.goto(`${app.url}/dashboard`)
    await page.fill('#url', 'https://example.com/launch')
    await page.click('details.more summary')
    await page.fill('#alias', 'launch')
    await page.fill('#max_visits', '3')
    await page.selectOption('#rule_0_country', ['DE'])
    await page.fill('#rule_0_url', ruleUrl)
  }

  test('a rule url at the service itself is shown at its row, not at the URL', async () => {
    await fillForm(`${app.config.server.base_url}/x`)
    await click('button:has-text("Shorten")')
    expect(await page.getAttribute('#url', 'aria-invalid')).toBeNull()
    expect(await page.textContent('#rule_0_url-error')).toContain(
      "Rule 1: the destination must not point at this service's own origin",
    )
  })

  test('fixed, the link is made; the list says how many visits are left and badges the rules', async () => {
    // The refused form came back with what was typed: only the rules are changed.
    expect(await page.inputValue('#max_visits')).toBe('3')
    await page.fill('#rule_0_url', 'https://example.com/de')
    await click('button:has-text("Shorten")')
    expect(page.url()).toBe(`${app.url}/dashboard?new=launch`)
    expect(stored('launch')).toEqual({
      max_visits: 3,
      visits_used: 0,
      rules: '[{"url":"https://example.com/de","country":["DE"]}]',
      split: null,
    })
    expect(await rowText('launch')).toContain('3 of 3 visits left')
    expect(await page.textContent('tr:has(#short-launch) .tag.routing')).toBe('rules')
    // A visit takes one; the list, reloaded, says so.
    expect(
      (await fetch(`${app.url}/launch`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })).status,
    ).toBe(302)
    await page.reload()
    expect(await rowText('launch')).toContain('2 of 3 visits left')
    await checkPage(page, 'dashboard-rules-list')
  })

  test('the edit page shows them; a split is added, the rules removed, the limit raised; back does not send again', async () => {
    await page.goto(`${app.url}/dashboard/links/launch`)
    expect(await page.inputValue('#max_visits')).toBe('3')
    expect(await page.inputValue('#rule_0_url')).toBe('https://example.com/de')
    expect(await page.$$eval('#rule_0_country option:checked', (os) => os.map((o) => o.getAttribute('value')))).toEqual(
      ['DE'],
    )
    expect(await page.inputValue('#split_0_url')).toBe('')
    expect(await page.textContent('#max_visits-hint')).toContain('2 of 3 visits left')
    // Saving without a change changes nothing.
    await click('button:has-text("Save changes")')
    expect(await page.textContent('[role="status"], .notice')).toContain('Nothing to change')
    // A split of one destination is refused at the split field.
    await page.fill('#split_0_url', 'https://example.com/a')
    await page.fill('#split_0_weight', '50')
    await click('button:has-text("Save changes")')
    expect(await page.textContent('#split-error')).toContain('between 2 and 10 destinations; there is 1')
    await checkPage(page, 'dashboard-rules-edit-refused')
    await page.fill('#split_0_weight', '70')
    await page.fill('#split_1_url', 'https://example.com/b')
    await page.fill('#split_1_weight', '30')
    await page.click('button[aria-label="Remove rule 1"]')
    await page.fill('#max_visits', '10')
    await click('button:has-text("Save changes")')
    expect(page.url()).toBe(`${app.url}/dashboard/links/launch`)
    expect(stored('launch')).toEqual({
      max_visits: 10,
      visits_used: 1,
      rules: null,
      split: '[{"url":"https://example.com/a","weight":70},{"url":"https://example.com/b","weight":30}]',
    })
    expect(await page.textContent('#max_visits-hint')).toContain('9 of 10 visits left')
    await checkPage(page, 'dashboard-rules-edit')
    await page.goBack()
    await page.goForward()
    expect(stored('launch').max_visits).toBe(10)
    await page.goto(`${app.url}/dashboard`)
    expect(await page.$$eval('tr:has(#short-launch) .tag.routing', (els) => els.map((el) => el.textContent))).toEqual([
      'A/B',
    ])
    // An empty limit removes it.
    await page.goto(`${app.url}/dashboard/links/launch`)
    await page.fill('#max_visits', '')
    await click('button:has-text("Save changes")')
    expect(stored('launch')).toMatchObject({ max_visits: null, visits_used: 0 })
  })
})
