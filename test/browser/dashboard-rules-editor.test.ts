// The rules and split editor of the link forms (issue 38, item 1) in real Chromium: rules built with the
// pickers, a row moved with the keyboard and one removed, a split whose shares and total are told live,
// saved and read back from the database as the JSON the API stores; every row's problem told at once; and
// the same page without JavaScript (numbered blank rows) saving a rule too. axe on each new state;
// screenshots of the editor at 390 px in both themes.
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
  await app.accounts.createAccount({ name: 'rita', password: 'correct horse' })
  browser = await launchBrowser()
  page = await chromePage(browser)
})
afterAll(() => closeAll(browser, app))

const click = (p: Page, selector: string) => Promise.all([p.waitForNavigation(), p.click(selector)])
const stored = (code: string) => {
  const row = app.db.query('SELECT rules, split FROM links WHERE code = ?').get(code) as {
    rules: string | null
    split: string | null
  }
  return { rules: row.rules && JSON.parse(row.rules), split: row.split && JSON.parse(row.split) }
}
const legends = (p: Page) => p.$$eval('.rule-row > fieldset > legend', (ls) => ls.map((l) => l.textContent))
const shares = (p: Page) => p.$$eval('.split-row output', (os) => os.map((o) => o.textContent))

describe('the rules and split editor', () => {
  test('rules built with the pickers, one moved with the keyboard and one removed, a split with live shares; saved as the JSON the API stores', async () => {
    await signInBrowser(page, app.url, 'rita', 'correct horse')
    await page.fill('#url', 'https://example.com/launch')
    await page.click('details.more summary')
    await page.fill('#alias', 'launch')
    // With the script, one blank rule to start from; the tools are shown.
    expect(await legends(page)).toEqual(['Rule 1'])
    await page.check('input[name="rule_0_device"][value="mobile"]')
    await page.fill('#rule_0_url', 'm.example.com/x')
    await page.click('button[data-add="rule"]')
    // Left without its scheme, the address is given https://, and the line under it says so.
    expect(await page.inputValue('#rule_0_url')).toBe('https://m.example.com/x')
    expect(await page.textContent('#rule_0_url-scheme')).toBe('https:// was added in front.')
    // The new row is numbered and focused on its first picker.
    expect(await legends(page)).toEqual(['Rule 1', 'Rule 2'])
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).name)).toBe('rule_1_device')
    await page.selectOption('#rule_1_country', ['DE', 'AT'])
    expect(await page.$$eval('#rule_1_country option:checked', (os) => os.map((o) => o.textContent))).toEqual([
      'Austria',
      'Germany',
    ])
    expect(await page.textContent('#rule_1_country-chosen')).toBe('Chosen: Austria, Germany')
    await page.fill('#rule_1_url', 'https://example.com/de')
    await page.click('button[data-add="rule"]')
    await page.selectOption('#rule_2_language', ['fr'])
    await page.selectOption('#rule_2_os', ['iOS'])
    await page.fill('#rule_2_url', 'https://example.com/fr')
    // Moved up with the keyboard: the French rule is second, and the focus stays on its button.
    await page.focus('button[aria-label="Move rule 3 up"]')
    await page.keyboard.press('Enter')
    expect(await page.inputValue('#rule_1_url')).toBe('https://example.com/fr')
    expect(await page.inputValue('#rule_2_url')).toBe('https://example.com/de')
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Move rule 2 up')
    // The German rule (now third) removed.
    await page.click('button[aria-label="Remove rule 3"]')
    expect(await legends(page)).toEqual(['Rule 1', 'Rule 2'])
    // The split: shares shown as weights are typed; a total that is not 100 is told, with a missing address.
    await page.fill('#split_0_url', 'https://example.com/a')
    await page.fill('#split_0_weight', '70')
    await page.fill('#split_1_weight', '20')
    expect(await shares(page)).toEqual(['78 % of visitors', '22 % of visitors'])
    const total = await page.textContent('#split-total')
    expect(total).toContain('The weights add up to 90, not 100')
    expect(total).toContain('Destination 2: type its address.')
    expect(await page.getAttribute('#split-total', 'class')).toContain('warn')
    await checkPage(page, 'dashboard-rules-editor-create')
    await page.fill('#split_1_url', 'https://example.com/b')
    await page.fill('#split_1_weight', '30')
    expect(await shares(page)).toEqual(['70 % of visitors', '30 % of visitors'])
    expect(await page.textContent('#split-total')).toBe('The weights add up to 100.')
    await click(page, 'button:has-text("Shorten")')
    expect(page.url()).toBe(`${app.url}/dashboard?new=launch`)
    expect(stored('launch')).toEqual({
      rules: [
        { url: 'https://m.example.com/x', device: ['mobile'] },
        { url: 'https://example.com/fr', os: ['iOS'], language: ['fr'] },
      ],
      split: [
        { url: 'https://example.com/a', weight: 70 },
        { url: 'https://example.com/b', weight: 30 },
      ],
    })
  })

  test('the edit page shows the rows back; reload and back keep them; nothing changed is nothing sent', async () => {
    await page.goto(`${app.url}/dashboard/links/launch`)
    expect(await page.isChecked('input[name="rule_0_device"][value="mobile"]')).toBe(true)
    expect(await page.$$eval('#rule_1_language option:checked', (os) => os.map((o) => o.textContent))).toEqual([
      'French',
    ])
    expect(await shares(page)).toEqual(['70 % of visitors', '30 % of visitors'])
    await page.reload()
    expect(await page.inputValue('#rule_1_url')).toBe('https://example.com/fr')
    await click(page, 'button:has-text("Save changes")')
    expect(await page.textContent('.notice')).toContain('Nothing to change')
    await checkPage(page, 'dashboard-rules-editor-edit')
    await phoneShots(page, 'rules-edit', { height: 900, bare: true })
    await page.goBack()
    expect(page.url()).toBe(`${app.url}/dashboard/links/launch`)
    expect(await page.inputValue('#split_0_weight')).toBe('70')
  })

  test('every problem of the rows and fields is told at once, each beside its field, in plain words', async () => {
    await page.goto(`${app.url}/dashboard/links/launch`)
    await page.fill('#rule_0_url', '')
    await page.fill('#split_1_weight', '0')
    await page.fill('#tags', 'good, bad!tag')
    await page.fill('#rule_1_url', 'ftp://example.com/fr')
    await click(page, 'button:has-text("Save changes")')
    expect(page.url()).toMatch(/\/dashboard\/links\/launch\?form=/)
    expect(await page.textContent('#rule_0_url-error')).toBe('Rule 1: type the address to send these visitors to.')
    expect(await page.textContent('#rule_1_url-error')).toContain('Rule 2: the destination must')
    expect(await page.textContent('#split_1_weight-error')).toBe(
      'Destination 2: the weight is a whole number from 1 to 100.',
    )
    expect(await page.textContent('#tags-error')).toContain('Tags can hold letters, digits, _ and -')
    expect(await page.getAttribute('#rule_0_url', 'aria-invalid')).toBe('true')
    expect(await page.getAttribute('#split_1_weight', 'aria-describedby')).toContain('split_1_weight-error')
    // What was typed stays; nothing was stored.
    expect(await page.inputValue('#split_1_weight')).toBe('0')
    expect(stored('launch').split[1].weight).toBe(30)
    await checkPage(page, 'dashboard-rules-editor-refused')
    await phoneShots(page, 'rules-refused', { height: 900, bare: true })
  })
})

