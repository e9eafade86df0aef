// Sign in, sign out and open sign-up: a double-submit CSRF cookie, limited attempts, refusals answered with a
// redirect (never the password kept); with single sign-on, its button too (design: notes, dashboard/auth.ts).
import { Elysia } from 'elysia'
import loginTpl from '../../assets/login.html' with { type: 'text' }
import { AppError } from '../kernel/errors'
import { sameSecret } from '../web/api'
import { readBodyLimited } from '../web/params'
import { rateKeyOf } from '../web/client-ip'
import { escapeHtml, fill } from '../web/render'
import type { DashboardDeps } from './deps'
import type { OidcSignIn } from './oidc'
import { randomToken, type SignIn } from './sessions'
import { byAccount } from '../audit'
import { safeNext } from './page-helpers'
import { SESSION_ENDED } from './shell'

export { safeNext }

export const SIGN_IN_PER_MINUTE = 10
export const SIGN_IN_PER_CLIENT_PER_MINUTE = 30
export const SIGN_UP_PER_CLIENT_PER_MINUTE = 3
/** Accounts open sign-up may create in all; past it sign-up is closed (an admin can still add accounts). */
export const SIGN_UP_MAX_ACCOUNTS = 10_000

/** A refused sign-in or sign-up, kept for the form it is sent back to (never the password). */
interface Refused {
  name: string
  error: string
}

/**
 * Said to everyone, whatever name was typed (a sign-in never tells whether an account exists, nor whether it
 * has a password): an account made with `linkbox account create` off a terminal has none yet.
 */
const NO_PASSWORD_YET =
  '<p class="muted" id="no-password-yet">An account made on the command line has no password until one is set there: <code>linkbox account password NAME</code>.</p>'

