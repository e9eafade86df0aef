// What every dashboard page shares: the session from its cookie, the checks every form passes (same
// origin, the session's CSRF token, a bounded body), the page frame with its navigation, and one-shot
// notices carried across a redirect (post → 303 → get). Sections (links.ts, keys.ts, …) build on this.
import dashboardCss from '../../assets/dashboard.css' with { type: 'text' }
import layout from '../../assets/dashboard-layout.html' with { type: 'text' }
import type { Config } from '../config'
import { AppError } from '../errors'
import { sameSecret } from '../http/api'
import { isCrossSite } from '../http/cross-site'
import { readBodyLimited } from '../http/params'
import { escapeHtml, fill, LOGO_SVG, SCRIPT_CSP, SCRIPT_TAG, STYLE_VERSION } from '../pages/render'
import { SESSION_TTL_MS, type Session, type Sessions } from './sessions'

export const DASHBOARD_CSS = dashboardCss as unknown as string
export const DASHBOARD_CSS_VERSION = new Bun.CryptoHasher('sha256').update(DASHBOARD_CSS).digest('hex').slice(0, 12)
/** Dashboard pages may frame their own origin (a mail's HTML, served sandboxed from /dashboard/mail/…). */
export const DASHBOARD_CSP = `${SCRIPT_CSP}; frame-src 'self'`
export const FORM_LIMIT = 64 * 1024

export type Section = 'links' | 'keys' | 'mail' | 'webhooks' | 'admin'
const SECTIONS: { id: Section; href: string; label: string; admin?: boolean }[] = [
  { id: 'links', href: '/dashboard', label: 'Links' },
  { id: 'keys', href: '/dashboard/keys', label: 'API' },
  { id: 'mail', href: '/dashboard/mail', label: 'Mailboxes' },
  { id: 'webhooks', href: '/dashboard/webhooks', label: 'Webhooks' },
  { id: 'admin', href: '/dashboard/admin', label: 'Admin', admin: true },
]

export function cookiesOf(request: Request): Map<string, string> {
  const out = new Map<string, string>()
  const header = request.headers.get('cookie')
  if (!header || header.length > 8192) return out
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    const name = part.slice(0, eq).trim()
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim())
  }
  return out
}

export interface Notice {
  kind: 'ok' | 'error'
  text: string
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

export function createShell(deps: { config: Config; sessions: Sessions }) {
  const { config, sessions } = deps
  const secure = config.server.base_url.startsWith('https:')
  // __Host-: a cookie only this origin over https can set (no Domain, Path=/, Secure).
  const SESSION_COOKIE = secure ? '__Host-lb_session' : 'lb_session'
  const NOTICE_COOKIE = 'lb_notice'
  const attrs = `Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`

  /** A request sent by a page of another site (a forged form), as far as the browser tells. */
  const crossSite = (request: Request) => isCrossSite(request, config.server.base_url)

  const csrfRefused = () =>
    new AppError(403, 'csrf', 'This form has expired or was sent from another site. Reload the page and try again.')

  function session(request: Request): Session | null {
    const token = cookiesOf(request).get(SESSION_COOKIE)
    return token ? sessions.lookup(token) : null
  }

  function noticeOf(request: Request): Notice | null {
    const raw = cookiesOf(request).get(NOTICE_COOKIE)
    if (!raw) return null
    try {
      const n = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Notice
      if ((n.kind === 'ok' || n.kind === 'error') && typeof n.text === 'string') return { kind: n.kind, text: n.text.slice(0, 500) }
    } catch {}
    return null
  }

  const noticeHtml = (n: Notice) =>
    `<p class="notice ${n.kind}" role="${n.kind === 'error' ? 'alert' : 'status'}">${escapeHtml(n.text)}</p>`

  function nav(s: Session | null, current: Section | null): string {
    if (!s) return ''
    const items = SECTIONS.filter((x) => !x.admin || s.admin)
      .map((x) => `<li><a href="${x.href}"${x.id === current ? ' aria-current="page"' : ''}>${x.label}</a></li>`)
      .join('')
    return `<nav aria-label="Dashboard"><ul class="dash-nav">${items}</ul></nav>
<div class="dash-user"><span>Signed in as <strong>${escapeHtml(s.accountName)}</strong>${s.admin ? ' (admin)' : ''}</span>
<form method="post" action="/logout"><input type="hidden" name="_csrf" value="${escapeHtml(s.csrf)}"><button type="submit" class="link">Sign out</button></form></div>`
  }

  return {
    SESSION_COOKIE,
    crossSite,
    csrfRefused,
    session,

    /** The session, or a redirect to the sign-in page that comes back here. */
    require(request: Request): Session | Response {
      const s = session(request)
      if (s) return s
      let next = '/dashboard'
      try {
        const u = new URL(request.url)
        if (request.method === 'GET') next = u.pathname + u.search
      } catch {}
      return new Response(null, { status: 303, headers: { location: `/login?next=${encodeURIComponent(next)}`, 'cache-control': 'no-store' } })
    },

    /** The admin's session, or a redirect to sign in, or a 403 for a signed-in account that is not admin. */
    requireAdmin(request: Request): Session | Response {
      const s = this.require(request)
      if (s instanceof Response) return s
      if (!s.admin) throw new AppError(403, 'not_admin', 'This page is for administrator accounts.')
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
    sessionCookie: (token: string) => `${SESSION_COOKIE}=${token}; ${attrs}; Max-Age=${Math.floor(SESSION_TTL_MS / 1000)}`,
    clearSessionCookie: () => `${SESSION_COOKIE}=; ${attrs}; Max-Age=0`,
    /** A cookie for the sign-in form's CSRF token (double submit: there is no session yet). */
    loginCookie: (token: string) => `lb_login=${token}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}; Max-Age=3600`,
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
      const notices = [carried, opts.notice].filter((n): n is Notice => !!n).map(noticeHtml).join('')
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
      if (carried) headers.append('set-cookie', `${NOTICE_COOKIE}=; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}; Max-Age=0`)
      return new Response(html, { status: opts.status ?? 200, headers })
    },
  }
}
export type Shell = ReturnType<typeof createShell>

/** Time as people read it in a table: "2026-11-23 14:05 UTC" (or "never" for null). */
export function when(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return 'never'
  return new Date(ms).toISOString().slice(0, 16).replace('T', ' ') + ' UTC'
}
