// For tests that look at pages as visitors do: the real app on a real socket, local destination servers
// (Bun.serve on 127.0.0.1, port 0: each its own origin), and Debian's Chromium driven by playwright-core,
// with axe-core for accessibility and screenshots at desktop and phone widths for people to look at.
import { expect } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Database } from 'bun:sqlite'
import { chromium, type Browser, type BrowserContextOptions, type CDPSession, type Page } from 'playwright-core'
import { createLinkbox, type AppOptions, type Linkbox } from '../../src/app/app'
import { CHROME_UA, REPO_ROOT } from './server'
import { tempDir, testConfig } from './app'

export const CHROMIUM = '/usr/bin/chromium'
export const SCREENSHOTS = join(REPO_ROOT, 'test-results/screenshots')
/** The 390 px shots of new page states in both themes, to look at before an issue is resolved. */
export const PHONE_SHOTS = join(SCREENSHOTS, 'phone')
/** Screenshots are taken with LINKBOX_SCREENSHOTS=1 (to look at them); without, every check runs and no file is written. */
export const SHOTS_ON = process.env.LINKBOX_SCREENSHOTS === '1'

/** A page's or an element's screenshot, when screenshots are on (its folder made). */
export async function shoot(
  target: { screenshot(o: { path: string; fullPage?: boolean }): Promise<unknown> },
  opts: { path: string; fullPage?: boolean },
): Promise<void> {
  if (!SHOTS_ON) return
  mkdirSync(dirname(opts.path), { recursive: true })
  await target.screenshot(opts)
}

export function launchBrowser(): Promise<Browser> {
  // A missing browser fails the suite (never a silent skip), with the one command that fixes it.
  if (!existsSync(CHROMIUM))
    throw new Error(`The browser tests need Debian's Chromium at ${CHROMIUM}: sudo apt-get install -y chromium`)
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  })
}

/** A new page of `browser` as Chrome (its user agent, `opts` added), with a 10 s default timeout. */
export async function chromePage(browser: Browser, opts: BrowserContextOptions = {}): Promise<Page> {
  const page = await browser.newPage({ userAgent: CHROME_UA, ...opts })
  page.setDefaultTimeout(10_000)
  return page
}

/** A browser test's afterAll: the browser closed, then the app stopped (either missing when beforeAll failed). */
export async function closeAll(browser: Browser | undefined, app: RunningApp | undefined): Promise<void> {
  await browser?.close()
  await app?.stop()
}

export interface Fixture {
  url: string
  stop(): void
}

/** A destination server on 127.0.0.1 (a free port, so every fixture is an origin of its own). */
export function startFixture(handler: (req: Request, url: URL) => Response | Promise<Response>): Fixture {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => handler(req, new URL(req.url)) })
  return { url: `http://127.0.0.1:${server.port}`, stop: () => void server.stop(true) }
}

/** A small HTML page a destination answers with (with a heading to look for). */
export const htmlPage = (heading: string, headers: Record<string, string> = {}) =>
  new Response(
    `<!doctype html><html lang="en"><head><title>${heading}</title></head><body><h1>${heading}</h1></body></html>`,
    {
      headers: { 'content-type': 'text/html; charset=utf-8', ...headers },
    },
  )

export interface RunningApp extends Linkbox {
  /** The SQLite connection (startApp's apps run on SQLite). */
  db: Database
  url: string
  stop(): Promise<void>
}

/**
 * The real app in this process on 127.0.0.1 (port 0), allowed to reach local servers (the frame check
 * goes through the SSRF guard). `overrides` are merged over the test config per table.
 */
export function startApp(overrides: Record<string, unknown> = {}, opts: AppOptions = {}): RunningApp {
  const dir = tempDir('linkbox-browser-')
  const box = createLinkbox(
    testConfig(dir, { server: { host: '127.0.0.1', port: 0 }, media: { allow_private_networks: true }, ...overrides }),
    opts,
  )
  const port = box.listen().port!
  if (!box.db) throw new Error('startApp: the app runs on SQLite (no database.url)')
  return Object.assign(box, {
    db: box.db,
    url: `http://127.0.0.1:${port}`,
    async stop() {
      await box.close({ graceMs: 1_000 })
      rmSync(dir, { recursive: true, force: true })
    },
  })
}

const AXE = readFileSync(join(REPO_ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: string[]
}

/** The axe rules a colour scheme changes the outcome of (a theme changes colours, not structure). */
export const COLOUR_RULES = ['color-contrast', 'link-in-text-block']

/**
 * axe-core on the page as it is now; returns the serious and critical violations (frames not entered).
 * `rules`: only those (the dark theme's pass after the light one's full run).
 */
export async function seriousViolations(page: Page, rules?: string[]): Promise<AxeViolation[]> {
  // Evaluated over the DevTools protocol: a <script> tag would be (rightly) refused by the page's CSP, and
  // turning the CSP off for tests (bypassCSP) would hide the very bugs these tests look for.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE)
  const result = await page.evaluate(async (only) => {
    const r = await (window as any).axe.run(document, {
      iframes: false,
      resultTypes: ['violations'],
      ...(only ? { runOnly: { type: 'rule', values: only } } : {}),
    })
    return r.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n: any) => n.target.join(' ')),
    }))
  }, rules ?? null)
  return (result as AxeViolation[]).filter((v) => v.impact === 'serious' || v.impact === 'critical')
}

