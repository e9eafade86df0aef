// The home page in real Chromium, as a visitor uses it: shorten a link with JavaScript (answered in place by
// assets/app.js, which sends the form to / asking for JSON) and without it (the form POSTs to / and the
// server answers with a 303 to the result), visit
// the short link and find the click on its statistics page; errors tied to their field; a form posted from
// another site refused; the anonymous rate limit shared with the API. Every page is checked with axe-core in
// the light and the dark theme, screenshotted, and watched for requests that leave the app's origin.
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
import { CHROME_UA } from '../support/server'

let browser: Browser
let app: RunningApp
let dest: Fixture
let evil: Fixture // another site, whose page posts the home form cross-site

beforeAll(async () => {
  dest = startFixture((_req, url) => htmlPage(`Destination ${url.pathname}`))
  evil = startFixture(
    () =>
      new Response(
        `<!doctype html><html lang="en"><head><title>Evil</title></head><body><form method="post" action="${app.url}/">` +
          `<input name="url" value="https://evil.example/phish"><button type="submit">Go</button></form></body></html>`,
        { headers: { 'content-type': 'text/html; charset=utf-8' } },
      ),
  )
  app = startApp()
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await app?.stop()
  dest?.stop()
  evil?.stop()
})

/** A tab (desktop Chrome's user agent: headless Chromium's own is counted as a bot) whose requests are kept. */
async function tab(
  opts: { javaScriptEnabled?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page; requests: string[] }> {
  const context = await browser.newContext({ userAgent: CHROME_UA, javaScriptEnabled: opts.javaScriptEnabled ?? true })
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const requests: string[] = []
  page.on('request', (r) => requests.push(r.url()))
  return { context, page, requests }
}

/** Every request the page made since the last call stayed on the app's origin (or was data:/about:). */
function expectOwnOrigin(requests: string[], origin = app.url) {
  const away = requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:') && !u.startsWith('about:'))
  expect(away).toEqual([])
  requests.length = 0
}

/** axe (no serious/critical) in both themes, the screenshots; returns the scroll width at 390 px. */
const check = (page: Page, name: string) => checkPage(page, name)

const codeOf = (shortUrl: string) => shortUrl.slice(shortUrl.lastIndexOf('/') + 1)

async function qrLoaded(page: Page): Promise<number> {
  await page.waitForFunction(() => {
    const img = document.querySelector('img.qr') as HTMLImageElement | null
    return !!img && img.complete
  })
  return page.$eval('img.qr', (img) => (img as HTMLImageElement).naturalWidth)
}

describe('with JavaScript', () => {
  test('shorten, copy, QR, visit, and the click on the statistics page', async () => {
    const { context, page, requests } = await tab()
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url })
    try {
      await page.goto(`${app.url}/`)
      expect(await page.locator('h1').textContent()).toBe('Short links you host yourself')
      expect(await page.getByRole('link', { name: 'API documentation' }).getAttribute('href')).toBe('/api/docs')
      expect(await page.getByRole('link', { name: 'Dashboard (sign in)' }).getAttribute('href')).toBe('/dashboard')
      expect(await check(page, 'home-empty')).toBeLessThanOrEqual(390)

      // Answered in place: the page is not loaded again (the mark set on this document survives).
      await page.evaluate(() => ((window as any).sameDocument = true))
      await page.fill('#url', `${dest.url}/landing?from=home`)
      await page.click('#shorten-submit')
      await page.locator('#short').waitFor()
      expect(await page.evaluate(() => (window as any).sameDocument)).toBe(true)
      const short = await page.inputValue('#short')
      const code = codeOf(short)
      expect(code).toMatch(/^[A-Za-z0-9]{6}$/)
      expect(await page.getAttribute('#short', 'readonly')).not.toBeNull()
      expect(await page.inputValue('#url')).toBe('') // ready for the next one

      const copy = page.locator('button.copy[data-copy="short"]')
      expect(await copy.isVisible()).toBe(true)
      await copy.click()
      // The clipboard write is a promise: "Copied" shows when it has resolved (and for 1.5 s), not at the click.
      await page.waitForFunction(
        () => document.querySelector('button.copy[data-copy="short"]')?.textContent === 'Copied',
      )
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(short)

      expect(await qrLoaded(page)).toBeGreaterThan(0)
      expect(await page.getAttribute('img.qr', 'src')).toBe(`/qr/${code}.svg`)
      expect(await page.getAttribute('img.qr', 'alt')).toBe(`QR code of ${short}`)
      expect(await page.getByRole('link', { name: 'PNG' }).getAttribute('download')).toBe(`${code}-qr.png`)
      expect(await page.getByRole('link', { name: 'SVG' }).getAttribute('download')).toBe(`${code}-qr.svg`)
      const statsLink = page.getByRole('link', { name: `${short}+` })
      expect(await statsLink.getAttribute('href')).toBe(`/${code}+`)
      expect(await check(page, 'home-result')).toBeLessThanOrEqual(390)
      expectOwnOrigin(requests)

      // The created link is anonymous, and leads where it was asked to.
      expect(app.db.query('SELECT account_id FROM links WHERE code = ?').get(code)).toEqual({ account_id: null })
      await page.goto(`${app.url}/${code}`)
      expect(await page.locator('h1').textContent()).toBe('Destination /landing')
      requests.length = 0

      await app.recorder.flush()
      await page.goto(`${app.url}/${code}+`)
      expect(await page.locator('.card .value').first().textContent()).toBe('1')
      expect(await page.locator('h1').textContent()).toBe(short)
      expectOwnOrigin(requests)
    } finally {
      await context.close()
    }
  })

  test('an invalid URL: the error next to the field, in place', async () => {
    const { context, page, requests } = await tab()
    try {
      await page.goto(`${app.url}/`)
      // type=url lets ftp: through; the server's rule (http or https) answers.
      await page.fill('#url', 'ftp://files.example/report.pdf')
      await page.click('#shorten-submit')
      await page.locator('#url-error:not(:empty)').waitFor()
      expect(await page.locator('#url-error').textContent()).toBe(
        'The URL must be an absolute URL with the scheme http or https.',
      )
      expect(await page.getAttribute('#url', 'aria-invalid')).toBe('true')
      expect(await page.getAttribute('#url', 'aria-describedby')).toBe('url-error')
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('url')
      expect(await page.locator('.result').count()).toBe(0)

      // A taken alias: the options open, the error is the alias's; fixing it clears the mark.
      await page.fill('#url', `${dest.url}/aliased`)
      await page.click('summary')
      await page.fill('#alias', 'taken-one')
      await page.click('#shorten-submit')
      await page.locator('#short').waitFor()
      expect(codeOf(await page.inputValue('#short'))).toBe('taken-one')
      await page.fill('#url', `${dest.url}/aliased-again`)
      await page.fill('#alias', 'taken-one')
      await page.click('#shorten-submit')
      await page.locator('#alias-error:not(:empty)').waitFor()
      expect(await page.locator('#alias-error').textContent()).toBe('The alias "taken-one" is already in use.')
      expect(await page.getAttribute('#alias', 'aria-invalid')).toBe('true')
      expect(await page.getAttribute('#url', 'aria-invalid')).toBeNull()
      expect(await page.locator('.result').count()).toBe(0)
      expectOwnOrigin(requests)
    } finally {
      await context.close()
    }
  })
})