export function createAuthRoutes(deps: DashboardDeps, oidc: OidcSignIn | null) {
  const { shell, sessions, accounts, limiter, clientIp, config } = deps
  // oidc.only: the provider is the one way in; the password form is not shown and its POST is refused.
  const passwords = !config.oidc.only
  // Open sign-up makes password accounts: off when passwords are.
  const signup = config.web.signup && passwords

  /** Whose flash entries a sign-in form's are: the browser's sign-in cookie (a visitor's, not a session's). */
  const ownerOf = (csrf: string) => `l${csrf}`

  async function form(
    request: Request,
    opts: { signup: boolean; next?: string; ended?: boolean; signedOut?: boolean },
  ) {
    const csrf = shell.loginToken(request) || randomToken(24)
    const refused = await shell.refusedState<Refused>(request, ownerOf(csrf))
    const error = refused?.error
    const name = refused?.name ?? ''
    const retype = !!error && !opts.signup && name !== ''
    const signupLink =
      signup && !opts.signup ? '<p class="muted">No account yet? <a href="/signup">Create one</a>.</p>' : ''
    // Single sign-on: its button above the password form (or alone), and after a sign-out its own sign-out.
    const sso =
      oidc && !opts.signup
        ? `${opts.signedOut ? oidc.signOutOffer() : ''}${oidc.button(opts.next ?? '/dashboard')}${passwords ? '<p class="sso-or"><span>or with a password</span></p>' : ''}`
        : ''
    const errorHtml = error ? `<p id="auth-error" class="notice error" role="alert">${escapeHtml(error)}</p>` : ''
    const content =
      !passwords && !opts.signup
        ? `<div class="auth card"><h1>Sign in to linkbox</h1><p class="auth-lead">Short links, QR codes, temporary mail and webhooks, in one box.</p>${errorHtml}${sso}</div>`
        : fill(loginTpl as unknown as string, {
            heading: opts.signup ? 'Create an account' : 'Sign in to linkbox',
            action: opts.signup ? '/signup' : '/login',
            csrf,
            next: opts.next ?? '/dashboard',
            name,
            autocomplete: opts.signup ? 'new-password' : 'current-password',
            button: opts.signup ? 'Create account' : 'Sign in',
            error: errorHtml,
            sso,
            described: error ? ' aria-describedby="auth-error" aria-invalid="true"' : '',
            // After a refused sign-in the name is kept: the password is what to type again, so it has the focus.
            name_focus: retype ? '' : ' autofocus',
            password_focus: retype ? ' autofocus' : '',
            password_hint: opts.signup ? '<span class="hint">8 to 128 characters.</span>' : '',
            below: opts.signup
              ? '<p class="muted">Already have one? <a href="/login">Sign in</a>.</p>'
              : signupLink + NO_PASSWORD_YET,
          })
    const headers: Record<string, string> = { 'set-cookie': shell.loginCookie(csrf) }
    return shell.render(request, null, {
      section: null,
      title: opts.signup ? 'Create an account' : 'Sign in',
      content,
      headers,
      notice: opts.ended && !error ? { kind: 'warn', text: SESSION_ENDED } : undefined,
    })
  }

  /** 303 back to the form with the name and the message (`headers`: a Retry-After). */
  function refuse(
    request: Request,
    opts: { signup: boolean; name: string; next?: string; error: string; headers?: Record<string, string> },
  ) {
    const page = opts.signup ? '/signup' : `/login?next=${encodeURIComponent(opts.next ?? '/dashboard')}`
    return shell.refused(
      ownerOf(shell.loginToken(request)),
      page,
      { name: opts.name.slice(0, 64), error: opts.error } satisfies Refused,
      opts.headers,
    )
  }

  async function readLoginForm(request: Request): Promise<URLSearchParams> {
    if (shell.crossSite(request)) throw shell.csrfRefused()
    const fields = new URLSearchParams(new TextDecoder().decode(await readBodyLimited(request, 8 * 1024)))
    const cookie = shell.loginToken(request)
    if (!cookie || !sameSecret(fields.get('_csrf') ?? '', cookie)) throw shell.csrfRefused()
    return fields
  }

  async function signedIn(accountId: number, next: string, notice?: string, signIn?: SignIn) {
    const { token } = await sessions.create(accountId, signIn)
    return shell.seeOther(next, notice ? { kind: 'ok', text: notice } : undefined, {
      'set-cookie': shell.sessionCookie(token),
    })
  }

  const app = new Elysia({ name: 'dashboard-auth' })
    .get('/login', async ({ request }) => {
      const query = new URL(request.url).searchParams
      const next = safeNext(query.get('next'))
      if (await shell.session(request)) return shell.seeOther(next)
      return form(request, {
        signup: false,
        next,
        ended: query.get('reason') === 'session_ended',
        signedOut: query.get('signed_out') === 'provider',
      })
    })
    .post('/login', async ({ request }) => {
      const fields = await readLoginForm(request)
      const name = (fields.get('name') ?? '').trim()
      const next = safeNext(fields.get('next'))
      if (!passwords)
        return refuse(request, {
          signup: false,
          name,
          next,
          error: `Password sign-in is off on this server: use “Sign in with ${oidc!.name}”.`,
        })
      const client = rateKeyOf(clientIp(request))
      // The name is part of a bucket's key: at most 64 characters of it (no account name is longer), so that
      // a flood of made-up long names cannot make the limiter's keys large.
      const one = limiter.hit(`signin:${client}|${name.slice(0, 64).toLowerCase()}`, SIGN_IN_PER_MINUTE)
      const all = one.allowed ? limiter.hit(`signin:${client}`, SIGN_IN_PER_CLIENT_PER_MINUTE) : one
      if (!one.allowed || !all.allowed) {
        const reset = Math.max(one.reset, all.reset)
        return refuse(request, {
          signup: false,
          name,
          next,
          error: `Too many sign-in attempts: wait ${reset} s and try again.`,
          headers: { 'retry-after': String(reset) },
        })
      }
      // Attempts past the limits above are not checked, and not written to the audit log either: what one
      // client can add to the log is bounded by the same limits.
      const checked = await sessions.checkPassword(name, fields.get('password') ?? '')
      if (!checked.account) {
        await sessions.failed(name, checked.reason, clientIp(request))
        return refuse(request, { signup: false, name, next, error: 'That account name and password do not match.' })
      }
      return signedIn(checked.account.id, next, undefined, { address: clientIp(request), method: 'password' })
    })
    .post('/logout', async ({ request }) => {
      const s = await shell.session(request)
      if (s) {
        await shell.form(request, s)
        await sessions.end(s.id)
      }
      const page = s && oidc ? await oidc.signedOutPage(s.accountId) : '/login'
      return shell.seeOther(
        page,
        { kind: 'ok', text: 'You are signed out.' },
        { 'set-cookie': shell.clearSessionCookie() },
      )
    })

  if (signup) {
    app
      .get('/signup', async ({ request }) =>
        (await shell.session(request)) ? shell.seeOther('/dashboard') : form(request, { signup: true }),
      )
      .post('/signup', async ({ request }) => {
        const fields = await readLoginForm(request)
        const name = (fields.get('name') ?? '').trim()
        const d = limiter.hit(`signup:${rateKeyOf(clientIp(request))}`, SIGN_UP_PER_CLIENT_PER_MINUTE)
        if (!d.allowed)
          return refuse(request, {
            signup: true,
            name,
            error: `Too many sign-ups from your address: wait ${d.reset} s.`,
            headers: { 'retry-after': String(d.reset) },
          })
        if ((await accounts.count()) >= SIGN_UP_MAX_ACCOUNTS)
          return refuse(request, {
            signup: true,
            name,
            error: 'Sign-up is closed: this server has as many accounts as it takes. Ask its administrator.',
          })
        try {
          const { account } = await accounts.createAccount(
            { name, password: fields.get('password') ?? '' },
            // The account made itself: it is the actor of its row.
            (made) => byAccount({ accountId: made.id, accountName: made.name }, clientIp(request)),
          )
          return await signedIn(
            account.id,
            '/dashboard/keys',
            `Welcome, ${account.name}. Create an API key below to use the API.`,
          )
        } catch (err) {
          if (err instanceof AppError && err.status < 500)
            return refuse(request, { signup: true, name, error: err.message })
          throw err
        }
      })
  }
  return app
}