export const WIDTHS = [1280, 390] as const

const sessions = new WeakMap<Page, Promise<CDPSession>>()

/**
 * page.screenshot({ fullPage: true }) in one evaluate and one DevTools call: Chromium's fast PNG encoding
 * (the same pixels in a bigger file) without Playwright's round trips per shot, which cost more than a small
 * page's capture; a focused text field (whose caret Playwright hides) is left to page.screenshot.
 */
async function fullPageShot(page: Page, path: string): Promise<void> {
  // Playwright's full-page size, after its wait for the fonts.
  const size = await page.evaluate(async () => {
    await document.fonts.ready
    const active = document.activeElement as HTMLElement | null
    if (active && (active.isContentEditable || ['INPUT', 'TEXTAREA', 'IFRAME', 'FRAME'].includes(active.tagName)))
      return null
    const { body, documentElement: root } = document
    if (!body || !root) return null
    return {
      width: Math.max(
        body.scrollWidth,
        root.scrollWidth,
        body.offsetWidth,
        root.offsetWidth,
        body.clientWidth,
        root.clientWidth,
      ),
      height: Math.max(
        body.scrollHeight,
        root.scrollHeight,
        body.offsetHeight,
        root.offsetHeight,
        body.clientHeight,
        root.clientHeight,
      ),
    }
  })
  const viewport = page.viewportSize()
  if (!size || !viewport) return void (await page.screenshot({ path, fullPage: true, timeout: 30_000 }))
  if (!sessions.has(page)) sessions.set(page, page.context().newCDPSession(page))
  const cdp = await sessions.get(page)!
  const fits = size.width <= viewport.width && size.height <= viewport.height
  const shot = await cdp.send('Page.captureScreenshot', {
    format: 'png',
    clip: { x: 0, y: 0, width: size.width, height: size.height, scale: 1 },
    captureBeyondViewport: !fits,
    optimizeForSpeed: true,
  })
  writeFileSync(path, Buffer.from(shot.data, 'base64'))
}

/**
 * Screenshots of the page at desktop and phone widths, in the light and the dark theme, into
 * test-results/screenshots/NAME-WIDTH-light.png and NAME-WIDTH-dark.png (git-ignored; look at them);
 * returns the page's scroll width at each width (a page wider than the screen scrolls sideways). The
 * viewport is left at the last width and the colour scheme at light. `name` null: the same steps and
 * widths without the files (a page another test already shoots).
 */
export async function screenshots(page: Page, name: string | null): Promise<Record<number, number>> {
  mkdirSync(SCREENSHOTS, { recursive: true })
  const widths: Record<number, number> = {}
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: width > 800 ? 800 : 844 })
    widths[width] = await page.evaluate(() => document.documentElement.scrollWidth)
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      if (name !== null && SHOTS_ON) await fullPageShot(page, join(SCREENSHOTS, `${name}-${width}-${scheme}.png`))
    }
  }
  await page.emulateMedia({ colorScheme: 'light' })
  return widths
}

/**
 * What every page a test shows gets: axe-core (no serious or critical violation) in the light and the
 * dark theme at 1280 and 390 px, then the screenshots (both widths, both themes). Returns the scroll width at
 * 390 px; the viewport goes back to 1280 × 800 and the theme to light. `name` null: every check, no files.
 */
export async function checkPage(page: Page, name: string | null): Promise<number> {
  // At 1280 px, then on a phone, where the layout changes (tables stack into cards, the frame bar shows only
  // the mark): every rule in the light theme, the colour rules in the dark one.
  for (const width of [1280, 390] as const) {
    await page.setViewportSize({ width, height: width > 800 ? 800 : 844 })
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      const violations = await seriousViolations(page, scheme === 'dark' ? COLOUR_RULES : undefined)
      expect({ width, scheme, violations }).toEqual({ width, scheme, violations: [] })
    }
  }
  await page.emulateMedia({ colorScheme: 'light' })
  const widths = await screenshots(page, name)
  await page.setViewportSize({ width: 1280, height: 800 })
  return widths[390]!
}

/**
 * The 390 px full-page shots in both themes into PHONE_SHOTS/NAME-390-SCHEME.png (the rules editor's are
 * named without the width: `bare`); the viewport goes back to 1280 × 800 and the theme to light.
 */
export async function phoneShots(page: Page, name: string, opts: { height?: number; bare?: boolean } = {}) {
  if (!SHOTS_ON) return
  await page.setViewportSize({ width: 390, height: opts.height ?? 844 })
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    await shoot(page, { path: `${PHONE_SHOTS}/${name}${opts.bare ? '' : '-390'}-${scheme}.png`, fullPage: true })
  }
  await page.emulateMedia({ colorScheme: 'light' })
  await page.setViewportSize({ width: 1280, height: 800 })
}
