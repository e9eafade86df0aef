// Signing in to the dashboard from tests: through the real sign-in form (app.handle, no socket) for tests
// of answers and rows, and in Chromium for browser tests.
import type { Database } from 'bun:sqlite'
import type { Page } from 'playwright-core'
import type { Caller, Scope } from '../../src/kernel/caller'
import type { TestBox } from './app'

export interface SignedIn {
  /** The Cookie header of the session. */
  cookie: string
  /** The session's CSRF token (what every dashboard form carries in _csrf). */
  csrf: string
}

/** Creates an account with a dashboard password (when `password` is given) and returns nothing. */
export async function accountWithPassword(
  box: { accounts: TestBox['accounts'] },
  name: string,
  password: string,
  admin = false,
) {
  await box.accounts.createAccount({ name, password, admin })
}

const cookieValue = (setCookie: string | null, name: string) => {
  const m = (setCookie ?? '').match(new RegExp(`(?:^|, )${name}=([^;]*)`))
  return m ? m[1]! : null
}

/** Signs in through GET /login then POST /login, as a browser would; throws when it does not work. */
export async function signIn(box: Pick<TestBox, 'request'>, name: string, password: string): Promise<SignedIn> {
  const form = await box.request('/login')
  const login = cookieValue(form.headers.get('set-cookie'), 'lb_login')!
  const csrfField = (await form.text()).match(/name="_csrf" value="([^"]+)"/)![1]!
  const res = await box.request('/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `lb_login=${login}` },
    body: new URLSearchParams({ _csrf: csrfField, name, password, next: '/dashboard' }).toString(),
  })
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}: ${(await res.text()).slice(0, 300)}`)
  // A refused sign-in is a 303 too, back to the form (with no session cookie).
  const session = cookieValue(res.headers.get('set-cookie'), 'lb_session')
  if (!session) throw new Error(`sign-in refused: 303 to ${res.headers.get('location')}`)
  const cookie = `lb_session=${session}`
  const page = await (await box.request('/dashboard', { headers: { cookie } })).text()
  const csrf = page.match(/name="_csrf" value="([^"]+)"/)![1]!
  return { cookie, csrf }
}

/** POSTs a dashboard form with the session's cookie and CSRF token (pass `_csrf` to override it). */
export function postForm(
  box: Pick<TestBox, 'request'>,
  who: SignedIn,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
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

/** request() over a real socket to a listening app (redirects are not followed: tests look at each 303). */
export const overSocket = (url: string): Pick<TestBox, 'request'> => ({
  request: (path, init) => fetch(`${url}${path}`, { ...init, redirect: 'manual' }),
})

/** The name=value pairs a response sets (cookies it clears left out). */
export function cookiesSet(res: Response): string[] {
  return res.headers
    .getSetCookie()
    .filter((c) => !/;\s*Max-Age=0\b/i.test(c))
    .map((c) => c.split(';')[0]!)
}

/**
 * Follows a form's answer as a browser does: it must be a 303 (forms answer with a redirect), and its
 * Location is fetched with GET, the cookie given (a session's) and the cookies the answer set. Returns that page.
 */
export async function follow(box: Pick<TestBox, 'request'>, res: Response, cookie = ''): Promise<Response> {
  if (res.status !== 303) throw new Error(`expected a 303, got ${res.status}: ${(await res.text()).slice(0, 300)}`)
  const location = res.headers.get('location')!
  return box.request(location, { headers: { cookie: [cookie, ...cookiesSet(res)].filter(Boolean).join('; ') } })
}

/** The services' caller of account `name` as a dashboard session makes it (scope links, not admin unless said). */
export function dashboardCaller(
  db: Pick<Database, 'query'>,
  name: string,
  opts: { admin?: boolean; scopes?: Scope[] } = {},
): Caller {
  const { id } = db.query('SELECT id FROM accounts WHERE name = ?').get(name) as { id: number }
  const scopes = new Set<Scope>(opts.scopes ?? ['links'])
  return { accountId: id, accountName: name, admin: opts.admin ?? false, scopes, keyId: null, via: 'dashboard' }
}
