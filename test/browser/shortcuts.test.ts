// The dashboard's keyboard shortcuts named where people see them, and the sign-in page's word on accounts made
// on the command line (issue 38, item 11), in real Chromium: the header's "Keyboard shortcuts" button and "?"
// open one dialog listing them (the "g" sections only those the navigation has), Escape closes it and the focus
// returns; "n" and "g l"/"g a" act, and nothing fires while typing in a field; the sign-in page says the same
// sentence whatever name was typed. axe in both themes at 1280 and 390 px.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { checkPage, launchBrowser, startApp, type RunningApp } from '../support/browser'
import { signInBrowser } from '../support/dashboard'
import { CHROME_UA } from '../support/server'

const PW = 'correct horse battery'
let browser: Browser
let app: RunningApp
const contexts: BrowserContext[] = []

beforeAll(async () => {
  app = startApp()
  await app.accounts.createAccount({ name: 'alice', password: PW })
  await app.accounts.createAccount({ name: 'cli-made' }) // as `linkbox account create` off a terminal: no password
  browser = await launchBrowser()
})
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {})
  await browser?.close()
  await app?.stop()
})

async function tab(signedIn = false): Promise<Page> {
  const context = await browser.newContext({ userAgent: CHROME_UA, viewport: { width: 1280, height: 800 } })
  contexts.push(context)
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  if (signedIn) await signInBrowser(page, app.url, 'alice', PW)
  return page
}

test('the header names the shortcuts; "?" and the button open the same dialog; Escape closes it', async () => {
  const page = await tab(true)
  await page.goto(`${app.url}/dashboard/keys`)
  const button = page.getByRole('button', { name: 'Keyboard shortcuts' })
  expect(await button.isVisible()).toBe(true)
  await button.focus()
  await page.keyboard.press('Enter')
  const dialog = page.getByRole('dialog', { name: 'Keyboard shortcuts' })
  expect(await dialog.isVisible()).toBe(true)
  const text = await dialog.innerText()
  for (const line of ['Search your links', 'New link', 'g then l', 'Go to Links', 'Go to API keys', 'Go to Mailboxes'])
    expect(text).toContain(line)
  // alice is no administrator: no "g d" to a page she cannot open.
  expect(text).not.toContain('Go to Admin')
  // Focus is in the dialog (modal), and comes back to the button after Escape.
  expect(await page.evaluate(() => !!document.activeElement?.closest('dialog'))).toBe(true)
  await checkPage(page, 'front-shortcuts')
  await page.keyboard.press('Escape')
  expect(await dialog.isVisible()).toBe(false)
  expect(await page.evaluate(() => document.activeElement?.classList.contains('kb-help'))).toBe(true)
  await page.locator('h1').click()
  await page.keyboard.press('?')
  expect(await dialog.isVisible()).toBe(true)
  await dialog.getByRole('button', { name: 'Close' }).click()
  expect(await dialog.isVisible()).toBe(false)
})

test('"n" opens a new link, "g a" and "g l" go to sections; nothing fires while typing; Back returns', async () => {
  const page = await tab(true)
  await page.goto(`${app.url}/dashboard/keys`)
  await page.locator('h1').click()
  await page.keyboard.press('n')
  await page.waitForURL(`${app.url}/dashboard#new-link`)
  await page.waitForFunction(() => document.activeElement?.id === 'url')
  // Typed into the URL field, "g", "l" and "n" are letters.
  await page.keyboard.type('gln?')
  expect(await page.inputValue('#url')).toBe('gln?')
  expect(page.url()).toBe(`${app.url}/dashboard#new-link`)
  expect(await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).count()).toBe(0)
  await page.fill('#url', '')
  await page.locator('h1').click()
  await page.keyboard.press('g')
  await page.keyboard.press('a')
  await page.waitForURL(`${app.url}/dashboard/keys`)
  await page.locator('h1').click()
  await page.keyboard.press('g')
  await page.keyboard.press('l')
  await page.waitForURL(`${app.url}/dashboard`)
  await page.goBack()
  await page.waitForURL(`${app.url}/dashboard/keys`)
  // "g" alone, then a key that names no section: nothing happens, and the next key is itself again.
  await page.locator('h1').click()
  await page.keyboard.press('g')
  await page.keyboard.press('z')
  await page.keyboard.press('?')
  expect(await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).isVisible()).toBe(true)
  expect(page.url()).toBe(`${app.url}/dashboard/keys`)
})

test('the sign-in page says how an account made on the command line gets a password, the same for every name', async () => {
  const page = await tab()
  await page.goto(`${app.url}/login`)
  const hint = page.locator('#no-password-yet')
  expect(await hint.innerText()).toBe(
    'An account made on the command line has no password until one is set there: linkbox account password NAME.',
  )
  await checkPage(page, 'front-signin')
  // A failed sign-in, for the account without a password and for a name nobody has: the same page, word for word.
  const failed = async (name: string) => {
    await page.goto(`${app.url}/login`)
    await page.getByLabel('Account name').fill(name)
    await page.getByLabel('Password').fill('whatever-typed')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('#auth-error').waitFor()
    return page.locator('main').innerText()
  }
  const noPassword = await failed('cli-made')
  const nobody = await failed('no-such-one')
  expect(noPassword.replace('cli-made', 'NAME')).toBe(nobody.replace('no-such-one', 'NAME'))
  expect(noPassword).toContain('linkbox account password NAME')
  await page.reload()
  expect(await page.locator('#no-password-yet').isVisible()).toBe(true)
})
