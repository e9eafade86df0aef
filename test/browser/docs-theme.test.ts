// /api/docs for a reader (issue 38, item 10), in real Chromium: the theme chosen on another page holds here and
// the switch is offered (a choice made here holds on reload and elsewhere); the contents name each method with
// its HTTP method; every example (the variables, each curl command, the verification code) has a copy button
// that copies exactly the text of its block, by mouse and by keyboard; the short code's two names and the
// public QR address are explained where a reader meets them. Without JavaScript no button or switch is shown.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { join } from 'node:path'
import {
  checkPage,
  launchBrowser,
  SCREENSHOTS,
  SHOTS_ON,
  startApp,
  type RunningApp,
  shoot,
  closeAll,
} from '../support/browser'

let browser: Browser
let app: RunningApp

beforeAll(async () => {
  app = startApp()
  browser = await launchBrowser()
})
afterAll(() => closeAll(browser, app))

async function tab(javaScriptEnabled = true): Promise<{ page: Page; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, javaScriptEnabled })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url })
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  return { page, close: () => context.close() }
}

const background = (page: Page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor)

test('the theme chosen on the home page holds on the docs, whose switch changes it for every page', async () => {
  const { page, close } = await tab()
  try {
    await page.emulateMedia({ colorScheme: 'light' })
    await page.goto(`${app.url}/api/docs`)
    const light = await background(page)
    // Dark chosen on the home page …
    await page.goto(`${app.url}/`)
    await page.getByLabel('Theme').selectOption('dark')
    // … is the docs' theme, and their switch says so.
    await page.goto(`${app.url}/api/docs`)
    expect(await page.getAttribute('html', 'data-theme')).toBe('dark')
    expect(await background(page)).not.toBe(light)
    const theme = page.getByRole('banner').getByLabel('Theme')
    expect(await theme.isVisible()).toBe(true)
    expect(await theme.inputValue()).toBe('dark')
    // Light chosen here, with the keyboard: kept on reload, and on the home page after Back.
    await theme.focus()
    await page.keyboard.press('ArrowUp')
    expect(await theme.inputValue()).toBe('light')
    expect(await page.getAttribute('html', 'data-theme')).toBe('light')
    await page.emulateMedia({ colorScheme: 'dark' })
    await page.reload()
    expect(await page.getAttribute('html', 'data-theme')).toBe('light')
    expect(await background(page)).toBe(light)
    await page.goBack()
    await page.waitForURL(`${app.url}/`)
    expect(await page.getAttribute('html', 'data-theme')).toBe('light')
  } finally {
    await close()
  }
})

test('the contents name each method with its HTTP method', async () => {
  const { page, close } = await tab()
  try {
    await page.goto(`${app.url}/api/docs`)
    const contents = page.getByRole('navigation', { name: 'Contents' })
    for (const name of ['POST getLink.json', 'GET qr.json', 'POST qr.json', 'GET links.json', 'POST webhooks.json'])
      expect(await contents.getByRole('link', { name, exact: true }).count(), name).toBe(1)
    // Every method's entry: the verb of its heading, then its name.
    const entries = await contents
      .locator('a:has(.verb)')
      .evaluateAll((links) => links.map((a) => [a.textContent, (a as HTMLAnchorElement).hash.slice(1)]))
    expect(entries.length).toBeGreaterThan(10)
    for (const [text, id] of entries) {
      const heading = await page.evaluate((i) => document.getElementById(`${i}-h`)?.textContent ?? '', id!)
      expect(text, id!).toBe(heading.replace('/api/', ''))
    }
  } finally {
    await close()
  }
})

