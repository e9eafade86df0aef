// Issue 24 in real Chromium: statistics for chosen dates on the public page and the dashboard's, their CSV
// downloads through the page's links (parsed, and compared with stats.json for the same window), the
// small things of daily use — a header that fits a phone, the theme switch, keyboard shortcuts with their
// help, the skip link, the focus after a refused sign-in, long URLs shown whole and broken at their
// separators — each page checked with axe in both themes and at 390 px, and screenshotted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp, shoot } from '../support/browser'
import { signInBrowser, dashboardCaller } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

const PW = 'correct horse battery'
const LONG =
  'https://docs.example.org/guides/very-long-section-name/sub_section/article-about-something?utm_source=newsletter&utm_medium=email&utm_campaign=spring-2026&ref=abcdefghijklmnop#heading-number-three'
let browser: Browser
let app: RunningApp
let now = Date.parse('2026-06-20T12:00:00Z')
const contexts: BrowserContext[] = []

beforeAll(async () => {
  app = startApp({}, { clock: () => now })
  await app.accounts.createAccount({ name: 'alice', password: PW })
  browser = await launchBrowser()
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
})

async function tab(opts: { signedIn?: boolean; width?: number } = {}): Promise<Page> {
  const context = await browser.newContext({
    userAgent: CHROME_UA,
    acceptDownloads: true,
    viewport: { width: opts.width ?? 1280, height: opts.width === 390 ? 844 : 800 },
  })
  contexts.push(context)
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url })
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  if (opts.signedIn) await signInBrowser(page, app.url, 'alice', PW)
  return page
}
const check = async (page: Page, name: string) => expect(await checkPage(page, name)).toBeLessThanOrEqual(390)

/** RFC 4180 as the app writes it (quoted fields, doubled quotes, CRLF). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++
      else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') row.push(field), (field = '')
    else if (c === '\r' && text[i + 1] === '\n') row.push(field), rows.push(row), (row = []), (field = ''), i++
    else field += c
  }
  return rows
}

const statsJson = async (code: string, from: string, to: string) => {
  const r = await fetch(`${app.url}/api/stats.json`, { method: 'POST', body: new URLSearchParams({ code, from, to }) })
  return ((await r.json()) as any).return
}
/** What the page shows: the window's card, and every day of the chart (from the bars' titles: "date: N clicks, M visitors"). */
async function shown(page: Page) {
  const card = (await page.locator('.cards .card').first().textContent())!
  const days = await page.$$eval('svg.chart g > title', (ts) =>
    ts.map((t) => {
      const [, date, clicks, visitors] = /^(.+): (\d+) clicks?, (\d+) visitors?$/.exec(t.textContent!)!
      return { date, clicks: Number(clicks), visitors: Number(visitors) }
    }),
  )
  return { card, days }
}
async function download(page: Page, name: string | RegExp) {
  const [d] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name }).click()])
  return { filename: d.suggestedFilename(), rows: parseCsv(readFileSync((await d.path())!, 'utf8')) }
}

let code = ''
let locked = ''
async function seed() {
  const create = async (fields: { url: string; [k: string]: string }) =>
    (await app.links.create(fields, callerOf())).hex
  code = await create({ url: LONG, alias: 'spring-news' })
  locked = await create({ url: 'https://secret.example/owner-only', alias: 'locked-link', password: 'pw' })
  const click = async (day: string, times: number, referer = '') => {
    now = Date.parse(`${day}T09:00:00Z`)
    for (let i = 0; i < times; i++)
      await fetch(`${app.url}/${code}`, {
        redirect: 'manual',
        headers: { 'user-agent': CHROME_UA, ...(referer ? { referer } : {}) },
      })
  }
  await click('2026-06-02', 2)
  await click('2026-06-05', 3, 'https://news.example/today')
  await click('2026-06-09', 4, 'http://=HYPERLINK("x")/')
  await click('2026-06-15', 6)
  now = Date.parse('2026-06-20T12:00:00Z')
  await app.recorder.flush()
}
const callerOf = () => dashboardCaller(app.db, 'alice')

