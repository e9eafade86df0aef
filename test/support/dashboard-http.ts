// The dashboard over a real socket, as a browser sends its forms (the page's Origin, its Referer, cookies
// carried by hand) and with redirects not followed: for tests that read the 303s, their Location and
// their Set-Cookie lines. Also the services' caller of an account, to set up rows as the dashboard would.
import { expect } from 'bun:test'
import { SCOPES, type Caller } from '../../src/kernel/caller'
import type { RunningApp } from './browser'
import { dashboardCaller } from './dashboard'

/** The value a response sets for cookie `name` (null: not set), and its whole Set-Cookie line. */
export function setCookie(res: Response, name: string): { value: string; line: string } | null {
  for (const line of res.headers.getSetCookie()) {
    const m = line.match(new RegExp(`^${name}=([^;]*)`))
    if (m) return { value: m[1]!, line }
  }
  return null
}

export interface Who {
  /** The Cookie header of the session. */
  cookie: string
  /** The session's CSRF token. */
  csrf: string
}

/** `appOf`: the app under test (read at each call: tests start it in beforeAll). */
export function dashboardHttp(appOf: () => RunningApp) {
  /** GET with the cookies given, no redirect followed. */
  const get = (path: string, cookie = '', headers: Record<string, string> = {}) =>
    fetch(`${appOf().url}${path}`, { redirect: 'manual', headers: { cookie, ...headers } })

  /** A form POST as a page of the app sends it (its Origin); add a Referer to say which page. */
  const post = (
    path: string,
    cookie: string,
    fields: [string, string][] | Record<string, string>,
    headers: Record<string, string> = {},
  ) =>
    fetch(`${appOf().url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: appOf().url, ...headers },
      body: new URLSearchParams(fields).toString(),
    })

  /** Through the sign-in form, as a browser: the session, and where the sign-in sent the browser. */
  async function signIn(name: string, password: string, next = '/dashboard'): Promise<Who & { location: string }> {
    const form = await get('/login')
    const login = setCookie(form, 'lb_login')!.value
    const loginCsrf = (await form.text()).match(/name="_csrf" value="([^"]+)"/)![1]!
    const res = await post('/login', `lb_login=${login}`, { _csrf: loginCsrf, name, password, next })
    expect(res.status).toBe(303)
    const cookie = `lb_session=${setCookie(res, 'lb_session')!.value}`
    const page = await (await get('/dashboard', cookie)).text()
    return { cookie, csrf: page.match(/name="_csrf" value="([^"]+)"/)![1]!, location: res.headers.get('location')! }
  }

  async function signOut(who: Who) {
    expect((await post('/logout', who.cookie, { _csrf: who.csrf })).status).toBe(303)
  }

  /** The services' caller for an account, as the dashboard makes it (all scopes). */
  function callerOf(name: string): Caller {
    return dashboardCaller(appOf().db, name, { scopes: [...SCOPES] })
  }

  return { get, post, signIn, signOut, callerOf }
}
