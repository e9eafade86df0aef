// What every dashboard page shares: the session from its cookie, the checks every form passes, the page frame,
// and what a form's answer carries across its redirect (notices; sealed refused forms and secrets: flash.ts).
import layout from '../../assets/dashboard-layout.html' with { type: 'text' }
import type { Scope } from '../kernel/caller'
import type { Config } from '../kernel/config'
import { AppError } from '../kernel/errors'
import { sameSecret } from '../web/api'
import { isCrossSite } from '../web/cross-site'
import { readBodyLimited } from '../web/params'
import { escapeHtml, fill, LOGO_SVG, SCRIPT_CSP, SCRIPT_TAG, STYLE_VERSION, THEME_SWITCH } from '../web/render'
import { createFlash } from './flash'
import { createFormTokens, type FormTokens } from './form-tokens'
import { DASHBOARD_CSS_VERSION } from './styles'
import type { FlashRows, FormTokenRows } from './storage/contract'
import { cookiesOf, originOf, safeNext, withParam } from './page-helpers'
import { SESSION_TTL_MS, type Session, type Sessions } from './sessions'

/** Dashboard pages may frame their own origin (a mail's HTML, served sandboxed from /dashboard/mail/…). */
export const DASHBOARD_CSP = `${SCRIPT_CSP}; frame-src 'self'`
export const FORM_LIMIT = 64 * 1024
/** A form sent after its session ended is kept this long (a cookie) for the page it was on. */
export const DRAFT_TTL_MS = 15 * 60_000
/** The most a draft cookie's value may be (a browser keeps about 4 KB a cookie): past it, what was typed is dropped. */
export const DRAFT_MAX_CHARS = 3000
/** What the sign-in page says when the browser came from a session that ended. */
export const SESSION_ENDED = 'Your session ended — sign in again to continue where you were.'

export type Section = 'links' | 'keys' | 'mail' | 'download' | 'webhooks' | 'admin'
const SECTIONS: { id: Section; href: string; label: string; admin?: boolean; scope?: Scope }[] = [
  { id: 'links', href: '/dashboard', label: 'Links' },
  { id: 'keys', href: '/dashboard/keys', label: 'API' },
  { id: 'mail', href: '/dashboard/mail', label: 'Mailboxes' },
  { id: 'download', href: '/dashboard/download', label: 'Download', scope: 'media' },
  { id: 'webhooks', href: '/dashboard/webhooks', label: 'Webhooks' },
  { id: 'admin', href: '/dashboard/admin', label: 'Admin', admin: true },
]

export interface Notice {
  kind: 'ok' | 'error' | 'warn'
  text: string
}

/** A form the browser sent after its session ended, kept for the page it was on (never a password). */
interface Draft {
  /** The path of the page the form was on. */
  path: string
  fields: [string, string][]
  /** Something typed was not kept (a password). */
  dropped: boolean
  /** What was typed was too long for the cookie. */
  tooLong: boolean
}

/** What requireForm read from a form sent without a session: the fields it keeps, and what it did not. */
interface Typed {
  fields: [string, string][]
  /** Something typed was left out (a password). */
  dropped: boolean
  /** The form was too long to read or to keep. */
  tooLong?: boolean
}

export interface RenderOptions {
  section: Section | null
  title: string
  /** Markup built from escaped parts (escapeHtml / fill). */
  content: string
  status?: number
  headers?: Record<string, string>
  /** Shown above the content (besides any notice carried by the redirect that led here). */
  notice?: Notice
}