describe('statistics for chosen dates', () => {
  test('the public page: dates from its form show only those days, as stats.json does; the CSV links download them', async () => {
    await seed()
    const page = await tab()
    await page.goto(`${app.url}/${code}+`)
    await page.fill('#range-from', '2026-06-04')
    await page.fill('#range-to', '2026-06-10')
    await Promise.all([
      page.waitForURL(/from=2026-06-04&to=2026-06-10/),
      page.getByRole('button', { name: 'Show' }).click(),
    ])
    const s = await statsJson(code, '2026-06-04', '2026-06-10')
    const { card, days } = await shown(page)
    expect(card).toBe('Clicks in these days72026-06-04 to 2026-06-10')
    expect(days).toEqual(s.days)
    expect(days.map((d) => d.date)).toEqual([
      '2026-06-04',
      '2026-06-05',
      '2026-06-06',
      '2026-06-07',
      '2026-06-08',
      '2026-06-09',
      '2026-06-10',
    ])
    expect(await page.locator('.segmented [aria-current]').count()).toBe(0)
    await check(page, 'stats-dates')

    const byDay = await download(page, /^Clicks and visitors by day/)
    expect(byDay.filename).toBe('linkbox-spring-news-days-2026-06-04-to-2026-06-10.csv')
    expect(byDay.rows).toEqual([
      ['date', 'clicks', 'visitors'],
      ...s.days.map((d: any) => [d.date, String(d.clicks), String(d.visitors)]),
    ])
    const parts = await download(page, /^Sources, devices/)
    expect(parts.filename).toBe('linkbox-spring-news-breakdowns-2026-06-04-to-2026-06-10.csv')
    expect(parts.rows[0]).toEqual(['breakdown', 'name', 'clicks'])
    expect(parts.rows.filter((r) => r[0] === 'source')).toEqual(
      s.sources.map((r: any) => ['source', r.name.startsWith('=') ? `'${r.name}` : r.name, String(r.clicks)]),
    )
    expect(parts.rows).toContainEqual(['source', `'=hyperlink("x")`, '4'])
    expect(parts.rows.filter((r) => r[0] === 'browser')).toEqual(
      s.browsers.map((r: any) => ['browser', r.name, String(r.clicks)]),
    )

    // Reload keeps the dates (they are the URL); back goes to the 30 days.
    await page.reload()
    expect((await shown(page)).card).toStartWith('Clicks in these days7')
    await page.goBack()
    expect((await shown(page)).card).toStartWith('Clicks, last 30 days15')
  })

  test('refused dates: a readable message at the field, the last 30 days shown', async () => {
    const page = await tab()
    const res = await page.goto(`${app.url}/${code}+?from=2026-06-10&to=2026-06-01`)
    expect(res!.status()).toBe(400)
    expect(await page.locator('#range-error').textContent()).toBe(
      'The start date (from) is invalid: a date on or before "to". The last 30 days are shown.',
    )
    expect(await page.getAttribute('#range-from', 'aria-invalid')).toBe('true')
    expect(await page.inputValue('#range-from')).toBe('2026-06-10')
    expect((await shown(page)).card).toBe('Clicks, last 30 days152026-05-22 to 2026-06-20')
    expect(await page.locator('body').textContent()).not.toMatch(/Error:|\.ts:\d+/)
    await check(page, 'stats-dates-refused')
    await page.goto(`${app.url}/${code}+?from=2025-01-01&to=2026-06-01`)
    expect(await page.locator('#range-error').textContent()).toBe(
      'The start date (from) is invalid: at most 366 days before "to". The last 30 days are shown.',
    )
  })

  test("the dashboard's page: the owner's numbers for the same dates, and its CSV; without a session the CSV is refused", async () => {
    const page = await tab({ signedIn: true })
    await page.goto(`${app.url}/dashboard`)
    await Promise.all([
      page.waitForURL(`${app.url}/dashboard/links/${code}/stats`),
      page.getByRole('link', { name: `Stats ${code}` }).click(),
    ])
    await page.fill('#range-from', '2026-06-01')
    await page.fill('#range-to', '2026-06-05')
    await Promise.all([
      page.waitForURL(/stats\?from=2026-06-01&to=2026-06-05/),
      page.getByRole('button', { name: 'Show' }).click(),
    ])
    const s = await statsJson(code, '2026-06-01', '2026-06-05')
    const { card, days } = await shown(page)
    expect(card).toBe('Clicks in these days52026-06-01 to 2026-06-05')
    expect(days).toEqual(s.days)
    await check(page, 'dash-stats-dates')
    const csv = await download(page, /^Clicks and visitors by day/)
    expect(csv.rows.slice(1)).toEqual(s.days.map((d: any) => [d.date, String(d.clicks), String(d.visitors)]))
    const href = await page.getByRole('link', { name: /^Clicks and visitors by day/ }).getAttribute('href')
    expect(href).toBe(`/dashboard/links/${code}/stats.csv?table=days&from=2026-06-01&to=2026-06-05`)

    // The owner sees the protected link's destination; a browser without the session gets the sign-in page.
    await page.goto(`${app.url}/dashboard/links/${locked}/stats`)
    expect(await page.locator('.dest').textContent()).toBe('Destination: https://secret.example/owner-only')
    const stranger = await tab()
    const answer = await stranger.request.get(`${app.url}/dashboard/links/${locked}/stats.csv?table=days`, {
      maxRedirects: 0,
    })
    expect(answer.status()).toBe(303)
    expect(answer.headers().location).toStartWith('/login?next=')
    expect(await answer.text()).toBe('')
    await stranger.goto(`${app.url}/${locked}+`)
    expect(await stranger.locator('.dest').textContent()).toBe(
      'The destination is hidden: the link is password-protected.',
    )
  })
})