describe('without JavaScript', () => {
  test('the form posts to / and the server answers with the result', async () => {
    const { context, page, requests } = await tab({ javaScriptEnabled: false })
    try {
      await page.goto(`${app.url}/`)
      await page.fill('#url', `${dest.url}/no-script`)
      await page.click('summary')
      await page.selectOption('#mode', 'preview')
      await page.selectOption('#expire', '86400')
      const [answer] = await Promise.all([page.waitForNavigation(), page.click('#shorten-submit')])
      expect(answer!.status()).toBe(200)
      // Answered with a redirect: the page shown is a GET, the POST behind it.
      expect(answer!.request().method()).toBe('GET')
      expect(answer!.request().redirectedFrom()!.method()).toBe('POST')
      expect(page.url()).toMatch(new RegExp(`^${app.url}/\\?made=[A-Za-z0-9_-]{22}$`))
      const short = await page.inputValue('#short')
      const code = codeOf(short)
      expect(code).toMatch(/^[A-Za-z0-9]{6}$/)
      // The copy button cannot work without the script: it stays hidden, the field stays selectable.
      expect(await page.locator('button.copy[data-copy="short"]').isHidden()).toBe(true)
      expect(await qrLoaded(page)).toBeGreaterThan(0)
      expect(await page.getByRole('link', { name: `${short}+` }).getAttribute('href')).toBe(`/${code}+`)
      expect(await page.locator('dl.facts').textContent()).toContain('Expires')
      const row = app.db.query('SELECT mode, account_id, expires - created AS life FROM links WHERE code = ?').get(code)
      expect(row).toEqual({ mode: 'preview', account_id: null, life: 86_400_000 })
      expectOwnOrigin(requests)

      await page.goto(`${app.url}/${code}`)
      expect(await page.locator('.dest strong').textContent()).toBe(new URL(dest.url).host)
      await Promise.all([
        page.waitForURL(`${dest.url}/no-script`),
        page.getByRole('link', { name: /^Continue to/ }).click(),
      ])
      requests.length = 0
      await app.recorder.flush()
      await page.goto(`${app.url}/${code}+`)
      expect(await page.locator('.card .value').first().textContent()).toBe('1')
      expectOwnOrigin(requests)
    } finally {
      await context.close()
    }
  })

  test('an invalid URL: back to the form (a 303), the error tied to the field, what was typed kept', async () => {
    const { context, page, requests } = await tab({ javaScriptEnabled: false })
    try {
      await page.goto(`${app.url}/`)
      await page.fill('#url', 'ftp://files.example/<b>report</b>.pdf')
      await page.click('summary')
      await page.fill('#alias', 'my-report')
      const [answer] = await Promise.all([page.waitForNavigation(), page.click('#shorten-submit')])
      expect(answer!.status()).toBe(200)
      expect(answer!.request().redirectedFrom()!.method()).toBe('POST')
      expect(page.url()).toMatch(new RegExp(`^${app.url}/\\?form=[A-Za-z0-9_-]{22}$`))
      expect(await page.locator('#url-error').textContent()).toBe(
        'The URL must be an absolute URL with the scheme http or https.',
      )
      expect(await page.getAttribute('#url', 'aria-invalid')).toBe('true')
      expect(await page.getAttribute('#url', 'aria-describedby')).toBe('url-error')
      expect(await page.inputValue('#url')).toBe('ftp://files.example/<b>report</b>.pdf')
      expect(await page.inputValue('#alias')).toBe('my-report')
      expect(await page.getAttribute('details', 'open')).not.toBeNull()
      expect(await page.locator('.result').count()).toBe(0)
      expectOwnOrigin(requests)
    } finally {
      await context.close()
    }
  })

  test('the server-rendered error page passes axe in both themes (checked in a tab with JavaScript)', async () => {
    // axe runs as a script: the server's answer is reached here by a native submit (a copy of the form,
    // without app.js's listener), so what is checked is exactly the page a browser without JavaScript gets.
    const { context, page, requests } = await tab()
    try {
      await page.goto(`${app.url}/`)
      await page.evaluate(() => {
        const form = document.getElementById('shorten')!
        form.replaceWith(form.cloneNode(true))
      })
      await page.fill('#url', 'ftp://files.example/report.pdf')
      const [answer] = await Promise.all([page.waitForNavigation(), page.click('#shorten-submit')])
      expect(answer!.status()).toBe(200)
      expect(answer!.request().redirectedFrom()!.method()).toBe('POST')
      expect(await page.locator('#url-error').textContent()).toBe(
        'The URL must be an absolute URL with the scheme http or https.',
      )
      expect(await check(page, 'home-error')).toBeLessThanOrEqual(390)
      expectOwnOrigin(requests)
    } finally {
      await context.close()
    }
  })
})