export function createShell<Tx>(deps: {
  config: Config
  sessions: Sessions
  formTokens: FormTokenRows<Tx>
  flashes: FlashRows
  clock: () => number
}) {
  const { config, sessions } = deps
  const clock = deps.clock
  // In the database, sealed (flash.ts); sessions and visitors are pools of their own.
  const flash = createFlash({ rows: deps.flashes, clock: deps.clock })
  const tokens: FormTokens = createFormTokens({ rows: deps.formTokens, clock: deps.clock })
  const secure = config.server.base_url.startsWith('https:')
  // __Host-: a cookie only this origin over https can set (no Domain, Path=/, Secure).
  const SESSION_COOKIE = secure ? '__Host-lb_session' : 'lb_session'
  const NOTICE_COOKIE = 'lb_notice'
  // Sent to dashboard pages only: it holds what was typed in a form whose session had ended.
  const DRAFT_COOKIE = 'lb_draft'
  const attrs = `Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
  const draftAttrs = `Path=/dashboard; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
  const baseOrigin = originOf(config.server.base_url)

  /** A request sent by a page of another site (a forged form), as far as the browser tells. */
  const crossSite = (request: Request) => isCrossSite(request, config.server.base_url)

  const csrfRefused = () =>
    new AppError(403, 'csrf', 'This form has expired or was sent from another site. Reload the page and try again.')

  const notAdmin = () => new AppError(403, 'not_admin', 'This page is for administrator accounts.')

  /** The live session of the request's cookie, or null (read from the database on every request: SPEC §11). */
  async function session(request: Request): Promise<Session | null> {
    const token = cookiesOf(request).get(SESSION_COOKIE)
    return token ? sessions.lookup(token) : null
  }

  function noticeOf(request: Request): Notice | null {
    const raw = cookiesOf(request).get(NOTICE_COOKIE)
    if (!raw) return null
    try {
      const n = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Notice
      if ((n.kind === 'ok' || n.kind === 'error' || n.kind === 'warn') && typeof n.text === 'string')
        return { kind: n.kind, text: n.text.slice(0, 500) }
    } catch {}
    return null
  }

  const noticeHtml = (n: Notice) =>
    `<p class="notice ${n.kind}" role="${n.kind === 'error' ? 'alert' : 'status'}">${escapeHtml(n.text)}</p>`

  /** The Referer, when it is a page of this site (our pages send it to their own origin only). */
  function sameOriginReferer(request: Request): URL | null {
    const ref = request.headers.get('referer')
    if (!ref || ref.length > 2048) return null
    try {
      const r = new URL(ref)
      return r.origin === originOf(request.url) || r.origin === baseOrigin ? r : null
    } catch {
      return null
    }
  }

  /**
   * The page a form was on: `page` (the route's own page), with the query it had when the Referer says the
   * form was there (a search, a page number). Never anything but a dashboard path.
   */
  function formPage(request: Request, page: string): string {
    const r = sameOriginReferer(request)
    const here = r && r.pathname === page ? r.pathname + r.search : page
    return safeNext(here)
  }

  function draftCookie(next: string, kept?: Typed): string {
    const encode = (d: object) => Buffer.from(JSON.stringify(d)).toString('base64url')
    const draft = {
      p: next.split(/[?#]/)[0],
      e: clock() + DRAFT_TTL_MS,
      f: kept?.fields ?? [],
      x: kept?.dropped ? 1 : 0,
      l: kept?.tooLong ? 1 : 0,
    }
    let value = encode(draft)
    if (value.length > DRAFT_MAX_CHARS) value = encode({ ...draft, f: [], l: 1 })
    return `${DRAFT_COOKIE}=${value}; ${draftAttrs}; Max-Age=${DRAFT_TTL_MS / 1000}`
  }

  function draftOf(request: Request): Draft | null {
    const raw = cookiesOf(request).get(DRAFT_COOKIE)
    if (!raw || raw.length > DRAFT_MAX_CHARS) return null
    try {
      const d = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'))
      if (typeof d?.p !== 'string' || typeof d.e !== 'number' || d.e <= clock() || !Array.isArray(d.f)) return null
      const fields = (d.f as unknown[]).filter(
        (f): f is [string, string] =>
          Array.isArray(f) && f.length === 2 && typeof f[0] === 'string' && typeof f[1] === 'string',
      )
      return { path: d.p, fields, dropped: d.x === 1, tooLong: d.l === 1 }
    } catch {
      return null
    }
  }

  /** The draft of the page this GET asks for (its path, not its query), or null. */
  function draftHere(request: Request): Draft | null {
    if (request.method !== 'GET') return null
    const d = draftOf(request)
    if (!d) return null
    try {
      return new URL(request.url).pathname === d.path ? d : null
    } catch {
      return null
    }
  }

  function draftNotice(d: Draft): Notice {
    let text = 'Your session had ended, so the form was not sent.'
    if (d.fields.length > 0) text += ' What you typed is back in it: check it and send it again.'
    else if (d.tooLong) text += ' What you typed was too long to keep: type it again.'
    else text += ' Nothing was changed: send it again if you still mean to.'
    if (d.dropped) text += ' Passwords are never kept: type yours again.'
    return { kind: 'warn', text }
  }

  /**
   * The way to the sign-in page for a request without a live session, coming back to the page it was about:
   * a page asked for comes back to itself; a form sent comes back to the page it was on, which is told
   * (by a cookie) that the form was not sent, with what was typed in `kept`. The sign-in page says the
   * session ended when it did: a form was sent, the browser still had a session cookie, or it came from a
   * dashboard page.
   */
  function toSignIn(request: Request, page?: string, kept?: Typed): Response {
    let path = '/dashboard'
    let query = ''
    try {
      const u = new URL(request.url)
      path = u.pathname
      query = u.search
    } catch {}
    const reading = request.method === 'GET' || request.method === 'HEAD'
    const next = reading ? safeNext(path + query) : formPage(request, page ?? path)
    const from = sameOriginReferer(request)?.pathname ?? null
    const ended = !reading || cookiesOf(request).has(SESSION_COOKIE) || (from !== null && safeNext(from) === from)
    const headers = new Headers({
      location: `/login?next=${encodeURIComponent(next)}${ended ? '&reason=session_ended' : ''}`,
      'cache-control': 'no-store',
    })
    // Only for a form of this site: another site must not be able to fill in the next form its visitor sees.
    if (!reading && !crossSite(request)) headers.append('set-cookie', draftCookie(next, kept))
    return new Response(null, { status: 303, headers })
  }

  function nav(s: Session | null, current: Section | null): string {
    if (!s) return ''
    const items = SECTIONS.filter((x) => (!x.admin || s.admin) && (!x.scope || s.caller.scopes.has(x.scope)))
      .map((x) => `<li><a href="${x.href}"${x.id === current ? ' aria-current="page"' : ''}>${x.label}</a></li>`)
      .join('')
    return `<nav aria-label="Dashboard"><ul class="dash-nav">${items}</ul></nav>
<div class="dash-user"><span><span class="who-label">Signed in as </span><strong>${escapeHtml(s.accountName)}</strong>${s.admin ? '<span class="who-label"> (admin)</span>' : ''}</span>
<form method="post" action="/logout"><input type="hidden" name="_csrf" value="${escapeHtml(s.csrf)}"><button type="submit" class="link">Sign out</button></form></div>${THEME_SWITCH}`
  }

  /**
   * Flash owners are strings carrying a secret only the browser has (flash.ts): a session's is "s", its id
   * and its cookie's token (ownerOf); others — a visitor's home form, a sign-in form — start with another
   * letter, and their entries go to the visitors' pool.
   */
  const ownerOf = (s: Session) => `s${s.id}.${s.token}`

  return {
    SESSION_COOKIE,
    crossSite,
    csrfRefused,
    session,
    /** Values carried across a redirect, in the database and sealed (flash.ts). */
    flash,
    /** One-time form tokens (form-tokens.ts). */
    tokens,
    ownerOf,

    /**
     * The answer to a refused form: 303 back to its page (`page`, a path of this site), with the form's
     * state — what was typed, never a password, and the messages — kept for that page to show once.
     */
    async refused(
      owner: string,
      page: string,
      state: unknown,
      headers: Record<string, string> = {},
    ): Promise<Response> {
      const id = await flash.put(owner, `form ${page.split('?')[0]}`, state)
      return this.seeOther(withParam(page, 'form', id), undefined, headers)
    },

    /** The answer to a create form sent again (form-tokens.ts): 303 to the first answer's page, saying so. */
    repeated(location: string): Response {
      return this.seeOther(location, {
        kind: 'ok',
        text: 'That form was sent twice: it was done once, the first time.',
      })
    },

    /** The state of the refused form this page's URL names, once (null: none, shown already, expired, not this owner's). */
    refusedState<T>(request: Request, owner: string): Promise<T | null> {
      const url = new URL(request.url)
      return flash.take<T>(owner, `form ${url.pathname}`, url.searchParams.get('form'))
    },

    /**
     * The session, or a redirect to the sign-in page that comes back here. For a form, `page` is the page it
     * is on when that is not the form's own path (a GET there shows it).
     */
    async require(request: Request, page?: string): Promise<Session | Response> {
      return (await session(request)) ?? toSignIn(request, page)
    },

    /**
     * As require, for a form where people type: without a session, the fields named in `keep` (never a
     * password) are kept for its page, which shows them again after signing in (see `draft`).
     */
    async requireForm(
      request: Request,
      opts: { page?: string; keep: readonly string[]; admin?: boolean },
    ): Promise<Session | Response> {
      const s = await session(request)
      if (s) {
        if (opts.admin && !s.admin) throw notAdmin()
        return s
      }
      let kept: Typed | undefined
      if (request.method === 'POST' && !crossSite(request)) {
        try {
          const all = [...new URLSearchParams(new TextDecoder().decode(await readBodyLimited(request, FORM_LIMIT)))]
          kept = {
            fields: all.filter(([k]) => opts.keep.includes(k)).slice(0, 50),
            dropped: all.some(([k, v]) => k !== '_csrf' && !opts.keep.includes(k) && v !== ''),
          }
        } catch {
          kept = { fields: [], dropped: false, tooLong: true } // the page still comes back, without what was typed
        }
      }
      return toSignIn(request, opts.page, kept)
    },

    /** What was typed in this page's form before its session ended (fields kept by requireForm), or null. */
    draft(request: Request): URLSearchParams | null {
      const d = draftHere(request)
      return d && d.fields.length > 0 ? new URLSearchParams(d.fields) : null
    },

    /** The admin's session, or a redirect to sign in, or a 403 for a signed-in account that is not admin. */
    async requireAdmin(request: Request, page?: string): Promise<Session | Response> {
      const s = await this.require(request, page)
      if (s instanceof Response) return s
      if (!s.admin) throw notAdmin()
      return s
    },

    /**
     * The fields of a dashboard form, after the checks every form passes: sent by a page of this site, with
     * the session's CSRF token in `_csrf`, at most FORM_LIMIT bytes. Throws a 403/413 AppError otherwise.
     */
    async form(request: Request, s: Session): Promise<URLSearchParams> {
      if (crossSite(request)) throw csrfRefused()
      const fields = new URLSearchParams(new TextDecoder().decode(await readBodyLimited(request, FORM_LIMIT)))
      if (!sameSecret(fields.get('_csrf') ?? '', s.csrf)) throw csrfRefused()
      return fields
    },

    /** Set-Cookie for a new session (sign-in). */
    sessionCookie: (token: string) =>
      `${SESSION_COOKIE}=${token}; ${attrs}; Max-Age=${Math.floor(SESSION_TTL_MS / 1000)}`,
    clearSessionCookie: () => `${SESSION_COOKIE}=; ${attrs}; Max-Age=0`,
    /** A cookie for the sign-in form's CSRF token (double submit: there is no session yet). */
    loginCookie: (token: string) =>
      `lb_login=${token}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}; Max-Age=3600`,
    loginToken: (request: Request) => cookiesOf(request).get('lb_login') ?? '',

    /** 303 to `location` (a path of this site), carrying a notice to the page shown there. */
    seeOther(location: string, notice?: Notice, headers: Record<string, string> = {}): Response {
      const h = new Headers({ location, 'cache-control': 'no-store', ...headers })
      if (notice)
        h.append(
          'set-cookie',
          `${NOTICE_COOKIE}=${Buffer.from(JSON.stringify({ kind: notice.kind, text: notice.text.slice(0, 500) })).toString('base64url')}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}; Max-Age=60`,
        )
      return new Response(null, { status: 303, headers: h })
    },

    /** A dashboard page: the frame, the navigation for the session, a notice, the content. */
    render(request: Request, s: Session | null, opts: RenderOptions): Response {
      const carried = noticeOf(request)
      // The page a form was on when its session ended, shown again after signing in: say it was not sent.
      const draft = s ? draftHere(request) : null
      const notices = [carried, draft && draftNotice(draft), opts.notice]
        .filter((n): n is Notice => !!n)
        .map(noticeHtml)
        .join('')
      const html = fill(layout as unknown as string, {
        title: opts.title,
        style_version: STYLE_VERSION,
        dashboard_version: DASHBOARD_CSS_VERSION,
        script: SCRIPT_TAG,
        logo: LOGO_SVG,
        nav: nav(s, opts.section),
        notice: notices,
        content: opts.content,
      })
      const headers = new Headers({
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': DASHBOARD_CSP,
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'referrer-policy': 'same-origin',
        'cache-control': 'no-store',
        ...opts.headers,
      })
      if (carried)
        headers.append(
          'set-cookie',
          `${NOTICE_COOKIE}=; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}; Max-Age=0`,
        )
      if (draft) headers.append('set-cookie', `${DRAFT_COOKIE}=; ${draftAttrs}; Max-Age=0`)
      return new Response(html, { status: opts.status ?? 200, headers })
    },
  }
}
export type Shell = ReturnType<typeof createShell>