describe('daily use', () => {
  test('the phone header is under 120 px on the dashboard and the home page (signed in and out)', async () => {
    const page = await tab({ signedIn: true, width: 390 })
    const height = () => page.evaluate(() => document.querySelector('header')!.getBoundingClientRect().height)
    await page.goto(`${app.url}/dashboard`)
    expect(await height()).toBeLessThan(120)
    // Every section is still reachable (the row scrolls sideways when it must), and the page does not.
    for (const name of ['Links', 'API', 'Mailboxes', 'Webhooks'])
      expect(await page.locator('.dash-nav').getByRole('link', { name }).isVisible()).toBe(true)
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await shoot(page, { path: 'test-results/screenshots/phone-header-dashboard.png' })
    await page.goto(`${app.url}/`)
    expect(await height()).toBeLessThan(120)
    await shoot(page, { path: 'test-results/screenshots/phone-header-home-signed-in.png' })
    // An administrator has a fifth section: the header keeps its height, and the row scrolls to it.
    await app.accounts.createAccount({ name: 'root-with-a-rather-long-account-name', password: PW, admin: true })
    const admin = await tab({ width: 390 })
    await signInBrowser(admin, app.url, 'root-with-a-rather-long-account-name', PW)
    expect(await admin.evaluate(() => document.querySelector('header')!.getBoundingClientRect().height)).toBeLessThan(
      120,
    )
    expect(await admin.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await admin.locator('.dash-nav').getByRole('link', { name: 'Admin' }).scrollIntoViewIfNeeded()
    expect(await admin.locator('.dash-nav').getByRole('link', { name: 'Admin' }).isVisible()).toBe(true)
    await shoot(admin, { path: 'test-results/screenshots/phone-header-admin.png' })
    const visitor = await tab({ width: 390 })
    await visitor.goto(`${app.url}/`)
    expect(await visitor.evaluate(() => document.querySelector('header')!.getBoundingClientRect().height)).toBeLessThan(
      120,
    )
  })

  test('the theme switch: kept across a reload and on other pages; "System" follows the system again', async () => {
    const page = await tab({ signedIn: true })
    await page.emulateMedia({ colorScheme: 'light' })
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor)
    const light = await background()
    expect(await page.locator('#theme-choice').inputValue()).toBe('system')
    await page.selectOption('#theme-choice', 'dark')
    expect(await page.getAttribute('html', 'data-theme')).toBe('dark')
    const dark = await background()
    expect(dark).not.toBe(light)
    await page.reload()
    expect(await page.getAttribute('html', 'data-theme')).toBe('dark')
    expect(await background()).toBe(dark)
    expect(await page.locator('#theme-choice').inputValue()).toBe('dark')
    await check(page, 'dash-theme-dark')
    await page.goto(`${app.url}/`)
    expect(await background()).toBe(dark)
    await page.goto(`${app.url}/${code}+`)
    expect(await background()).toBe(dark)
    // Light chosen on a dark system stays light.
    await page.selectOption('#theme-choice', 'light')
    await page.emulateMedia({ colorScheme: 'dark' })
    await page.reload()
    expect(await background()).toBe(light)
    await page.selectOption('#theme-choice', 'system')
    expect(await page.getAttribute('html', 'data-theme')).toBeNull()
    expect(await background()).toBe(dark)
    await page.emulateMedia({ colorScheme: 'light' })
    expect(await background()).toBe(light)
  })

  test('without JavaScript the switch is not shown and the system theme applies', async () => {
    const context = await browser.newContext({ userAgent: CHROME_UA, javaScriptEnabled: false, colorScheme: 'dark' })
    contexts.push(context)
    const page = await context.newPage()
    await page.goto(`${app.url}/`)
    expect(await page.locator('.theme-switch').isVisible()).toBe(false)
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(14, 17, 23)')
  })

  test('shortcuts: / search, c new link, j/k rows (not while typing), ? help, Escape closes it', async () => {
    const page = await tab({ signedIn: true })
    await page.goto(`${app.url}/dashboard/keys`)
    await page.keyboard.press('c')
    await page.waitForURL(`${app.url}/dashboard#new-link`)
    await page.waitForFunction(() => document.activeElement?.id === 'url')
    await page.keyboard.press('Escape')
    await page.locator('h1').click()
    await page.keyboard.press('/')
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('search')
    // Typed in the search field, j and / are letters.
    await page.keyboard.type('j/k')
    expect(await page.inputValue('#search')).toBe('j/k')
    expect(await page.locator('tr.kb-current').count()).toBe(0)
    await page.fill('#search', '')
    await page.locator('h1').click()
    await page.keyboard.press('j')
    await page.keyboard.press('j')
    const current = () => page.evaluate(() => (document.activeElement as HTMLElement).querySelector('a.short')?.id)
    const ids = await page.$$eval('.links-table tbody a.short', (as) => as.map((a) => a.id))
    expect(ids.length).toBe(2)
    expect(await current()).toBe(ids[1])
    await page.keyboard.press('k')
    expect(await current()).toBe(ids[0])
    await page.keyboard.press('k') // stays on the first row
    expect(await current()).toBe(ids[0])
    await Promise.all([page.waitForURL(/\/dashboard\/links\/[\w-]+\/stats$/), page.keyboard.press('Enter')])
    await page.goBack()
    await page.locator('h1').click()
    await page.keyboard.press('?')
    const dialog = page.getByRole('dialog', { name: 'Keyboard shortcuts' })
    expect(await dialog.isVisible()).toBe(true)
    expect(await dialog.textContent()).toContain('Search your links')
    await check(page, 'dash-shortcuts-help')
    await page.keyboard.press('Escape')
    expect(await dialog.isVisible()).toBe(false)
    await page.keyboard.press('?')
    await dialog.getByRole('button', { name: 'Close' }).click()
    expect(await dialog.isVisible()).toBe(false)
  })

  test('the skip link moves the focus to the main content (home page and dashboard)', async () => {
    const page = await tab()
    for (const path of ['/', '/dashboard']) {
      if (path === '/dashboard') await signInBrowser(page, app.url, 'alice', PW)
      await page.goto(`${app.url}${path}`)
      await page.keyboard.press('Tab')
      expect(await page.evaluate(() => document.activeElement?.outerHTML)).toBe(
        '<a class="skip" href="#main">Skip to content</a>',
      )
      expect(await page.locator('.skip').isVisible()).toBe(true)
      await page.keyboard.press('Enter')
      expect(await page.evaluate(() => document.activeElement?.tagName + '#' + document.activeElement?.id)).toBe(
        'MAIN#main',
      )
      // The next Tab goes on inside it, not back to the header.
      await page.keyboard.press('Tab')
      expect(await page.evaluate(() => !!document.activeElement?.closest('main'))).toBe(true)
    }
    await page.goto(`${app.url}/`)
    await check(page, 'home-skip')
  })

  test('after a refused sign-in the focus is on the password field, the name kept', async () => {
    const page = await tab()
    await page.goto(`${app.url}/login`)
    // autofocus is applied at the page's next rendering update (HTML spec), which can come after 'load'.
    const focusOn = (id: string) =>
      page.waitForFunction((want) => document.activeElement?.id === want, id, { timeout: 5_000 })
    await focusOn('name')
    await page.fill('#name', 'alice')
    await page.fill('#password', 'not it')
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
    expect(await page.locator('#auth-error').textContent()).toBe('That account name and password do not match.')
    await focusOn('password')
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('password')
    expect(await page.inputValue('#name')).toBe('alice')
    await check(page, 'login-refused')
    await page.keyboard.type(PW)
    await Promise.all([page.waitForURL(`${app.url}/dashboard`), page.keyboard.press('Enter')])
  })

  test('long URLs: the list shortens a destination (whole on hover, copied whole); the edit page shows the short link whole; breaks fall after separators', async () => {
    const page = await tab({ signedIn: true })
    await page.goto(`${app.url}/dashboard`)
    const dest = page.locator(`tr:has(#short-${code}) .dest-text`)
    expect(await dest.getAttribute('title')).toBe(LONG)
    expect((await dest.textContent())!.endsWith('…')).toBe(true)
    const copy = page.getByRole('button', { name: `Copy the whole destination of ${code}` })
    await copy.click()
    await page.waitForFunction(
      (c) => document.querySelector(`button[data-copy="dest-${c}"]`)?.textContent === 'Copied',
      code,
    )
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(LONG)
    await page.waitForFunction(
      (c) => document.querySelector(`button[data-copy="dest-${c}"]`)?.textContent === 'Copy',
      code,
    )
    await check(page, 'dash-list-long')

    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 844 })
      await page.goto(`${app.url}/dashboard/links/${code}`)
      const short = page.locator('#edit-short')
      expect(await short.textContent()).toBe(`${app.config.server.base_url}/${code}`)
      // Not cut off: nothing of it overflows its box, and its box is inside the card.
      const fit = await short.evaluate((el) => {
        const card = el.closest('.card')!.getBoundingClientRect()
        const r = el.getBoundingClientRect()
        return { overflow: el.scrollWidth - el.clientWidth, inside: r.left >= card.left && r.right <= card.right }
      })
      expect(fit).toEqual({ overflow: 0, inside: true })
    }
    await page.setViewportSize({ width: 1280, height: 800 })
    await check(page, 'dash-edit-long')

    // The statistics page at 390 px: every line of the destination ends at a separator.
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${app.url}/${code}+`)
    const ends = await page.locator('.dest').evaluate((el) => {
      const out: string[] = []
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT)
      const chars: { ch: string; top: number }[] = []
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if ((n.parentElement as HTMLElement).classList.contains('visually-hidden')) continue
        for (let i = 0; i < n.textContent!.length; i++) {
          const range = document.createRange()
          range.setStart(n, i)
          range.setEnd(n, i + 1)
          chars.push({ ch: n.textContent![i]!, top: range.getBoundingClientRect().top })
        }
      }
      for (let i = 0; i + 1 < chars.length; i++) if (chars[i + 1]!.top > chars[i]!.top + 2) out.push(chars[i]!.ch)
      return out
    })
    expect(ends.length).toBeGreaterThan(1)
    for (const ch of ends) expect('/?&=#.-_').toContain(ch)
  })
})