describe('without JavaScript', () => {
  test('numbered blank rows of plain fields save a rule; the shares and the total are told by the server', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, userAgent: CHROME_UA })
    const p = await context.newPage()
    p.setDefaultTimeout(10_000)
    try {
      await signInBrowser(p, app.url, 'rita', 'correct horse')
      await p.goto(`${app.url}/dashboard/links/launch`)
      // Two rules stored, two blank ones to fill; the row tools need the script and stay hidden.
      expect(await legends(p)).toEqual(['Rule 1', 'Rule 2', 'Rule 3', 'Rule 4'])
      expect(await p.isVisible('button[data-add="rule"]')).toBe(false)
      expect(await p.isVisible('.row-tools')).toBe(false)
      expect(await shares(p)).toEqual(['70 % of visitors', '30 % of visitors', '', ''])
      await p.check('input[name="rule_2_device"][value="tablet"]')
      await p.selectOption('#rule_2_country', ['CH'])
      await p.fill('#rule_2_url', 'www.example.com/ch')
      await p.fill('#split_1_weight', '20')
      await click(p, 'button:has-text("Save changes")')
      expect(await p.textContent('.notice.ok')).toContain('https:// was added in front of www.example.com/ch')
      expect(stored('launch').rules[2]).toEqual({
        url: 'https://www.example.com/ch',
        device: ['tablet'],
        country: ['CH'],
      })
      expect(stored('launch').split[1].weight).toBe(20)
      expect(await p.textContent('#split-total')).toContain('The weights add up to 90, not 100')
      expect(await shares(p)).toEqual(['78 % of visitors', '22 % of visitors', '', ''])
      expect(await p.textContent('#rule_2_country-chosen')).toBe('Chosen: Switzerland')
      expect(await p.textContent('#rule_3_country-chosen')).toBe('Any')
      await phoneShots(p, 'rules-nojs', { height: 900, bare: true })
    } finally {
      await context.close()
    }
    // axe needs scripts to run: the same page with the app's script refused is the page without JavaScript.
    const scripted = await browser.newContext({ userAgent: CHROME_UA })
    try {
      const q = await scripted.newPage()
      await q.route('**/assets/app.js*', (route) => route.abort())
      await signInBrowser(q, app.url, 'rita', 'correct horse')
      await q.goto(`${app.url}/dashboard/links/launch`)
      expect(await legends(q)).toEqual(['Rule 1', 'Rule 2', 'Rule 3', 'Rule 4', 'Rule 5'])
      await checkPage(q, 'dashboard-rules-editor-nojs')
    } finally {
      await scripted.close()
    }
  }, 60_000)
})
