// Signing in to the dashboard from tests: through the real sign-in form (app.handle, no socket) for tests
// of answers and rows, and in Chromium for browser tests.
import type { Page } from 'playwright-core'
import type { TestBox } from './app'

export interface SignedIn {
  /** The Cookie header of the session. */
  cookie: string
  /** The session's CSRF token (what every dashboard form carries in _csrf). */
  csrf: string
}

/** Creates an account with a dashboard password (when `password` is given) and returns nothing. */
export async function accountWithPassword(box: { accounts: TestBox['accounts'] }, name: string, password: string, admin = false) {
  await box.accounts.createAccount({ name, password, admin })
}

const cookieValue = (setCookie: string | null, name: string) => {
  const m = (setCookie ?? '').match(new RegExp(`(?:^|, )${name}=([^;]*)`))
  return m ? m[1]! : null
}

/** Signs in through GET /login then POST /login, as a browser would; throws when it does not work. */
export async function signIn(box: TestBox, name: string, password: string): Promise<SignedIn> {
  const form = await box.request('/login')
  const login = cookieValue(form.headers.get('set-cookie'), 'lb_login')!
  const csrfField = (await form.text()).match(/name="_csrf" value="([^"]+)"/)![1]!
  const res = await box.request('/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `lb_login=${login}` },
    body: new URLSearchParams({ _csrf: csrfField, name, password, next: '/dashboard' }).toString(),
  })
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}: ${(await res.text()).slice(0, 300)}`)
  const session = cookieValue(res.headers.get('set-cookie'), 'lb_session')!
  const cookie = `lb_session=${session}`
  const page = await (await box.request('/dashboard', { headers: { cookie } })).text()
  const csrf = page.match(/name="_csrf" value="([^"]+)"/)![1]!
  return { cookie, csrf }
}

/** POSTs a dashboard form with the session's cookie and CSRF token (pass `_csrf` to override it). */
export function postForm(box: TestBox, who: SignedIn, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return box.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: who.cookie, ...headers },
    body: new URLSearchParams({ _csrf: who.csrf, ...fields }).toString(),
  })
}

/** Signs in in the browser through the form (the page ends on the dashboard). */
export async function signInBrowser(page: Page, appUrl: string, name: string, password: string) {
  await page.goto(`${appUrl}/login`)
  await page.fill('#name', name)
  await page.fill('#password', password)
  await Promise.all([page.waitForURL(/\/dashboard/), page.click('button[type=submit]')])
}