describe('refused posts', () => {
  test('a form on another site posting to / gets 403, and no link is made', async () => {
    const { context, page } = await tab({ javaScriptEnabled: false })
    try {
      const before = (app.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n
      await page.goto(`${evil.url}/`)
      const [answer] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
      expect(answer!.status()).toBe(403)
      expect(await page.locator('h1').textContent()).toBe('Request refused')
      expect((app.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n).toBe(before)

      // The same with only the header: Origin of another site.
      const r = await page.request.post(`${app.url}/`, {
        form: { url: `${dest.url}/x` },
        headers: { origin: 'http://evil.example' },
      })
      expect(r.status()).toBe(403)
      expect((app.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n).toBe(before)
    } finally {
      await context.close()
    }
  })

  test('the anonymous rate limit is the API one: an API call, a form post, then the form again with the message', async () => {
    const limited = startApp({ rate: { anon_per_minute: 2 } })
    const { context, page, requests } = await tab({ javaScriptEnabled: false })
    try {
      const api = await fetch(`${limited.url}/api/getLink.json`, {
        method: 'POST',
        body: new URLSearchParams({ url: `${dest.url}/api` }),
      })
      expect(api.status).toBe(200)
      await page.goto(`${limited.url}/`)
      await page.fill('#url', `${dest.url}/second`)
      const [second] = await Promise.all([page.waitForNavigation(), page.click('#shorten-submit')])
      expect(second!.status()).toBe(200)
      await page.fill('#url', `${dest.url}/third`)
      const [third] = await Promise.all([page.waitForNavigation(), page.click('#shorten-submit')])
      expect(third!.status()).toBe(200)
      const refused = await third!.request().redirectedFrom()!.response()
      expect(refused!.status()).toBe(303)
      expect(Number(await refused!.headerValue('retry-after'))).toBeGreaterThan(0)
      expect(await page.locator('#form-error').textContent()).toMatch(
        /^Too many links from your address: wait \d+ s and try again\.$/,
      )
      expect(await page.inputValue('#url')).toBe(`${dest.url}/third`)
      expect((limited.db.query('SELECT count(*) AS n FROM links').get() as { n: number }).n).toBe(2)
      expectOwnOrigin(requests, limited.url)
    } finally {
      await context.close()
      await limited.stop()
    }
  })
})