test('every example has a copy button that copies its block exactly, by mouse and by keyboard', async () => {
  const { page, close } = await tab()
  try {
    await page.goto(`${app.url}/api/docs`)
    const blocks = page.locator('pre.curl, pre.curl-more, pre.setup, pre.verify, pre.verify-package')
    const n = await blocks.count()
    expect(n).toBeGreaterThan(15)
    // Each block has its own visible button naming it.
    const pairs = await blocks.evaluateAll((pres) =>
      pres.map((pre) => {
        const button = pre.parentElement!.querySelector('button.copy') as HTMLButtonElement | null
        return { id: pre.id, copies: button?.dataset.copy, hidden: button?.hidden, label: button?.ariaLabel }
      }),
    )
    for (const p of pairs) expect(p.copies, p.id).toBe(p.id)
    expect(new Set(pairs.map((p) => p.id)).size).toBe(n)
    expect(pairs.filter((p) => p.hidden)).toEqual([])

    // The mouse: getLink.json's curl command, as shown.
    const curl = page.locator('[id="getLink.json-curl"]')
    await page.getByRole('button', { name: 'Copy: Example request of /api/getLink.json', exact: true }).click()
    await page.waitForFunction(() => navigator.clipboard.readText().then((t) => t.startsWith('curl')))
    const copied = await page.evaluate(() => navigator.clipboard.readText())
    expect(copied).toBe((await curl.textContent()) ?? '')
    expect(copied).toContain('"$LINKBOX/api/getLink.json"')
    // The keyboard: the setup block's button focused, Enter.
    const setup = page.getByRole('button', { name: 'Copy: Setting the variables the examples use' })
    await setup.focus()
    await page.keyboard.press('Enter')
    await page.waitForFunction(() => navigator.clipboard.readText().then((t) => t.startsWith('LINKBOX=')))
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(
      `LINKBOX=http://localhost:8080\nKEY=paste-your-api-key-here`,
    )
    expect(await setup.textContent()).toBe('Copied')
  } finally {
    await close()
  }
})

test('the short code and the public QR address are explained where a reader meets them', async () => {
  const { page, close } = await tab()
  try {
    await page.goto(`${app.url}/api/docs`)
    const start = await page.locator('#start').innerText()
    expect(start).toContain('answers name it hex (an old name: it is not hexadecimal) and requests take it as code')
    expect(start).toContain('/qr/<code>.png')
    const record = await page.locator('[id="getLink.json"] ul.fields').innerText()
    expect(record).toContain('hex string: The short code: the part of the short link after its last slash')
    expect(record).toContain('qr string: Its QR code, a PNG at the public address /qr/<code>.png')
    expect(await page.locator('[id="getLink.json"] ~ [id="stats.json"] table.params').innerText()).toContain(
      'the hex of its record',
    )
    expect(await page.locator('[id="qr.json"] > p').nth(1).innerText()).toContain('/qr/<code>.png')
  } finally {
    await close()
  }
})

test('without JavaScript: no copy button and no switch are shown; the system theme applies', async () => {
  const { page, close } = await tab(false)
  try {
    await page.emulateMedia({ colorScheme: 'dark' })
    await page.goto(`${app.url}/api/docs`)
    expect(await page.locator('button.copy:visible').count()).toBe(0)
    expect(await page.locator('.theme-switch').isVisible()).toBe(false)
    expect(await page.locator('pre.curl').first().isVisible()).toBe(true)
  } finally {
    await close()
  }
})

test('axe in both themes at 1280 and 390 px with the switch and the buttons; screenshots', async () => {
  const { page, close } = await tab()
  try {
    await page.goto(`${app.url}/api/docs#getLink.json`)
    expect(await checkPage(page, 'front-docs')).toBeLessThanOrEqual(390)
    // The long page in screens a person looks at: its top (switch, contents) and a method's example.
    await page.setViewportSize({ width: 390, height: 844 })
    for (const [name, hash] of SHOTS_ON
      ? [
          ['top', ''],
          ['method', '#getLink.json-curl'],
        ]
      : [])
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        await page.goto(`${app.url}/api/docs${hash}`)
        await shoot(page, { path: join(SCREENSHOTS, `front-docs-${name}-390-${scheme}.png`) })
      }
  } finally {
    await close()
  }
}, 120_000)
